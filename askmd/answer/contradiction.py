"""A claim that copies its passage with one thing changed: a number, a unit or period,
or a negation the passage does not have ("…is never replaced…every decade [1]" over
"The facilities team replaces the toner every month.").

Meaning alone does not see these: the changed sentence stays close to the one it copies,
often closer than a right paraphrase. So the claim's figures, its units and periods, and
its negation are read against the passage's as words.
"""

from __future__ import annotations

import re

_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")
# Units and periods, by family: a claim's unit the passage lacks, where the passage gives
# another of the same family, is a changed unit. Singular forms; plurals are folded.
_FAMILIES = {
    "time": "second minute hour day night week fortnight month quarter year decade century "
    "秒 分钟 小时 天 周 星期 月 季度 年",
    "size": "byte kb mb gb tb kib mib gib tib 字节",
    "length": "mm cm km metre meter inch foot feet mile 毫米 厘米 公里 米",
    "weight": "mg kg gram kilogram pound ounce 克 公斤 斤",
    "temperature": "°c °f celsius fahrenheit 度",
}
_UNIT = {word: family for family, words in _FAMILIES.items() for word in words.split()}
# "monthly" is "every month": the same period
_SAME = {"daily": "day", "nightly": "night", "hourly": "hour", "weekly": "week",
         "monthly": "month", "quarterly": "quarter", "yearly": "year", "annually": "year",
         "annual": "year", "metres": "metre", "meters": "meter", "feet": "foot"}  # fmt: skip
_LATIN_WORD = re.compile(r"°?[a-z]+", re.I)
_CJK_UNITS = sorted((w for w in _UNIT if not w.isascii()), key=len, reverse=True)
_NEGATION = re.compile(
    r"\b(?:not|never|no|none|neither|nor|cannot|without)\b|n't\b|[不没沒未无無别別非勿]", re.I
)


def contradicts(claim: str, passage: str, closest: str) -> str:
    """What the claim changes of the passage ("number 2", "unit decade", "negation"),
    or "" when it changes none of them. `closest` is the passage's sentence nearest the
    claim, where a negation would have to be."""
    held = {_value(n) for n in _NUMBER.findall(passage)}
    for number in _NUMBER.findall(claim):
        if _value(number) not in held:
            return f"number {number}"
    theirs = _units(passage)
    for unit, family in _units(claim).items():
        if unit not in theirs and family in theirs.values():
            return f"unit {unit}"
    if _NEGATION.search(claim) and not _NEGATION.search(closest):
        return "negation"
    return ""


def _value(number: str) -> float:
    try:
        return float(number.replace(",", ""))
    except ValueError:
        return float("nan")


def _units(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for word in _LATIN_WORD.findall(text.lower()):
        word = _SAME.get(word, word)
        for form in (word, word[:-1] if word.endswith("s") else word, word.removesuffix("es")):
            if form in _UNIT:
                found[form] = _UNIT[form]
                break
    for unit in _CJK_UNITS:
        if unit in text:
            found[unit] = _UNIT[unit]
    return found
