"""A knowledge folder moved away or emptied while askmd runs: writes are refused in one
line (the folder is never made again), a sync keeps the index and says so, and only
`index`, asked for by hand, removes every note from it."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, clean_env, write_notes
from tests.openai_server import OpenAIServer
from tests.serving import Server

NOTES = {f"n{i}.md": f"# Note {i}\n\nThe code of shelf {i} is sh{i}x.\n" for i in range(5)}


@pytest.fixture(scope="module")
def embeddings() -> OpenAIServer:
    with OpenAIServer(dimension=16) as server:
        yield server


def env_for(server: OpenAIServer) -> dict[str, str]:
    return {"ASKMD_EMBEDDING_BACKEND": "openai", "ASKMD_EMBEDDING_MODEL": "test-embed",
            "OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "k"}  # fmt: skip


def _files(server: Server) -> int:
    return server.client().get("/api/v1/stats").json()["files"]


def test_writes_are_refused_while_the_folder_is_gone_and_the_index_keeps_its_notes(
    tmp_path: Path, embeddings: OpenAIServer
) -> None:
    # Without a watcher: the background re-scan a search wakes is what syncs.
    with Server(tmp_path, NOTES, **env_for(embeddings), ASKMD_WATCH="0") as server:
        api = server.client()
        away = tmp_path / "kb-away"
        server.kb.rename(away)
        sent = api.post("/api/v1/ingest", json={"content": "# X\n\nx\n", "file_name": "x.md"})
        assert sent.status_code == 409, sent.text
        assert "is gone" in sent.json()["error"] and "\n" not in sent.json()["error"]
        assert not server.kb.exists()  # never made again
        gone = api.delete("/api/v1/documents/n1.md")
        assert gone.status_code == 409, gone.text
        assert (away / "n1.md").is_file()
        # A search wakes the background re-scan, which finds no folder: the index stays.
        for _ in range(3):
            api.post("/api/v1/search", json={"query": "shelf code"})
            time.sleep(2.2)
        assert _files(server) == len(NOTES)
        away.rename(server.kb)
        sent = api.post("/api/v1/ingest", json={"content": "# X\n\nx\n", "file_name": "x.md"})
        assert sent.status_code == 200, sent.text
        assert _files(server) == len(NOTES) + 1
    assert "keeps its 5 notes" in server.log.read_text()


def test_a_sync_keeps_an_emptied_folders_notes_until_index_removes_them(
    tmp_path: Path, run_rag, embeddings: OpenAIServer
) -> None:
    kb = write_notes(tmp_path / "kb", NOTES)
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    env = env_for(embeddings)
    assert run_rag(*where, "index", **env).returncode == 0
    for note in kb.iterdir():
        note.unlink()
    searched = run_rag(*where, "search", "shelf code", **env)
    assert searched.returncode == 0, searched.stderr
    assert "holds no notes: the index keeps its 5 notes" in searched.stderr
    assert "n3.md" in searched.stdout  # still answered from the kept notes
    stats = json.loads(run_rag(*where, "stats", "--json", **env).stdout)
    assert stats["files"] == len(NOTES)

    emptied = run_rag(*where, "index", **env)
    assert emptied.returncode == 0, emptied.stderr
    assert "all 5 indexed notes are removed from the index" in emptied.stderr
    assert json.loads(run_rag(*where, "stats", "--json", **env).stdout)["files"] == 0


def test_the_repl_starting_over_a_folder_emptied_keeps_the_index(
    tmp_path: Path, run_rag, embeddings: OpenAIServer
) -> None:
    kb = write_notes(tmp_path / "kb", NOTES)
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    env = env_for(embeddings)
    assert run_rag(*where, "index", **env).returncode == 0
    shutil.rmtree(kb)
    kb.mkdir()
    import subprocess

    done = subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), *where], input="/stats\n", cwd=tmp_path,
        env=clean_env(**env), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "keeps its 5 notes" in done.stderr
    assert "files         5" in done.stdout


def test_mcp_write_tools_refuse_while_the_folder_is_gone(
    tmp_path: Path, embeddings: OpenAIServer
) -> None:
    from askmd.pipeline import Index
    from askmd.settings import load_settings
    from tests.test_mcp import run, server_over

    kb = write_notes(tmp_path / "kb", NOTES)
    overrides = {"knowledge_dir": kb, "index_dir": tmp_path / "ix"}
    index = Index(load_settings(env_for(embeddings), None, overrides))
    server = server_over(index, allow_write=True)
    kb.rename(tmp_path / "away")
    for tool, args in (("add_note", {"path": "x.md", "content": "# X\n\nx\n"}),
                       ("delete_note", {"path": "n1.md"})):  # fmt: skip
        result = run(server, lambda c, t=tool, a=args: c.call_tool(t, a))
        text = result.content[0].text
        assert result.is_error and "is gone" in text and "\n" not in text, text
    assert not kb.exists()
    assert (tmp_path / "away" / "n1.md").is_file()
    assert len(index.manifest.files()) == len(NOTES)
