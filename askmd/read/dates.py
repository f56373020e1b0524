"""The date a note or a dated entry in it is about, from the spellings journals use.

Pure functions, no I/O: a file name, front matter values and headings in, ISO
`YYYY-MM-DD` strings (or None) out. A date must be a real day (2026-02-30 is not one),
and it must open the text it is read from: `## 2026-01-07 Tuesday` is a dated entry,
`## Notes on the 2026-01-07 release` is not, since a heading that only mentions a day
is about something else.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],  # fmt: skip
        start=1,
    )
    for name in names
}
MONTH_NAME = "|".join(sorted(MONTHS, key=len, reverse=True))
_END = r"(?![\d\w])"  # the date is not the start of a longer number or word

# Each spelling as (pattern, order of year, month, day in its groups), tried at the start.
_SPELLINGS = [
    (re.compile(r"(\d{4})[-_./](\d{1,2})[-_./](\d{1,2})" + r"(?!\d)"), "ymd"),
    (re.compile(r"(\d{4})(\d{2})(\d{2})(?![\d])"), "ymd"),
    (re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]?"), "ymd"),
    (
        re.compile(rf"({MONTH_NAME})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})" + _END, re.I),
        "mdy",
    ),
    (
        re.compile(rf"(\d{{1,2}})(?:st|nd|rd|th)?\s+({MONTH_NAME})\.?,?\s+(\d{{4}})" + _END, re.I),
        "dmy",
    ),
]
_WEEKDAY = re.compile(
    r"(?:mon|tues?|wed(?:nes)?|thu(?:rs)?|fri|sat(?:ur)?|sun)(?:day)?\.?,?\s+", re.I
)  # "Tuesday, January 7, 2026": the weekday before the date is skipped


def make(year: int, month: int, day: int) -> str | None:
    """The ISO date, or None when there is no such day."""
    try:
        return dt.date(year, month, day).isoformat()
    except ValueError:
        return None


def _month(value: str) -> int:
    return int(value) if value.isdigit() else MONTHS[value.lower().rstrip(".")]


def leading(text: str) -> str | None:
    """The date `text` opens with (after a weekday, if one is written first), or None."""
    text = text.strip()
    text = _WEEKDAY.sub("", text, count=1) if _WEEKDAY.match(text) else text
    for pattern, order in _SPELLINGS:
        found = pattern.match(text)
        if found:
            parts = dict(zip(order, found.groups(), strict=True))
            return make(int(parts["y"]), _month(parts["m"]), int(parts["d"]))
    return None


def from_name(source: str) -> str | None:
    """The date in a file's name: `2026-01-07.md`, `20260107.md`, `2026-01-07 Tuesday.md`,
    Logseq's `2026_01_07.md`, or a name that ends with an ISO date (`Journal 2026-01-07`)."""
    stem = PurePosixPath(source).stem
    found = leading(stem)
    if found:
        return found
    tail = re.search(r"(\d{4})-(\d{2})-(\d{2})$", stem)
    return make(*map(int, tail.groups())) if tail else None


def _value(value: object) -> str | None:
    """A front matter value as a date: YAML's own dates, or a string opening with one."""
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        return leading(value)
    return None


FRONT_MATTER_KEYS = ("date", "created", "updated")


def from_front_matter(meta: Mapping) -> str | None:
    """`date`, else `created`, else `updated` (Obsidian's property names). `date` is the
    day the note says it is about; `created` is when it was begun, usually that day or
    close; `updated` moves with every edit, so it dates the note only when nothing else
    does."""
    for key in FRONT_MATTER_KEYS:
        found = _value(meta.get(key))
        if found:
            return found
    return None


def of_note(source: str, meta: Mapping) -> str | None:
    """The note's date: front matter `date` first (the user wrote it down as the note's
    day), then the file name (a daily note's name is its day, while `created` may be the
    day after, when a journal is written up late), then `created`, then `updated`."""
    return (
        _value(meta.get("date"))
        or from_name(source)
        or _value(meta.get("created"))
        or _value(meta.get("updated"))
    )


def of_chunk(note_date: str | None, heading_chain: Iterable[str]) -> str | None:
    """A chunk's date: that of the nearest heading above it that is a date (an entry of a
    monthly file or a running journal), else its note's."""
    for heading in reversed(list(heading_chain)):
        found = leading(heading)
        if found:
            return found
    return note_date
