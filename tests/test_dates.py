"""Dates in notes (file names, front matter, dated headings) and in questions, and the
--since/--until limits on every interface."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from askmd import pipeline
from askmd.read import dates, notes
from askmd.search.dates_in_query import Period, not_days, understand, without_dates
from askmd.settings import load_settings
from tests.conftest import (
    ASK_JSON_FIELDS,
    ROOT,
    clean_env,
    index_once,
    synced_index,
    write_notes,
)
from tests.serving import Server

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


def test_without_dates_leaves_what_is_asked_of_the_day() -> None:
    assert without_dates("what did I cook on February 10, 2026?", TODAY) == "what did I cook?"
    assert without_dates("2026年2月10日做了什么饭？", TODAY) == "做了什么饭？"
    assert without_dates("When in March 2026 did I ski?", TODAY) == "When did I ski?"
    assert without_dates("how do I configure the proxy?", TODAY) == "how do I configure the proxy?"
    assert without_dates("What did I do at work the day before yesterday?", TODAY) == (
        "What did I do at work?"
    )
    assert without_dates("What did I read on the 3rd of March?", TODAY) == "What did I read?"
    assert without_dates("Where did I eat in the last week?", TODAY) == "Where did I eat?"


def test_last_month_in_january_is_last_december() -> None:
    assert understand("last month", dt.date(2026, 1, 10)) == Period("2025-12-01", "2025-12-31")


def test_a_day_without_its_year_is_the_latest_one_the_notes_hold() -> None:
    """Asked on 2026-03-18: "April 6" is 2025-04-06 by the calendar; given what the notes
    hold, the latest April 6 they have, else that day still. A year written in the
    question is kept, and a day that does not recur (29 February) is looked for in leap
    years only."""
    held = {"2023-04-06", "2020-02-29"}.__contains__

    def notes(since: str, until: str) -> bool:
        return since == until and held(since)

    assert understand("April 6", TODAY, notes) == Period("2023-04-06", "2023-04-06")
    assert understand("4月6日做了什么", TODAY, notes) == Period("2023-04-06", "2023-04-06")
    assert understand("April 7", TODAY, notes) == Period("2025-04-07", "2025-04-07")
    assert understand("April 6, 2024", TODAY, notes) == Period("2024-04-06", "2024-04-06")
    assert understand("April 6 in 2024", TODAY, notes) == Period("2024-04-06", "2024-04-06")
    assert understand("Feb 29", TODAY, notes) == Period("2020-02-29", "2020-02-29")


# --- dates in the index and on every interface ------------------------------------------------

JOURNAL = {
    "daily/2026-03-16.md": "# Monday\n\nCooked lentil soup with cumin. Walked to the harbour.\n",
    "daily/2026-03-17 Tuesday.md": "# Tuesday\n\nCooked mushroom risotto. Read the novel.\n",
    "daily/20260310.md": "# Tuesday before\n\nCooked a vegetable curry. Fixed the bike.\n",
    "log/2026-02.md": (
        "# February\n\n## 2026-02-03\n\nCooked pea soup for the neighbours.\n\n"
        "## February 10, 2026\n\nCooked dumplings with the kids.\n"
    ),
    "garden.md": "---\ndate: 2026-03-05\n---\n# Garden\n\nPlanted tomatoes and cooked nothing.\n",
    "recipes.md": "# Soups\n\nA lentil soup wants cumin, lemon and a long simmer.\n",
}
TODAY_ENV = {"ASKMD_TODAY": "2026-03-18"}


@pytest.fixture(scope="module")
def journal(tmp_path_factory) -> tuple[Path, Path]:
    kb = write_notes(tmp_path_factory.mktemp("journal") / "kb", JOURNAL)
    return kb, index_once(kb, clean_env())


def folder_args(journal: tuple[Path, Path], tmp_path: Path) -> list[str]:
    """A copy of the indexed journal (tests must not share a writable index)."""
    kb, ix = journal
    shutil.copytree(ix, tmp_path / "ix")
    return ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]


def test_search_json_carries_each_result_date(run_rag, journal, tmp_path) -> None:
    args = folder_args(journal, tmp_path)
    found = run_rag(*args, "search", "cooked pea soup dumplings", "--json", "-k", "8")
    assert found.returncode == 0, found.stderr
    dated = {(r["source"], r.get("date")) for r in json.loads(found.stdout)["results"]}
    assert ("log/2026-02.md", "2026-02-03") in dated  # a dated heading beats the file name
    assert ("log/2026-02.md", "2026-02-10") in dated
    assert ("garden.md", "2026-03-05") in dated  # front matter
    assert ("recipes.md", None) in dated  # undated: no field


def test_since_and_until_limit_search_and_ask(run_rag, journal, tmp_path) -> None:
    args = folder_args(journal, tmp_path)
    found = run_rag(
        *args, "search", "cooked soup", "--json", "--since", "2026-03-16", "--until", "2026/3/17"
    )
    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)["results"]
    assert {r["source"] for r in results} == {"daily/2026-03-16.md", "daily/2026-03-17 Tuesday.md"}
    asked = run_rag(*args, "ask", "what did I cook?", "--json", "--since", "2026-03-17")
    assert asked.returncode == 0, asked.stderr
    data = json.loads(asked.stdout)
    assert list(data) == ASK_JSON_FIELDS
    assert data["dates"] == {"since": "2026-03-17", "until": None}
    assert {r["source"] for r in data["references"]} == {"daily/2026-03-17 Tuesday.md"}


def test_bad_dates_are_one_clear_line(run_rag, journal, tmp_path) -> None:
    args = folder_args(journal, tmp_path)
    for flags, said in [
        (["--since", "2026-13-45"], "since '2026-13-45' is not a day"),
        (["--until", "-5 days ago"], "until '-5 days ago' is not a day"),
        (["--since", "2026-03-18", "--until", "2026-03-01"], "is after until"),
    ]:
        done = run_rag(*args, "search", "soup", *flags)
        assert done.returncode != 0
        assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    done = run_rag(*args, "search", "what did I cook yesterday", ASKMD_TODAY="soon")
    assert done.returncode != 0 and "ASKMD_TODAY='soon' is not a date" in done.stderr


def test_a_question_that_names_a_day_ranks_that_day_first(run_rag, journal, tmp_path) -> None:
    args = folder_args(journal, tmp_path)
    asked = run_rag(*args, "ask", "what did I cook yesterday?", "--json", **TODAY_ENV)
    data = json.loads(asked.stdout)
    assert data["dates"] == {"since": "2026-03-17", "until": "2026-03-17"}
    assert data["references"][0]["source"] == "daily/2026-03-17 Tuesday.md"
    for question, source, day in [
        ("what did I cook on February 10, 2026", "log/2026-02.md", "2026-02-10"),
        ("2月3日做了什么", "log/2026-02.md", "2026-02-03"),
        ("what did I cook last week", "daily/20260310.md", "2026-03-10"),
    ]:
        found = run_rag(*args, "search", question, "--json", **TODAY_ENV)
        first = json.loads(found.stdout)["results"][0]
        assert (first["source"], first["date"]) == (source, day), question
        assert first["score"] <= 1.0  # a lift for the day keeps scores on 0..1
        assert "unknown settings" not in found.stderr  # ASKMD_TODAY is not a misspelt setting
    # An undated note is never dropped for the date a question names; other days are.
    found = run_rag(
        *args, "search", "lentil soup cumin yesterday", "--json", "-k", "8", **TODAY_ENV
    )
    sources = {r["source"] for r in json.loads(found.stdout)["results"]}
    assert "recipes.md" in sources and "daily/2026-03-16.md" not in sources


def test_a_dated_question_is_answered_from_that_day(run_rag, journal, tmp_path) -> None:
    """The date words are not asked of the passages' sentences: the passage is of that
    day, and "February 10, 2026" in the question must not make it look off-topic."""
    args = folder_args(journal, tmp_path)
    for question in ("what did I cook on February 10, 2026?", "2026年2月10日做了什么饭？"):
        asked = run_rag(*args, "ask", question, "--json", **TODAY_ENV)
        data = json.loads(asked.stdout)
        assert data["answered"], (question, data["answer"])
        assert data["references"][0]["source"] == "log/2026-02.md"
        assert "dumplings" in data["answer"]


def test_repl_since_until_and_debug_show_the_dates(journal, tmp_path) -> None:
    args = folder_args(journal, tmp_path)
    lines = "/since 2026/3/10\n/until 2026-03-16\n/debug what did I cook yesterday\n/until\n"
    done = subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), *args],
        input=lines,
        capture_output=True,
        text=True,
        env=clean_env(**TODAY_ENV),
        cwd=tmp_path,
        timeout=60,
    )
    out = done.stdout + done.stderr
    assert "limited to notes dated 2026-03-10 to any date" in out
    assert "limited to notes dated 2026-03-10 to 2026-03-16" in out
    assert "dates in the question: 2026-03-17 to 2026-03-17" in out
    assert "dates set: 2026-03-10 to 2026-03-16" in out
    assert "no longer limited by date" not in out  # /since is still set
    assert "2026-03-17 Tuesday.md" not in out.split("/debug")[-1]


def test_api_filters_take_since_and_until(tmp_path) -> None:
    with Server(tmp_path, JOURNAL, **TODAY_ENV) as server:
        api = server.client()
        body = {"query": "cooked", "top_k": 10, "filters": {"since": "2026-03-10"}}
        found = api.post("/api/v1/search", json=body).json()["results"]
        assert found and all(r["date"] >= "2026-03-10" for r in found)
        asked = api.post("/api/v1/ask", json={"question": "what did I cook yesterday?"}).json()
        assert asked["dates"] == {"since": "2026-03-17", "until": "2026-03-17"}
        bad = api.post("/api/v1/search", json={"query": "x", "filters": {"until": "soon"}})
        assert bad.status_code == 400 and "until 'soon' is not a day" in bad.text


def test_mcp_tools_take_since_and_until(journal, tmp_path) -> None:
    from mcp import Client

    from askmd.interfaces import mcp_server

    kb, ix = journal
    shutil.copytree(ix, tmp_path / "ix")
    settings = load_settings({}, None, {"knowledge_dir": kb, "index_dir": tmp_path / "ix"})
    server = mcp_server.build(pipeline.Index(settings), False, watch=False)
    server.notes.start().join(30)

    async def use() -> tuple:
        async with Client(server) as client:
            query = {"query": "cooked", "k": 10, "since": "2026-03-16", "until": "2026-03-16"}
            found = await client.call_tool("search_notes", query)
            question = {"question": "what did I cook?", "until": "2026-02-28"}
            asked = await client.call_tool("ask", question)
            return found.structured_content, asked.structured_content

    found, asked = asyncio.run(use())
    assert [r["source"] for r in found["results"]] == ["daily/2026-03-16.md"]
    assert asked["dates"] == {"since": None, "until": "2026-02-28"}
    assert {r["source"] for r in asked["references"]} == {"log/2026-02.md"}


def test_an_index_from_before_dates_opens_and_is_dated_without_re_embedding(tmp_path) -> None:
    index = synced_index(tmp_path, JOURNAL)
    db = sqlite3.connect(tmp_path / "ix" / "manifest.sqlite3")
    with db:  # as the release before dates wrote it: no table, no key
        db.execute("DROP TABLE chunk_dates")
        db.execute("DELETE FROM meta WHERE key = 'dates_version'")
        db.execute("DELETE FROM _migrations WHERE name = 'm008_chunk_dates'")
    db.close()
    settings = index.settings
    old = pipeline.Index(settings)
    assert old.search("pea soup", 1)[0].date is None  # opens and searches as it is
    embedded = old.manifest.embedded()
    report = old.sync()
    assert not (report.files_added or report.files_changed or report.rebuilt)
    assert old.manifest.embedded() == embedded and old.manifest.pending() == 0
    assert old.search("pea soup", 1)[0].date == "2026-02-03"
    assert old.search("planted tomatoes", 1)[0].date == "2026-03-05"  # from front matter
    again = old.sync()  # dated once: the next sync finds nothing to do
    assert again.files_unchanged == len(JOURNAL)


@pytest.mark.parametrize(
    ("question", "spelled"),
    [
        ("What did I do on 2025-02-30?", ["2025-02-30"]),
        ("What did I do on February 30, 2025?", ["February 30, 2025"]),
        ("How far did I run on 31 April?", ["31 April"]),
        ("2026年1月45日做了什么？", ["2026年1月45日"]),
        ("2026年13月5日开了什么会？", ["2026年13月5日"]),
        ("Between 2025-02-30 and 2025/13/01?", ["2025-02-30", "2025/13/01"]),
    ],
)
def test_a_day_no_calendar_has_is_found_as_written(question: str, spelled: list[str]) -> None:
    assert not_days(question, TODAY) == spelled
    assert understand(question, TODAY) is None


@pytest.mark.parametrize(
    "question",
    [
        "What did I do on 2024-02-29?",
        "What did I do on Feb 29?",  # a leap day, without its year
        "What did I do on 2026-01-05?",
        "version 2.0.31 release notes",
        "how do I configure the proxy?",
    ],
)
def test_real_days_and_other_numbers_are_no_impossible_day(question: str) -> None:
    assert not_days(question, TODAY) == []


@pytest.mark.parametrize(
    ("question", "back"),
    [
        ("大前天做了什么？", 3),
        ("三天前吃了什么？", 3),
        ("两天前见了谁？", 2),
        ("十天前去了哪里？", 10),
        ("3天前吃了什么？", 3),
        ("What did I do 3 days ago?", 3),
        ("What did I do two days ago?", 2),
    ],
)
def test_days_ago(question: str, back: int) -> None:
    day = (TODAY - dt.timedelta(days=back)).isoformat()
    assert understand(question, TODAY) == Period(day, day)


def _day(iso: str) -> Period:
    return Period(iso, iso)


@pytest.mark.parametrize(
    ("question", "expected"),  # asked on Wednesday 2026-03-18
    [
        ("What did I do on Monday?", _day("2026-03-16")),
        ("What did I eat on Friday?", _day("2026-03-13")),
        ("What did I do last Tuesday?", _day("2026-03-17")),
        ("Who did I meet last Saturday?", _day("2026-03-14")),
        ("What did I do on Wednesday?", _day("2026-03-11")),  # today is said "today"
        ("What did I do over the weekend?", Period("2026-03-14", "2026-03-15")),
        ("What did I do last weekend?", Period("2026-03-14", "2026-03-15")),
        ("上周六见了谁？", _day("2026-03-14")),
        ("上星期一做了什么？", _day("2026-03-09")),
        ("这周一做了什么？", _day("2026-03-16")),
        ("周一工作上做了什么？", _day("2026-03-16")),
        ("星期五吃了什么？", _day("2026-03-13")),
        ("礼拜天去了哪里？", _day("2026-03-15")),
        ("上周末做了什么？", Period("2026-03-14", "2026-03-15")),
        ("周末做了什么？", Period("2026-03-14", "2026-03-15")),
    ],
)
def test_weekdays_asked_about_are_the_latest_such_day(question: str, expected: Period) -> None:
    assert understand(question, TODAY) == expected


@pytest.mark.parametrize(
    "question",
    [
        "When is the Monday standup?",
        "Is the gym open on Mondays?",
        "What happens on Friday?",
        "Which weekday is best for deploys?",
        "周一的例会几点开始？",
        "周末超市几点关门？",
        "一周一次的例会取消了吗？",
        "每周一的例会改时间了吗？",
    ],
)
def test_a_weekday_that_recurs_is_no_date(question: str) -> None:
    """A question about what recurs on a weekday ("the Monday standup") asks about no one
    day: read as last Monday, it would leave out the notes of every other day."""
    assert understand(question, TODAY) is None


@pytest.mark.parametrize(
    ("question", "back"),
    [
        ("What did I cook fifty-five days ago?", (55, 55)),
        ("What did I cook twenty-two days ago?", (22, 22)),
        ("What did I do a hundred and one days ago?", (101, 101)),
        ("What did I do 120 days ago?", (120, 120)),
        ("一百零一天前吃了什么？", (101, 101)),
        ("三十五天前去了哪里？", (35, 35)),
        ("三四天前做了什么？", (3, 4)),
        ("七八天前见了谁？", (7, 8)),
        ("What did I do 2-3 days ago?", (2, 3)),
        ("What did I do two or three days ago?", (2, 3)),
    ],
)
def test_counts_of_days_ago_are_read_whole(question: str, back: tuple[int, int]) -> None:
    since = (TODAY - dt.timedelta(days=back[1])).isoformat()
    until = (TODAY - dt.timedelta(days=back[0])).isoformat()
    assert understand(question, TODAY) == Period(since, until)


@pytest.mark.parametrize(
    "question", ["一二三天前做了什么？", "What did I do umpteen days ago?", "零天前吃了什么？"]
)
def test_a_count_of_days_it_cannot_read_is_no_date(question: str) -> None:
    """Never 0 days, today: the question is read without a date."""
    assert understand(question, TODAY) is None


@pytest.mark.parametrize("since", ["-5 days ago", "fifty-five days ago!?x", "5 days agox"])
def test_a_since_with_more_than_a_day_in_it_is_refused(since: str) -> None:
    from askmd.errors import BadRequest
    from askmd.search.dates_in_query import parse_day

    with pytest.raises(BadRequest, match="is not a day"):
        parse_day(since)


@pytest.mark.parametrize(
    ("today", "question"),
    [
        (dt.date(1, 1, 1), "What did I do yesterday?"),
        (dt.date(9999, 12, 31), "What did I do this week?"),
        (dt.date(1, 1, 5), "What did I do last month?"),
        (dt.date(1, 1, 5), "去年做了什么？"),
        (dt.date(1, 1, 5), "What did I do 30 days ago?"),
        (dt.date(9999, 12, 31), "What did I do last weekend?"),
    ],
)
def test_a_date_out_of_the_calendar_is_no_date(today: dt.date, question: str) -> None:
    understand(question, today)  # no OverflowError, no ValueError
    without_dates(question, today)


@pytest.mark.parametrize(
    ("given", "end", "day"),
    [
        ("last week", "since", "2026-03-09"),
        ("last week", "until", "2026-03-15"),
        ("上个月", "since", "2026-02-01"),
        ("last month", "until", "2026-02-28"),
        ("yesterday", "until", "2026-03-17"),
        ("fifty-five days ago", "since", "2026-01-22"),
    ],
)
def test_a_period_given_to_since_or_until_is_its_first_or_last_day(
    given: str, end: str, day: str, monkeypatch
) -> None:
    from askmd.search.dates_in_query import parse_day

    monkeypatch.setenv("ASKMD_TODAY", TODAY.isoformat())
    assert parse_day(given, end) == day
