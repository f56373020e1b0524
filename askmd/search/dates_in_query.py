"""The day or period a question names: "January 7, 2026", "2026年3月", "yesterday", "上周".

Pure: the question and today's date in, a Period (first and last day, inclusive) out.
Several dates in one question ("between March 3 and March 7") give the span from the
first to the last. A day written without its year ("1月7日", "March 3") takes the year
written elsewhere in the question, else the latest such day that is not after today:
people ask about days gone by. Weeks run Monday to Sunday.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from askmd.errors import BadRequest
from askmd.read.dates import MONTH_NAME, MONTHS
from askmd.search import counts

TODAY = "ASKMD_TODAY"  # fixes "today" (YYYY-MM-DD), for tests and measurements


@dataclass(frozen=True)
class Period:
    since: str  # ISO dates, both days included
    until: str

    def to_json(self) -> dict:
        return {"since": self.since, "until": self.until}

    def holds(self, date: str) -> bool:
        return self.since <= date <= self.until


def today() -> dt.date:
    """Today, or the day ASKMD_TODAY names."""
    fixed = os.environ.get(TODAY, "").strip()
    if not fixed:
        return dt.date.today()
    try:
        return dt.date.fromisoformat(fixed)
    except ValueError:
        raise BadRequest(f"{TODAY}={fixed!r} is not a date: give it as YYYY-MM-DD") from None


def parse_day(text: str, what: str = "the date") -> str:
    """A date given by hand (`--since`, `/until`, an API field): ISO, or any spelling
    `understand` reads, nothing else with it ("-5 days ago" is not 5 days ago). A period
    ("last week", 上个月) gives its first day to "since", its last to "until". Raises
    BadRequest in one line otherwise."""
    period = understand(text.strip(), today())
    left = without_dates(text.strip(), today()) if period is not None else ""
    if period is None or re.search(r"[^\s.,]", left):
        raise BadRequest(f"{what} {text!r} is not a day: give it as YYYY-MM-DD")
    if period.since == period.until or what in ("since", "until"):
        return period.until if what == "until" else period.since
    raise BadRequest(f"{what} {text!r} is a period, not a day: give it as YYYY-MM-DD")


def _day(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def _month_span(year: int, month: int) -> tuple[dt.date, dt.date] | None:
    if not 1 <= month <= 12:
        return None
    first = dt.date(year, month, 1)
    after = dt.date(year + month // 12, month % 12 + 1, 1)
    return first, after - dt.timedelta(days=1)


def _month(value: str) -> int:
    return int(value) if value.isdigit() else MONTHS[value.lower().rstrip(".")]


_B = r"(?<![\w\d])"  # not inside a word or number (CJK characters are \w: only digits here)
_E = r"(?![\d])"
_ENGLISH_END = r"(?![\w])"

# Full dates: (pattern, group order). Each match is one day.
_FULL = [
    (re.compile(_B + r"(\d{4})-(\d{1,2})-(\d{1,2})" + _E), "ymd"),
    (re.compile(_B + r"(\d{4})/(\d{1,2})/(\d{1,2})" + _E), "ymd"),
    (re.compile(r"(?<!\d)(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"), "ymd"),
    (
        re.compile(
            rf"(?<![\w])({MONTH_NAME})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})" + _E, re.I
        ),
        "mdy",
    ),
    (
        re.compile(
            rf"{_B}(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({MONTH_NAME})\.?,?\s+(\d{{4}})" + _E,
            re.I,
        ),
        "dmy",
    ),
]
# Days without a year.
_NO_YEAR = [
    (re.compile(r"(?<![\d年])(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"), "md"),
    (
        re.compile(
            rf"(?<![\w])({MONTH_NAME})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?![\d:])" + _ENGLISH_END,
            re.I,
        ),
        "md",
    ),
    (
        re.compile(
            rf"{_B}(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({MONTH_NAME})\.?" + _ENGLISH_END,
            re.I,
        ),
        "dm",
    ),
]
# Months.
_MONTHS = [
    (re.compile(rf"(?<![\w])({MONTH_NAME})\.?,?\s+(?:of\s+)?(\d{{4}})" + _E, re.I), "my"),
    (re.compile(r"(?<!\d)(\d{4})\s*年\s*(\d{1,2})\s*月(?!\s*\d)"), "ym"),
]
_YEAR = re.compile(r"(?<![\d/-])(\d{4})(?:\s*年|(?![\d/-]))")

_WEEKDAYS_EN = "monday tuesday wednesday thursday friday saturday sunday".split()
_WEEKDAYS_ZH = "一二三四五六日"  # 天 is 日
# A question about the past: "on Monday" then names a day gone by, not what recurs on
# Mondays ("What happens on Friday?", "周一的例会几点开始？").
_PAST = re.compile(r"\b(?:did|was|were|had|happened|went|ate|met|bought|saw)\b|[了过]", re.I)

_RELATIVE = [  # (pattern, what) tried in order; longer phrases first
    (re.compile(r"\blast\s+weekend\b|上个?周末", re.I), "weekend-1"),
    (re.compile(r"\b(?:over|on|at|this)\s+(?:the\s+)?weekend\b|周末", re.I), "weekend"),
    (
        re.compile(
            rf"\b(last|on)\s+({'|'.join(_WEEKDAYS_EN)})\b"
            # not a count of weeks or "every" ("一周一次", "每周一")
            rf"|(上个?|这个?|本)?(?<![一二两三四五六七八九十几每])(?:周|星期|礼拜)([{_WEEKDAYS_ZH}天])",
            re.I,
        ),
        "weekday",
    ),
    (re.compile(r"大前天", re.I), "day-3"),
    (re.compile(r"\bday before yesterday\b|前天", re.I), "day-2"),
    (re.compile(r"\byesterday\b|昨天|昨日", re.I), "day-1"),
    (re.compile(r"\btoday\b|今天|今日", re.I), "day0"),
    (re.compile(r"\blast week\b|\bprevious week\b|上周|上个?星期|上个?礼拜", re.I), "week-1"),
    (re.compile(r"\bthis week\b|本周|这周|这个?星期", re.I), "week0"),
    (re.compile(r"\blast month\b|\bprevious month\b|上个?月", re.I), "month-1"),
    (re.compile(r"\bthis month\b|本月|这个月", re.I), "month0"),
    (re.compile(r"\blast year\b|去年", re.I), "year-1"),
    (re.compile(r"\bthis year\b|今年", re.I), "year0"),
    (
        # the whole count: "five days ago" inside "fifty-five days ago" is not one
        re.compile(
            rf"(?<![\w-]){counts.RANGE_EN}\s+days?\s+ago\b|(?<![\d-]){counts.NUMBER_ZH}\s*天前",
            re.I,
        ),
        "days-ago",
    ),
]


def _within_calendar(kind: str, found: re.Match, today: dt.date) -> tuple[dt.date, dt.date] | None:
    """`_relative`, or None where the day it names is not in the calendar (yesterday of
    0001-01-01, this week of 9999-12-31): the question is then read without it."""
    try:
        return _relative(kind, found, today)
    except (OverflowError, ValueError):
        return None


def _relative(kind: str, found: re.Match, today: dt.date) -> tuple[dt.date, dt.date] | None:
    """The period a relative phrase names, or None when, read in its question, it names
    no day ("on Monday" in "What happens on Monday?")."""
    past = bool(_PAST.search(found.string))
    if kind == "weekend-1":  # the weekend of last week
        saturday = today - dt.timedelta(days=today.weekday() + 2)
        return saturday, saturday + dt.timedelta(days=1)
    if kind == "weekend":  # the latest one begun: "周末做了什么？"
        if not past:
            return None
        saturday = today - dt.timedelta(days=(today.weekday() - 5) % 7)
        return saturday, saturday + dt.timedelta(days=1)
    if kind == "weekday":
        said, english, before, chinese = found.groups()
        if english:
            if said.lower() == "on" and not past:
                return None
            target = _WEEKDAYS_EN.index(english.lower())
        else:
            target = _WEEKDAYS_ZH.index(chinese.replace("天", "日"))
            monday = today - dt.timedelta(days=today.weekday())
            if before and before.startswith("上"):  # last week's
                day = monday - dt.timedelta(days=7 - target)
                return day, day
            if before:  # this week's
                day = monday + dt.timedelta(days=target)
                return day, day
            if not past:
                return None
        # the latest such day before today (today is "today")
        day = today - dt.timedelta(days=(today.weekday() - target) % 7 or 7)
        return day, day
    if kind == "days-ago":  # before "day…": "days-ago" starts with it too
        first, second = found.group(1), found.group(2)
        if first is not None:
            back = counts.english_range(first, second)
        else:
            back = counts.chinese_range(re.sub(r"\s*天前$", "", found.group()))
        if back is None:  # a count it cannot read is no date, never today
            return None
        return today - dt.timedelta(days=back[1]), today - dt.timedelta(days=back[0])
    if kind.startswith("day"):
        day = today + dt.timedelta(days=int(kind[3:]))
        return day, day
    if kind.startswith("week"):
        monday = today - dt.timedelta(days=today.weekday()) + dt.timedelta(weeks=int(kind[4:]))
        return monday, monday + dt.timedelta(days=6)
    if kind.startswith("month"):
        year, month = today.year, today.month + int(kind[5:])
        if month < 1:
            year, month = year - 1, month + 12
        span = _month_span(year, month)
        assert span is not None
        return span
    year = today.year + int(kind[4:])
    return dt.date(year, 1, 1), dt.date(year, 12, 31)


Held = Callable[[str, str], bool]  # whether any note or entry is dated in [since, until]


def understand(query: str, today: dt.date, held: Held | None = None) -> Period | None:
    """The period the question names, or None when it names no date. A day written
    without its year is, given `held`, the latest such day the notes hold (asked in
    December, "April 6" is last year's entry when this year has none)."""
    spans, _ = _read(query, today, held)
    if not spans:
        return None
    return Period(min(s for s, _ in spans).isoformat(), max(u for _, u in spans).isoformat())


# what leads into the words of a date: "on", "in the", "the" ("the day before yesterday")
_BEFORE_A_DATE = r"\b(?:(?:on|in|from|during|of)\s+)?(?:the\s+)?$|\b(?:on|in|from|during|of)$"


def without_dates(query: str, today: dt.date) -> str:
    """The question with the words that name its dates taken out ("on", "in the" before
    them too): what it asks of a passage already known to be of that day."""
    _, taken = _read(query, today)
    for start, end in sorted(taken, reverse=True):
        before = re.sub(_BEFORE_A_DATE, "", query[:start], flags=re.I)
        query = before + query[end:]
    return re.sub(r"\s+([?!.,;:？。，])", r"\1", re.sub(r"\s+", " ", query)).strip()


def days_written(text: str, year: int | None = None) -> list[str]:
    """The days a passage's sentence spells out (ISO), in the order written: full dates,
    and with `year` (its note's) the days written without one ("3月2日", "March 2").
    Relative words ("yesterday") are not read: in a note they meant the day it was
    written, not today."""
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []
    patterns = [*_FULL, *(_NO_YEAR if year is not None else [])]
    for pattern, order in patterns:
        for match in pattern.finditer(text):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            parts = dict(zip(order, match.groups(), strict=True))
            day = _day(int(parts.get("y", year or 0)), _month(parts["m"]), int(parts["d"]))
            taken.append(match.span())
            if day is not None:
                found.append((match.start(), day.isoformat()))
    return [day for _, day in sorted(found)]


def not_days(query: str, today: dt.date) -> list[str]:
    """The dates the question spells that no calendar has ("2025-02-30", "2026年1月45日",
    "31 April"), as written: a slip of the keys asks about no day, and read as none the
    question would be answered from whatever days were found."""
    unreal: list[str] = []
    _read(query, today, unreal=unreal)
    return unreal


def _read(
    query: str, today: dt.date, held: Held | None = None, unreal: list[str] | None = None
) -> tuple[list[tuple[dt.date, dt.date]], list[tuple[int, int]]]:
    """The periods the question names, and where it names them (and in `unreal` the
    spellings of days and months that do not exist)."""
    spans: list[tuple[dt.date, dt.date]] = []
    taken: list[tuple[int, int]] = []  # the characters already read as a date

    def free(found: re.Match) -> bool:
        return not any(found.start() < end and start < found.end() for start, end in taken)

    def add(found: re.Match, span: tuple[dt.date, dt.date] | None) -> None:
        taken.append(found.span())
        if span is not None:
            spans.append(span)
        elif unreal is not None:
            unreal.append(found.group(0).strip())

    for pattern, order in _FULL:
        for found in pattern.finditer(query):
            if free(found):
                parts = dict(zip(order, found.groups(), strict=True))
                day = _day(int(parts["y"]), _month(parts["m"]), int(parts["d"]))
                add(found, (day, day) if day else None)
    for pattern, order in _MONTHS:
        for found in pattern.finditer(query):
            if free(found):
                parts = dict(zip(order, found.groups(), strict=True))
                add(found, _month_span(int(parts["y"]), _month(parts["m"])))
    written_year = None
    for found in _YEAR.finditer(query):
        if free(found) and 1900 <= int(found.group(1)) <= 2200:
            written_year = int(found.group(1))
    for pattern, order in _NO_YEAR:
        for found in pattern.finditer(query):
            if free(found):
                parts = dict(zip(order, found.groups(), strict=True))
                month, of_month = _month(parts["m"]), int(parts["d"])
                day = _undated_year(month, of_month, written_year, today)
                if written_year is None and held is not None:
                    day = _held_year(month, of_month, today, held) or day
                if day is None and written_year is None and _day(2000, month, of_month):
                    taken.append(found.span())  # 29 February, in no year near: no period
                    continue
                add(found, (day, day) if day else None)
    for pattern, kind in _RELATIVE:
        for found in pattern.finditer(query):
            if free(found) and (span := _within_calendar(kind, found, today)) is not None:
                add(found, span)
    for found in _YEAR.finditer(query):  # "in 2025": the whole year, when nothing finer
        year = int(found.group(1))
        if not spans and free(found) and 1900 <= year <= 2200:
            if re.search(rf"\b(?:in|during)\s+{year}\b|{year}\s*年", query, re.I):
                add(found, (dt.date(year, 1, 1), dt.date(year, 12, 31)))
    return spans, taken


YEARS_BACK = 30  # how far back a day without its year is looked for in the notes


def _held_year(month: int, day: int, today: dt.date, held: Held) -> dt.date | None:
    """The latest day of that month and day, not after today, that the notes hold."""
    for back in range(YEARS_BACK + 1):
        earlier = _day(today.year - back, month, day)  # 29 February: leap years only
        if (
            earlier is not None
            and earlier <= today
            and held(earlier.isoformat(), earlier.isoformat())
        ):
            return earlier
    return None


def _undated_year(month: int, day: int, year: int | None, today: dt.date) -> dt.date | None:
    """A day written without its year: in the year the question names, else the latest
    one not after today."""
    if year is not None:
        return _day(year, month, day)
    this = _day(today.year, month, day)
    if this is not None and this <= today:
        return this
    return _day(today.year - 1, month, day)
