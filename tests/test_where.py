"""`--where`: conditions on the notes' front matter, in every interface (the CLI, the
REPL, the API over HTTP, MCP), on a new index and on one made before properties were
kept."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from askmd import pipeline
from askmd.errors import BadRequest
from askmd.interfaces import mcp_server
from askmd.search import where
from askmd.settings import load_settings
from tests.conftest import ROOT, clean_env, index_once, write_notes
from tests.serving import Server

MEETINGS = {
    "atlas/kickoff.md": (
        "---\ntype: meeting\nproject: Atlas\nstatus: done\nrating: 10\ndate: 2026-10-02\n"
        "attendees: [Anna, Ben]\n---\n# Atlas kickoff\n\n"
        "We decided to ship the beta on Postgres 16.\n"
    ),
    "atlas/review.md": (
        "---\ntype: meeting\nproject: atlas\nstatus: open\nrating: 2\ndate: 2026-11-20\n---\n"
        "# Atlas review\n\nWe decided to postpone the billing rewrite until January.\n"
    ),
    "borealis.md": (
        "---\ntype: Meeting\nproject: borealis\nstatus: done\nrating: 5\n---\n"
        "# Borealis sync\n\nWe decided to drop the Android app.\n"
    ),
    "idea.md": "---\ntype: idea\ntags: [atlas]\n---\n# Idea\n\nWe could decide faster with RFCs.\n",
    "plain.md": "# Plain\n\nA note without properties; we decided nothing here.\n",
}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> tuple[Path, Path]:
    kb = write_notes(tmp_path_factory.mktemp("where") / "kb", MEETINGS)
    return kb, index_once(kb, clean_env())


@pytest.fixture(scope="module")
def index(indexed) -> pipeline.Index:
    kb, ix = indexed
    return pipeline.Index(load_settings({}, None, {"knowledge_dir": kb, "index_dir": ix}))


def found(index: pipeline.Index, *conditions: str, query: str = "what did we decide") -> set:
    filters = pipeline.filters(None, None, where=conditions)
    return {hit.source for hit in index.search(query, 10, filters=filters)}


def test_conditions_compare_text_without_case_numbers_as_numbers_and_days_as_days(index):
    assert found(index, "project=ATLAS") == {"atlas/kickoff.md", "atlas/review.md"}
    assert found(index, "type=meeting", "status=done") == {"atlas/kickoff.md", "borealis.md"}
    # 10 >= 4 as numbers ("10" < "4" as text); a note without the key matches nothing
    assert found(index, "rating>=4") == {"atlas/kickoff.md", "borealis.md"}
    assert found(index, "rating<=4") == {"atlas/review.md"}
    assert found(index, "date<=2026-10-31") == {"atlas/kickoff.md"}
    assert found(index, "date>=2026-10-03") == {"atlas/review.md"}
    # a list matches when any item does; != when none equals
    assert found(index, "attendees=ben") == {"atlas/kickoff.md"}
    assert found(index, "attendees~AN") == {"atlas/kickoff.md"}
    assert found(index, "status!=done") == {"atlas/review.md"}
    assert found(index, "tags=atlas") == {"idea.md"}
    assert found(index, "project=atlas", "status=gone") == set()
    assert found(index, "owner=anna") == set()


def test_a_malformed_condition_is_one_line_naming_the_part() -> None:
    for text, said in [
        ("projct", "no operator"),
        ("=atlas", "no property name"),
        ("project=", "no value"),
        ("project==atlas", "'==' is no operator"),
        ("rating>4", "'>' is no operator; give >="),
    ]:
        with pytest.raises(BadRequest) as raised:
            where.parse(text)
        assert said in str(raised.value) and "\n" not in str(raised.value)
    assert where.parse(' Project = "Project Atlas" ') == where.Condition(
        "project", "=", "Project Atlas"
    )


def test_related_and_stats_read_the_properties(index) -> None:
    related = index.graph.related("atlas/kickoff.md", 10, where=where.parse_all(["type=meeting"]))
    assert {r["source"] for r in related["related"]} <= {"atlas/review.md", "borealis.md"}
    assert index.graph.stats()["properties"] == {
        "type": 4, "project": 3, "rating": 3, "status": 3, "date": 2, "attendees": 1, "tags": 1,
    }  # fmt: skip


def rag(indexed, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    kb, ix = indexed
    return subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(ix),
         *args],
        input=stdin, capture_output=True, text=True, env=clean_env(), cwd=kb.parent, timeout=120,
    )  # fmt: skip


def test_the_cli_filters_names_a_property_no_note_has_and_refuses_a_bad_condition(indexed):
    searched = rag(indexed, "search", "decided", "--json", "--where", "project=atlas",
                   "--where", "rating>=4")  # fmt: skip
    assert searched.returncode == 0, searched.stderr
    assert [r["source"] for r in json.loads(searched.stdout)["results"]] == ["atlas/kickoff.md"]

    unknown = rag(indexed, "search", "decided", "--where", "projct=atlas")
    assert unknown.returncode == 0, unknown.stderr
    assert "no note has the property 'projct' (nearest: project)" in unknown.stdout

    bad = rag(indexed, "ask", "what did we decide?", "--where", "status")
    assert bad.returncode != 0
    assert bad.stderr.strip().splitlines() == [
        "error: --where 'status': no operator; give KEY=VALUE, KEY!=VALUE, KEY>=VALUE, "
        "KEY<=VALUE or KEY~TEXT"
    ]

    repl = rag(indexed, stdin='/where type=meeting "project=Atlas"\n/debug decided\n/where\n')
    assert repl.returncode == 0, repl.stderr
    assert "questions are limited to notes where type=meeting and project=Atlas" in repl.stdout
    debug = repl.stdout.split("project=Atlas", 1)[1].split("no longer limited", 1)[0]
    assert "atlas/kickoff.md" in debug and "borealis.md" not in debug
    assert "questions are no longer limited by properties" in repl.stdout


def test_the_api_and_mcp_take_where(tmp_path, index) -> None:
    async def call():
        server = mcp_server.build(index, False, watch=False)
        server.notes.start().join(30)
        async with Client(server) as client:
            return await client.call_tool(
                "search_notes", {"query": "decided", "k": 10, "where": ["status=done"]}
            ), await client.call_tool("search_notes", {"query": "decided", "where": ["x"]})

    found, refused = asyncio.run(call())
    sources = {r["source"] for r in found.structured_content["results"]}
    assert sources == {"atlas/kickoff.md", "borealis.md"}
    assert refused.is_error and "no operator" in refused.content[0].text

    with Server(tmp_path, MEETINGS) as server:
        api = server.client()
        body = {"query": "decided", "top_k": 10, "filters": {"where": ["project=borealis"]}}
        response = api.post("/api/v1/search", json=body)
        assert response.status_code == 200, response.text
        assert [r["source"] for r in response.json()["results"]] == ["borealis.md"]
        bad = api.post("/api/v1/search", json={"query": "x", "filters": {"where": ["a=="]}})
        assert bad.status_code == 400 and "filters.where 'a=='" in bad.json()["error"]


def test_an_index_from_before_properties_reads_them_at_its_next_sync(tmp_path, indexed) -> None:
    kb, _ = indexed
    old = index_once(write_notes(tmp_path / "kb", MEETINGS), clean_env())
    with sqlite3.connect(old / "manifest.sqlite3") as db:  # as older code left it
        db.execute("DROP TABLE note_properties")
        db.execute("DELETE FROM _migrations WHERE name = 'm010_note_properties'")
        db.execute("DELETE FROM meta WHERE key = 'properties_version'")
    settings = load_settings({}, None, {"knowledge_dir": tmp_path / "kb", "index_dir": old})
    upgraded = pipeline.Index(settings)
    upgraded.sync()
    assert found(upgraded, "status=done") == {"atlas/kickoff.md", "borealis.md"}


def test_a_filter_that_keeps_one_note_of_many_still_finds_it(tmp_path) -> None:
    """More notes match the words better than the pool of candidates holds: the one the
    filter keeps is scored all the same."""
    notes = {
        f"logs/{n:03d}.md": f"---\ntype: log\n---\n# Log {n}\n\nBackup backup backup done.\n"
        for n in range(450)
    }
    notes["rare.md"] = "---\ntype: meeting\n---\n# Rare\n\nWe spoke of the backup once.\n"
    kb = write_notes(tmp_path / "kb", notes)
    settings = load_settings({}, None, {"knowledge_dir": kb, "index_dir": tmp_path / "ix"})
    index = pipeline.Index(settings)
    index.sync(vectors=False)
    filters = pipeline.filters(None, None, where=["type=meeting"])
    hits = index.search("backup", 5, mode="keyword", filters=filters)
    assert [hit.source for hit in hits] == ["rare.md"]


def test_a_changed_property_is_seen_by_the_next_search_of_the_same_filter(tmp_path) -> None:
    """The notes a condition keeps are remembered between searches, until the index
    changes."""
    kb = write_notes(tmp_path / "kb", MEETINGS)
    settings = load_settings({}, None, {"knowledge_dir": kb, "index_dir": tmp_path / "ix"})
    index = pipeline.Index(settings)
    index.sync(vectors=False)
    assert found(index, "status=open", query="decided") == {"atlas/review.md"}
    (kb / "borealis.md").write_text(
        MEETINGS["borealis.md"].replace("status: done", "status: open"), encoding="utf-8"
    )
    index.sync(vectors=False)
    assert found(index, "status=open", query="decided") == {"atlas/review.md", "borealis.md"}
