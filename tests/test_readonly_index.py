"""An index folder nobody may write to (a read-only mount, another user's index) is
searched as it is: `stats`, `search`, `ask` and the REPL answer from it with one notice,
`index` refuses in one line, and nothing in the folder changes.

As root, chmod does not stop writes; the program then runs without the capabilities that
let root ignore permissions (see tests/test_folder_scope.py), as any other user would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import NOTES, ROOT, clean_env, write_notes
from tests.test_folder_scope import _drop_permission_override

NOTICE = "warning: the index folder is read-only: searching it as it is\n"


def unprivileged(**env: str) -> dict:
    """subprocess arguments for a child that chmod stops, with `env` (and its own TMPDIR)."""
    return {
        "env": clean_env(**env),
        "capture_output": True,
        "text": True,
        "timeout": 60,
        "preexec_fn": _drop_permission_override if os.geteuid() == 0 else None,
    }


def listing(folder: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry below `folder` with its size, mode and modification time (ns)."""
    entries = {}
    for place, dirs, files in os.walk(folder):
        for name in [".", *dirs, *files]:
            path = Path(place, name)
            st = path.lstat()
            entries[str(path.relative_to(folder))] = (st.st_size, st.st_mode, st.st_mtime_ns)
    return entries


def set_writable(folder: Path, writable: bool) -> None:
    for place, _, files in os.walk(folder):
        os.chmod(place, 0o755 if writable else 0o555)
        for name in files:
            os.chmod(os.path.join(place, name), 0o644 if writable else 0o444)


@pytest.fixture
def read_only_index(tmp_path: Path):
    """NOTES indexed, the index folder made read-only, then a note added that a sync would
    index; yields (a runner of rag.py in a process chmod stops, the index folder)."""
    kb = write_notes(tmp_path / "kb", NOTES)
    ix, scratch = tmp_path / "ix", tmp_path / "tmp"
    scratch.mkdir()
    where = [str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(ix)]

    def run(*args: str) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(
                [sys.executable, *where, *args], cwd=tmp_path, **unprivileged(TMPDIR=str(scratch))
            )
        except subprocess.SubprocessError as exc:  # root without CAP_SETPCAP
            pytest.skip(f"running as root and cannot give up the permission override: {exc}")

    first = run("index", "--json")
    assert json.loads(first.stdout)["chunks_total"] == 3, first.stderr
    set_writable(ix, False)
    write_notes(kb, {"late.md": "# Late\n\nThe quokka gate opens at dawn.\n"})
    try:
        yield run, ix
    finally:
        set_writable(ix, True)
    assert not list(scratch.glob("askmd-*"))  # the copy of Chroma is gone with the program


def test_a_read_only_index_answers_searches_and_refuses_updates(read_only_index) -> None:
    run, ix = read_only_index
    before = listing(ix)

    stats = run("stats", "--json")
    assert stats.returncode == 0, stats.stderr
    assert (json.loads(stats.stdout)["files"], json.loads(stats.stdout)["chunks"]) == (2, 3)

    found = run("search", "port 8420", "--json")
    assert found.returncode == 0, found.stderr
    assert found.stderr == NOTICE
    results = json.loads(found.stdout)["results"]
    assert results[0]["source"] == "guides/ports.md" and "8420" in results[0]["text"]
    late = json.loads(run("search", "quokka gate", "--json").stdout)["results"]
    assert "late.md" not in {r["source"] for r in late}  # searched as it is: no sync

    answered = run("ask", "what port does the API listen on?", "--json")
    assert answered.returncode == 0, answered.stderr
    assert answered.stderr == NOTICE
    reply = json.loads(answered.stdout)
    assert reply["mode"] == "extractive" and "8420" in reply["answer"]
    assert reply["citations"] and reply["references"][0]["source"] == "guides/ports.md"

    for args in (["index"], ["index", "--rebuild"]):
        refused = run(*args)
        assert refused.returncode == 1 and refused.stdout == ""
        assert refused.stderr == (
            f"error: the index folder {ix} is read-only: it can be searched but not updated "
            "(make it writable, or point --index-dir at another folder)\n"
        )
    assert listing(ix) == before


def test_the_repl_answers_from_a_read_only_index(read_only_index) -> None:
    pexpect = pytest.importorskip("pexpect")
    run, ix = read_only_index
    before = listing(ix)
    child = pexpect.spawn(
        sys.executable,
        [str(ROOT / "rag.py"), "--knowledge", str(ix.parent / "kb"), "--index-dir", str(ix)],
        cwd=str(ix.parent),
        env=clean_env(TMPDIR=str(ix.parent / "tmp")),
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 120),
        preexec_fn=_drop_permission_override if os.geteuid() == 0 else None,
    )
    child.expect_exact("searching it as it is")
    child.expect_exact("› ")
    child.sendline("what port does the API listen on?")
    child.expect_exact("8420")
    child.expect_exact("› ")
    child.sendline("/reindex")
    child.expect_exact("is read-only: it can be searched but not updated")
    child.expect_exact("› ")
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "Exception" not in child.before  # the history it cannot save is not an error
    assert listing(ix) == before


def test_a_read_only_mount_is_read_only(tmp_path: Path) -> None:
    """EROFS, which no capability overrides: a read-only bind mount of a real index."""
    from askmd.index.manifest import Manifest, read_only

    ix = tmp_path / "ix"
    Manifest(ix / "manifest.sqlite3").set(generation="4")
    assert not read_only(ix)
    mounted = subprocess.run(["mount", "--bind", "-o", "ro", str(ix), str(ix)],
                             capture_output=True, text=True)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"a read-only mount is needed; mount: {mounted.stderr.strip()}")
    try:
        assert read_only(ix)
        assert Manifest(ix / "manifest.sqlite3", read_only=True).generation() == 4
    finally:
        subprocess.run(["umount", "-l", str(ix)], check=False)


def test_eval_scores_a_read_only_index_as_it_is(read_only_index, tmp_path: Path) -> None:
    run, ix = read_only_index
    before = listing(ix)
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "port 8420", "relevant": ["guides/ports.md"]}\n')
    scored = run("eval", str(queries), "--json")
    assert scored.returncode == 0, scored.stderr
    assert scored.stderr == NOTICE
    assert json.loads(scored.stdout)["hit@1"] == 1.0
    assert listing(ix) == before


def test_serve_answers_from_a_read_only_index(read_only_index, tmp_path: Path) -> None:
    import httpx

    run, ix = read_only_index
    before = listing(ix)
    kb = tmp_path / "kb"
    command = [
        sys.executable, str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(ix),
        "serve", "--port", "0",
    ]  # fmt: skip
    options = unprivileged(TMPDIR=str(tmp_path / "tmp"))
    del options["capture_output"], options["timeout"]
    server = subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **options
    )
    try:
        line = server.stdout.readline()
        assert "askmd serving" in line, server.stderr.read() if server.poll() is not None else line
        url = line.split(" at ")[-1].strip()
        with httpx.Client(base_url=url, timeout=30) as api:
            found = api.post("/api/v1/search", json={"query": "port 8420"}).json()["results"]
            assert found[0]["source"] == "guides/ports.md"
            note = {"content": "# New\n\nText.\n", "file_name": "new.md"}
            refused = api.post("/api/v1/ingest", json=note)
            assert refused.status_code >= 400 and "read-only" in refused.json()["error"]
    finally:
        server.terminate()
        server.wait(timeout=15)
    assert "read-only: searching it as it is" in server.stderr.read()
    assert listing(ix) == before
