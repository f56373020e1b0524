"""Window vectors (windows.py) for stored chunks that have none: an index built before
them gets them without a rebuild, whole files at a time, resumable from a cursor."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import TYPE_CHECKING

from askmd.index import embedding_models as models
from askmd.index import windows
from askmd.index.fingerprint import embedder_id
from askmd.index.keyword_phase import GROUP_CHUNKS
from askmd.index.manifest import Manifest
from askmd.index.sync_report import NoProgress, Progress, SyncReport
from askmd.index.vector_writer import (
    EMBED_SLICE,
    Writer,
    embedding_texts,
    keep_side_windows,
    keep_windows,
    latin_hashes,
)
from askmd.settings import Settings

if TYPE_CHECKING:  # embedder and numpy load only when something must be embedded
    from askmd.index.embedder import Embedder


# The report's count of each kind of window vectors, by the manifest key marking it done.
_COUNTS = {"windows": "windows_embedded", "side_windows": "multilingual_windows_embedded"}


def windows_due(settings: Settings, manifest: Manifest) -> bool:
    """Whether stored chunks may lack window vectors (windows.py): the settings' model (or
    the second model beside it) makes them and the manifest does not say every chunk has
    its entry. Read from the manifest alone."""
    return bool(_owed_windows(settings, manifest))


def _owed_windows(settings: Settings, manifest: Manifest) -> list[tuple[str, str, str]]:
    """(meta key, window key, the embedder whose vectors mark the chunks that get them) of
    each kind of window vectors not marked done: MiniLM's of every chunk, and those of
    the second model's space (embedding_models.companion), chunks with its vector."""
    embedder = embedder_id(settings)
    if embedder != models.MINILM.id or not manifest.vectors_kept():
        return []
    if manifest.total_chunks() == 0:
        return []
    owed = []
    if manifest.get("windows") != windows.key(embedder):
        owed.append(("windows", windows.key(embedder), ""))
    side = manifest.get("companion") or ""
    if side and manifest.get("side_windows") != windows.key(side):
        owed.append(("side_windows", windows.key(side), side))
    return owed


def backfill_windows(
    settings: Settings,
    manifest: Manifest,
    make_embedder: Callable[[], Embedder],
    *,
    chunks: int | None = None,
    stop: Callable[[], bool] = lambda: False,
    progress: Progress | None = None,
    report: SyncReport | None = None,
) -> None:
    """Give window vectors to stored chunks that have none: an index built before they
    existed gets them without a rebuild, whole files at a time (the vectors are kept; the
    model runs once more over those chunks), `stop` asked between groups, about `chunks`
    at most per kind. Searches meanwhile use the windows that are there. Once every chunk
    has its entry the manifest says so and `windows_due` is False. What it computed, and
    the time the model took, are added to `report`. Called with the lock file held."""
    embedder = None
    progress = progress or NoProgress()
    report = report if report is not None else SyncReport()
    for meta, key, having in _owed_windows(settings, manifest):
        # Where the last call stopped, so a filler's small calls do not look through the
        # files already done each time (a scan of all chunks takes seconds at 250k).
        cursor = meta + "_after"
        after = manifest.get(cursor) or ""
        if not manifest.without_windows(key, 1, after, having) and not (
            after and manifest.without_windows(key, 1, "", having)
        ):  # all done already: no model to load
            manifest.set(**{meta: key, cursor: ""})
            continue
        embedder = embedder or make_embedder()
        keep = _window_keeper(embedder, key, manifest)
        if keep is None:  # nothing here makes them
            manifest.set(**{meta: key, cursor: ""})
            continue
        label = "window vectors" if meta == "windows" else "multilingual window vectors"
        w = Writer(settings, None, manifest, embedder, report, progress, nullcontext)
        done, skipped, from_start = 0, set(), not after
        while not stop() and (chunks is None or done < chunks):
            size = GROUP_CHUNKS if chunks is None else min(GROUP_CHUNKS, chunks - done)
            wanted = manifest.without_windows(key, size, after, having)
            if not wanted and not from_start:  # then the files before where this call began
                after, from_start = "", True
                continue
            if not wanted:
                # Every file looked at: no look-up from now on. A file that changed on disk
                # or cannot be read (`skipped`) is not retried here, or a filler would retry
                # it without end: its next sync records its chunks again, with their windows.
                manifest.set(**{meta: key})
                after = ""
                break
            after = wanted[-1][0]
            rows = manifest.chunks_of(sorted({s for s, _ in wanted}))
            hashes = sorted({h for _, h in wanted})
            starts: dict[str, int] = {}
            text_of = embedding_texts(w, rows, hashes, skipped, starts)
            missing = sorted((h for h in hashes if h in text_of), key=lambda h: len(text_of[h]))
            latin = latin_hashes(rows, set(missing))
            progress.counting(label, total=len(missing))
            for first in range(0, len(missing), EMBED_SLICE):
                part = missing[first : first + EMBED_SLICE]
                began = time.perf_counter()
                made = keep(part, [text_of[h] for h in part], [starts[h] for h in part], latin)
                report.embed_seconds += time.perf_counter() - began
                setattr(report, _COUNTS[meta], getattr(report, _COUNTS[meta]) + made)
                progress.counting(label, done=len(part))
            done += len(hashes)
        manifest.set(**{cursor: after})


def _window_keeper(embedder: Embedder, key: str, manifest: Manifest):
    """How this embedder makes and caches the window vectors kept under `key`: a function
    of (text hashes, their embedding texts, where their own lines start, the Latin-script
    ones) that returns how many chunks got some, or None when it makes none."""
    with_windows = getattr(embedder, "embed_windows", None)
    if with_windows is not None and windows.key(embedder.id) == key:

        def late(part: list[str], texts: list[str], starts: list[int], latin: set[str]) -> int:
            _, pooled = with_windows(texts, starts)
            return keep_windows(manifest, embedder.id, part, pooled, latin)

        return late
    side = getattr(embedder, "companion_id", None)
    if side and windows.key(side) == key:
        return lambda part, texts, starts, latin_hashes: keep_side_windows(
            manifest, embedder.companion(), side, part, texts, starts
        )
    return None
