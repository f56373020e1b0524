"""The second (multilingual) model's side collection: the CJK chunks' vectors, or every
chunk's once the folder has CJK text, written with the main collection in one commit,
and redone when that model changes."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from askmd import terms
from askmd.index import embedding_models as models
from askmd.index.manifest import Manifest
from askmd.index.store import Store
from askmd.index.vector_writer import (
    EMBED_SLICE,
    FILLER_SLICE,
    Paused,
    Writer,
    embedding_texts,
    keep_side_windows,
    pause_after,
)


@dataclass
class Side:
    """A group's chunks with their vectors from the second (multilingual) model: the CJK
    ones, or every one once the folder has CJK chunks (`widen_side`)."""

    positions: list[int]  # of the group's chunks that get a second vector
    ids: list[str]
    texts: list[str]
    vectors: object  # np.ndarray (n, dimension)
    cjk: list[bool]  # per position: the chunk's text is CJK (Latin questions search those)


def embed_side(
    w: Writer,
    rows: list,
    skipped: set[str],
    budget: int | None = None,
    stop: Callable[[], bool] = lambda: False,
):
    """The multilingual vectors of the group's CJK chunks (cache misses embedded, cached
    under that model's id), or None when the index has no second model. The model loads on
    the first CJK chunk, never for a folder without one. Raises Paused when it stops
    early (see vector_fill._fill_group): what it embedded is cached."""
    side_id = getattr(w.embedder, "companion_id", None)
    if not side_id:
        return None
    import numpy as np

    cjk = [terms.cjk_share(r.text) >= models.CJK_CHUNK for r in rows]
    every = w.manifest.get("side_scope") == "all"
    positions = [i for i in range(len(rows)) if every or cjk[i]]
    wanted = sorted({rows[i].text_hash for i in positions})
    vectors = w.manifest.cached(side_id, wanted) if wanted else {}
    missing = [h for h in wanted if h not in vectors]
    starts: dict[str, int] = {}
    text_of = (
        embedding_texts(w, [rows[i] for i in positions], missing, skipped, starts)
        if missing
        else {}
    )
    missing = sorted((h for h in missing if h in text_of), key=lambda h: len(text_of[h]))
    pause = pause_after(budget, len(missing), stop)
    step = EMBED_SLICE if budget is None else FILLER_SLICE
    # Counted beside the vectors bar: this second model's work is most of a first start on
    # Chinese notes, and the screen sat still through it.
    w.progress.counting("multilingual vectors", total=len(missing))
    for start in range(0, len(missing), step):
        if pause(start):
            w.progress.counting("multilingual vectors", total=start - len(missing))
            raise Paused(start)
        part = missing[start : start + step]
        began = time.perf_counter()
        texts = [text_of[h] for h in part]
        fresh = w.embedder.companion().embed(texts)
        w.report.multilingual_windows_embedded += keep_side_windows(
            w.manifest, w.embedder.companion(), side_id, part, texts, [starts[h] for h in part]
        )
        w.report.embed_seconds += time.perf_counter() - began
        w.report.multilingual_embedded += len(part)
        w.progress.counting("multilingual vectors", done=len(part))
        new = dict(zip(part, fresh, strict=True))
        w.manifest.cache(side_id, new)
        vectors.update(new)
    positions = [i for i in positions if rows[i].text_hash in vectors]
    matrix = np.stack([vectors[rows[i].text_hash] for i in positions]) if positions else None
    return Side(
        positions,
        [rows[i].id for i in positions],
        [rows[i].text for i in positions],
        matrix,
        [cjk[i] for i in positions],
    )


def write_side(w: Writer, sources: list[str], side: Side | None, metadatas: list[dict]) -> None:
    """Make the side collection hold exactly these sources' CJK chunks (none for a source
    that has none now). Written with the main collection, in the same commit."""
    if side is None:
        return
    side_id = getattr(w.embedder, "companion_id", "")
    store = w.store.side(side_id)
    if not side.ids and not store.open_existing():
        return  # nothing to add, nothing to remove: an English folder gets no collection
    store.ensure_open({"embedder": side_id})
    metas = [{**metadatas[i], "cjk": c} for i, c in zip(side.positions, side.cjk, strict=True)]
    store.replace(sources, side.ids, side.texts, metas, side.vectors)


def change_side_model(store: Store, manifest: Manifest, want: str) -> None:
    """When the index's second model changed since the last filling (it was installed,
    removed or replaced), drop the old side collection, and the chunks holding CJK text
    wait for their vectors again: their main vectors come from the cache, so only their
    CJK vectors are embedded, by the new model."""
    had = manifest.get("companion") or ""
    if want == had:
        return
    for old in {had, want} - {""}:
        store.side(old).drop()
    if want:
        redo = manifest.sources_with_cjk()
        store.delete(redo)
        manifest.unfill(redo)
    manifest.set(companion=want, side_scope="")  # the new side holds the CJK chunks first


def widen_side(manifest: Manifest, companion: str) -> None:
    """Once a folder has CJK chunks, every chunk gets the multilingual vector too, so a
    Chinese question can reach an English note by meaning: with the CJK chunks alone in
    that space, Chinese questions about the English half of a mixed folder found their
    note in the top 5 for 0.06 of them, against 0.36 with every chunk in it (BENCHMARKS.md,
    "Chinese questions about English notes"). Every file waits for its vectors once:
    the existing ones come from the cache, only the English chunks' second ones are new.
    English-only folders never get here."""
    if not companion or manifest.get("side_scope") == "all" or not manifest.has_cjk_chunks():
        return
    manifest.unfill(None)
    manifest.set(side_scope="all")
