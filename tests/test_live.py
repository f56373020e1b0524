"""The REPL and `serve` keep the index live: a note saved on disk is found without /reindex.

Real processes on real folders: the REPL in a pseudo-terminal, the server over HTTP, both
watching one index at once; `--no-watch` turns it off.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import NOTES, ROOT, clean_env, write_notes
from tests.serving import Server
from tests.test_repl_pty import COLS, PROMPT, ROWS, Term

pexpect = pytest.importorskip("pexpect")

FRESH = "# Sourdough\n\nThe zymurgy-quokka starter wants rye flour on Sundays.\n"


def save(path: Path, text: str) -> None:
    """Save a note as editors do: written outside the folder, then renamed into place, so
    the watcher never sees it empty (a write_text paused between creating and writing the
    file, on a loaded machine, is two real changes and two "updated" lines)."""
    part = path.parent.parent / f".{path.name}.part"
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)


def repl(kb: Path, ix: Path, *flags: str) -> Term:
    env = {**clean_env(), "TERM": "xterm-256color", "COLUMNS": str(COLS), "LINES": str(ROWS)}
    args = [str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(ix), *flags]
    child = pexpect.spawn(
        sys.executable, args, env=env, cwd=str(kb.parent), dimensions=(ROWS, COLS),
        encoding="utf-8", timeout=60,
    )  # fmt: skip
    term = Term(child)
    term.wait(PROMPT, timeout=120)
    return term


def found_by_repl(term: Term, within: float = 30) -> bool:
    """Ask /debug for the fresh note's made-up word until it shows (or time runs out)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        term.child.sendline("/debug zymurgy-quokka starter")
        shown = term.wait(PROMPT)
        if "sourdough.md" in shown:
            return True
        time.sleep(0.5)
    return False


def test_the_repl_finds_a_note_saved_while_it_runs_and_says_so(tmp_path: Path) -> None:
    kb = write_notes(tmp_path / "kb", NOTES)
    term = repl(kb, tmp_path / "ix")
    try:
        save(kb / "sourdough.md", FRESH)
        assert found_by_repl(term), term.screen
        # Said once, before the next line's output (the change may land while /debug runs,
        # never in the middle of what it prints).
        term.child.sendline("/help")
        shown = term.wait(PROMPT)
        assert term.screen.count("1 note updated") == 1, term.screen
        if "1 note updated" in shown:
            assert shown.index("1 note updated") < shown.index("/debug QUESTION")
    finally:
        term.child.sendeof()
        term.child.expect(pexpect.EOF, timeout=30)


def test_no_watch_leaves_the_index_as_it_was_at_start(tmp_path: Path) -> None:
    kb = write_notes(tmp_path / "kb", NOTES)
    term = repl(kb, tmp_path / "ix", "--no-watch")
    try:
        save(kb / "sourdough.md", FRESH)
        assert not found_by_repl(term, within=4)
        term.child.sendline("/reindex")  # the way to pick it up without watching
        term.wait(PROMPT, timeout=120)
        assert found_by_repl(term, within=5)
        assert "updated" not in term.screen
    finally:
        term.child.sendeof()
        term.child.expect(pexpect.EOF, timeout=30)


def test_a_server_and_a_repl_watching_one_index_both_see_a_saved_note(tmp_path: Path) -> None:
    with Server(tmp_path, NOTES) as server:
        term = repl(server.kb, server.ix)
        try:
            save(server.kb / "sourdough.md", FRESH)
            api = server.client()
            deadline, hits = time.monotonic() + 30, []
            while time.monotonic() < deadline:
                body = {"query": "zymurgy-quokka starter", "top_k": 3}
                hits = api.post("/api/v1/search", json=body).json()["results"]
                if hits and hits[0]["source"] == "sourdough.md":
                    break
                time.sleep(0.3)
            assert hits and hits[0]["source"] == "sourdough.md", hits
            assert found_by_repl(term)
            # The note was embedded once, by whichever process applied it first.
            stats = api.get("/api/v1/stats").json()
            assert stats["files"] == 3
        finally:
            term.child.sendeof()
            term.child.expect(pexpect.EOF, timeout=30)
