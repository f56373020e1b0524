"""Dates in notes (file names, front matter, dated headings) and in questions, and the
--since/--until limits on every interface."""

from __future__ import annotations

import datetime as dt

import pytest

from askmd.read import dates, notes
from askmd.search.dates_in_query import Period, understand

# --- dates in notes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("journal/2026-01-07.md", "2026-01-07"),
        ("20260107.md", "2026-01-07"),
        ("daily/2026-01-07 Tuesday.md", "2026-01-07"),
        ("journals/2026_01_07.md", "2026-01-07"),
        ("Journal 2026-01-07.md", "2026-01-07"),
        ("January 7, 2026.md", "2026-01-07"),
        ("2026年1月7日.md", "2026-01-07"),
        ("2026-02-30.md", None),  # no such day
        ("notes/2026 plans.md", None),
        ("202601071200 zettel.md", None),  # a Zettelkasten id, not a day
        ("setup.md", None),
    ],
)
def test_date_from_file_name(name: str, expected: str | None) -> None:
    assert dates.from_name(name) == expected


def test_front_matter_prefers_date_then_created_then_updated() -> None:
    both = notes.parse(b"---\ncreated: 2026-01-08\ndate: 2026-01-07\n---\ntext\n", "a.md")
    assert both.date == "2026-01-07"
    created = notes.parse(b"---\nupdated: 2026-03-01\ncreated: 2026-01-08T09:30\n---\nx\n", "a.md")
    assert created.date == "2026-01-08"
    updated = notes.parse(b"---\nupdated: '2026-03-01'\n---\nx\n", "a.md")
    assert updated.date == "2026-03-01"
    spelled = notes.parse(b"---\ndate: January 7, 2026\n---\nx\n", "a.md")
    assert spelled.date == "2026-01-07"


def test_file_name_beats_created_but_not_date() -> None:
    late = notes.parse(b"---\ncreated: 2026-01-08\n---\nwritten up a day late\n", "2026-01-07.md")
    assert late.date == "2026-01-07"
    said = notes.parse(b"---\ndate: 2026-01-05\n---\nx\n", "2026-01-07.md")
    assert said.date == "2026-01-05"
    assert notes.parse(b"no dates here\n", "setup.md").date is None


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("2026-01-07", "2026-01-07"),
        ("2026-01-07 Tuesday", "2026-01-07"),
        ("Tuesday, January 7, 2026", "2026-01-07"),
        ("January 7, 2026", "2026-01-07"),
        ("Jan 7th 2026", "2026-01-07"),
        ("7 January 2026", "2026-01-07"),
        ("2026/1/7", "2026-01-07"),
        ("2026年1月7日", "2026-01-07"),
        ("2026年1月7日 星期二", "2026-01-07"),
        ("Notes on the 2026-01-07 release", None),
        ("Setup", None),
    ],
)
def test_dated_heading(heading: str, expected: str | None) -> None:
    assert dates.leading(heading) == expected


def test_a_dated_heading_beats_the_note_date() -> None:
    assert dates.of_chunk("2026-01-01", ["January", "2026-01-07"]) == "2026-01-07"
    assert dates.of_chunk("2026-01-01", ["2026-01-07", "Meeting"]) == "2026-01-07"
    assert dates.of_chunk("2026-01-01", ["Summary"]) == "2026-01-01"
    assert dates.of_chunk(None, ["Summary"]) is None


# --- dates in questions --------------------------------------------------------------------

TODAY = dt.date(2026, 3, 18)  # a Wednesday


def day(iso: str) -> Period:
    return Period(iso, iso)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("what did I do on January 7, 2026?", day("2026-01-07")),
        ("notes from 7 Jan 2026", day("2026-01-07")),
        ("what happened on 2026-01-07", day("2026-01-07")),
        ("meeting on 2026/1/7", day("2026-01-07")),
        ("2026年1月7日做了什么", day("2026-01-07")),
        ("1月7日做了什么", day("2026-01-07")),
        ("12月30日做了什么", day("2025-12-30")),  # not after today: last year's
        ("2025年的1月7日", day("2025-01-07")),  # the year written in the question
        ("what did I do on March 3?", day("2026-03-03")),
        ("what did I read in March 2026", Period("2026-03-01", "2026-03-31")),
        ("2026年2月读了什么书", Period("2026-02-01", "2026-02-28")),
        ("what did I do yesterday", day("2026-03-17")),
        ("昨天做了什么", day("2026-03-17")),
        ("the day before yesterday", day("2026-03-16")),
        ("前天的会议", day("2026-03-16")),
        ("what did I cook last week", Period("2026-03-09", "2026-03-15")),
        ("上周做了什么", Period("2026-03-09", "2026-03-15")),
        ("books last month", Period("2026-02-01", "2026-02-28")),
        ("上个月读了什么", Period("2026-02-01", "2026-02-28")),
        ("between March 3 and March 7, 2026", Period("2026-03-03", "2026-03-07")),
        ("how do I configure the proxy?", None),
        ("port 8080 and 2026 items", None),
        ("version 1.2.3 release", None),
    ],
)
def test_understand_dates_in_questions(question: str, expected: Period | None) -> None:
    assert understand(question, TODAY) == expected


def test_last_month_in_january_is_last_december() -> None:
    assert understand("last month", dt.date(2026, 1, 10)) == Period("2025-12-01", "2025-12-31")
