"""Write the journal sets of bench/dates_bench.py: English and Chinese notes alike but for
their dates, and the questions about them.

    python -m bench.dates.make_journals      # rewrites bench/dates/{en,zh}/ and questions.jsonl

Each set holds 45 daily notes (2026-01-01 to 2026-02-14, named in the spellings journals
use, some dated only by front matter), two monthly logs (2025-11, 2025-12) of ten
`## date` entries each, and five undated guides. A day draws its meal, work and evening
from small pools, so many days read alike, and buys one object found nowhere else: the
undated questions ask where an object was bought, or what a guide says. Fixed seed.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 20260107

MEALS = [
    ("lentil soup", "扁豆汤"), ("mushroom risotto", "蘑菇烩饭"), ("vegetable curry", "蔬菜咖喱"),
    ("pea soup", "豌豆汤"), ("dumplings", "饺子"), ("fried rice", "炒饭"),
    ("tomato pasta", "番茄意面"), ("beef stew", "炖牛肉"), ("pancakes", "煎饼"),
    ("noodle soup", "汤面"), ("roast chicken", "烤鸡"), ("fish tacos", "鱼肉卷饼"),
]  # fmt: skip
WORK = [
    ("reviewed the budget", "审核了预算"), ("fixed the login bug", "修复了登录的问题"),
    ("wrote the quarterly report", "写了季度报告"), ("met the design team", "和设计团队开了会"),
    ("migrated the database", "迁移了数据库"), ("interviewed a candidate", "面试了一位候选人"),
    ("updated the roadmap", "更新了路线图"), ("tested the mobile app", "测试了手机应用"),
    ("cleaned up the backlog", "整理了待办列表"), ("planned the sprint", "规划了迭代"),
]  # fmt: skip
EVENINGS = [
    ("went skating", "去滑冰"), ("watched a documentary", "看了一部纪录片"),
    ("read a novel", "读了小说"), ("called my sister", "给姐姐打了电话"),
    ("played chess", "下了国际象棋"), ("went to the gym", "去了健身房"),
    ("practised guitar", "练了吉他"), ("walked by the river", "在河边散步"),
    ("baked bread", "烤了面包"), ("visited the library", "去了图书馆"),
]  # fmt: skip
OBJECTS = [
    ("blue umbrella", "蓝色雨伞"), ("brass key", "黄铜钥匙"), ("wool scarf", "羊毛围巾"),
    ("ceramic teapot", "陶瓷茶壶"), ("leather notebook", "皮面笔记本"), ("paper lantern", "纸灯笼"),
    ("silver spoon", "银勺子"), ("glass vase", "玻璃花瓶"), ("bamboo mat", "竹席"),
    ("copper kettle", "铜水壶"), ("reading lamp", "台灯"), ("chess set", "象棋套装"),
    ("yoga mat", "瑜伽垫"), ("rain jacket", "雨衣"), ("wooden bowl", "木碗"),
    ("linen shirt", "亚麻衬衫"), ("camping stove", "露营炉"), ("bird feeder", "喂鸟器"),
    ("desk fan", "台式风扇"), ("flower pot", "花盆"), ("travel mug", "旅行杯"),
    ("wall clock", "挂钟"), ("photo frame", "相框"), ("pair of hiking boots", "登山靴"),
    ("sewing kit", "针线包"), ("bread knife", "面包刀"), ("kite", "风筝"),
    ("harmonica", "口琴"), ("puzzle box", "拼图盒"), ("snow globe", "水晶球"),
    ("fountain pen", "钢笔"), ("garden hose", "浇花水管"), ("tennis racket", "网球拍"),
    ("picnic basket", "野餐篮"), ("bike lock", "自行车锁"), ("alarm clock", "闹钟"),
    ("water filter", "净水器"), ("cutting board", "砧板"), ("doormat", "门垫"),
    ("bookshelf", "书架"), ("laundry basket", "洗衣篮"), ("tea strainer", "茶滤"),
    ("soup ladle", "汤勺"), ("phone stand", "手机支架"), ("map of the city", "城市地图"),
    ("sun hat", "遮阳帽"), ("night light", "小夜灯"), ("coffee grinder", "咖啡磨"),
    ("mixing bowl", "搅拌碗"), ("spice rack", "调料架"), ("measuring tape", "卷尺"),
    ("flashlight", "手电筒"), ("first aid kit", "急救包"), ("ice tray", "冰格"),
    ("dish rack", "碗架"), ("straw basket", "草编篮"), ("pair of rubber boots", "雨靴"),
    ("wind chime", "风铃"), ("candle holder", "烛台"), ("plant mister", "喷壶"),
    ("toolbox", "工具箱"), ("key ring", "钥匙圈"), ("pillow", "枕头"), ("cookbook", "菜谱"),
    ("watering can", "洒水壶"),
]  # fmt: skip
PLACES = [
    ("hardware store", "五金店"), ("market", "菜市场"), ("bookshop", "书店"),
    ("flea market", "跳蚤市场"), ("department store", "百货商店"), ("corner shop", "街角小店"),
    ("garden centre", "园艺店"), ("antique shop", "古董店"), ("supermarket", "超市"),
    ("craft fair", "手工市集"),
]  # fmt: skip
GUIDES = [  # (file, English text, Chinese text, English question, Chinese question)
    ("soup", "# Soups\n\nA lentil soup wants cumin and lemon, and a simmer of forty minutes. "
     "Pea soup thickens overnight.\n",
     "# 汤\n\n扁豆汤要放孜然和柠檬，小火炖四十分钟。豌豆汤放一夜会变稠。\n",
     "How long should a lentil soup simmer?", "扁豆汤要炖多久？"),
    ("bread", "# Bread\n\nBaked bread needs a starter fed the day before, and an oven at "
     "230 degrees with steam for the first twenty minutes.\n",
     "# 面包\n\n烤面包要提前一天喂好酵头，烤箱230度，前二十分钟加蒸汽。\n",
     "What oven temperature does bread need?", "烤面包的烤箱要多少度？"),
    ("guitar", "# Guitar\n\nPractise guitar scales slowly with a metronome at sixty beats, "
     "then add ten beats a week.\n",
     "# 吉他\n\n练吉他音阶时用节拍器，从每分钟六十拍慢慢练，每周加十拍。\n",
     "What metronome speed should guitar scales start at?", "练吉他音阶从每分钟多少拍开始？"),
    ("chess", "# Chess\n\nIn chess openings, control the centre, develop knights before "
     "bishops and castle early.\n",
     "# 国际象棋\n\n国际象棋开局要控制中心，先出马后出象，尽早王车易位。\n",
     "Which pieces should I develop first in a chess opening?", "国际象棋开局先出什么棋子？"),
    ("skating", "# Skating\n\nSharpen skating blades every ten hours on the ice; dry them "
     "after every session.\n",
     "# 滑冰\n\n冰刀每在冰上滑十个小时就要磨一次，每次滑完都要擦干。\n",
     "How often should skating blades be sharpened?", "冰刀多久磨一次？"),
]  # fmt: skip

EN_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
             "September", "October", "November", "December"]  # fmt: skip
EN_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
ZH_WEEKDAYS = ["星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日"]


def en_long(d: dt.date) -> str:
    return f"{EN_MONTHS[d.month - 1]} {d.day}, {d.year}"


def zh_long(d: dt.date) -> str:
    return f"{d.year}年{d.month}月{d.day}日"


def daily_name(d: dt.date, i: int, lang: str) -> tuple[str, str]:
    """(path, front matter) in the spellings journals use, one in five dated by front
    matter alone."""
    folder = "daily" if lang == "en" else "日记"
    kind = i % 5
    if kind == 0:
        return f"{folder}/{d.isoformat()}.md", ""
    if kind == 1:
        return f"{folder}/{d:%Y%m%d}.md", ""
    if kind == 2:
        day = EN_WEEKDAYS[d.weekday()] if lang == "en" else ZH_WEEKDAYS[d.weekday()]
        return f"{folder}/{d.isoformat()} {day}.md", ""
    if kind == 3:
        return (f"{folder}/{zh_long(d)}.md", "") if lang == "zh" else (
            f"{folder}/{d:%Y_%m_%d}.md", "")  # fmt: skip
    return f"{folder}/entry {i:02d}.md", f"---\ndate: {d.isoformat()}\ntags: [journal]\n---\n"


def day_text(lang: str, meal: int, work: int, evening: int, obj: int, place: int) -> str:
    if lang == "en":
        return (
            f"## Meals\n\nCooked {MEALS[meal][0]} for dinner.\n\n"
            f"## Work\n\nAt work I {WORK[work][0]}.\n\n"
            f"## Evening\n\nIn the evening I {EVENINGS[evening][0]}, and bought a "
            f"{OBJECTS[obj][0]} at the {PLACES[place][0]}.\n"
        )
    return (
        f"## 饮食\n\n晚饭做了{MEALS[meal][1]}。\n\n"
        f"## 工作\n\n工作上{WORK[work][1]}。\n\n"
        f"## 晚上\n\n晚上{EVENINGS[evening][1]}，还在{PLACES[place][1]}买了{OBJECTS[obj][1]}。\n"
    )


def entry_text(lang: str, meal: int, work: int, evening: int, obj: int, place: int) -> str:
    if lang == "en":
        return (
            f"Cooked {MEALS[meal][0]}. At work I {WORK[work][0]}. In the evening I "
            f"{EVENINGS[evening][0]}, and bought a {OBJECTS[obj][0]} at the "
            f"{PLACES[place][0]}.\n"
        )
    return (
        f"做了{MEALS[meal][1]}。工作上{WORK[work][1]}。晚上{EVENINGS[evening][1]}，"
        f"还在{PLACES[place][1]}买了{OBJECTS[obj][1]}。\n"
    )


def plan(rng: random.Random) -> list[dict]:
    """Every dated unit (a daily note or a log entry) with what happened on it."""
    days = [dt.date(2026, 1, 1) + dt.timedelta(days=i) for i in range(45)]
    logged = sorted(
        rng.sample([dt.date(2025, 11, 1) + dt.timedelta(days=i) for i in range(30)], 10)
    ) + sorted(rng.sample([dt.date(2025, 12, 1) + dt.timedelta(days=i) for i in range(31)], 10))
    objects = rng.sample(range(len(OBJECTS)), len(days) + len(logged))
    units = []
    for i, d in enumerate(days + logged):
        units.append(
            {
                "date": d,
                "daily": i < len(days),
                "index": i,
                "meal": rng.randrange(len(MEALS)),
                "work": rng.randrange(len(WORK)),
                "evening": rng.randrange(len(EVENINGS)),
                "object": objects[i],
                "place": rng.randrange(len(PLACES)),
            }
        )
    return units


def write(lang: str, units: list[dict]) -> dict[dt.date, str]:
    """The set's files; where each date's unit is."""
    root = HERE / lang
    shutil.rmtree(root, ignore_errors=True)
    where: dict[dt.date, str] = {}
    logs: dict[str, list[str]] = {}
    for u in units:
        what = (u["meal"], u["work"], u["evening"], u["object"], u["place"])
        d = u["date"]
        if u["daily"]:
            path, front = daily_name(d, u["index"], lang)
            title = (
                f"# {EN_WEEKDAYS[d.weekday()]}" if lang == "en" else f"# {ZH_WEEKDAYS[d.weekday()]}"
            )
            text = f"{front}{title}\n\n{day_text(lang, *what)}"
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text, encoding="utf-8")
        else:
            path = f"{'log' if lang == 'en' else '日志'}/{d:%Y-%m}.md"
            heading = en_long(d) if lang == "en" else zh_long(d)
            logs.setdefault(path, []).append(f"## {heading}\n\n{entry_text(lang, *what)}")
        where[d] = path
    for path, entries in logs.items():
        month = "Log" if lang == "en" else "日志"
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(f"# {month}\n\n" + "\n".join(entries), encoding="utf-8")
    for name, en, zh, _, _ in GUIDES:
        folder = root / ("guides" if lang == "en" else "指南")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.md").write_text(en if lang == "en" else zh, encoding="utf-8")
    return where


def questions(units: list[dict], where: dict[str, dict], rng: random.Random) -> list[dict]:
    """Dated questions (absolute and relative, each language) and undated ones."""
    found = []
    daily = [u for u in units if u["daily"]]

    def ask(lang: str, q: str, u: dict, kind: str, today: dt.date | None = None) -> None:
        found.append(
            {"lang": lang, "q": q, "kind": kind, "gold_source": where[lang][u["date"]],
             "gold_date": u["date"].isoformat(),
             "today": (today or u["date"] + dt.timedelta(days=1)).isoformat()}
        )  # fmt: skip

    absolute = rng.sample(units, 20)
    for n, u in enumerate(absolute):
        d = u["date"]
        en = [
            f"What did I cook on {en_long(d)}?",
            f"What did I do at work on {d.day} {EN_MONTHS[d.month - 1][:3]} {d.year}?",
            f"What did I do in the evening on {d.isoformat()}?",
            f"What did I cook on {d.year}/{d.month}/{d.day}?",
        ][n % 4]
        zh = [
            f"{zh_long(d)}晚饭做了什么？",
            f"{d.year}年{d.month}月{d.day}日工作上做了什么？",
            f"{d.isoformat()}晚上做了什么？",
            f"{d.month}月{d.day}日晚饭吃的什么？",
        ][n % 4]
        ask("en", en, u, "absolute", d + dt.timedelta(days=3))
        ask("zh", zh, u, "absolute", d + dt.timedelta(days=3))
    for u in rng.sample(daily[2:], 6):
        ask("en", "What did I cook yesterday?", u, "yesterday")
        ask("zh", "昨天晚饭做了什么？", u, "yesterday")
    for u in rng.sample(daily[2:], 3):
        later = u["date"] + dt.timedelta(days=2)
        ask("en", "What did I do at work the day before yesterday?", u, "day-2", later)
        ask("zh", "前天工作上做了什么？", u, "day-2", later)
    weeks: dict[tuple[int, int], list[dict]] = {}
    for u in units:  # a week's unit whose evening no other day of that week shares
        weeks.setdefault(u["date"].isocalendar()[:2], []).append(u)
    picked = 0
    for week in sorted(weeks):
        alone = [
            u for u in weeks[week]
            if sum(o["evening"] == u["evening"] for o in weeks[week]) == 1
        ]  # fmt: skip
        if not alone or len(weeks[week]) < 3 or picked >= 5:
            continue
        u = rng.choice(alone)
        monday = u["date"] - dt.timedelta(days=u["date"].weekday())
        today = monday + dt.timedelta(days=9)
        e = EVENINGS[u["evening"]]
        ask("en", f"Which evening last week was the one I {e[0]}?", u, "last-week", today)
        ask("zh", f"上周哪天晚上{e[1]}？", u, "last-week", today)
        picked += 1
    for month in ((2025, 11), (2025, 12), (2026, 1)):
        inside = [u for u in units if (u["date"].year, u["date"].month) == month]
        alone = [u for u in inside if sum(o["meal"] == u["meal"] for o in inside) == 1]
        for n, u in enumerate(rng.sample(alone, min(2, len(alone)))):
            meal = MEALS[u["meal"]]
            if n == 0:
                today = dt.date(month[0] + month[1] // 12, month[1] % 12 + 1, 10)
                ask("en", f"When did I cook {meal[0]} last month?", u, "last-month", today)
                ask("zh", f"上个月哪天做了{meal[1]}？", u, "last-month", today)
            else:
                when = f"{EN_MONTHS[month[1] - 1]} {month[0]}"
                ask("en", f"When in {when} did I cook {meal[0]}?", u, "month")
                ask("zh", f"{month[0]}年{month[1]}月哪天做了{meal[1]}？", u, "month")
    for u in rng.sample(units, 8):
        o = OBJECTS[u["object"]]
        found.append({"lang": "en", "q": f"Where did I buy the {o[0]}?", "kind": "undated",
                      "gold_source": where["en"][u["date"]], "gold_date": u["date"].isoformat(),
                      "today": "2026-03-01"})  # fmt: skip
        found.append({"lang": "zh", "q": f"我在哪里买的{o[1]}？", "kind": "undated",
                      "gold_source": where["zh"][u["date"]], "gold_date": u["date"].isoformat(),
                      "today": "2026-03-01"})  # fmt: skip
    for name, _, _, en_q, zh_q in GUIDES:
        for lang, q, folder in (("en", en_q, "guides"), ("zh", zh_q, "指南")):
            found.append({"lang": lang, "q": q, "kind": "undated",
                          "gold_source": f"{folder}/{name}.md", "gold_date": None,
                          "today": "2026-03-01"})  # fmt: skip
    return found


def main() -> None:
    rng = random.Random(SEED)
    units = plan(rng)
    where = {lang: write(lang, units) for lang in ("en", "zh")}
    rows = questions(units, where, rng)
    with (HERE / "questions.jsonl").open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    dated = sum(r["kind"] != "undated" for r in rows)
    print(f"{len(units)} dated notes and entries per language; {dated} dated questions, "
          f"{len(rows) - dated} undated")  # fmt: skip


if __name__ == "__main__":
    main()
