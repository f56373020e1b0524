"""`stats --files`: every file the include globs match, with what the index holds of it
(indexed, waiting for vectors, skipped and why, not indexed yet), read without a sync."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import NOTES, write_notes


def _files(run_rag, where: list[str]) -> list[dict]:
    shown = run_rag(*where, "stats", "--files", "--json")
    assert shown.returncode == 0, shown.stderr
    found = json.loads(shown.stdout)
    assert list(found) == ["files"]
    for row in found["files"]:
        assert list(row) == ["source", "status", "chunks", "date", "indexed_at"]
    return found["files"]


def test_each_file_has_its_status(tmp_path: Path, run_rag) -> None:
    kb = write_notes(tmp_path / "kb", NOTES)
    (kb / ".hidden.md").write_text("# Hidden\n\nNot read.\n", encoding="utf-8")
    (kb / "latin1.md").write_bytes("# Caf\xe9\n\nAu lait.\n".encode("latin-1"))
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    assert run_rag(*where, "index", "--keyword-only").returncode == 0

    rows = {r["source"]: r for r in _files(run_rag, where)}
    assert list(rows) == sorted(rows)
    assert rows["bread.md"]["status"] == "keyword only: waiting for vectors"
    assert rows["guides/ports.md"]["chunks"] == 2
    assert rows["guides/ports.md"]["indexed_at"][:4].isdigit()
    assert rows["guides/ports.md"]["date"] is None
    assert rows[".hidden.md"]["status"] == "skipped: hidden (its name starts with a dot)"
    assert rows["latin1.md"]["status"].startswith("skipped: not UTF-8")
    assert rows["latin1.md"]["chunks"] == 0 and rows["latin1.md"]["indexed_at"] is None

    # The folder changed since the sync, and stats does not sync: the new note waits.
    (kb / "new.md").write_text("# New\n\nJust saved.\n", encoding="utf-8")
    rows = {r["source"]: r for r in _files(run_rag, where)}
    assert rows["new.md"] == {
        "source": "new.md", "status": "not indexed yet", "chunks": 0, "date": None,
        "indexed_at": None,
    }  # fmt: skip

    assert run_rag(*where, "index").returncode == 0
    rows = {r["source"]: r for r in _files(run_rag, where)}
    assert rows["bread.md"]["status"] == rows["new.md"]["status"] == "indexed"
    assert rows["latin1.md"]["status"].startswith("skipped: not UTF-8")

    (kb / "bread.md").unlink()  # still in the index until the next sync
    rows = {r["source"]: r for r in _files(run_rag, where)}
    assert rows["bread.md"]["status"] == "deleted since the last sync"
    assert rows["bread.md"]["chunks"] == 1


def test_the_text_table_is_aligned_with_a_summary(tmp_path: Path, run_rag) -> None:
    kb = write_notes(tmp_path / "kb", {**NOTES, "deep/er/note.md": "# Deep\n\nDown here.\n"})
    (kb / "big.md").write_text("# Big\n\n" + "word " * 400, encoding="utf-8")
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    env = {"ASKMD_MAX_FILE_MB": "0.001"}
    assert run_rag(*where, "index", **env).returncode == 0

    shown = run_rag(*where, "stats", "--files", **env)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    header, rows, summary = lines[0], lines[1:-1], lines[-1]
    assert header.split() == ["CHUNKS", "INDEXED", "STATUS", "FILE"]
    column = header.index("FILE")
    assert all(r[column - 1] == " " and r[column] != " " for r in rows)
    assert [r[column:].split("  — ")[0] for r in rows] == [
        "big.md", "bread.md", "deep/er/note.md", "guides/ports.md",
    ]  # fmt: skip
    assert "skipped" in rows[0] and "MB limit" in rows[0]
    assert summary == "4 files: 3 indexed, 1 skipped"


def test_a_folder_never_indexed_lists_every_note_as_not_indexed_yet(
    tmp_path: Path, run_rag
) -> None:
    kb = write_notes(tmp_path / "kb", NOTES)
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    rows = _files(run_rag, where)
    assert [(r["source"], r["status"]) for r in rows] == [
        ("bread.md", "not indexed yet"), ("guides/ports.md", "not indexed yet"),
    ]  # fmt: skip
    assert not (tmp_path / "ix").exists()  # looking made no index


def test_a_closed_pipe_ends_the_listing_quietly(tmp_path: Path) -> None:
    """`stats --files | head -1`: the reader leaves, and askmd ends without a traceback,
    with the status a command killed by SIGPIPE has (128 + 13)."""
    import subprocess
    import sys

    from tests.conftest import ROOT, clean_env

    # more than a pipe's buffer (64 KiB) of listing, so askmd is still writing when it closes
    names = {
        f"a-note-with-a-rather-long-name-{i:04}.md": f"# N{i}\n\nText {i}.\n" for i in range(3000)
    }
    kb = write_notes(tmp_path / "kb", names)
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    child = subprocess.Popen(
        [sys.executable, str(ROOT / "rag.py"), *where, "stats", "--files"],
        cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert child.stdout.readline()
    child.stdout.close()  # as `head -1` does
    err = child.stderr.read().decode()
    assert child.wait(60) == 141, err
    assert err == ""


def test_a_journal_note_shows_its_day(tmp_path: Path, run_rag) -> None:
    """The day `search --json` gives a journal note is its DATE in `stats --files`."""
    kb = write_notes(tmp_path / "kb", {
        "journal/2026-11-28.md": "# Saturday\n\nPancakes for breakfast.\n",
        "ideas.md": "# Ideas\n\nA shed for the bikes.\n",
    })  # fmt: skip
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    assert run_rag(*where, "index", "--keyword-only").returncode == 0
    rows = {r["source"]: r for r in _files(run_rag, where)}
    assert rows["journal/2026-11-28.md"]["date"] == "2026-11-28"
    assert rows["ideas.md"]["date"] is None
    shown = run_rag(*where, "stats", "--files").stdout
    assert "DATE" in shown and "2026-11-28" in shown.split("journal/")[0].splitlines()[-1]
