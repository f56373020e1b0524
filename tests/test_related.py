"""`related NOTE`: the notes most like one note, by meaning, links and tags, on every
interface (command line, REPL, MCP, HTTP)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.client import Client

from askmd import pipeline
from askmd.errors import NotFound
from askmd.interfaces import mcp_server
from askmd.settings import load_settings
from tests.conftest import ROOT, clean_env, index_once, write_notes
from tests.serving import Server

VAULT = {
    "Garden/Tomatoes.md": "---\ntags: [garden]\n---\n# Tomatoes\n\nGrow tomatoes in full sun; "
    "stake the vines and pinch the side shoots. Water them as [[Watering]] says.\n",
    "Garden/Watering.md": "# Watering\n\nWater the beds deeply twice a week, early in the "
    "morning, at the roots rather than the leaves.\n",
    "Garden/Peppers.md": "# Peppers\n\n#garden\n\nGrow peppers in full sun like tomatoes; "
    "stake the plants once the fruit sets and keep the soil warm.\n",
    "Compost.md": "# Compost\n\nFinished compost feeds the [[Tomatoes]] bed in spring.\n",
    "Taxes.md": "# Taxes\n\nFile the quarterly VAT return before the 20th; keep receipts.\n",
}
FIELDS = ["source", "score", "linked", "why"]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> tuple[Path, Path]:
    kb = write_notes(tmp_path_factory.mktemp("related") / "kb", VAULT)
    return kb, index_once(kb, clean_env())


def rag(indexed, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    kb, ix = indexed
    return subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(ix),
         *args],
        cwd=kb.parent,
        env=clean_env(),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip


def by_source(found: dict) -> dict[str, dict]:
    return {r["source"]: r for r in found["related"]}


def test_related_json_names_why_and_whether_linked_and_never_the_note(indexed) -> None:
    result = rag(indexed, "related", "Tomatoes", "-k", "3", "--json")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert list(found) == ["note", "related"]
    assert found["note"] == "Garden/Tomatoes.md"
    assert all(list(r) == FIELDS for r in found["related"])
    related = by_source(found)
    assert set(related) == {"Garden/Watering.md", "Compost.md", "Garden/Peppers.md"}
    assert related["Garden/Watering.md"]["linked"] is True
    assert "linked from it" in related["Garden/Watering.md"]["why"]
    assert related["Compost.md"]["linked"] is True
    assert "links to it" in related["Compost.md"]["why"]
    peppers = related["Garden/Peppers.md"]
    assert peppers["linked"] is False
    assert {"similar", "shared tag #garden"} <= set(peppers["why"])
    scores = [r["score"] for r in found["related"]]
    assert scores == sorted(scores, reverse=True)


def test_related_takes_a_path_with_or_without_md_and_never_lists_the_note(indexed) -> None:
    for name in ("Garden/Tomatoes.md", "Garden/Tomatoes", "tomatoes"):
        found = json.loads(rag(indexed, "related", name, "--json").stdout)
        assert found["note"] == "Garden/Tomatoes.md"
        sources = [r["source"] for r in found["related"]]
        assert "Garden/Tomatoes.md" not in sources
        assert "Taxes.md" not in sources  # nothing like it, no link, no tag: not related


def test_related_text_output_marks_linked_notes(indexed) -> None:
    result = rag(indexed, "related", "Garden/Peppers.md", "-k", "2")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Garden/Peppers.md"
    assert "Garden/Tomatoes.md" in lines[1] and "similar" in lines[1]


def test_an_unknown_note_is_one_line_and_exit_1(indexed) -> None:
    result = rag(indexed, "related", "Nowhere", "--json")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip().splitlines() == ["error: no indexed note named 'Nowhere'"]


def test_repl_related_lists_the_related_notes(indexed) -> None:
    result = rag(indexed, stdin="/related Peppers\n/related Nowhere\n")
    assert result.returncode == 0, result.stderr
    assert "Garden/Tomatoes.md" in result.stdout
    assert "no indexed note named 'Nowhere'" in result.stderr


def test_notes_waiting_for_vectors_are_related_by_words_and_links(tmp_path) -> None:
    kb = write_notes(tmp_path / "kb", VAULT)
    settings = load_settings({}, None, {"knowledge_dir": kb, "index_dir": tmp_path / "ix"})
    index = pipeline.Index(settings)
    index.sync()
    index.manifest.unfill()  # every vector is to be stored again
    found = index.graph.related("Garden/Peppers.md", k=4)
    related = by_source(found)
    assert "similar words" in related["Garden/Tomatoes.md"]["why"]
    assert not any("similar" in r["why"] for r in found["related"])
    assert "Garden/Peppers.md" not in related
    with pytest.raises(NotFound):
        index.graph.related("Nowhere.md")


def test_mcp_related_notes_tool(indexed) -> None:
    kb, ix = indexed
    index = pipeline.Index(load_settings({}, None, {"knowledge_dir": kb, "index_dir": ix}))
    server = mcp_server.build(index, watch=False)
    server.notes.start().join(30)

    async def use() -> tuple:
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            found = await client.call_tool("related_notes", {"note": "Tomatoes", "k": 2})
            missing = await client.call_tool("related_notes", {"note": "Nowhere"})
            return tools["related_notes"], found, missing

    tool, found, missing = asyncio.run(use())
    assert list(tool.output_schema["properties"]) == ["note", "related"]
    assert tool.input_schema["properties"]["k"]["maximum"] == mcp_server.MAX_K
    assert found.structured_content["note"] == "Garden/Tomatoes.md"
    assert len(found.structured_content["related"]) == 2
    assert missing.is_error and "no indexed note named 'Nowhere'" in missing.content[0].text


def test_api_related_route(tmp_path) -> None:
    with Server(tmp_path, VAULT) as server:
        client = server.client()
        found = client.get("/api/v1/related", params={"note": "Tomatoes", "k": 3})
        assert found.status_code == 200, found.text
        body = found.json()
        assert body["note"] == "Garden/Tomatoes.md" and len(body["related"]) == 3
        assert all(list(r) == FIELDS for r in body["related"])
        missing = client.get("/api/v1/related", params={"note": "Nowhere"})
        assert missing.status_code == 404
        assert missing.json() == {"error": "no indexed note named 'Nowhere'"}
