"""Find the chunks that answer a question: keyword (BM25) and dense search, fused.

BM25 reads the postings the indexer keeps in the manifest (terms.py: words, identifiers
whole and in parts, CJK bigrams); dense search asks Chroma for the nearest vectors. The
two rankings are fused by weighted reciprocal rank, with weights that depend on the
query: an English-only embedder is not trusted with a query in Chinese. Pieces of one
section that overlap are collapsed to the best of them. It generates nothing, never
prints, and reads settings only through its arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import notes
from indexer import ENGLISH_ONLY
from terms import cjk_share, content_terms

if TYPE_CHECKING:
    from embedder import Embedder
    from manifest import Manifest
    from store import Store, Stored

RRF_K = 60  # the usual constant of reciprocal rank fusion: 1 / (60 + rank)
MIN_POOL = 50  # candidates asked of each retriever, at least; filters may thin them
MODES = ("hybrid", "dense", "keyword")
# An English-only embedder's vectors for a mostly-Chinese query rank almost at random
# (MiniLM: CMRC hit@1 0.15 against BM25's 0.94, BENCHMARKS.md); give them no say there.
CJK_QUERY = 0.3  # share of a query's letters that makes it a Chinese/Japanese query


@dataclass(frozen=True)
class Hit:
    rank: int
    score: float
    chunk_id: str
    source: str
    heading_chain: str
    line_start: int
    line_end: int
    text: str

    def to_json(self) -> dict:
        return {
            "rank": self.rank,
            "score": round(self.score, 4),
            "source": self.source,
            "heading_chain": self.heading_chain,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "chunk_id": self.chunk_id,
            "text": self.text,
        }


@dataclass(frozen=True)
class Filters:
    """Optional limits on what a search may return."""

    source: str = ""  # a glob on the path inside the knowledge folder, e.g. "guides/**"
    heading_level: int = 0  # only chunks under a heading of this level or higher (1 = H1)

    def allows(self, metadata: dict) -> bool:
        if self.source and not notes.matches(str(metadata.get("source", "")), (self.source,)):
            return False
        level = int(metadata.get("heading_level", 0) or 0)
        return not self.heading_level or level <= self.heading_level


def weights(query: str, embedder_id: str) -> tuple[float, float]:
    """(dense, keyword) weights for this query: equal, unless the embedder cannot read it."""
    if embedder_id in ENGLISH_ONLY and cjk_share(query) >= CJK_QUERY:
        return 0.0, 1.0
    return 1.0, 1.0


def search(
    query: str,
    embedder: Embedder,
    store: Store,
    manifest: Manifest,
    k: int,
    *,
    mode: str = "hybrid",
    filters: Filters | None = None,
) -> list[Hit]:
    """The k best chunks for the query, best first.

    `score` is the fused score scaled to 0..1 (1: first in every retriever that had a
    say); in "dense" mode it is the cosine similarity, in "keyword" mode BM25 / the best.
    """
    if not query.strip() or k <= 0:
        return []
    filters = filters or Filters()
    pool = max(MIN_POOL, 4 * k) * (4 if filters != Filters() else 1)
    w_dense, w_keyword = weights(query, embedder.id) if mode == "hybrid" else (1.0, 1.0)
    dense: list[Stored] = []
    if mode == "dense" or (mode == "hybrid" and w_dense > 0):
        vector = embedder.embed_queries([query])[0]
        dense = [s for s in store.nearest(vector, pool) if filters.allows(s.metadata)]
    keyword: list[tuple[str, float]] = []
    if mode in ("keyword", "hybrid"):
        keyword = manifest.keyword(content_terms(query), pool)
    if mode == "dense":
        return _hits([(s, 1.0 - s.distance) for s in dense], k)
    known = {s.id: s for s in dense}
    known.update((s.id, s) for s in store.get([c for c, _ in keyword if c not in known]))
    keyword = [(c, v) for c, v in keyword if c in known and filters.allows(known[c].metadata)]
    if mode == "keyword":
        best = keyword[0][1] if keyword else 1.0
        return _hits([(known[c], score / best) for c, score in keyword], k)
    fused: dict[str, float] = {}
    for rank, s in enumerate(dense, start=1):
        fused[s.id] = fused.get(s.id, 0.0) + w_dense / (RRF_K + rank)
    for rank, (c, _) in enumerate(keyword, start=1):
        fused[c] = fused.get(c, 0.0) + w_keyword / (RRF_K + rank)
    top = (w_dense * bool(dense) + w_keyword * bool(keyword)) / (RRF_K + 1) or 1.0
    ranked = sorted(fused.items(), key=lambda item: -item[1])
    return _hits([(known[c], score / top) for c, score in ranked], k)


def _hits(scored: list[tuple[Stored, float]], k: int) -> list[Hit]:
    """Hits from (chunk, score) best first, overlapping pieces of one section collapsed."""
    kept: list[tuple[Stored, float]] = []
    for s, score in scored:
        if any(_overlaps(s.metadata, other.metadata) for other, _ in kept):
            continue  # the better-ranked piece of the same section already stands for it
        kept.append((s, score))
        if len(kept) == k:
            break
    return [
        Hit(
            rank=rank,
            score=score,
            chunk_id=s.id,
            source=str(s.metadata.get("source", "")),
            heading_chain=str(s.metadata.get("heading_chain", "")),
            line_start=int(s.metadata.get("line_start", 0)),
            line_end=int(s.metadata.get("line_end", 0)),
            text=s.text,
        )
        for rank, (s, score) in enumerate(kept, start=1)
    ]


def _overlaps(a: dict, b: dict) -> bool:
    """Two pieces of one section whose lines overlap (the chunker's overlap repeats text)."""
    return (
        a.get("source") == b.get("source")
        and a.get("heading_chain") == b.get("heading_chain")
        and int(a.get("line_start", 0)) <= int(b.get("line_end", 0))
        and int(b.get("line_start", 0)) <= int(a.get("line_end", 0))
    )
