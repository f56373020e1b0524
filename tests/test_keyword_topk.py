"""Keyword search's fast path (rarer terms read, commoner ones looked up, MaxScore proof)
gives exactly what scoring every posting gives: the same top ids in the same order and
the same scores, on thousands of real chunks (this repository's own text)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import chunker
from manifest import FileRecord, Manifest, chunk_row

ROOT = Path(__file__).resolve().parent.parent
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


def holding(manifest: Manifest, terms: list[str]) -> set[str]:
    """The chunks that hold one of these terms."""
    marks = ",".join("?" * len(terms))
    rows = manifest.db.execute(
        "SELECT DISTINCT d.chunk FROM postings p JOIN documents d ON d.doc = p.doc "
        f"WHERE p.term IN ({marks})",
        terms,
    )
    return {r[0] for r in rows}


def test_the_corpus_is_thousands_of_chunks(manifest: Manifest) -> None:
    assert manifest.db.execute("SELECT COUNT(*) FROM documents").fetchone()[0] >= 2000


@pytest.mark.parametrize("budget", [(30,), (300,), (30, 300), Manifest._RARE_POSTINGS])
def test_fast_path_is_exact_or_the_exact_top_of_the_chunks_holding_a_rarer_term(
    manifest: Manifest, budget: tuple[int, ...]
) -> None:
    """Exact (ids, order, scores) wherever a budget proves the top or the query's postings
    fit in the last one; otherwise exactly the top of the chunks that hold one of the
    rarer terms read, with their exact scores: what is left out holds only commoner terms."""
    manifest._RARE_POSTINGS = budget  # small budgets make the pruned paths do the work here
    try:
        rng = random.Random(str(budget))
        inexact = 0
        for terms in queries(manifest, 150, seed=sum(budget)):
            cjk, weights = rng.choice([None, False, True]), rng.choice(WEIGHTS)
            for limit in (10, 40):
                fast = manifest.keyword(terms, limit, cjk=cjk, weights=weights)
                read = manifest._keyword_inexact
                exact = manifest._keyword_exact(terms, limit, cjk=cjk, weights=weights)
                assert exact, terms
                if not read:
                    assert same(fast, exact), terms
                    continue
                inexact += 1
                everything = manifest._keyword_exact(terms, 100_000, cjk=cjk, weights=weights)
                held = holding(manifest, read)
                assert same(fast, [hit for hit in everything if hit[0] in held][:limit]), terms
        if budget == Manifest._RARE_POSTINGS:
            assert inexact == 0  # a few thousand chunks: every query here is exact
        elif max(budget) <= 30:
            assert inexact > 0  # the rule was exercised, not only the exact paths
    finally:
        del manifest._RARE_POSTINGS


def test_skipping_a_budget_that_cannot_prove_the_top_changes_no_answer(
    manifest: Manifest,
) -> None:
    """A budget that leaves much of the query unread is skipped for the next one: the
    answers must be those of trying every budget in turn."""
    manifest._RARE_POSTINGS = (30, 300)
    rng = random.Random(7)
    try:
        unproven = 0
        for terms in queries(manifest, 200, seed=7):
            cjk, weights = rng.choice([None, False, True]), rng.choice(WEIGHTS)
            manifest._UNPROVABLE = 1.0  # never skip
            every = manifest.keyword(terms, 10, cjk=cjk, weights=weights)
            unproven += bool(manifest._keyword_inexact)  # both budgets were tried
            manifest._UNPROVABLE = 0.0  # skip every budget but the last
            assert manifest.keyword(terms, 10, cjk=cjk, weights=weights) == every, terms
            manifest._UNPROVABLE = 0.3
            assert manifest.keyword(terms, 10, cjk=cjk, weights=weights) == every, terms
        assert unproven  # the pruned paths did the work, not only full queries
    finally:
        del manifest._RARE_POSTINGS, manifest._UNPROVABLE


def test_statistics_cached_for_a_query_follow_a_change(tmp_path: Path) -> None:
    """Document frequencies are kept between queries; a change to the index drops them."""
    index = Manifest(tmp_path / "manifest.sqlite3")
    paths = sorted((ROOT / "knowledge").rglob("*.md"))
    record(index, paths)
    by_df = sorted(vocabulary(index), key=lambda v: (-v[1], v[0]))
    terms = [by_df[0][0], by_df[1][0], by_df[len(by_df) // 3][0]]
    before = index.keyword(terms, 10)
    assert same(before, index._keyword_exact(terms, 10))
    record(index, paths, copy="again/")  # every term twice as frequent: new idfs
    after = index.keyword(terms, 10)
    assert same(after, index._keyword_exact(terms, 10))
    assert after[0][1] != before[0][1]
    index.close()
