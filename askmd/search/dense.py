"""The dense side of a search: the question's nearest chunks in one vector space or two
(the multilingual model's for CJK chunks, embedding_models.py), their lists merged, each
candidate's score lifted by its best window (windows.py), and, while the store fills,
the keyword matches' cosines computed for the question."""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import TYPE_CHECKING

from askmd.index import windows
from askmd.read import chunker
from askmd.terms import is_cjk

if TYPE_CHECKING:
    import numpy as np

    from askmd.index.embedder import Embedder
    from askmd.index.manifest import Manifest
    from askmd.index.store import Store, Stored
    from askmd.search.hits import Filters


def usable(
    found: list[Stored], manifest: Manifest, filling: bool, filters: Filters | None
) -> list[Stored]:
    """The dense candidates a search may use: while the store fills, only those whose
    vector is of the current text (a file being re-indexed may still have its old ones);
    with filters, only those they allow."""
    if filling:
        current = manifest.with_vectors([s.id for s in found])
        found = [s for s in found if s.id in current]
    return [s for s in found if filters is None or filters.allows(s.metadata)]


def nearest(
    query: str, embedder: Embedder, store: Store, manifest: Manifest, pool: int, content: bool
) -> tuple[list[Stored], str, np.ndarray | None, np.ndarray]:
    """The dense candidates, the id of the model whose vectors ranked them, the
    question's vector in the primary model's space (None when it did not search there)
    and in the ranking model's.

    With a second, multilingual vector space (embedding_models.py), a CJK question
    searches it alone (the English-only model's vectors of Chinese text are noise): it
    holds every chunk of a folder with CJK notes, so the question reaches English notes
    too. A Latin-script question searches both, the second for its CJK chunks only (its
    English ones are the first model's, which reads English better), so it can reach a
    Chinese note by meaning."""
    side = side_space(embedder, store)
    cjk = is_cjk(query)
    main = [] if side is not None and cjk else [(embedder, store)]
    spaces = main + ([side] if side is not None else [])
    wide = manifest.get("side_scope") == "all"
    vectors = [e.embed_queries([query])[0] for e, _ in spaces]
    lists = [
        s.nearest(
            vector,
            pool,
            where={"cjk": True} if s is not store and wide and not cjk else None,
            content=content,
        )
        for (_, s), vector in zip(spaces, vectors, strict=True)
    ]
    return merge(lists), spaces[0][0].id, vectors[0] if main else None, vectors[0]


def with_windows(
    dense: list[tuple[str, float]],
    keyword: list[tuple[str, float]],
    vector: np.ndarray,
    embedder_id: str,
    manifest: Manifest,
    pool: int,
    less: float,
) -> list[tuple[str, float]]:
    """The dense list with each candidate scored by the better of its cosine and its best
    window's `less` a margin (windows.py), keyword candidates the dense search missed
    included: a question that matches one sentence of a long section finds it. Chunks
    without windows in this model's space (CJK text in MiniLM's, an index from before)
    keep their cosine."""
    score = dict(dense)
    ids = list(dict.fromkeys([*score, *(c for c, _ in keyword)]))
    found = manifest.windows(windows.key(embedder_id), ids, len(vector))
    if not found:
        return dense
    for chunk_id, cosine in windows.nearest(found, vector).items():
        score[chunk_id] = max(score.get(chunk_id, 0.0), cosine - less)
    return sorted(score.items(), key=lambda item: -item[1])[:pool]


def while_filling(
    query: str,
    dense: list[tuple[str, float]],
    dense_by: str,
    first: list[tuple[str, float]],
    texts: dict[str, Stored],
    vectors: tuple[np.ndarray | None, np.ndarray | None],
    embedder: Embedder,
    manifest: Manifest,
) -> tuple[list[tuple[str, float]], str]:
    """The dense list and the id of the model that ranked it, while the store fills: the
    keyword ranking's `first` candidates scored as a filled index would score them. A CJK
    question is read by the multilingual model when the folder has CJK notes (the
    English-only one's vectors of it are noise: `nearest`), even before that model's
    vectors are stored; about English notes, an English-only model reads its
    translation's vector instead. `vectors`: the question's vector in the space that ranked
    `dense` (None when it was not searched), and its translation's (None without one)."""
    asked, translated = vectors
    model = embedder if dense_by == embedder.id else embedder.companion()
    if is_cjk(query) and dense_by == embedder.id:
        side = getattr(embedder, "companion_id", None)
        if side and manifest.non_cjk_share() < 1.0:
            model, dense, asked = embedder.companion(), [], None
        elif translated is not None:
            asked = translated
    if asked is None:
        asked = model.embed_queries([query])[0]
    return filled_in(dense, first, asked, model, manifest, texts), model.id


def filled_in(
    dense: list[tuple[str, float]],
    keyword: list[tuple[str, float]],
    asked: np.ndarray,
    model: Embedder,
    manifest: Manifest,
    texts: dict[str, Stored],
) -> list[tuple[str, float]]:
    """The dense list while the store fills, with the keyword candidates it lacks scored
    by the same model: their vectors from the embedding cache (every vector stored, and
    those the filling has made but not stored yet), computed now where it has none, from
    the text the index embeds. So a question asked before the vectors are stored is
    ranked by meaning among the chunks its words found, instead of by keyword alone or
    with the chunks already stored crowding out the rest."""
    import numpy as np

    have = {c for c, _ in dense}
    wanted = [c for c, _ in keyword if c not in have and c in texts]
    if not wanted:
        return dense
    hashes = {c: str(texts[c].metadata.get("text_hash", "")) for c in wanted}
    cached = manifest.cached(model.id, sorted({h for h in hashes.values() if h}))
    vectors = {c: cached[h] for c, h in hashes.items() if h in cached}
    fresh = [c for c in wanted if c not in vectors]
    if fresh:
        made = model.embed([_embedding_text(texts[c]) for c in fresh])
        vectors.update(zip(fresh, made, strict=True))
    scored = {c: float(np.dot(v, asked)) for c, v in vectors.items()}
    return sorted([*dense, *scored.items()], key=lambda item: -item[1])


def _embedding_text(chunk: Stored) -> str:
    """The text the index embeds for a chunk, from what it keeps of it."""
    chain = str(chunk.metadata.get("heading_chain", ""))
    title = str(chunk.metadata.get("title", ""))
    return chunker.embedding_text(title, chain.split(" > ") if chain else [], chunk.text)


def side_space(embedder: Embedder, store: Store) -> tuple[Embedder, Store] | None:
    """The multilingual model and its collection, when this index has CJK chunks in one."""
    side_id = getattr(embedder, "companion_id", None)
    if not side_id:
        return None
    side = store.side(side_id)
    if not side.open_existing() or not side.has_chunks():
        return None
    return embedder.companion(), side


def merge(lists: list[list[Stored]]) -> list[Stored]:
    """One dense ranking from the first list and the lists of other models, whose cosines
    are not on one scale: each other list is shifted so its median candidate meets the
    first list's median, and a chunk in two lists keeps its better score. So a chunk of
    another space ranks high when it stands out from its own candidates as far. Chosen on
    the cross-language questions (bench/multilingual_bench.py): with MiniLM and USE, dense
    hit@5 1.00 and MRR 0.70, against 1.00 / 0.65 standardising by mean and spread, 0.91 /
    0.69 comparing raw cosines, 0.91 / 0.72 for MiniLM alone."""
    first = lists[0] if lists else []
    if len(lists) < 2 or not first:
        return [s for found in lists for s in found]
    best: dict[str, Stored] = {s.id: s for s in first}
    middle = statistics.median(s.distance for s in first)
    for other in lists[1:]:
        if not other:
            continue
        shift = middle - statistics.median(s.distance for s in other)
        for s in other:
            if s.id not in best or s.distance + shift < best[s.id].distance:
                best[s.id] = replace(s, distance=s.distance + shift)
    return sorted(best.values(), key=lambda s: s.distance)
