"""The server's writing side: one writer at a time, and notes edited on disk picked up.

Ingests and deletes wait their turn for the writer; searches never wait for it (the
index's read-write lock guards only each commit). A background re-scan that finds nothing
changed takes no lock at all, so other processes (`index`, a REPL) are not kept waiting.
A search or ask wakes a background re-sync when the last one is old enough, so notes
edited in an editor reach the server within seconds, without any request waiting for it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import indexer
from errors import AskmdError, Busy, first_line
from pipeline import Index

RESCAN_SECONDS = 2.0  # at least; a folder whose scan takes long is scanned less often
RESCAN_SHARE = 0.05  # the most of the time a background scan may take
WRITER_WAIT_SECONDS = 300.0  # an ingest behind a long one waits this long, then 409
LOCK_WAIT_SECONDS = 5.0  # a change waits this long for another process's update, then 409

log = logging.getLogger("askmd.server")
T = TypeVar("T")


class Syncer:
    def __init__(self, index: Index):
        self.index = index
        self._writer = threading.Lock()
        self._last_scan = time.monotonic()
        self._due = threading.Event()
        self._scan_seconds = 0.0  # how long the last background scan took
        threading.Thread(target=self._rescan_forever, name="askmd-rescan", daemon=True).start()

    def write(self, change: Callable[[], T]) -> T:
        """Run a change to the folder and the sync after it, as the only writer. The
        index's lock file is taken before the change touches the folder, so a change
        refused because another process is updating the index has changed nothing."""
        if not self._writer.acquire(timeout=WRITER_WAIT_SECONDS):
            raise Busy("another change to the notes is still running; try again shortly")
        try:
            with indexer.writer_lock(self.index.settings.index_dir, LOCK_WAIT_SECONDS):
                return change()
        finally:
            self._last_scan = time.monotonic()
            self._writer.release()

    def sync(self):
        """Sync now; for a caller that already holds the writer (inside `write`)."""
        return self.index.sync(show_progress=False)

    def poke(self) -> None:
        """Ask for a background re-sync if the last one is old enough: RESCAN_SECONDS, or
        longer where a scan is slow (7,000 files take ~0.3 s), so a server under steady
        load spends at most RESCAN_SHARE of one core on watching the folder."""
        wait = max(RESCAN_SECONDS, self._scan_seconds / RESCAN_SHARE)
        if time.monotonic() - self._last_scan >= wait:
            self._due.set()

    def _rescan_forever(self) -> None:
        while True:
            self._due.wait()
            self._due.clear()
            if not self._writer.acquire(blocking=False):
                continue  # an ingest or delete is syncing anyway
            try:
                self._rescan()
            finally:
                self._last_scan = time.monotonic()
                self._writer.release()

    def _rescan(self) -> None:
        started = time.monotonic()
        try:
            report = self.index.sync(show_progress=False, wait=0)
            self._scan_seconds = time.monotonic() - started
            changed = report.files_added + report.files_changed + report.files_deleted
            if changed:
                log.warning(
                    "re-indexed %d changed note(s): %d chunks now", changed, report.chunks_total
                )
        except indexer.IndexBusy:  # `index` running in another process: it syncs anyway
            log.info("background sync skipped: another process is updating the index")
        except AskmdError as exc:
            log.warning("background sync skipped: %s", first_line(exc))
        except Exception:  # noqa: BLE001 - a bug; the server keeps serving
            log.exception("background sync failed")
