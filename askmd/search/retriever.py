"""Find the chunks that answer a question: keyword (BM25) and dense search, blended.

BM25 reads the postings the indexer keeps in the manifest (terms.py: words, identifiers
whole and in parts, CJK bigrams); dense search asks Chroma for the nearest vectors. The
two are blended on scaled scores, with a weight that depends on the query's script:
keyword search is trusted more with Chinese. With a second vector space for CJK chunks
(embedding_models.py), a CJK question searches that one, any other question both, their
lists merged (dense.py). Pieces of one section that overlap are
collapsed to the best of them. It generates nothing, never
prints, and reads settings only through its arguments.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from askmd.index import embedding_models as models
from askmd.search import dated_ranking as by_date
from askmd.search import dense as dense_side
from askmd.search import identifiers, query_translation
from askmd.search import shown_in as shown
from askmd.search.hits import Filters, Hit, Ranked, page, ranked_as
from askmd.search.tuning import SHIPPED, SearchTuning
from askmd.terms import cjk_share, content_terms, is_cjk

if TYPE_CHECKING:
    from askmd.index.embedder import Embedder
    from askmd.index.manifest import Manifest
    from askmd.index.store import Store, Stored
    from askmd.search.dates_in_query import Period

MIN_POOL = 100  # candidates asked of each retriever, at least; filters may thin them
MODES = ("hybrid", "dense", "keyword")
# The dense share of the blend (alpha) for (Latin-script, CJK) queries, per embedder: kept
# with each model in embedding_models.MODELS, where the measurements are cited.
ALPHA = {m.id: m.alpha for m in models.MODELS}
ALPHA_UNMEASURED = models.UNMEASURED


def is_cjk_query(query: str) -> bool:
    return is_cjk(query)


def has_words(query: str) -> bool:
    """Whether the query has a letter or digit in any script. One of only punctuation,
    symbols or emoji ("？？？") matches nothing: without this the dense side, min-max
    scaled, would offer its nearest chunk at score 1.0 as if it answered."""
    return any(ch.isalnum() for ch in query)


def dense_share(query: str, embedder_id: str, tuning: SearchTuning = SHIPPED) -> float:
    """How much the dense ranking counts in the blend for this query (0..1)."""
    latin, cjk = tuning.dense_share or ALPHA.get(embedder_id, ALPHA_UNMEASURED)
    return cjk if is_cjk_query(query) else latin


def search(
    query: str,
    embedder: Embedder,
    store: Store,
    manifest: Manifest,
    k: int,
    *,
    mode: str = "hybrid",
    filters: Filters | None = None,
    period: Period | None = None,
    tuning: SearchTuning = SHIPPED,
) -> Ranked:
    """The k best chunks for the query, best first.

    Hybrid: each retriever's scores are min-max scaled over its candidates, then blended,
    `alpha * dense + (1 - alpha) * keyword`, with alpha from `dense_share` (a chunk one
    retriever did not return gets 0 from it). Score blending beat reciprocal rank fusion
    on both measured sets because it keeps *how much* better the first hit is. `score` is
    the blend scaled to 0..1 (1: first in every retriever that returned anything); in
    "dense" mode the cosine similarity, in "keyword" mode BM25 over the best BM25.

    While the vector store is being filled, the keyword ranking's first candidates are
    given cosines computed for them (dense.filled_in): the chunks already stored would
    otherwise crowd out those still waiting. Dense search never returns a chunk whose
    vector is not stored for its text.

    `period`, the day or period the question names, ranks the chunks of that date
    (`_dated`); `filters.since` and `until` keep only chunks dated within them.
    """
    if not has_words(query) or k <= 0:
        return ranked_as([], mode)
    filters = (filters or Filters()).resolved(manifest)
    filtered = filters != Filters()
    pool = max(MIN_POOL, 4 * k) * (4 if filtered else 1)
    filling = manifest.pending() > 0
    t = tuning
    if mode == "hybrid" and filling and not t.filling_candidates:
        mode = "keyword"  # the vectors are not all stored yet: keyword ranking until done
    dense: list[tuple[str, float]] = []
    dense_by = embedder.id  # the model whose vectors ranked the dense candidates
    vector = None  # the question's vector in embedder's space, when it was searched there
    known: dict[str, Stored] = {}  # candidates whose text and metadata are already here
    asked = None  # the question's vector in the space that ranked the dense side
    if mode in ("dense", "hybrid"):
        # Unfiltered, only ids and distances: the few that make the top k are fetched later.
        found, dense_by, vector, asked = dense_side.nearest(
            query, embedder, store, manifest, pool, filtered
        )
        found = dense_side.usable(found, manifest, filling, filters if filtered else None)
        dense = [(s.id, 1.0 - s.distance) for s in found]
        known = {s.id: s for s in found} if filtered else {}
        if t.cjk_windows and mode == "hybrid" and dense_by != embedder.id and is_cjk(query):
            dense = dense_side.with_windows(
                dense, [], asked, dense_by, manifest, pool, t.cjk_window_margin
            )
    translation = None
    if mode == "hybrid" and dense and not filling and is_cjk_query(query):
        translation = _translation(query, _english_share(dense, manifest, t), t)
    elif is_cjk_query(query) and (mode == "keyword" or filling):  # the folder's mix instead
        translation = _translation(query, manifest.non_cjk_share(), t)
    if translation is not None and mode == "hybrid":  # its vector, in the primary space
        english, weight = translation
        vector = embedder.embed_queries([" ".join(english)])[0]
        found = store.nearest(vector, pool, content=filtered)
        found = dense_side.usable(found, manifest, filling, filters if filtered else None)
        known.update((s.id, s) for s in found if filtered)
        dense = _joined(dense, [(s.id, 1.0 - s.distance) for s in found], weight)
    if mode == "dense":
        dense = by_date.ranked(dense, manifest, filters.period, period, t)
        hits = _hits(_fetch(store, manifest, known, dense, k), k)
        return ranked_as(_located(hits, manifest, t.embed_depth), mode, dense=dense)
    only = filters.sources  # --where: only those notes' chunks are scored
    keyword = manifest.keyword(content_terms(query), pool, cjk=is_cjk_query(query), sources=only)
    if translation is not None:
        english, weight = translation
        in_english = manifest.keyword(english, pool, cjk=False, sources=only)
        keyword = _joined(keyword, in_english, weight)
    if filtered and not filters.notes_only:  # filtering needs every candidate's metadata
        missing = [c for c, _ in keyword if c not in known]
        known.update((s.id, s) for s in _stored(store, manifest, missing))
        keyword = [(c, v) for c, v in keyword if c in known and filters.allows(known[c].metadata)]
    if mode == "hybrid" and filling:
        first = keyword[: t.filling_candidates]
        missing = [c for c, _ in first if c not in known]
        known.update((s.id, s) for s in _stored(store, manifest, missing))
        translated = vector if translation is not None else None
        dense, dense_by = dense_side.while_filling(
            query, dense, dense_by, first, known, (asked, translated), embedder, manifest
        )
    if t.windows and dense_by == embedder.id and not is_cjk(query) and vector is not None:
        dense = dense_side.with_windows(
            dense, keyword, vector, embedder.id, manifest, pool, t.window_margin
        )
    held = {}
    if t.exact_identifiers:
        held = _holding(query, store, manifest, known, filters if filtered else None)
    if mode == "keyword":
        best = keyword[0][1] if keyword else 1.0
        scored = _identifiers_first([(c, v / best) for c, v in keyword], held)
        scored = by_date.ranked(scored, manifest, filters.period, period, t)
        hits = _hits(_fetch(store, manifest, known, scored, k), k)
        return ranked_as(_located(hits, manifest, t.embed_depth), mode, keyword=keyword)
    alpha = dense_share(query, dense_by, t)
    if translation is not None and t.translated_share and models.english_only(dense_by):
        alpha = _translated_share(dense_by, translation[1], t)
    scaled_dense = _scaled(dense)
    by_keyword = dict(_scaled(keyword))
    by_keyword = _other_script(query, by_keyword, embedder, store, manifest, known, t)
    fused = _blend(scaled_dense, by_keyword, alpha)
    top = (alpha * bool(dense) + (1 - alpha) * bool(keyword)) or 1.0
    # Ties go to keyword evidence: min-max gives the best dense candidate 1.0 however
    # weak it is, so the one chunk holding a rare query word (1.0 by keyword, outside the
    # dense pool) ties with it; a dense list of look-alikes ties with itself throughout.
    ranked = sorted(
        ((c, v / top) for c, v in fused.items()),
        key=lambda item: (-item[1], -by_keyword.get(item[0], 0.0)),
    )
    ranked = _identifiers_first(ranked, held)
    ranked = by_date.ranked(ranked, manifest, filters.period, period, t)
    hits = _hits(_fetch(store, manifest, known, ranked, k), k)
    located = _located(hits, manifest, t.embed_depth)
    return ranked_as(located, "hybrid", dense=dense, keyword=keyword, alpha=alpha)


def _holding(
    query: str,
    store: Store,
    manifest: Manifest,
    known: dict[str, Stored],
    filters: Filters | None,
) -> dict[str, int]:
    """Chunk id -> how many of the query's rare identifiers (identifiers.py) it holds
    word for word; only chunks the filters allow."""
    wanted = identifiers.identifiers(query)
    if not wanted:
        return {}
    counts, total = manifest.frequencies(wanted)
    limit = identifiers.rare_limit(total)
    held: dict[str, int] = {}
    for term, n in counts.items():
        if 0 < n <= limit:
            for chunk, _ in manifest.keyword([term], n):
                held[chunk] = held.get(chunk, 0) + 1
    if filters is not None and held:
        missing = [c for c in held if c not in known]
        known.update((s.id, s) for s in _stored(store, manifest, missing))
        held = {c: n for c, n in held.items() if c in known and filters.allows(known[c].metadata)}
    return held


def _identifiers_first(
    ranked: list[tuple[str, float]], held: dict[str, int]
) -> list[tuple[str, float]]:
    """The ranking with the chunks that hold more of the query's rare identifiers first,
    each group in its own order; held chunks neither retriever returned join at the end
    of their group with score 0."""
    if not held:
        return ranked
    present = {c for c, _ in ranked}
    whole = ranked + [(c, 0.0) for c in held if c not in present]
    order = {c: i for i, (c, _) in enumerate(whole)}
    return sorted(whole, key=lambda item: (-held.get(item[0], 0), order[item[0]]))


def _english_share(dense: list[tuple[str, float]], manifest: Manifest, t: SearchTuning) -> float:
    """The share of non-CJK chunks among the dense top `t.translated_by`."""
    top = [c for c, _ in dense[: t.translated_by]]
    return 1.0 - len(manifest.cjk_chunks(top)) / len(top)


def _translation(
    query: str, english_share: float, t: SearchTuning
) -> tuple[list[str], float] | None:
    """A Chinese question's words in English (query_translation) and how much they count:
    `t.translated` times the share of English in what the question meets (the dense top
    `t.translated_by`; with keyword ranking alone, the whole folder), so the more the
    meaning points at English notes, the more their words do; None when nothing near is
    English (a folder of Chinese pages ranks as before) or no word translates. They are
    searched by BM25 over the English chunks' statistics and, embedded, in the primary
    model's space (English-only models read them where they cannot read the question):
    docs/benchmarks/retrieval-chinese.md, "the question's words in English"."""
    weight = t.translated * english_share
    if weight <= 0.0:
        return None
    english = query_translation.english_terms(query)
    return (english, weight) if english else None


def _translated_share(dense_by: str, weight: float, t: SearchTuning) -> float:
    """The dense share for a Chinese question whose dense side an English-only model ranked
    with the translation's vector: CJK share + (Latin share - CJK share) x weight."""
    latin, cjk = t.dense_share or ALPHA.get(dense_by, ALPHA_UNMEASURED)
    return cjk + (latin - cjk) * min(1.0, weight / t.translated)


def _joined(
    first: list[tuple[str, float]], second: list[tuple[str, float]], weight: float
) -> list[tuple[str, float]]:
    """Two candidate lists on one scale, best first: each min-max scaled, the second's
    scores times `weight`, and a chunk in both keeping its better score."""
    merged = dict(_scaled(first))
    for c, v in _scaled(second):
        merged[c] = max(merged.get(c, 0.0), weight * v)
    return sorted(merged.items(), key=lambda item: -item[1])


def _other_script(
    query: str,
    by_keyword: dict[str, float],
    embedder: Embedder,
    store: Store,
    manifest: Manifest,
    known: dict[str, Stored],
    t: SearchTuning,
) -> dict[str, float]:
    """Scaled keyword scores, those of CJK chunks discounted (`t.other_script_keyword`)
    for a Latin-script question in an index with CJK chunks (a second vector space). Such
    a match is a shared command name, not the question's words, and it outranked the
    multilingual vectors' better answer (docs/benchmarks/retrieval-chinese.md, "query
    words and the multilingual model"). English chunks keep their scores, so English
    questions over English notes rank as before; `known` gets the candidates' texts."""
    if t.other_script_keyword == 1.0 or not by_keyword or is_cjk_query(query):
        return by_keyword
    if dense_side.side_space(embedder, store) is None:
        return by_keyword
    missing = [c for c in by_keyword if c not in known]
    known.update((s.id, s) for s in _stored(store, manifest, missing))
    return {
        c: v * t.other_script_keyword
        if c in known and cjk_share(known[c].text) >= models.CJK_CHUNK
        else v
        for c, v in by_keyword.items()
    }


def _blend(
    dense: list[tuple[str, float]],
    keyword: dict[str, float],
    alpha: float,
) -> dict[str, float]:
    """`alpha * dense + (1 - alpha) * keyword` per chunk."""
    fused = {c: alpha * v for c, v in dense}
    for c, v in keyword.items():
        fused[c] = fused.get(c, 0.0) + (1 - alpha) * v
    return fused


def _fetch(
    store: Store,
    manifest: Manifest,
    known: dict[str, Stored],
    ranked: list[tuple[str, float]],
    k: int,
) -> list[tuple[Stored, float]]:
    """The chunks of the best-ranked ids, fetching only those that may make the top k (a
    few spare for pieces the collapse drops), not the whole candidate pool."""
    wanted = ranked[: 3 * k]
    missing = [c for c, _ in wanted if c not in known]
    if missing:
        known.update((s.id, s) for s in _stored(store, manifest, missing))
    return [(known[c], v) for c, v in wanted if c in known]


def _stored(store: Store, manifest: Manifest, ids: list[str]) -> list[Stored]:
    """Chunks by id, from the manifest, which holds every indexed chunk's text whether its
    vector is stored yet or not; an index from older code keeps them only in the store.
    An id the manifest does not have (a file deleted since) is left out."""
    from askmd.index.store import Stored

    if not manifest.vectors_kept():
        return store.get(ids)
    found = manifest.stored(ids)
    return [Stored(i, found[i][0], found[i][1], 1.0) for i in ids if i in found]


def _scaled(scored: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Scores mapped onto 0..1 over the list (the best gets 1; a lone or tied list, all 1).

    >>> _scaled([("a", 0.8), ("b", 0.5), ("c", 0.4)])
    [('a', 1.0), ('b', 0.25), ('c', 0.0)]
    """
    if not scored:
        return []
    values = [v for _, v in scored]
    low, high = min(values), max(values)
    return [(c, (v - low) / (high - low) if high > low else 1.0) for c, v in scored]


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
            tags=tuple(t for t in str(s.metadata.get("tags", "")).split(",") if t),
            page_start=page(s.metadata.get("page_start")),
            page_end=page(s.metadata.get("page_end")),
        )
        for rank, (s, score) in enumerate(kept, start=1)
    ]


def _with_dates(hits: list[Hit], manifest: Manifest) -> list[Hit]:
    """The hits with the day each is about, where the index knows it."""
    days = manifest.dates([h.chunk_id for h in hits]) if hits else {}
    return [replace(h, date=days[h.chunk_id]) if h.chunk_id in days else h for h in hits]


def _overlaps(a: dict, b: dict) -> bool:
    """Two pieces of one section whose lines overlap (the chunker's overlap repeats text)."""
    return (
        a.get("source") == b.get("source")
        and a.get("heading_chain") == b.get("heading_chain")
        and int(a.get("line_start", 0)) <= int(b.get("line_end", 0))
        and int(b.get("line_start", 0)) <= int(a.get("line_end", 0))
    )


def _located(hits: list[Hit], manifest: Manifest, depth: int) -> list[Hit]:
    """The hits with their dates and the notes that show them through embeds
    (`Hit.shown_in`), embeds of embeds followed `depth` deep."""
    hits = _with_dates(hits, manifest)
    embeds = shown.embedded_by(manifest) if hits else {}
    if not embeds:
        return hits
    return [
        replace(h, shown_in=shown.shown_in(manifest, embeds, h, depth)) if h.source in embeds else h
        for h in hits
    ]
