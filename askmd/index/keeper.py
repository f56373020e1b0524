"""Keeping one index in step with its folder: the one door for every change to it, and
the policy of which vectors are stored now and which by the background filler.

Every change to the index goes through `Keeper.sync` (and `writing`, for a change to the
folder that a sync then takes in): the CLI's `index`, the REPL, the API's ingest and
delete, the background re-scan and a watcher. Only one writes at a time
(`rwlock.WriterLock`: one thread of this process, and one process by the lock file); the
others read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from askmd import wording
from askmd.errors import AskmdError
from askmd.index import index_home, indexer
from askmd.index.rwlock import file_lock
from askmd.read import notes

if TYPE_CHECKING:
    from askmd.index.access import IndexAccess
    from askmd.index.filler import Filler

# A one-shot search or question stores up to this many missing vectors first (a minute or
# so with the local model); more, and it answers by keyword at once and says so.
FOREGROUND_CHUNKS = 1000
# A REPL, serve or mcp, which can store vectors in the background, waits for this many at
# most (seconds with the local model) before it is ready.
FOREGROUND_CHUNKS_LIVE = 256
FOREGROUND_NOTES = 20  # a sync of at most this many notes embeds them itself, filler or not
FOREGROUND_BYTES = 256 * 1024  # ... when they are this small together (seconds of embedding)
WRITE_WAIT_SECONDS = 60.0  # a change waits this long for another process's update
READ_WAIT_SECONDS = 3.0  # a search or question waits this long, then reads the index as it is


class Keeper:
    def __init__(self, access: IndexAccess) -> None:
        self.access = access
        self.settings = access.settings
        self.filler: Filler | None = None  # stores vectors in the background, once started

    def _refuse_read_only(self) -> None:
        if self.access.read_only:
            raise AskmdError(
                f"the index folder {self.settings.index_dir} is read-only: it can be searched "
                "but not updated (make it writable, or point --index-dir at another folder)"
            )

    def sync(
        self,
        paths: list[str] | None = None,
        *,
        rebuild: bool = False,
        progress: indexer.Progress | None = None,
        wait: float = WRITE_WAIT_SECONDS,
        on_wait: Callable[[str], None] | None = None,
        queue: float | None = None,
        vectors: bool | None = None,
        windows_too: bool = True,
        emptying: bool = False,
    ) -> indexer.SyncReport:
        """Bring the index in step with the folder.

        `paths` (relative to the knowledge folder, or absolute) limits the sync to those
        notes: each is added, updated or, when it is gone, deleted; a path that was a
        folder takes its known notes along. None looks at the whole folder. `rebuild`
        starts from an empty index (vectors still come from the embedding cache).

        One thread of this process writes at a time: another waits up to `queue` seconds
        (None: its turn, however long) and then raises Busy. Finding that nothing changed
        takes no lock file; to write, a sync waits up to `wait` seconds for another
        process's update (said once through `on_wait`), then raises IndexBusy.

        `vectors` says whether the vector phase runs here too (True), or only the keyword
        phase (False: `index --keyword-only`, or a caller that starts `fill_in_background`).
        None: all of it, unless a background filler runs: then just the vectors of the
        notes in `paths` (a watcher's few saved notes), and the filler does the rest.
        A whole vector phase also gives window vectors to chunks stored without them,
        unless `windows_too` is False (a one-shot search's quick fill).

        A folder that is gone or holds no notes never empties the index, unless
        `emptying` (the `index` command): the report's `kept_all` says it was kept.
        """
        self._refuse_read_only()
        a = self.access
        started = time.perf_counter()
        if paths is None and not rebuild and not a.has_index():
            found, skipped = self._notes()
            if not found:  # nothing to keep: a folder with no notes leaves no index behind
                return indexer.SyncReport(files_skipped=skipped)
        # An index holding another folder's notes is never wiped; one made here is marked
        # as this folder's before anything is written into it.
        index_home.check_owner(self.settings.index_dir, self.settings.knowledge_dir, rebuild)
        index_home.record_owner(self.settings.index_dir, self.settings.knowledge_dir)
        auto = vectors is None
        # a filler with nothing left to store: a rebuild's vectors, all in the cache, are
        # stored here at once (a /reindex of a small folder), not waited for
        settled = self.filler is not None and not (a.has_index() and a.manifest.pending())
        if vectors is None:
            vectors = self._foreground_vectors(paths)
        with a.writer.turn(queue, on_wait):
            report = indexer.sync(
                self.settings,
                a.store,
                a.manifest,
                lambda: a.embedder,
                indexer.SyncOptions(
                    rebuild=rebuild,
                    progress=progress,
                    commit=a.commit,
                    wait=wait,
                    on_wait=on_wait,
                    locked=a.follow,
                    paths=paths,
                    vectors=vectors,
                    windows_too=windows_too,
                    emptying=emptying,
                ),
            )
        # The vectors are the running filler's; a few are stored here from the cache when
        # it had nothing left to do: waiting for a group of its own (a model loading) kept
        # the prompt still
        if auto and vectors is False and settled:
            self._fill_few(report, progress, wait, FOREGROUND_CHUNKS_LIVE, on_wait)
        if self.filler is not None:
            self.filler.wake()
        report.seconds = time.perf_counter() - started  # waits for a turn included
        return report

    def _notes(self) -> tuple[list[str], list[notes.Skipped]]:
        s = self.settings
        return notes.find(s.knowledge_dir, s.include, s.exclude, follow_symlinks=s.follow_symlinks)

    def _fill_few(
        self,
        report: indexer.SyncReport,
        progress: indexer.Progress | None,
        wait: float,
        limit: int,
        on_wait: Callable[[str], None] | None = None,
    ) -> int:
        """Store the missing vectors here and now when at most `limit` wait (seconds of
        embedding), adding what was done to `report`; how many still wait."""
        if not self.access.has_index():
            return 0
        waiting = self.access.manifest.pending()
        if waiting <= limit and indexer.needs_filling(self.settings, self.access.manifest):
            filled = self.sync(
                progress=progress, wait=wait, on_wait=on_wait, vectors=True, windows_too=False
            )
            report.absorb(filled)
            waiting = filled.chunks_waiting
        return waiting

    def _foreground_vectors(self, paths: list[str] | None) -> bool | list[str]:
        """What a sync embeds itself: everything, unless a background filler runs; then
        only the notes it was given, when they are few (a folder, or many notes, are the
        filler's)."""
        if self.filler is None or not self.filler.running:
            return True
        if paths is None or len(paths) > FOREGROUND_NOTES:
            return False
        sources = indexer.sources_of(self.settings, paths)
        if not sources:
            return False  # a folder among them (a new one, a move): the filler's
        small, size = [], 0  # a 5 MB note is minutes of embedding: the filler's, in slices
        for source in sorted(sources):
            try:
                bytes_ = (self.settings.knowledge_dir / source).stat().st_size
            except OSError:
                bytes_ = 0  # gone (a delete): its vectors are removed, nothing is embedded
            if size + bytes_ <= FOREGROUND_BYTES:
                small.append(source)
                size += bytes_
        return small or False

    def fill_in_background(self, on_error: Callable[[str], None] = lambda message: None) -> None:
        """Store the missing vectors on a background thread, a small group at a time,
        while searches rank by keyword; `on_error` hears once why it stopped, if it fails."""
        if self.access.read_only or self.filler is not None or not self.access.has_index():
            return
        from askmd.index.filler import Filler

        self.filler = Filler(self, on_error)
        self.filler.start()

    def fill_some(self, chunks: int, stop: Callable[[], bool]) -> bool:
        """Store the vectors of about `chunks` more chunks (whole notes), or when none wait,
        the window vectors of as many stored without them; True while more wait and this
        call got somewhere. Notes that changed on disk since they were recorded cannot be
        filled until a sync records them again (which wakes the filler): with only those
        left it is False, or the filler would re-read them in a loop. Waits for nobody:
        Busy when another thread of this process is writing, IndexBusy when another
        process is."""
        a = self.access
        with a.writer.turn(0):
            vectors = indexer.needs_filling(self.settings, a.manifest)
            if not vectors and not indexer.windows_due(self.settings, a.manifest):
                return False
            with file_lock(self.settings.index_dir):
                a.follow()
                if vectors:
                    waiting = a.manifest.pending()
                    filled = indexer.fill(
                        self.settings,
                        a.store,
                        a.manifest,
                        lambda: a.embedder,
                        commit=a.commit,
                        chunks=chunks,
                        stop=stop,
                    )
                    # A big note is embedded over several calls before it is stored.
                    moved = a.manifest.pending() != waiting or filled.embed_seconds > 0
                    if not moved and not stop():
                        return False  # only notes changed on disk since recorded wait
                else:  # then the window vectors an older index lacks (windows.py)
                    indexer.backfill_windows(
                        self.settings, a.manifest, lambda: a.embedder, chunks=chunks, stop=stop
                    )
            more = indexer.needs_filling(self.settings, a.manifest)
            return more or indexer.windows_due(self.settings, a.manifest)

    def filling(self) -> dict:
        """How far the vectors are: {"chunks", "chunks_embedded", "keyword_ready"}."""
        if not self.access.has_index():
            return {"chunks": 0, "chunks_embedded": 0, "keyword_ready": False}
        m = self.access.manifest
        return {
            "chunks": m.total_chunks(),
            "chunks_embedded": m.embedded(),
            "keyword_ready": bool(m.get("gate")),
        }

    @contextmanager
    def writing(
        self,
        queue: float | None = None,
        wait: float = WRITE_WAIT_SECONDS,
        on_wait: Callable[[str], None] | None = None,
    ) -> Iterator[None]:
        """Hold the writer (this process's turn, then the lock file) around a change to
        the folder and the `sync` that takes it in, so that a change refused because
        another process is updating the index has changed nothing."""
        self._refuse_read_only()
        with self.access.writer.holding(queue, wait, on_wait):
            yield

    def sync_to_read(
        self,
        progress: indexer.Progress | None = None,
        warn: Callable[[str], None] = lambda message: None,
        background: bool = False,
        foreground: int | None = None,
    ) -> indexer.SyncReport | None:
        """Sync before answering, unless another process is updating the index: then wait
        READ_WAIT_SECONDS at most and answer from the index as it is (None, after one
        `warn`), since a search needs no writer lock. A read-only index folder is not
        synced at all (one `warn`).

        With `background` (a REPL, a server: they stay up) only the keyword phase runs
        here and the vectors are stored by `fill_in_background`, so the first question is
        answered as soon as every note is chunked, ranked by keyword until the vectors
        are in. `foreground` overrides how many missing vectors are stored here first (0:
        none, for a person waiting at a prompt; by default FOREGROUND_CHUNKS_LIVE with
        `background`, else FOREGROUND_CHUNKS)."""
        if self.access.read_only:
            warn("the index folder is read-only: searching it as it is")
            return None
        try:
            report = self.sync(progress=progress, wait=READ_WAIT_SECONDS, vectors=False)
            limit = FOREGROUND_CHUNKS_LIVE if background else FOREGROUND_CHUNKS
            limit = limit if foreground is None else foreground
            waiting = self._fill_few(report, progress, READ_WAIT_SECONDS, limit)
            if waiting and not background and self.filler is None:
                warn(
                    f"{waiting:,} chunks wait for their vectors: only passages sharing a word "
                    "with the question are found until "
                    f"{wording.command('index')} (or the REPL, or serve) has stored them"
                )
        except indexer.IndexBusy as exc:
            warn(f"pid {exc.holder} is updating the index; answering from the index as it is")
            report = None
        if background:
            self.fill_in_background(warn)
        return report
