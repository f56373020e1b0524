"""The kind of value a question asks for, and whether the closest sentences give one.

"How much does Obsidian Sync cost?", "When is version 2.0 coming out?" and "What's the
shortcut for the graph view?" come close in meaning to passages about Sync, releases
and hotkeys, and name nothing the notes lack, so neither the cosines nor the names
(names.py) can tell that no passage answers them. They ask for a value of a kind: a
price, a date, a key. When none of the sentences closest to the question holds a value
of that kind, the notes do not say it. This is the expected answer type of classic
question answering, kept to kinds a pattern can see in English and Chinese text:

- a price: "how much does … cost", 多少钱; given by a currency with a figure, or "for
  free";
- a date: "what year", "when was … released", 哪一年, 什么时候发布; given by a year, a
  month, a date or a period (世纪, 时期), in a sentence or in the heading or file name
  of its passage (a journal's day), and by a version to a question about versions or
  changes ("since which version", "when was it added");
- a time of day: "what time", 几点开始; given by any figure (9:30, 10am, "2–4"), a clock
  time in words (十点), a part of the day or a meal (noon, 上午, after lunch), or a date;
- a keyboard shortcut: "shortcut", "hotkey", 快捷键; given by a modifier key (Ctrl, ⌘),
  a function key or a key in angle brackets (`<Ctrl b>`);
- a number: "how many", "how long", 多少, 几个; given by a figure that stands alone (not
  the digits of `S3` or `1.13.0`, nor "Step 1"), a number word, or for "how often" and
  "how long" a frequency or span ("daily");
- a creator: "who created/wrote/invented", 谁写的, 作者是谁; given by the verb of making
  with its maker ("was created by", "wrote", 由…开发), a word for the one who made it
  (author, founder, 作者), a company (Inc, 公司), or a person as a reading list names
  one ("by Andy Hunt", "Andrew Gallant's", or a first and last name in a sentence that
  says one of the question's words: "*Sapiens*, Yuval Noah Harari."). A first name alone
  is no pattern ("Lena wrote the guide" is given by its verb); the routine verbs of a
  how-to do not count ("the file is created", 创建文件).

Questions about conditions ("When does onload run?") ask for no kind: "when" counts with
the verbs that make it ask for a date. Other questions about people ("Who owns the
design system?", 谁负责) ask for none either: who does a thing is said in as many ways
as there are things to do, and "which company makes it" by a name alone
("Google 的代理式开发平台").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from askmd.terms import STOPWORDS


@dataclass(frozen=True)
class Kind:
    """A kind of value: how a question asks for it, and how a sentence gives it."""

    name: str
    asks: re.Pattern[str]
    gives: re.Pattern[str]
    # whether a value made of the question's own words gives nothing ("2.0" of "When is
    # 2.0 out?"); a maker is given beside the question's own verb ("Priya wrote it")
    echoes: bool = True
    # a value that counts only in a sentence that says one of the question's own words:
    # a person's name beside the book asked about ("*Sapiens*, Yuval Noah Harari."), not
    # any two capitalised words ("GNU Compiler Collection")
    beside: re.Pattern[str] | None = None


# A figure that is a quantity, not part of a name, a version or a colour: "20 GB",
# "8420", "03:15", "2,000", "3岁"; not "S3", "LUM-E001", "1.13.0", "#1e1e1e", "0x1F".
_FIGURE = r"(?<![A-Za-z0-9_.#/-])\d[\d,]*(?:\.\d+)?(?![\d.]*\.\d)(?![A-Za-z]*\d)"
# A version answers "which version" and "when was it added", not "what year".
_VERSION = r"\bv?\d+\.\d+"
_ABOUT_VERSIONS = re.compile(
    r"\b(versions?|since|add|added|introduc\w*|deprecat\w*|remov\w*|changelog)\b"
    r"|\b(which|what) ([A-Za-z][\w.+#-]* )?releases?\b"
    r"|版本|引入|新增|添加|弃用|废弃|移除|支持",
    re.IGNORECASE,
)

_EVENT = (  # what happened once, on a date: "when was it released?"
    r"releas|come out|came out|coming out|launch|found|born|die[ds]?\b|introduc|add(ed)?\b|"
    r"publish|announc|ship|expir|deprecat|remov|creat|invent|built|written|establish|first|"
    r"join|start|began|begin"
)
_DUE = r"coming out|come out|releas|launch|due|expir"
_EVENT_ZH = (
    r"发布|推出|上市|成立|创立|创办|出生|诞生|去世|逝世|引入|加入|添加|新增|支持|弃用|废弃|"
    r"移除|删除|发明|写出|造出|建成|开通|问世|发行|到期|过期"
)

PRICE = Kind(
    "price",
    re.compile(
        # up to the question's end: a "!" inside a name (Fritz!Box) ends nothing
        r"\bhow much\b(?:[^?!]|!(?=\w))*\b(cost|costs|charge|charges|pay|paid|price|priced|fee)\b"
        r"|\bhow expensive\b|\bwhat(?:'s| is| are)? the (price|cost|fee|pricing)s?\b"
        r"|\b(price|pricing|fee)s? (of|for)\b"
        r"|多少钱|几块钱|多少元|价格|售价|价钱|费用|收费|要花多少",
        re.IGNORECASE,
    ),
    re.compile(
        r"[$€£¥￥]\s?\d|\d\s?(usd|eur|gbp|rmb|cny|dollars?|euros?|cents?|元|美元|块钱|欧元)"
        r"|\b(for free|is free|are free|free of charge|free plan|free tier|free version|"
        r"no cost|at no charge|costs nothing)\b|免费",
        re.IGNORECASE,
    ),
)

DATE = Kind(
    "date",
    re.compile(
        r"\bwhat (year|date|day|month)\b|\bwhich (year|date|month|version|release)\b"
        # the product may stand between: "which Lucide release", "what Node version"
        r"|\b(which|what) [A-Za-z][\w.+#-]* (version|release)s?\b(?! notes)"
        r"|\bin what (year|version|release)\b|\bsince (when|which|what)\b|\bhow long ago\b"
        rf"|\bwhen (was|were|did|will)\b[^?!]*\b({_EVENT})|\bwhen (is|are)\b[^?!]*\b({_DUE})"
        r"|哪一?年|哪个年份|什么年份|几几年|几月几[号日]|哪一?天|什么日期|哪个版本|什么版本|几月份?"
        rf"|(什么时候|何时|啥时候|哪个时候)[^？?。]*({_EVENT_ZH})"
        rf"|({_EVENT_ZH})[^？?。]*(什么时候|何时|啥时候)",
        re.IGNORECASE,
    ),
    re.compile(
        r"(?<!\d)(1[5-9]\d\d|20\d\d)(?!\d)|\d{4}-\d\d|\d{1,2}/\d{1,2}/\d{2,4}"
        r"|\b(January|February|March|April|May|June|July|August|September|October|November"
        r"|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)\b"
        r"|(?i:\b(century|decade|quarter|spring|summer|autumn|winter|yesterday"
        r"|today|tomorrow|ago)\b)"
        r"|\d+\s*[年月日号]|[一二三四五六七八九十〇零两]{2,}年|[一二三四五六七八九十]{1,2}月"
        r"|世纪|年代|时代|时期|年间|季度|[春夏秋冬][天季节]|[一-鿿]朝(?![向着])",
    ),
)

SHORTCUT = Kind(
    "shortcut",
    re.compile(
        r"\b(shortcut|hotkey|hot key|keybinding|key binding|keystroke|key combination|"
        r"keyboard combination)s?\b|\b(what|which) key\b|\bkey to press\b"
        r"|快捷键|热键|组合键|按键|哪个键|什么键|按哪",
        re.IGNORECASE,
    ),
    re.compile(
        r"(?i:\b(ctrl|control|cmd|command|alt|option|opt|shift|mod|meta|super|win)\s*[-+]\s*"
        r"([a-z0-9]\b|f\d|ctrl|cmd|alt|shift|option|enter|tab|space))"
        r"|\b(Ctrl|Cmd|Alt|Shift|Mod|Meta|Option|CTRL|CMD|ALT|SHIFT)\b|[⌘⌥⇧⌃]|\bF(1[0-2]|[1-9])\b"
        r"|<kbd>|(?i:<(esc|cr|enter|return|tab|space|bs|leader|up|down|left|right"
        r"|(ctrl|alt|shift|cmd|meta|super|mod|option|[cmas])[- +][^>]{1,8})>)"
        r"|`:[a-z]{1,4}!?`"
        r"|\b(Esc|Escape|Enter|Tab|Space|Spacebar|Backspace|Delete|Return)\b"
        r"|(?i:\b(esc|escape|enter|tab|space|spacebar|backspace|delete|return) key\b)"
    ),
)

# A quantity: a figure, an address, a number word or a Chinese numeral; not the number
# of a step, a part or a chapter ("## Step 1: Download", 第一步), which counts nothing.
_ORDINAL = "".join(
    f"(?<!{word} )"
    for word in ("step", "part", "phase", "chapter", "section", "lesson", "exercise", "figure")
)
_QUANTITY = (
    rf"{_ORDINAL}(?:{_FIGURE})|\b\d{{1,3}}(\.\d{{1,3}}){{3}}\b|\b(one|two|three|four|five|six|seven|eight"
    r"|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|thousand|million|billion"
    r"|dozen|once|twice|single|double|half|unlimited|no limit|several|few|many|count|counts"
    r"|counting|number of)\b"
    r"|(?<!第)[一二两三四五六七八九十百千万亿半]|次数|数量|个数|计数|统计"
)

NUMBER = Kind(
    "number",
    re.compile(
        r"\bhow (many|much|long|big|large|often|far|old|tall|heavy|fast|wide|high)\b"
        r"|\b(maximum|minimum|max|min|largest|smallest|upper limit|lower limit)\b[^?!]*"
        r"\b(size|number|count|length|amount|items|files|characters|entries|width|height)\b"
        r"|\bwhat (size|number|percentage|port)\b|\bwhich port\b"
        r"|多少|几个|几种|几次|几项|几位|几天|几小时|几分钟|几秒|几岁|几层|几行|几倍"
        r"|多大|多长|多久|多远|多高|多重|多快|上限|下限|端口",
        re.IGNORECASE,
    ),
    re.compile(_QUANTITY, re.IGNORECASE),
)

# "how often" and "how long" are answered by a frequency or a span as well: "daily",
# "every week", "for a while", 每月. A size or a count is not ("Always use a separate
# vault" gives no maximum vault size).
SPAN = Kind(
    "number",
    re.compile(
        r"\bhow (long|often|frequently|soon)\b|\bhow much time\b"
        r"|\bhow many (seconds|minutes|hours|days|weeks|months|years|times)\b"
        r"|多久|多长时间|多少时间|频率|几天|几小时|几分钟|几秒|几次",
        re.IGNORECASE,
    ),
    re.compile(
        rf"{_QUANTITY}|(?i:\b(daily|weekly|monthly|yearly|annually|hourly|nightly|every"
        r"|always|never|while|seconds?|minutes?|hours?|days?|weeks?|months?|years?)\b)"
        r"|每[天日周月年晚时]"
    ),
)

TIME = Kind(
    "time",
    re.compile(
        # not "what time zone", "what time tracking tool", 哪几点 (which points), 时间管理
        r"\b(?:at )?what (?:time|hour)\b(?!\s+(?:zones?|tracking|management|format|frame"
        r"|period|limit|series|stamps?|complexity)\b)"
        r"|(?<!哪)几点(?:钟|半|[开关到出起结下上睡吃见回散]|[？?]|$)"
        r"|什么时间(?=[开关到出起结下上睡吃见回散]|[？?]|$)|几时",
        re.IGNORECASE,
    ),
    re.compile(
        # any figure may be a time of day ("10:30", "2–4", "9 sharp", "16.00 CET")
        r"\d|(?i:\b(noon|midday|midnight|o'clock|morning|afternoon|evening|tonight"
        r"|lunch|breakfast|dinner)\b)"
        r"|[一二三四五六七八九十两]+点|[早上中下晚]午|早上|晚上|凌晨|傍晚|中午|饭后|午饭|午餐|晚饭"
        rf"|{DATE.gives.pattern}"
    ),
)

CREATOR = Kind(
    "creator",
    re.compile(
        # who made it, with the verb of making; not who owns, runs or can see something,
        # nor which company (answered by a name alone: "Google 的…", "由 OpenAI 驱动")
        r"\bwho\b(?:\s+\w+){0,2}\s+(?:created|invented|founded|co-founded|wrote|written"
        r"|developed|designed|made|built|authored|coined|discovered)\b"
        r"|\bwho\s+(?:is|was|are|were)\s+the\s+(?:author|creator|founder|inventor"
        r"|developer|maker|designer)s?\b"
        r"|谁(?:写|开发|发明|创建|创立|创造|创作|设计|编写|制作|提出|发现|创办|撰写|作曲|执导)"
        r"|作者是谁|创始人是谁|谁是[^？?]{0,12}(?:作者|创始人|发明者|发明人|开发者|设计者)",
        re.IGNORECASE,
    ),
    re.compile(
        # "created by", "wrote", "inventor"; not "the file is created", "plugin developers"
        # or 创建文件, the routine verbs of a how-to
        r"(?i:\b(?:created|invented|founded|co-founded|wrote|written|developed|designed"
        r"|authored|coined|discovered|made|built|maintained|published|released)\s+(?:\w+\s+)?"
        r"by\b|\b(?:invented|founded|co-founded|wrote|authored|coined)\b"
        r"|\bdesigned\b(?!\s+(?:to|for|with|around|so|as)\b)"
        r"|\b(?:author|creator|founder|co-founder|inventor)s?\b"
        r"|\b(?:developer|designer|maintainer|maker)s?\s+of\b)"
        r"|\b(?:Inc|Ltd|LLC|GmbH|Corp)\b"
        # a person as notes name one: "by Andy Hunt", "Andrew Gallant's"
        r"|\bby\s+[A-Z]|\b[A-Z][a-z]+(?:'s|’s)"
        # a name and its verb of making: "Marcus built the first version"
        r"|\b[A-Z][a-z]+\s+(?:built|created|made|developed|started|drafted|set up"
        r"|put together)\b"
        r"|发明|创立|创始|创办|创作|撰写|编写|作曲|执导|作者|写(?![入出])|著|出品|公司|团队"
        r"|由[^，。；,;]{1,20}?(?:开发|创建|编写|设计|制作|推出|发明|写|提出|建造|制造)"
        r"|(?:开发|设计|编写|制作)(?:者|人|商)"
    ),
    echoes=False,
    beside=re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z]\.)?\s+[A-Z][a-z]+\b"),
)

# "date" for a question about versions or changes: a version number gives one too.
VERSIONED_DATE = Kind("date", DATE.asks, re.compile(f"{_VERSION}|{DATE.gives.pattern}"))

QUESTION_CHARS = 300
# In this order: a price is also "how much", so a question that asks one asks no number.
KINDS = (PRICE, DATE, TIME, SHORTCUT, NUMBER, CREATOR)
LABELS = {
    "price": ("price", "价格"),
    "date": ("date", "日期"),
    "time": ("time of day", "时间"),
    "shortcut": ("keyboard shortcut", "快捷键"),
    "number": ("number", "数字"),
    "creator": ("creator", "作者或开发者"),
}


def asked(question: str) -> list[Kind]:
    """The kinds of value a question asks for, most specific first (read from its first
    QUESTION_CHARS: the patterns' cost grows with the square of the text)."""
    question = question[:QUESTION_CHARS]
    found = [kind for kind in KINDS if kind.asks.search(question)]
    if PRICE in found and NUMBER in found:
        found.remove(NUMBER)
    if DATE in found and _ABOUT_VERSIONS.search(question):
        found[found.index(DATE)] = VERSIONED_DATE
    if NUMBER in found and SPAN.asks.search(question):
        found[found.index(NUMBER)] = SPAN
    return found


def lacking(question: str, sentences: Iterable[str]) -> list[str]:
    """The kinds the question asks for that none of `sentences` gives (their names)."""
    kinds = asked(question)
    if not kinds:
        return []
    said = list(sentences)
    echoed = echoed_words(question)
    return [
        kind.name for kind in kinds if not any(gives(kind, sentence, echoed) for sentence in said)
    ]


def echoed_words(question: str) -> set[str]:
    """The question's own words, stop words aside: a value made of them gives nothing
    ("2.0" of "When is 2.0 out?"), but the "a" of "split a pane" is not the key of
    Ctrl+a."""
    return set(_WORDS.findall(question.lower())) - STOPWORDS


def gives(kind: Kind, sentence: str, echoed: set[str] = frozenset(), figure: bool = False) -> bool:
    """Whether a sentence gives a value of this kind. A value made of the question's own
    words (`echoed`) does not count: "2.0" does not say when 2.0 comes out. With `figure`,
    a number must be written in digits ("2 seconds", not "at once")."""
    if kind.beside is not None and set(_WORDS.findall(sentence.lower())) & echoed:
        # a name of the sentence's own, not the one asked about ("Infinite Jest")
        named = (set(_WORDS.findall(m.group().lower())) for m in kind.beside.finditer(sentence))
        if any(not words <= echoed for words in named):
            return True
    echoed = echoed if kind.echoes else frozenset()
    return any(
        not set(_WORDS.findall(found.group().lower())) & echoed
        and (not figure or kind.name != "number" or any(c.isdigit() for c in found.group()))
        for found in kind.gives.finditer(sentence)
    )


_WORDS = re.compile(r"\w+")
