"""The REPL's background vector filler: it keeps working while /stats, questions,
/reindex and saved notes come and go, says in one line when something stops it, and
/stats says whether it runs."""

from __future__ import annotations

import re
import sqlite3
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import ROOT, clean_env, missing, write_notes
from tests.test_repl_pty import COLS, PROMPT, ROWS, Term

try:
    import pexpect
except ImportError:  # pragma: no cover - pexpect is in requirements-dev.txt
    pexpect = None

# More chunks than the REPL embeds before its prompt (keeper.FOREGROUND_CHUNKS_LIVE),
# so the filler stores them; a Chinese note makes the filling widen the multilingual
# side collection first, which is where the store used to be closed under the filler.
NOTES = {f"n{i:03}.md": f"# Note {i}\n\nThe courier code of depot {i} is kx{i:03}q.\n"
         for i in range(300)}  # fmt: skip
NOTES["zh.md"] = "# 端口\n\n接口监听在端口 8420 上。指标在 9420 端口。\n"


def _stats(term: Term) -> dict[str, str]:
    shown = term.ask("/stats")
    return dict(re.findall(r"^(\w+) +(.*)$", shown, re.M))


@pytest.fixture
def start_repl(tmp_path: Path):
    if pexpect is None or not hasattr(pexpect, "spawn"):
        missing("pexpect (with pty support) is not installed")
    from askmd.index.embedding_models import CJK_MODEL, installed

    if not installed(CJK_MODEL):
        missing("the multilingual model is not installed (requirements-multilingual.txt)")
    kb = write_notes(tmp_path / "kb", NOTES)
    children = []

    def start() -> Term:
        env = clean_env()
        env.update(TERM="xterm-256color", COLUMNS=str(COLS), LINES=str(ROWS))
        child = pexpect.spawn(
            sys.executable,
            [str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")],
            env=env,
            cwd=str(tmp_path),
            dimensions=(ROWS, COLS),
            encoding="utf-8",
            timeout=60,
        )
        children.append(child)
        term = Term(child)
        term.wait(PROMPT, timeout=60)
        return term

    yield start, kb
    for child in children:
        if child.isalive():
            child.terminate(force=True)
        child.close()


def _until_embedded(term: Term, seconds: float = 90) -> dict[str, str]:
    deadline = time.monotonic() + seconds
    while True:
        stats = _stats(term)
        if int(stats.get("chunks_embedded", "0").replace(",", "")) > 0:
            return stats
        assert time.monotonic() < deadline, term.screen
        time.sleep(1)


def test_stats_while_the_filler_starts_does_not_stop_it(start_repl) -> None:
    start, _ = start_repl
    term = start()
    shown = term.ask("what is the courier code of depot 7?")
    assert "kx007q" in shown
    first = _stats(term)  # at once, while the first group is embedded
    stats = _until_embedded(term)
    assert "Traceback" not in term.screen and "Exception in thread" not in term.screen
    assert first["filler"] == stats["filler"] == "running", (first, stats)
    term.quit_with_eof()


def test_stats_questions_reindex_and_saves_while_the_filler_runs(start_repl) -> None:
    start, kb = start_repl
    term = start()
    ends = time.monotonic() + 8  # a bounded stress: seconds of everything at once
    n = 0
    while time.monotonic() < ends:
        n += 1
        _stats(term)
        assert "kx011q" in term.ask("courier code of depot 11")
        (kb / f"saved{n}.md").write_text(f"# Saved {n}\n\nThe saved code is sv{n}z.\n")
        if n == 2:
            term.ask("/reindex")
    stats = _until_embedded(term)
    assert stats["filler"] == "running", stats
    assert "Traceback" not in term.screen and "Exception in thread" not in term.screen
    term.quit_with_eof()


def _wait(condition, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.05)


def test_a_failure_the_filler_did_not_expect_is_said_once_and_it_goes_on(tmp_path: Path) -> None:
    """The manifest's embedding cache refuses writes for a while (sqlite3 fails, not
    askmd): one line, no traceback, and the filling goes on once it takes them again."""
    from askmd.index.manifest import MANIFEST
    from askmd.pipeline import Index
    from askmd.settings import load_settings
    from tests.openai_server import OpenAIServer

    kb = write_notes(tmp_path / "kb", {f"n{i}.md": f"# N{i}\n\nCode {i}.\n" for i in range(40)})
    with OpenAIServer(dimension=16) as server:
        environ = {"ASKMD_EMBEDDING_BACKEND": "openai", "ASKMD_EMBEDDING_MODEL": "test-embed",
                   "OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "k"}  # fmt: skip
        overrides = {"knowledge_dir": kb, "index_dir": tmp_path / "ix"}
        index = Index(load_settings(environ=environ, dotenv_path=None, overrides=overrides))
        index.sync(vectors=False)
        db = sqlite3.connect(tmp_path / "ix" / MANIFEST)
        db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON embeddings BEGIN SELECT RAISE(ABORT, 'no'); END"
        )
        db.commit()
        said: list[str] = []
        index.keeper.fill_in_background(said.append)
        try:
            _wait(lambda: said)
            assert index.graph.stats()["filler"] == "running"
            db.execute("DROP TRIGGER refuse")
            db.commit()
            _wait(lambda: index.graph.stats()["chunks_embedded"] == 40)
        finally:
            index.keeper.filler.stop()
        assert len(said) == 1 and "trying again" in said[0], said
        assert "\n" not in said[0]


@contextmanager
def _slow_repl(tmp_path: Path, kb: Path, latency: float, batch: str) -> Iterator[Term]:
    """The REPL at a terminal over `kb`, its vectors from a scripted server that answers
    each batch of `batch` texts after `latency` seconds."""
    if pexpect is None or not hasattr(pexpect, "spawn"):
        missing("pexpect (with pty support) is not installed")
    from tests.openai_server import OpenAIServer

    with OpenAIServer(dimension=16, latency=latency) as server:
        env = clean_env(
            ASKMD_EMBEDDING_BACKEND="openai", ASKMD_EMBEDDING_MODEL="test-embed",
            OPENAI_BASE_URL=server.url, OPENAI_API_KEY="k", ASKMD_EMBED_BATCH=batch,
        )  # fmt: skip
        env.update(TERM="xterm-256color", COLUMNS=str(COLS), LINES=str(ROWS))
        child = pexpect.spawn(
            sys.executable,
            [str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")],
            env=env, cwd=str(tmp_path), dimensions=(ROWS, COLS), encoding="utf-8", timeout=60,
        )  # fmt: skip
        try:
            yield Term(child)
        finally:
            if child.isalive():
                child.terminate(force=True)


def test_at_a_terminal_the_first_prompt_does_not_wait_for_a_small_folders_vectors(
    tmp_path: Path,
) -> None:
    """The prompt comes once the notes are searchable by keyword; the vectors of even a
    small folder follow in the background, as a big folder's do."""
    kb = write_notes(tmp_path / "kb", {f"n{i}.md": f"# N{i}\n\nShelf {i} code sh{i}x.\n"
                                       for i in range(20)})  # fmt: skip
    with _slow_repl(tmp_path, kb, latency=0.2, batch="4") as term:
        before = term.wait(PROMPT, timeout=60)
        assert "20 added" in before and re.search(r"\b0 chunks embedded", before), before
        deadline = time.monotonic() + 30
        while _stats(term)["chunks_embedded"] != "20":
            assert time.monotonic() < deadline, term.screen
            time.sleep(0.5)
        term.quit_with_eof()


def test_the_multilingual_vectors_are_named_while_they_are_stored(tmp_path: Path) -> None:
    """Once the vectors bar is full, the second model's work (seconds to minutes) has a
    bar of its own with its count, not a still screen."""
    if pexpect is None or not hasattr(pexpect, "spawn"):
        missing("pexpect (with pty support) is not installed")
    from askmd.index.embedding_models import CJK_MODEL, installed

    if not installed(CJK_MODEL):
        missing("the multilingual model is not installed (requirements-multilingual.txt)")
    kb = write_notes(tmp_path / "kb", {"zh.md": NOTES["zh.md"], "en.md": NOTES["n001.md"]})
    env = clean_env()
    env.update(TERM="xterm-256color", COLUMNS=str(COLS), LINES=str(ROWS))
    child = pexpect.spawn(
        sys.executable,
        [str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(tmp_path / "ix"),
         "index"],
        env=env, cwd=str(tmp_path), dimensions=(ROWS, COLS), encoding="utf-8", timeout=120,
    )  # fmt: skip
    term = Term(child)
    term.wait("indexed:", timeout=120)
    child.expect(pexpect.EOF)
    assert re.search(r"multilingual vectors\s+━+\s+[0-2]/2", term.screen), term.screen


def test_reindex_while_the_filler_stores_a_group_says_so_and_leaves_it_the_vectors(
    tmp_path: Path,
) -> None:
    """/reindex at once on a new index: the filler is storing its first group (a slow
    server here, a model loading on a laptop). The rebuild leaves the vectors to the
    filler instead of waiting for its group and storing them itself."""
    kb = write_notes(tmp_path / "kb", {f"n{i}.md": f"# N{i}\n\nBin {i} code bn{i}x.\n"
                                       for i in range(40)})  # fmt: skip
    with _slow_repl(tmp_path, kb, latency=0.5, batch="2") as term:
        term.wait(PROMPT, timeout=60)
        shown = term.ask("/reindex")  # a wait over 2 s is named: test_rwlock.py
        assert re.search(r"rebuilt: 40 files, 40 chunks \(0 embedded, 40 waiting", shown), shown
        term.quit_with_eof()
