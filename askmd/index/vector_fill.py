"""The vector phase of a sync: the chunks that wait for vectors are embedded (cache misses
only) and stored, whole files at a time, each group in one commit, marking them filled.
Resumable at any point: a killed run loses at most the group in flight."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

from askmd.index import windows
from askmd.index.fingerprint import companion_id, store_meta
from askmd.index.keyword_phase import GROUP_CHUNKS
from askmd.index.manifest import Manifest
from askmd.index.repair import open_for_filling
from askmd.index.side_model import change_side_model, embed_side, widen_side, write_side
from askmd.index.store import Store
from askmd.index.sync_report import NoProgress, Progress, SyncReport
from askmd.index.vector_writer import (
    EMBED_SLICE,
    FILLER_SLICE,
    Paused,
    Writer,
    embedding_texts,
    keep_windows,
    latin_hashes,
    pause_after,
)
from askmd.settings import Settings

if TYPE_CHECKING:  # embedder and numpy load only when something must be embedded
    from askmd.index.embedder import Embedder


SLICE_CAP = 256  # the most texts per call however many batches a server takes at once


# Cached vectors no chunk uses are kept until they outnumber the index by this much, so a
# file deleted and restored (a branch switch, an undo) is not embedded again.
CACHE_SLACK = 1000


def needs_filling(settings: Settings, manifest: Manifest) -> bool:
    """Whether the vector store lags the manifest: chunks without vectors, files whose
    vectors must go, an emptied index, or a second (CJK) model that changed. Read from
    the manifest alone, without loading a model."""
    if not manifest.vectors_kept():
        return False
    return bool(
        manifest.pending()
        or manifest.stale()
        or manifest.get("reset_vectors")
        or (manifest.get("companion") or "") != companion_id(settings)
        and manifest.total_chunks()
        or bool(companion_id(settings))
        and manifest.get("side_scope") != "all"
        and manifest.has_cjk_chunks()
    )


def fill(
    settings: Settings,
    store: Store,
    manifest: Manifest,
    make_embedder: Callable[[], Embedder],
    *,
    report: SyncReport | None = None,
    progress: Progress | None = None,
    commit: Callable[[], AbstractContextManager] = nullcontext,
    sources: list[str] | None = None,
    chunks: int | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> SyncReport:
    """The vector phase: embed (cache misses only) and store the chunks that wait for
    vectors, whole files at a time, each group in one commit, marking them filled. Called
    with the lock file held. `sources` limits it to those files, `chunks` stops it after
    about that many, `stop` is asked between groups. Resumable at any point: a killed run
    loses at most the group in flight, whose vectors are in the cache already."""
    report = report if report is not None else SyncReport()
    progress = progress or NoProgress()
    embedder = make_embedder()
    meta = store_meta(embedder.id, settings)
    with store.releasing():  # a Chroma server's writer lease, claimed when it is opened
        open_for_filling(store, manifest, meta, report, commit, settings.knowledge_dir)
        _fill(settings, store, manifest, embedder, report, progress, commit, sources, chunks, stop)
    return report


def _fill(
    settings: Settings,
    store: Store,
    manifest: Manifest,
    embedder: Embedder,
    report: SyncReport,
    progress: Progress,
    commit: Callable[[], AbstractContextManager],
    sources: list[str] | None,
    chunks: int | None,
    stop: Callable[[], bool],
) -> None:
    # Both may make chunks wait again: a commit, or a thread of a long-lived caller would
    # take the new generation for another process's and reopen the store under this one.
    with commit():
        change_side_model(store, manifest, getattr(embedder, "companion_id", None) or "")
        widen_side(manifest, getattr(embedder, "companion_id", None) or "")
    w = Writer(settings, store, manifest, embedder, report, progress, commit)
    progress.filling(manifest.pending(sources))
    done = 0
    skipped: set[str] = set()  # files changed on disk since recorded: their sync redoes them
    while not stop():
        # An embeddings server with several batches in flight gets groups that fill them.
        group = max(GROUP_CHUNKS, int(getattr(embedder, "slice_size", 0)))
        size = group if chunks is None else min(group, chunks)
        picked = manifest.pending_sources(size, among=sources, skip=skipped)
        if not picked:
            break
        done += _fill_group(w, picked, skipped, budget=chunks, stop=stop)
        if chunks is not None and done >= chunks:
            break
    manifest.set(
        embedder=embedder.id,
        dimension=str(embedder.dimension),
        companion=getattr(embedder, "companion_id", None) or "",
    )
    if not manifest.pending() and manifest.cache_size(embedder.id) > 2 * (
        manifest.total_chunks() + CACHE_SLACK
    ):
        manifest.prune_cache(embedder.id)
        manifest.prune_cache(windows.key(embedder.id))


def _fill_group(
    w: Writer,
    sources: list[str],
    skipped: set[str],
    budget: int | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> int:
    """Embed (cache misses only) and store these files' vectors, then mark them filled,
    in one commit. Returns how many chunks it stored, or embedded when it stopped early.

    A file bigger than `budget` chunks (a 5 MB note is thousands) is embedded over
    several calls, `budget` at a time into the embedding cache, and stored by the call
    that finds every vector cached: the background filler lets go of the index between
    calls, so notes saved meanwhile are not kept waiting for the whole of it. `stop` is
    asked between slices too, so leaving does not wait for a big file either."""
    import numpy as np

    manifest, embedder, report = w.manifest, w.embedder, w.report
    rows = manifest.chunks_of(sources)
    hashes = [r.text_hash for r in rows]
    vectors = manifest.cached(embedder.id, sorted(set(hashes)))
    missing = sorted({h for h in hashes if h not in vectors})
    starts: dict[str, int] = {}
    text_of = embedding_texts(w, rows, missing, skipped, starts)
    if skipped & set(sources):
        rows = [r for r in rows if r.source not in skipped]
        sources = [s for s in sources if s not in skipped]
        hashes = [r.text_hash for r in rows]
        missing = [h for h in missing if h in text_of]
    missing.sort(key=lambda h: len(text_of[h]))  # each slice pads as little as it can
    # An embeddings server takes a few rounds of batches in flight per call; capped so the
    # progress bar still moves every few calls.
    step = min(max(EMBED_SLICE, int(getattr(embedder, "slice_size", EMBED_SLICE))), SLICE_CAP)
    with_windows = getattr(embedder, "embed_windows", None)  # the local model's, from its run
    if budget is not None and with_windows is not None:
        step = FILLER_SLICE
    latin = latin_hashes(rows, set(missing)) if with_windows is not None else set()
    pause = pause_after(budget, len(missing), stop)
    for start in range(0, len(missing), step):
        if pause(start):
            return start  # the rest next time, from here: these are in the cache
        part = missing[start : start + step]
        began = time.perf_counter()
        if with_windows is None:
            fresh = embedder.embed([text_of[h] for h in part])
        else:  # CJK chunks' windows are left out: questions about them are not MiniLM's
            fresh, pooled = with_windows([text_of[h] for h in part], [starts[h] for h in part])
            report.windows_embedded += keep_windows(manifest, embedder.id, part, pooled, latin)
        report.embed_seconds += time.perf_counter() - began
        new = dict(zip(part, fresh, strict=True))
        manifest.cache(embedder.id, new)
        vectors.update(new)
        report.chunks_embedded += len(part)
        w.progress.advance(chunks=len(part))
    w.progress.advance(chunks=len(rows) - len(missing))
    try:
        side = embed_side(w, rows, skipped, budget, stop)
        if skipped & set(sources):  # a file changed while its side vectors were looked for
            keep = [i for i, r in enumerate(rows) if r.source not in skipped]
            rows = [rows[i] for i in keep]
            sources = [s for s in sources if s not in skipped]
            side = embed_side(w, rows, skipped, budget, stop)
    except Paused as paused:
        return len(missing) + paused.embedded
    matrix = (
        np.stack([vectors[r.text_hash] for r in rows]) if rows else np.zeros((0, 1), np.float32)
    )
    metadatas = [r.metadata for r in rows]
    with w.commit():  # the vectors and the mark that they are there change together
        w.store.replace(sources, [r.id for r in rows], [r.text for r in rows], metadatas, matrix)
        write_side(w, sources, side, metadatas)
        manifest.filled(sources)
    return len(rows)
