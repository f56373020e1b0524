"""Processes sharing one index, as people run them: a server, `index` in a terminal, CLI
searches and a REPL beside it. Every process is real; so is the lock another one holds."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.conftest import NOTES, ROOT, clean_env, index_once, write_notes
from tests.locking import lock_held
from tests.serving import Server

# Five notes, each with its own sentence and a paraphrase that shares none of its words:
# only the dense (embedding) side of the search can find a note by its paraphrase.
FIVE = {
    "volcano.md": ("Magma erupts from the crater and lava flows down the slope.",
                   "molten rock bursting out of a mountain peak"),
    "piano.md": ("Practise scales on the keyboard every morning before school.",
                 "music instrument exercises for kids"),
    "tax.md": ("File your yearly income return before the end of April.",
               "deadline for paying the government on earnings"),
    "puppy.md": ("Walk the puppy twice daily and give it kibble.",
                 "looking after a young dog"),
    "espresso.md": ("Grind the beans finely and brew the espresso at 93 degrees.",
                    "making strong coffee"),
}  # fmt: skip


def rag(kb: Path, ix: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(ix),
         *args],
        cwd=kb.parent,
        env=clean_env(),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip


def first_source(api: httpx.Client, query: str) -> str:
    response = api.post("/api/v1/search", json={"query": query, "top_k": 3})
    assert response.status_code == 200, response.text
    return response.json()["results"][0]["source"]


def assert_finds_the_five(api: httpx.Client) -> None:
    for name, (sentence, paraphrase) in FIVE.items():
        assert first_source(api, sentence) == name, sentence
        assert first_source(api, paraphrase) == name, paraphrase  # the dense side knows it


def test_a_server_sees_what_another_process_indexed_and_rebuilt(tmp_path: Path) -> None:
    with Server(tmp_path, NOTES) as server:
        api = server.client()
        assert first_source(api, "port 8420") == "guides/ports.md"  # Chroma is open
        write_notes(server.kb, {name: f"# {name[:-3]}\n\n{s}\n" for name, (s, _) in FIVE.items()})
        indexed = rag(server.kb, server.ix, "index")
        assert indexed.returncode == 0, indexed.stderr
        assert_finds_the_five(api)

        rebuilt = rag(server.kb, server.ix, "index", "--rebuild")
        assert rebuilt.returncode == 0, rebuilt.stderr
        assert_finds_the_five(api)
        asked = api.post("/api/v1/ask", json={"question": FIVE["tax.md"][1]})
        assert asked.status_code == 200, asked.text
        assert asked.json()["references"][0]["source"] == "tax.md"


def test_cli_reads_answer_from_the_index_as_it_is_while_another_process_writes(
    tmp_path: Path,
) -> None:
    kb = write_notes(tmp_path / "kb", NOTES)
    ix = index_once(kb, clean_env())
    write_notes(kb, {"new.md": "# New\n\nA note the writer has not reached yet.\n"})
    with lock_held(ix) as holder, ThreadPoolExecutor(3) as side_by_side:
        started = time.monotonic()
        runs = [
            side_by_side.submit(rag, kb, ix, "search", "port 8420", "--json"),
            side_by_side.submit(rag, kb, ix, "ask", "which port does the API use?", "--json"),
            side_by_side.submit(rag, kb, ix, stdin="/stats\n"),
        ]
        found, asked, repl = (run.result() for run in runs)
        took = time.monotonic() - started
    notice = f"warning: pid {holder.pid} is updating the index; answering from the index as it is"
    for result in (found, asked, repl):
        assert result.returncode == 0, result.stderr
        assert result.stderr.strip() == notice
    assert json.loads(found.stdout)["results"][0]["source"] == "guides/ports.md"
    assert json.loads(asked.stdout)["references"][0]["source"] == "guides/ports.md"
    assert "3" in repl.stdout  # /stats: the chunks indexed before
    assert took < 3 * 20  # each waited a few seconds at most


def test_index_waits_for_another_writer_saying_for_whom_and_how_long(tmp_path: Path) -> None:
    kb = write_notes(tmp_path / "kb", NOTES)
    ix = index_once(kb, clean_env())
    write_notes(kb, {"new.md": "# New\n\nIndexed once the other writer is done.\n"})
    with lock_held(ix, seconds=3) as holder:
        result = rag(kb, ix, "index", "--json")
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == (
        f"warning: waiting for pid {holder.pid} to finish updating the index (up to 60 s)…"
    )
    assert json.loads(result.stdout)["files_added"] == 1


def test_changes_over_the_api_touch_nothing_while_another_process_writes(
    tmp_path: Path,
) -> None:
    with Server(tmp_path, NOTES) as server:
        api = server.client()
        with lock_held(server.ix):
            deleted = api.delete("/api/v1/documents/bread.md")
            ingested = api.post(
                "/api/v1/ingest", json={"file_name": "fresh.md", "content": "# Fresh\n\nNew.\n"}
            )
        assert deleted.status_code == 409 and ingested.status_code == 409
        assert "being updated by another askmd process" in deleted.json()["error"]
        assert (server.kb / "bread.md").is_file()  # not moved to the trash
        assert not (server.ix / "trash").exists()
        assert not (server.kb / "fresh.md").exists()  # not written
        assert api.delete("/api/v1/documents/bread.md").status_code == 200  # lock free again


def test_a_search_through_a_collection_another_process_replaced_reopens_it(
    tmp_path: Path,
) -> None:
    from askmd.pipeline import Index
    from askmd.settings import load_settings

    kb = write_notes(tmp_path / "kb", NOTES)
    ix = index_once(kb, clean_env())
    index = Index(load_settings(overrides={"knowledge_dir": kb, "index_dir": ix}))
    assert index.search("port 8420", 1)[0].source == "guides/ports.md"  # Chroma is open
    replace = "import sys; from pathlib import Path; from askmd.index.store import Store; "
    replace += "Store(Path(sys.argv[1])).reset({})"  # a rebuild's first step, manifest untouched
    subprocess.run([sys.executable, "-c", replace, str(ix)], cwd=ROOT, check=True, timeout=60)
    # No error: the new collection is empty, and keyword search still finds the note (the
    # manifest holds every chunk's text).
    assert [h.source for h in index.search("port 8420", 1)] == ["guides/ports.md"]
