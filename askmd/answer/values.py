"""The values a question asks of a thing beyond answer_kinds' kinds: a phone number, a
port, an address on the network, an email, a password, a code, a measure.

"What's the electrician's phone number?" asks for no date, price or count, yet it asks
for a value: one the notes give for the plumber and the gas board, and not for an
electrician. These attributes are what people keep in notes of contacts, machines,
bookings and health. Each is a `Kind` as answer_kinds has them: how a question asks for
it, and how a unit of text gives one. They are read only for the neighbour check
(checks/neighbour.py): a unit that gives the value must be about the thing asked.
"""

from __future__ import annotations

import re

from askmd.answer import answer_kinds
from askmd.answer.answer_kinds import _FIGURE, DATE, TIME, Kind

PHONE = Kind(
    "phone",
    re.compile(
        r"\b(?:phone|mobile|cell|telephone|tel)(?: ?numbers?| ?no\.?)?\b|\bnumber to call\b"
        r"|\bcall (?:him|her|them)\b|电话(?:号码)?|手机(?:号码?)?|联系方式|座机",
        re.IGNORECASE,
    ),
    re.compile(r"\+?\(?\d[\d ()\-]{5,}\d"),
)
PORT = Kind("port", re.compile(r"\bports?\b|端口(?:号)?", re.IGNORECASE), re.compile(_FIGURE))
ADDRESS_IP = Kind(
    "ip",
    re.compile(r"\bIP(?:v[46])?(?: address)?\b|\bip addr\b|IP ?地址", re.IGNORECASE),
    re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b|\b[0-9a-f]{1,4}(?::[0-9a-f]{0,4}){2,7}\b", re.I),
)
EMAIL = Kind(
    "email",
    re.compile(r"\be-?mail(?: address)?\b|邮箱|电子邮件|电邮", re.IGNORECASE),
    re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+"),
)
PASSWORD = Kind(
    "password",
    re.compile(r"\b(?:password|passcode|passphrase|pin(?: code)?|pw)\b|密码|口令", re.I),
    re.compile(
        r"(?i:\b(?:password|passcode|passphrase|pin|pw|pwd|key)\b\s*(?:is\s*)?[:=：]?\s*\S)"
        r"|密码\s*(?:是|为|[:：=])?\s*\S|`[^`\s]{4,}`"
    ),
)
CODE = Kind(
    "code",
    re.compile(
        r"\b(?:booking|reference|confirmation|policy|account|order|membership|serial"
        r"|registration|reg|licen[cs]e|plate|model|tracking)(?: ?(?:numbers?|no\.?|codes?|ref))\b"
        r"|\b(?:booking|confirmation) ref\w*\b|\b(?:reg|registration|licen[cs]e) plate\b"
        r"|\bmodel\b|预订号|订单号|确认号|保单号|车牌(?:号)?|型号|账号|编号|会员号|单号",
        re.IGNORECASE,
    ),
    re.compile(
        r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9][\w-]{2,}|[\u4e00-\u9fff][A-Z0-9·]{4,}"
    ),
)
MEASURE = Kind(
    "measure",
    re.compile(
        r"\b(?:dose|dosage|weigh|weighs|weight|size|pressure|capacity|height|width|length"
        r"|mileage|temperature|voltage|wattage|resolution|speed)\b"
        r"|剂量|用量|体重|重量|尺寸|大小|胎压|容量|身高|里程|温度|功率|分辨率|速度",
        re.IGNORECASE,
    ),
    re.compile(_FIGURE),
)
# When something is done, asked with the verb that says it ("When does our contract
# renew?", "几点可以办入住？"); answer_kinds asks for a date only of events it lists.
WHEN = Kind(
    "when",
    re.compile(
        r"\bwhen (?:does|do|did|will|is|are|was|were|should|must|can)\b[^?!]{0,60}?"
        r"\b(?:renew|expir|due|start|begin|end|open|close|land|arriv|leav|depart|finish|launch"
        r"|releas|happen|run|check|meet|take|pick|collect|service|inspect)\w*"
        r"|什么时候|何时|哪天|几号|几点|哪一天|啥时候|几月",
        re.IGNORECASE,
    ),
    re.compile(f"{DATE.gives.pattern}|{TIME.gives.pattern}"),
)
VALUES = (PHONE, PORT, ADDRESS_IP, EMAIL, PASSWORD, CODE, MEASURE, WHEN)
LABELS = {
    "phone": ("phone number", "电话"),
    "port": ("port", "端口"),
    "ip": ("IP address", "IP 地址"),
    "email": ("email address", "邮箱"),
    "password": ("password", "密码"),
    "code": ("number or code", "编号"),
    "measure": ("measure", "数值"),
    "when": ("date or time", "日期或时间"),
}
QUESTION_CHARS = 300


def described(kinds: list[str], cjk: bool) -> str:
    """The kinds, named in the question's language to follow "no": "price or date",
    "价格或日期"."""
    labels = [{**answer_kinds.LABELS, **LABELS}[k][1 if cjk else 0] for k in kinds]
    if cjk:
        return "或".join(labels)
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " or " + labels[-1]


def asked(question: str) -> list[Kind]:
    """The values a question asks for (read from its first QUESTION_CHARS)."""
    question = question[:QUESTION_CHARS]
    return [kind for kind in VALUES if kind.asks.search(question)]


# A figure is a port, a measure or a code only where the unit names it so (its text, a
# table's header, a heading): "4000 行" is no port. A phone number, an address on the
# network, an email or a password is seen by its shape alone.
NAMED = {
    "port": re.compile(r"\bports?\b|端口|(?<![\d.]):\d{2,5}\b|\blisten", re.IGNORECASE),
    "measure": MEASURE.asks,
    "code": CODE.asks,
}


def gives(kind: Kind, text: str, context: str, echoed: set[str]) -> bool:
    """Whether a unit (its `text`, read with its `context`) gives a value of this kind."""
    named = NAMED.get(kind.name)
    if named is not None and not named.search(context):
        return False
    return answer_kinds.gives(kind, text, echoed)
