"""Keyword search gives exactly what scoring every posting row in SQL gives (the same
top ids in the same order, the same scores) on thousands of real chunks (this
repository's own text): with no packing, with common terms packed, and after files are
added, changed and deleted behind a packing, before and after it is packed again."""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import chunker
from askmd.index import packed_postings
from askmd.index.manifest import ChunkRow, FileRecord, Manifest, chunk_row
from tests.conftest import ROOT, clean_env, write_notes
from tests.keyword_reference import keyword_exact

pytestmark = pytest.mark.slow  # a corpus of thousands of chunks, packed and re-packed

SKIP = {".venv", ".git", "__pycache__", "node_modules", ".pytest_cache", ".ruff_cache"}
WEIGHTS = [None, (0.0, 0.25, 0.0), (0.5, 1.0, 0.3)]


def sources() -> list[Path]:
    found = []
    for path in sorted(ROOT.rglob("*")):
        parts = set(path.relative_to(ROOT).parts)
        if path.suffix in (".md", ".py") and path.is_file() and not parts & SKIP:
            found.append(path)
    return found


def record(manifest: Manifest, paths: list[Path], copy: str = "") -> None:
    """Chunk each file as a note (small chunks, so there are thousands) and record them."""
    files = []
    for path in paths:
        source = copy + path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        chunks = chunker.split(text, source=source, title=path.stem, size=300, overlap=0)
        rows = [
            chunk_row(
                c.id,
                f"h{c.id}",
                c.embedding_text,
                title=c.title,
                aliases=[path.stem],
                chain=c.heading_chain,
            )  # fmt: skip
            for c in chunks
        ]
        files.append((FileRecord(source, f"md5-{source}", len(text), 0, len(rows)), rows))
    manifest.record(files)


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Manifest:
    index = Manifest(tmp_path_factory.mktemp("topk") / "manifest.sqlite3")
    record(index, sources())
    yield index
    index.close()


def vocabulary(manifest: Manifest) -> list[tuple[str, int]]:
    rows = manifest.db.execute("SELECT term, COUNT(*) FROM postings GROUP BY term ORDER BY term")
    return list(rows)


def queries(manifest: Manifest, n: int, seed: int) -> list[list[str]]:
    """Random queries mixing rare, mid and common terms (and one unknown word now and then)."""
    rng = random.Random(seed)
    vocab = vocabulary(manifest)
    by_df = sorted(vocab, key=lambda v: v[1])
    rare = [t for t, df in by_df[: len(by_df) // 2]]
    mid = [t for t, df in by_df[len(by_df) // 2 : -200]]
    common = [t for t, df in by_df[-200:]]
    out = []
    for _ in range(n):
        terms = rng.sample(common, rng.randint(0, 3)) + rng.sample(mid, rng.randint(0, 2))
        terms += rng.sample(rare, rng.randint(0 if terms else 1, 2))
        if rng.random() < 0.1:
            terms.append("zzzunknownzzz")
        out.append(terms)
    return out


def same(fast: list[tuple[str, float]], exact: list[tuple[str, float]]) -> bool:
    return [c for c, _ in fast] == [c for c, _ in exact] and all(
        abs(a - b) <= 1e-9 for (_, a), (_, b) in zip(fast, exact, strict=True)
    )


def check(manifest: Manifest, n: int, seed: int) -> None:
    """keyword() against the SQL reference on random queries, scripts, weights and limits."""
    rng = random.Random(seed)
    for terms in queries(manifest, n, seed):
        cjk, weights = rng.choice([None, False, True]), rng.choice(WEIGHTS)
        for limit in (1, 10, 40):
            fast = manifest.keyword(terms, limit, cjk=cjk, weights=weights)
            exact = keyword_exact(manifest, terms, limit, cjk=cjk, weights=weights)
            assert exact, terms
            assert same(fast, exact), (terms, limit, weights)


def packed_terms(manifest: Manifest) -> int:
    return manifest.db.execute("SELECT COUNT(*) FROM packed").fetchone()[0]


def test_the_corpus_is_thousands_of_chunks(manifest: Manifest) -> None:
    assert manifest.db.execute("SELECT COUNT(*) FROM documents").fetchone()[0] >= 2000


def test_unpacked_search_is_exact(manifest: Manifest) -> None:
    assert packed_postings.upto(manifest.db) is None
    check(manifest, 150, seed=1)


def test_packed_search_is_exact_and_stays_exact_as_files_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Common terms packed; then files added (rows past the packing), changed and deleted
    (documents the packing holds, left out), all without packing again; then packed again."""
    monkeypatch.setattr(packed_postings, "PACK_DF", 20)
    index = Manifest(tmp_path / "manifest.sqlite3")
    paths = sources()
    record(index, paths[: len(paths) // 2])
    assert index.packing_due()
    assert index.pack() > 100
    assert not index.packing_due()
    check(index, 80, seed=2)

    record(index, paths[len(paths) // 2 :])  # new files: their documents are past the packing
    gone = paths[: len(paths) // 8]
    index.forget(p.relative_to(ROOT).as_posix() for p in gone)
    record(index, paths[len(paths) // 8 : len(paths) // 4], copy="")  # changed: re-recorded
    left_out = index.db.execute("SELECT COUNT(*) FROM packed_gone").fetchone()[0]
    past = index.db.execute(
        "SELECT COUNT(*) FROM documents WHERE doc > ?", (packed_postings.upto(index.db),)
    ).fetchone()[0]
    assert left_out > 100 and past > 1000  # both sides of a stale packing are in play
    check(index, 80, seed=3)

    assert index.packing_due()
    index.pack()
    assert index.db.execute("SELECT COUNT(*) FROM packed_gone").fetchone()[0] == 0
    check(index, 80, seed=4)
    index.close()


def test_searches_during_a_packing_stay_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync packs without holding searches back: a search on another connection while
    the packing is written sees the old packing or the new one, never a mix."""
    monkeypatch.setattr(packed_postings, "PACK_DF", 10)
    path = tmp_path / "manifest.sqlite3"
    writer = Manifest(path)
    paths = sources()
    record(writer, paths[: len(paths) // 2])
    writer.pack()
    record(writer, paths[len(paths) // 2 :])  # half the documents are past the packing
    ready, done = threading.Event(), threading.Event()
    rounds, failures = [], []

    def search() -> None:  # its own connection, as each thread of a server has
        reader = Manifest(path)
        terms = queries(reader, 30, seed=5)
        expected = [keyword_exact(reader, t, 10) for t in terms]
        ready.set()
        while not done.is_set() or not rounds:
            for t, want in zip(terms, expected, strict=True):
                if not same(reader.keyword(t, 10), want):
                    failures.append(t)
            rounds.append(1)
        reader.close()

    searcher = threading.Thread(target=search)
    searcher.start()
    assert ready.wait(120)
    for _ in range(3):
        writer.pack()
    done.set()
    searcher.join(120)
    assert rounds and not failures
    writer.close()


def test_a_packed_document_id_is_never_given_again(tmp_path: Path) -> None:
    """Deleting the last document then recording a new one must not reuse its id: the
    packing would otherwise lend the new chunk the old one's counts."""
    index = Manifest(tmp_path / "manifest.sqlite3")
    row = chunk_row("a#0", "h0", "alpha beta", title="A", aliases=[], chain=[])
    index.record([(FileRecord("a.md", "m", 1, 0, 1), [row])])
    index.pack()
    last = packed_postings.upto(index.db)
    index.forget(["a.md"])
    other = chunk_row("b#0", "h1", "gamma", title="B", aliases=[], chain=[])
    index.record([(FileRecord("b.md", "m", 1, 0, 1), [other])])
    doc = index.db.execute("SELECT doc FROM documents WHERE chunk = 'b#0'").fetchone()[0]
    assert doc > last
    index.close()


def test_a_count_too_wide_to_pack_is_read_from_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(packed_postings, "PACK_DF", 2)
    index = Manifest(tmp_path / "manifest.sqlite3")
    rows = [ChunkRow(f"c#{i}", f"h{i}", ["word"] * (70_000 if i == 0 else 1) + ["other"])
            for i in range(3)]  # fmt: skip
    index.record([(FileRecord("c.md", "m", 1, 0, 3), rows)])
    index.pack()
    packed = {t for (t,) in index.db.execute("SELECT term FROM packed")}
    assert packed == {"other"}  # "word" occurs 70,000 times in one chunk: past 16 bits
    assert same(index.keyword(["word", "other"], 3), keyword_exact(index, ["word", "other"], 3))
    assert index.keyword(["word"], 1)[0][0] == "c#0"
    index.close()


def test_statistics_cached_for_a_query_follow_a_change(tmp_path: Path) -> None:
    """Collection statistics are kept between queries; a change to the index drops them."""
    index = Manifest(tmp_path / "manifest.sqlite3")
    paths = sorted((ROOT / "knowledge").rglob("*.md"))
    record(index, paths)
    by_df = sorted(vocabulary(index), key=lambda v: (-v[1], v[0]))
    terms = [by_df[0][0], by_df[1][0], by_df[len(by_df) // 3][0]]
    before = index.keyword(terms, 10)
    assert same(before, keyword_exact(index, terms, 10))
    record(index, paths, copy="again/")  # every term twice as frequent: new idfs
    after = index.keyword(terms, 10)
    assert same(after, keyword_exact(index, terms, 10))
    assert after[0][1] != before[0][1]
    index.close()


def test_a_read_only_index_from_older_code_searches_without_packing(tmp_path: Path) -> None:
    index = Manifest(tmp_path / "manifest.sqlite3")
    record(index, sorted((ROOT / "knowledge").rglob("*.md")))
    index.db.execute("DROP TABLE packed")
    index.db.execute("DROP TABLE packed_gone")
    index.close()
    old = Manifest(tmp_path / "manifest.sqlite3", read_only=True)
    terms = [t for t, _ in vocabulary(old)[:40:4]]
    assert not old.packing_due()
    assert same(old.keyword(terms, 10), keyword_exact(old, terms, 10))
    old.close()


def test_a_sync_packs_and_an_older_index_is_packed_on_its_next_start(tmp_path: Path) -> None:
    kb = write_notes(tmp_path / "kb", {f"n{i}.md": f"# Note {i}\n\nword{i} shared text\n"
                                       for i in range(5)})  # fmt: skip
    index_dir = tmp_path / "ix"
    command = [sys.executable, str(ROOT / "rag.py"), "--knowledge", str(kb),
               "--index-dir", str(index_dir), "index", "--keyword-only"]  # fmt: skip

    def packed_upto() -> str | None:
        db = sqlite3.connect(index_dir / "manifest.sqlite3")
        row = db.execute("SELECT value FROM meta WHERE key = 'packed_upto'").fetchone()
        db.close()
        return row[0] if row else None

    subprocess.run(command, env=clean_env(), check=True, capture_output=True, timeout=120)
    assert packed_upto() == "5"
    db = sqlite3.connect(index_dir / "manifest.sqlite3")  # as older code left it
    db.execute("DROP TABLE packed")
    db.execute("DROP TABLE packed_gone")
    db.execute("DELETE FROM meta WHERE key IN ('packed_upto', 'packed_docs')")
    db.execute("DROP TABLE _migrations")  # older code recorded no migrations
    db.commit()
    db.close()
    done = subprocess.run(command, env=clean_env(), check=True, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert "index up to date" in done.stderr  # nothing re-recorded
    assert packed_upto() == "5"


def test_a_packing_killed_midway_leaves_the_last_one_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kill -9 while every term is being packed: the packing before it stays whole (one
    transaction) and searches stay exact."""
    monkeypatch.setattr(packed_postings, "PACK_DF", 20)
    path = tmp_path / "manifest.sqlite3"
    index = Manifest(path)
    record(index, sources())
    index.pack()
    before = (packed_postings.upto(index.db), packed_terms(index))
    index.close()
    script = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); from askmd.index import packed_postings; "
        "packed_postings.PACK_DF = 1; from pathlib import Path; "
        "from askmd.index.manifest import Manifest; "
        f"m = Manifest(Path({str(path)!r})); print('packing', flush=True); m.pack(); "
        "print('done', flush=True)"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "packing"
    time.sleep(0.5)
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    assert child.stdout.read() == ""  # killed before it finished
    index = Manifest(path)
    assert (packed_postings.upto(index.db), packed_terms(index)) == before
    check(index, 40, seed=6)
    index.close()


def test_a_packing_whose_count_was_lost_is_redone_not_a_crash(tmp_path: Path) -> None:
    index = Manifest(tmp_path / "manifest.sqlite3")
    record(index, sorted((ROOT / "knowledge").rglob("*.md")))
    index.pack()
    index.db.execute("DELETE FROM meta WHERE key = 'packed_docs'")
    assert index.packing_due()
    index.pack()
    assert not index.packing_due()
    index.close()
