"""The [n] citations in a model's reply and in notes' own text.

A reply may cite sources that were never given ([7] of 5) or write citations in many
shapes ([1, 2], 【1】, [^1]); they are checked against 1..k and written [n]. A note's own
bracketed numbers are neutralised so that, quoted, they never read as a citation.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# [1] [1][2] [1, 2] [1-3] [^1] [Source 2] 【1】 ［1，2］ — numbers joined by , ; 、 - – ~ "and".
_NUMBERS = (  # any count of digits: [99999] is an invalid citation, not plain text
    r"\s*(?:\^|sources?\s*|来源\s*)?(\d+(?:\s*(?:[,，、;；\-–—~～]|and|to)\s*\d+)*)\s*"
)
ONE_CITATION = rf"\[{_NUMBERS}\]|【{_NUMBERS}】|［{_NUMBERS}］"
CITATION = re.compile(ONE_CITATION, re.IGNORECASE)
_CITATION_RUN = re.compile(rf"(?:{ONE_CITATION})(?:[ \t]*(?:{ONE_CITATION}))*", re.IGNORECASE)
CODE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?(?:^ {0,3}\1[ \t]*$|\Z)|`[^`\n]+`", re.M | re.S)
MAX_RANGE = 50


@dataclass(frozen=True)
class CitationCheck:
    text: str  # with the invalid numbers removed and each citation written [n][m]
    cited: list[int]  # valid numbers, in order of first appearance
    invalid: list[int]  # numbers outside 1..k, in order of first appearance


# A reference list a model writes under its answer ("References:", "[1] notes/a.md"):
# askmd shows its own, checked one; the model's may name files that do not exist.
_OWN_LIST_HEAD = re.compile(
    r"^\s*(?:#+\s*)?[*_]*(?:references?|sources?|citations?|参考(?:资料|文献)?|来源|引用)[*_]*"
    r"\s*[:：]?\s*$",
    re.I,
)
_OWN_LIST_LINE = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\[\d+\]|【\d+】|［\d+］)[:：]?\s+\S*"
    r"(?:\.(?:md|markdown|txt|pdf|docx?|html?)\b|\s›\s)",
    re.I,
)


def without_reference_list(text: str) -> str:
    """The answer without the reference list a model wrote itself: its lines that give a
    citation number a file ("[1] homelab/backup.md › Restic"), and the heading above them."""
    lines = text.split("\n")
    kept = [line for line in lines if not _OWN_LIST_LINE.match(line)]
    if len(kept) == len(lines):
        return text
    while kept and (not kept[-1].strip() or _OWN_LIST_HEAD.match(kept[-1])):
        kept.pop()
    return "\n".join(kept)


def check_citations(text: str, k: int) -> CitationCheck:
    """Keep citations of sources 1..k, drop the rest; code spans are left alone.

    >>> check_citations("Port 8420 [1, 7]. Redis 【2】.", 2).text
    'Port 8420 [1]. Redis [2].'
    """
    text = _visible_brackets(text)
    code: list[tuple[int, int]] = []
    cited: list[int] = []
    invalid: list[int] = []

    def replace(match: re.Match) -> str:
        if any(start <= match.start() < end for start, end in code):
            return match.group()
        numbers = cited_numbers(match.group())
        keep = []
        for n in numbers:
            bucket = keep if 1 <= n <= k else invalid
            if n not in bucket:
                bucket.append(n)
        for n in keep:
            if n not in cited:
                cited.append(n)
        return "".join(f"[{n}]" for n in keep) or "\0"  # \0: removed, tidy the space below

    replaced, previous = text, None
    while replaced != previous:  # removing "[7]" from "[1 [7]]" makes a new citation
        previous = replaced
        code[:] = [m.span() for m in CODE.finditer(replaced)]
        replaced = re.sub(r"[ \t]*\0", "", _CITATION_RUN.sub(replace, replaced))
    return CitationCheck(replaced, cited, list(dict.fromkeys(invalid)))


def cited_numbers(run: str) -> list[int]:
    """Every number a run of adjacent citations names, ranges expanded, in order."""
    return [
        n
        for m in CITATION.finditer(run)
        for n in _expand(next(g for g in m.groups() if g is not None))
    ]


def _expand(group: str) -> list[int]:
    numbers: list[int] = []
    for part in re.split(r"\s*(?:[,，、;；]|and)\s*", group, flags=re.I):
        ends = [int(x) for x in re.split(r"\s*(?:[\-–—~～]|to)\s*", part, flags=re.I) if x]
        if len(ends) == 2 and 0 <= abs(ends[1] - ends[0]) <= MAX_RANGE:
            low, high = sorted(ends)
            numbers.extend(range(low, high + 1))
        else:
            numbers.extend(ends)
    return numbers


_BRACKETED = re.compile(r"[\[【［][^\]】］\n]{0,60}[\]】］]")


def _visible_brackets(text: str) -> str:
    """Brackets without the invisible format characters inside them: "[\u200b9]" is a
    citation of 9 to a reader, so it must be one to the checker too."""
    return _BRACKETED.sub(
        lambda m: "".join(c for c in m.group() if unicodedata.category(c) != "Cf"), text
    )


_PLAIN_NUMBER = {"[": "(", "]": ")", "【": "（", "】": "）", "［": "（", "］": "）"}


def neutralise_citations(text: str) -> str:
    """Note text with its own bracketed numbers written in parentheses, outside code.

    A note saying "30 days [2]" means its own footnote, not source 2 of an answer: quoted
    in an answer or shown to the model as a source, it must not read as a citation.
    "(2)" reads naturally and no citation pattern matches it.
    """
    text = _visible_brackets(text)
    code = [m.span() for m in CODE.finditer(text)]

    def plain(match: re.Match) -> str:
        if any(start <= match.start() < end for start, end in code):
            return match.group()
        return "".join(_PLAIN_NUMBER.get(c, c) for c in match.group())

    return CITATION.sub(plain, text)
