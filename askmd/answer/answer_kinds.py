"""The kind of value a question asks for, and whether the closest sentences give one.

"How much does Obsidian Sync cost?", "When is version 2.0 coming out?" and "What's the
shortcut for the graph view?" come close in meaning to passages about Sync, releases
and hotkeys, and name nothing the notes lack, so neither the cosines nor the names
(names.py) can tell that no passage answers them. They ask for a value of a kind: a
price, a date, a key. When none of the sentences closest to the question holds a value
of that kind, the notes do not say it. This is the expected answer type of classic
question answering, kept to kinds a pattern can see in English and Chinese text:

- a price: "how much does … cost", 多少钱; given by a currency and a figure, or "free";
- a date: "what year", "when was … released", 哪一年, 什么时候发布; given by a year, a
  month, a date, a version or a period (世纪, 时期);
- a keyboard shortcut: "shortcut", "hotkey", 快捷键; given by a modifier key (Ctrl, ⌘),
  a function key, or a key in backticks;
- a person or organisation who made something: "who created", 谁开发的, 哪家公司; given by
  a capitalised name in English text (Chinese names cannot be told from other words, so
  a Chinese passage always may give one);
- a number: "how many", "how long", 多少, 几个; given by a figure or a number word.

Questions about conditions ("When does onload run?") and people in general ("Who can
see my published notes?") ask for no kind: the first words are read with the verbs that
make them ask for a value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_CJK = r"\u3400-\u9fff"


@dataclass(frozen=True)
class Kind:
    """A kind of value: how a question asks for it, and how a sentence gives it."""

    name: str
    asks: re.Pattern[str]
    gives: re.Pattern[str]
    # whether a sentence in Chinese or Japanese may always give it (names: unseen there)
    cjk_gives: bool = False


_EVENT = (  # what happened once, on a date: "when was it released?"
    r"releas|come out|came out|coming out|launch|found|born|die[ds]?\b|introduc|add(ed)?\b|"
    r"publish|announc|ship|expir|deprecat|remov|creat|invent|built|written|establish|first"
)
_DUE = r"coming out|come out|releas|launch|due|expir|available"
_EVENT_ZH = (
    r"发布|推出|上市|成立|创立|创办|出生|诞生|去世|逝世|引入|加入|添加|新增|支持|弃用|废弃|"
    r"移除|删除|发明|写出|造出|建成|开通|问世|发行|到期|过期"
)
_MAKE = (  # what a person or an organisation did: "who wrote it?"
    r"found(ed|s)?|creat(ed|es)?|wr[io]te|invent(ed|s)?|made|makes|buil[td]s?|develop(ed|s)?|"
    r"maintain(ed|s)?|design(ed|s)?|own(ed|s)?|run(s)?|ran|lead(s)?|led|authored|discovered|"
    r"started|publish(ed|es)?"
)
_MAKER = r"author|creator|founder|maintainer|developer|inventor|owner|publisher|ceo|designer"
_MAKE_ZH = r"写|开发|创建|创立|创办|发明|维护|设计|做|制作|发现|编写|提出|出品|推出"

PRICE = Kind(
    "price",
    re.compile(
        r"\bhow much\b[^?!]*\b(cost|costs|charge|charges|pay|paid|price|priced|fee)\b"
        r"|\bhow expensive\b|\bwhat(?:'s| is| are)? the (price|cost|fee|pricing)s?\b"
        r"|\b(price|pricing|fee)s? (of|for)\b"
        r"|多少钱|几块钱|多少元|价格|售价|价钱|费用|收费|要花多少",
        re.IGNORECASE,
    ),
    re.compile(
        r"[$€£¥￥]\s?\d|\d\s?(usd|eur|gbp|rmb|cny|dollars?|euros?|cents?|元|美元|块|角|欧元)"
        r"|\bfree\b|免费|\bper (month|year|user|seat)\b|/\s?(month|mo|year|yr)\b|每月|每年",
        re.IGNORECASE,
    ),
)

DATE = Kind(
    "date",
    re.compile(
        r"\bwhat (year|date|day|month)\b|\bwhich (year|date|month|version|release)\b"
        r"|\bin what (year|version|release)\b|\bsince (when|which|what)\b|\bhow long ago\b"
        rf"|\bwhen (was|were|did|will)\b[^?!]*\b({_EVENT})|\bwhen (is|are)\b[^?!]*\b({_DUE})"
        r"|哪一?年|哪个年份|什么年份|几几年|几月几[号日]|哪一?天|什么日期|哪个版本|什么版本|几月份?"
        rf"|(什么时候|何时|啥时候|哪个时候)[^？?。]*({_EVENT_ZH})"
        rf"|({_EVENT_ZH})[^？?。]*(什么时候|何时|啥时候)",
        re.IGNORECASE,
    ),
    re.compile(
        r"(?<!\d)(1[5-9]\d\d|20\d\d)(?!\d)|\d{4}-\d\d|\d{1,2}/\d{1,2}/\d{2,4}"
        r"|\b(january|february|march|april|may|june|july|august|september|october|november"
        r"|december|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\b"
        r"|\bv?\d+\.\d+|\b(century|decade|quarter|spring|summer|autumn|winter|yesterday"
        r"|today|tomorrow|ago)\b"
        r"|\d+\s*[年月日号]|[一二三四五六七八九十〇零两]+\s*[年月日号]"
        r"|世纪|年代|时代|时期|年间|季度|[春夏秋冬][天季节]|[一-鿿]朝(?![向着])",
        re.IGNORECASE,
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
        r"|`(:?[^`\s]{1,2}|:[a-z]{1,4})`"
        r"|\b(Esc|Escape|Enter|Tab|Space|Spacebar|Backspace|Delete|Return)\b"
        r"|(?i:\b(esc|escape|enter|tab|space|spacebar|backspace|delete|return) key\b)"
    ),
)

PERSON = Kind(
    "person",
    re.compile(
        rf"\bwho(?:'s| is| was| has| had)? ({_MAKE})\b|\bwho (is|was|are|were) the ({_MAKER})s?\b"
        r"|\bwhich (company|organi[sz]ation|team|firm|person|people)\b"
        rf"|谁({_MAKE_ZH})|是谁({_MAKE_ZH})|由谁|({_MAKER}|作者|开发者|创始人|发明人|维护者)是谁"
        r"|哪家公司|哪个公司|什么公司|哪个组织|哪个团队|哪家机构",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b[A-Z][a-z]+(?: [A-Z]\.)? [A-Z][a-z]+|\b(Inc|Ltd|LLC|GmbH|Corp|Corporation|"
        r"Foundation|Labs|Team|Project|Software|Technologies)\b|@[A-Za-z0-9_-]{2,}"
    ),
    cjk_gives=True,
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
    re.compile(
        r"\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty"
        r"|forty|fifty|hundred|thousand|million|billion|dozen|once|twice|single|double|half"
        r"|unlimited|no limit|several|few|many|all|none|count|counts|counting|number of)\b"
        r"|[一二两三四五六七八九十百千万亿半]|次数|数量|个数|计数|统计",
        re.IGNORECASE,
    ),
)

# In this order: a price is also "how much", so a question that asks one asks no number.
KINDS = (PRICE, DATE, SHORTCUT, PERSON, NUMBER)
LABELS = {
    "price": ("price", "价格"),
    "date": ("date", "日期"),
    "shortcut": ("keyboard shortcut", "快捷键"),
    "person": ("name of a person or organisation", "人名或机构名"),
    "number": ("number", "数字"),
}


def described(kinds: list[str], cjk: bool) -> str:
    """The kinds, named in the question's language to follow "no": "price or date",
    "价格或日期"."""
    labels = [LABELS[k][1 if cjk else 0] for k in kinds]
    if cjk:
        return "或".join(labels)
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " or " + labels[-1]


def asked(question: str) -> list[Kind]:
    """The kinds of value a question asks for, most specific first."""
    found = [kind for kind in KINDS if kind.asks.search(question)]
    if PRICE in found and NUMBER in found:
        found.remove(NUMBER)
    return found


def lacking(question: str, sentences: Iterable[str]) -> list[str]:
    """The kinds the question asks for that none of `sentences` gives (their names)."""
    kinds = asked(question)
    if not kinds:
        return []
    said = list(sentences)
    echoed = set(_WORDS.findall(question.lower()))
    return [
        kind.name for kind in kinds if not any(gives(kind, sentence, echoed) for sentence in said)
    ]


def gives(kind: Kind, sentence: str, echoed: set[str] = frozenset()) -> bool:
    """Whether a sentence gives a value of this kind. A value made of the question's own
    words (`echoed`) does not count: "Obsidian Community" does not say who founded
    Obsidian, nor does "2.0" say when 2.0 comes out."""
    if kind.cjk_gives and _HAS_CJK.search(sentence):
        return True
    return any(
        not set(_WORDS.findall(found.group().lower())) & echoed
        for found in kind.gives.finditer(sentence)
    )


_WORDS = re.compile(r"\w+")
_HAS_CJK = re.compile(f"[{_CJK}]")
