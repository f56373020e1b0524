"""Why a note is or is not found for a question (`why NOTE QUESTION`, `/why`).

First whether the note is in the index at all: skipped (and why), not indexed yet,
waiting for its vectors, left out by a filter, or never seen (with the closest file
names). Then, for its best chunks, where each retriever ranked them (keyword rank and
BM25 score, dense rank and cosine), where the fused search put them, and what ranked
above; then whether the answer read it (retrieved) and quoted it (cited).
"""

from __future__ import annotations

import difflib
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from askmd.index import status
from askmd.search import dense as dense_side
from askmd.search.identifiers import identifiers
from askmd.search.retriever import is_cjk_query
from askmd.terms import content_terms

if TYPE_CHECKING:
    from askmd.pipeline import Index
    from askmd.search.hits import Filters

KEYWORD_POOL = 1000  # keyword candidates ranked: a note past these has no keyword rank
DENSE_POOL = 200  # dense candidates ranked
FUSED_POOL = 100  # the fused search's depth looked at
CHUNKS_SHOWN = 3  # of the note's chunks, the best this many by fused rank
ABOVE_SHOWN = 5  # passages shown that ranked above its best


def explain(index: Index, note: str, question: str, filters: Filters | None = None) -> dict:
    """The whole account, as `why --json` gives it."""
    settings = index.settings
    manifest = index.manifest if index.has_index() else None
    files = {row["source"]: row for row in status.files(settings, manifest)}
    source = _resolve(note, files)
    found: dict = {"note": source or note, "question": question, "status": "never seen"}
    if source is None:
        names = list(files)
        stems = {PurePosixPath(s).stem.lower(): s for s in names}
        near = difflib.get_close_matches(note.lower(), list(stems), n=3, cutoff=0.5)
        near = [stems[n] for n in near] or difflib.get_close_matches(note, names, n=3)
        found.update(closest_files=near, verdict=_never(note, near))
        return found
    row = files[source]
    found["status"] = row["status"]
    if not str(row["status"]).startswith(("indexed", "keyword only")):
        found["verdict"] = f"{source} is not in the index: {row['status']}"
        return found
    of_note = {c.id: c.metadata for c in manifest.chunks_of([source])}
    if filters is not None:
        allowed = filters.resolved(manifest)
        if not any(allowed.allows(meta) for meta in of_note.values()):
            found["excluded_by_filter"] = True
            found["verdict"] = f"{source} is left out by the filters given"
            return found
    keyword = _ranks(manifest.keyword(content_terms(question), KEYWORD_POOL,
                                      cjk=is_cjk_query(question)))  # fmt: skip
    dense: dict[str, tuple[int, float]] = {}
    if manifest.pending() < manifest.total_chunks():
        with index.reading() as store:
            stored, *_ = dense_side.nearest(
                question, index.embedder, store, manifest, DENSE_POOL, False
            )
        dense = {s.id: (n, round(1.0 - s.distance, 4)) for n, s in enumerate(stored, 1)}
    hits = index.search(question, FUSED_POOL, filters=filters)
    fused = {h.chunk_id: (h.rank, h.score) for h in hits}
    ranked = sorted(of_note, key=lambda c: (fused.get(c, (10**9,))[0], c))
    shown = []
    for chunk in ranked[:CHUNKS_SHOWN]:
        shown.append({
            "chunk_id": chunk,
            "heading_chain": of_note[chunk].get("heading_chain", ""),
            "keyword_rank": keyword.get(chunk, (None, None))[0],
            "keyword_score": keyword.get(chunk, (None, None))[1],
            "dense_rank": dense.get(chunk, (None, None))[0],
            "dense_score": dense.get(chunk, (None, None))[1],
            "fused_rank": fused.get(chunk, (None, None))[0],
            "waiting_for_vector": chunk not in dense and manifest.pending() > 0,
        })  # fmt: skip
    best = shown[0]["fused_rank"] if shown else None
    found["chunks"] = shown
    found["above"] = [
        {"rank": h.rank, "source": h.source, "heading_chain": h.heading_chain,
         "score": round(h.score, 4)}
        for h in hits[: (best - 1 if best else len(hits))][:ABOVE_SHOWN]
    ]  # fmt: skip
    found["rules"] = _rules(index, question)
    k = settings.top_k
    answer = index.ask(question, [], k, filters=filters)
    found["retrieved"] = any(h.source == source for h in answer.hits)
    found["cited"] = any(r.source == source for r in answer.references) and answer.answered
    found["answered"] = answer.answered
    found["verdict"] = _verdict(source, found, best, k)
    return found


def _resolve(note: str, files: dict[str, dict]) -> str | None:
    wanted = note.strip().lstrip("/")
    for name in (wanted, f"{wanted}.md"):
        if name in files:
            return name
    by_stem = [s for s in files if PurePosixPath(s).stem.lower() == wanted.lower()]
    return min(by_stem, key=len) if by_stem else None


def _ranks(scored: list[tuple[str, float]]) -> dict[str, tuple[int, float]]:
    return {chunk: (n, round(score, 4)) for n, (chunk, score) in enumerate(scored, 1)}


def _rules(index: Index, question: str) -> list[str]:
    said = []
    period = index.searcher.dates_in(question)
    if period is not None:
        said.append(f"dates: the question names {period.since} to {period.until}; "
                    "chunks of those days rank first")  # fmt: skip
    exact = identifiers(question)
    if exact:
        said.append(f"identifiers: chunks that hold {', '.join(exact)} rank first")
    return said


def _never(note: str, near: list[str]) -> str:
    listed = f" (closest: {', '.join(near)})" if near else ""
    return f"no file named {note!r} is in the knowledge folder or its include globs{listed}"


def _verdict(source: str, found: dict, best: int | None, k: int) -> str:
    if found["cited"]:
        return f"{source} was retrieved and cited"
    if found["retrieved"] and not found["answered"]:
        return (f"{source} was retrieved (rank {best}), but the answer was declined: the notes "
                "found were judged not to answer the question")  # fmt: skip
    if found["retrieved"]:
        return f"{source} was retrieved (rank {best}) but not quoted: the answer quoted others"
    if best is None:
        words = any(c["keyword_rank"] for c in found["chunks"])
        near = any(c["dense_rank"] for c in found["chunks"])
        if not words and not near:
            return (f"{source} was not retrieved: none of its chunks shares a word with the "
                    "question or comes near it in meaning")  # fmt: skip
        return f"{source} was not retrieved: its chunks rank below the first {FUSED_POOL}"
    return f"{source} was not retrieved: its best chunk ranks {best}; the answer reads the top {k}"
