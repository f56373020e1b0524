"""What every part of the vector phase shares: the writing side of one filling, the texts
to embed (the notes read and chunked again), and the caching of window vectors."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from askmd import terms
from askmd.index import embedding_models as models
from askmd.index import windows
from askmd.index.manifest import Manifest
from askmd.index.store import Store
from askmd.index.sync_report import Progress, SyncReport
from askmd.read import chunker, notes
from askmd.settings import Settings

if TYPE_CHECKING:  # embedder and numpy load only when something must be embedded
    from askmd.index.embedder import Embedder


# Texts handed to the embedder per call: enough for it to sort by length and batch well,
# few enough for the progress bar to move every few seconds.
EMBED_SLICE = 64
# The background filler's slice of a local model's texts: it asks whether to pause after
# each, so a /reindex or a saved note waits for one slice, not a whole group.
FILLER_SLICE = 16


@dataclass
class Writer:
    """One filling's writing side: what every group of files needs, held once."""

    settings: Settings
    store: Store
    manifest: Manifest
    embedder: Embedder
    report: SyncReport
    progress: Progress
    commit: Callable[[], AbstractContextManager]


class Paused(Exception):  # noqa: N818 - not an error: a big file goes on next call
    def __init__(self, embedded: int) -> None:
        self.embedded = embedded


def pause_after(
    budget: int | None, missing: int, stop: Callable[[], bool]
) -> Callable[[int], bool]:
    """Whether a group's embedding stops after `done` texts, to go on at the next call:
    when asked to stop, or when a file far bigger than the filler's budget has had its
    share (groups of a few ordinary notes are done in one call, as before)."""
    big = budget is not None and missing > 2 * budget
    return lambda done: done > 0 and (stop() or big and done >= budget)


def latin_hashes(rows: list, hashes: set[str]) -> set[str]:
    """Which of these chunks (by text hash) are not CJK text: those get window vectors."""
    return {
        r.text_hash
        for r in rows
        if r.text_hash in hashes and terms.cjk_share(r.text) < models.CJK_CHUNK
    }


def keep_windows(
    manifest: Manifest, embedder_id: str, hashes: list[str], pooled: list, latin: set[str]
) -> int:
    """Cache the window vectors of these chunks: an empty entry for a chunk without any
    (CJK text, no words), so `backfill_windows` knows it is done. How many got some."""
    import numpy as np

    empty = np.zeros((0, 1), dtype=np.float16)
    kept = {h: v if h in latin and len(v) else empty for h, v in zip(hashes, pooled, strict=True)}
    manifest.cache(windows.key(embedder_id), kept, dtype="float16")
    return sum(1 for v in kept.values() if len(v))


def keep_side_windows(
    manifest: Manifest,
    model: Embedder,
    side_id: str,
    hashes: list[str],
    texts: list[str],
    starts: list[int],
) -> int:
    """Embed and cache the second model's window vectors of these chunks, each window by a
    run of its own (windows.own_run: that model gives no token states to pool). How many
    chunks got some."""
    import numpy as np

    pieces, owners = [], []
    for text_hash, text, start in zip(hashes, texts, starts, strict=True):
        found = windows.own_run(text, start)
        if len(found) < 2:  # one window is the chunk's own text: its vector is the chunk's
            continue
        pieces.extend(found)
        owners.extend([text_hash] * len(found))
    order = sorted(range(len(pieces)), key=lambda i: len(pieces[i]))  # little padding
    vectors = model.embed([pieces[i] for i in order]) if pieces else []
    grouped: dict[str, list] = {h: [] for h in hashes}
    for i, vector in zip(order, vectors, strict=True):
        grouped[owners[i]].append(vector)
    empty = np.zeros((0, 1), dtype=np.float16)
    kept = {h: np.asarray(v, dtype=np.float32) if v else empty for h, v in grouped.items()}
    manifest.cache(windows.key(side_id), kept, dtype="float16")
    return sum(1 for v in kept.values() if len(v))


def embedding_texts(
    w: Writer, rows: list, wanted: list[str], skipped: set[str], starts: dict | None = None
) -> dict[str, str]:
    """The texts to embed for these hashes. The note is read and chunked again (a
    millisecond a chunk, against tens for embedding it) rather than the manifest keeping
    a second copy of every text. A file whose chunks no longer match what was recorded
    (it changed on disk since) goes into `skipped`: its next sync records and fills it."""
    wanted_set = set(wanted)
    found: dict[str, str] = {}
    for source in sorted({r.source for r in rows if r.text_hash in wanted_set}):
        try:
            note = notes.read(w.settings.knowledge_dir, source, w.settings.max_file_bytes)
        except notes.Unreadable:
            skipped.add(source)
            continue
        chunks = chunker.split_note(note, w.settings.chunk_size, w.settings.chunk_overlap)
        texts, begins = {}, {}
        for c in chunks:
            text_hash = hashlib.sha1(c.embedding_text.encode()).hexdigest()
            texts[text_hash] = c.embedding_text
            # where the chunk's own lines begin, after its title and heading chain
            body = c.text if c.search_text is None else c.search_text
            begins[text_hash] = len(c.embedding_text) - len(body)
        mine = {r.text_hash for r in rows if r.source == source}
        if not mine <= set(texts):
            skipped.add(source)
            continue
        found.update((h, texts[h]) for h in mine & wanted_set)
        if starts is not None:
            starts.update((h, begins[h]) for h in mine & wanted_set)
    return found
