"""A note made ready for the manifest: read, chunked, its keyword rows and links computed.

Pure work on one file, the same whether it runs in this process or in a worker: a cold
sync of a big folder prepares notes in worker processes (`prepared_in_workers`) while
this one writes the manifest, since on a 2-core laptop preparing (reading, chunking,
search terms) and recording (SQLite) each take about half of the keyword phase.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from askmd.index.manifest import ChunkRow, LinkRow, chunk_row
from askmd.index.store import chunk_metadata
from askmd.read import chunker, dates, notes

# A cold sync of at least this many notes prepares them in worker processes.
WORKERS_FROM_NOTES = 1000
WINDOW = 256  # notes handed to the workers at a time
# A note's word-for-word repeats of a chunk are indexed once (see `prepare`); False only
# to make an index as older code did, for the test of its repair (Manifest.reread_repeats).
REPEATS_ONCE = True


@dataclass(frozen=True)
class Job:
    """What preparing one note needs (picklable, for a worker process)."""

    root: Path
    source: str
    max_bytes: int
    chunk_size: int
    overlap: int


@dataclass
class Prepared:
    source: str
    md5: str = ""
    rows: list[ChunkRow] | None = None  # None: the file could not be read (`error` says why)
    links: list[LinkRow] | None = None
    error: str = ""
    properties: tuple = ()  # (key, text, number, day) rows: read/properties.py


def prepare(job: Job, note: notes.Note | None = None) -> Prepared:
    """Read (unless `note` is given), chunk and make the keyword rows of one note."""
    if note is None:
        try:
            note = notes.read(job.root, job.source, job.max_bytes)
        except notes.Unreadable as exc:
            return Prepared(job.source, error=str(exc))
    rows = []
    seen: set[str] = set()
    for c in chunker.split_note(note, job.chunk_size, job.overlap):
        embed = c.embedding_text
        text_hash = hashlib.sha1(embed.encode()).hexdigest()  # the embedding cache's key
        if text_hash in seen and REPEATS_ONCE:
            # A repeat of an earlier chunk of this note, under the same headings (a pasted
            # log, a sentence repeated a thousand times): the first answers for it. Stored
            # as well, thousands of identical vectors cut other notes out of Chroma's HNSW
            # graph, and questions without a shared word no longer found them.
            continue
        seen.add(text_hash)
        meta = chunk_metadata(c, note.md5, chunk_tags(note, c), text_hash)
        rows.append(
            chunk_row(
                c.id, text_hash, embed, title=c.title, aliases=note.aliases,
                chain=c.heading_chain, stored=c.text, meta=meta,
                date=dates.of_chunk(note.date, c.heading_chain),
            )
        )  # fmt: skip
    return Prepared(
        job.source, note.md5, rows, link_rows(note), properties=note.properties
    )  # warnings: said when hashed


def link_rows(note: notes.Note) -> list[LinkRow]:
    """The links written in a note as the manifest keeps them, at their file lines."""
    return [(k.target, k.heading, note.first_line + k.line, int(k.embed)) for k in note.links]


def chunk_tags(note: notes.Note, chunk: chunker.Chunk) -> tuple[str, ...]:
    """The note's front-matter tags and the inline tags written on the chunk's lines."""
    first, last = chunk.line_start - note.first_line, chunk.line_end - note.first_line
    inline = (t for t, line in note.inline_tags if first <= line <= last)
    return tuple(dict.fromkeys([*note.tags, *inline]))


def workers() -> int:
    """Worker processes beside this one, which writes: one per core. The writer waits on
    SQLite and the disk much of the time, so a worker on its core too pays: a 200 MB
    folder's keyword phase took 3:27-3:37 with two workers on two cores against
    3:58-4:23 with one (BENCHMARKS.md). One core: none, the notes are prepared here."""
    cores = os.cpu_count() or 1
    return cores if cores > 1 else 0


def prepared_in_workers(jobs: list[Job], count: int) -> Iterator[Prepared]:
    """Every job prepared by `count` worker processes, in order. Spawned, not forked: a
    REPL or server has threads (a watcher, the vector filler) that a fork would copy
    mid-lock. At most two windows of notes are in flight: the workers may prepare faster
    than the manifest records, and Pool.imap would hold every result in memory."""
    context = multiprocessing.get_context("spawn")
    windows = [jobs[i : i + WINDOW] for i in range(0, len(jobs), WINDOW)]
    with context.Pool(count) as pool:
        flight: deque = deque()
        for window in windows:
            flight.append(pool.map_async(prepare, window, chunksize=16))
            if len(flight) > 1:
                yield from flight.popleft().get()
        while flight:
            yield from flight.popleft().get()
