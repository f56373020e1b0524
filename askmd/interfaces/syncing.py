"""The server's background re-scan: notes edited on disk picked up between requests.

A search or ask wakes a background re-sync when the last one is old enough, so notes
edited in an editor reach the server within seconds, without any request waiting for it.
It goes through `Index.sync` like every other change, but never queues: when another
change of this process or another process is writing, that one syncs anyway and the
re-scan is skipped. A re-scan that finds nothing changed takes no lock at all, so other
processes (`index`, a REPL) are not kept waiting.
"""

from __future__ import annotations

import logging
import threading
import time

from askmd.errors import AskmdError, Busy, first_line
from askmd.index import indexer
from askmd.pipeline import Index

RESCAN_SECONDS = 2.0  # at least; a folder whose scan takes long is scanned less often
RESCAN_SHARE = 0.05  # the most of the time a background scan may take

log = logging.getLogger("askmd.server")


class Syncer:
    def __init__(self, index: Index):
        self.index = index
        self._last_scan = time.monotonic()
        self._due = threading.Event()
        self._scan_seconds = 0.0  # how long the last background scan took
        self._kept_all = ""  # the folder gone or emptied, as last said
        threading.Thread(target=self._rescan_forever, name="askmd-rescan", daemon=True).start()

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
            try:
                self._rescan()
            finally:
                self._last_scan = time.monotonic()

    def _rescan(self) -> None:
        started = time.monotonic()
        try:
            report = self.index.sync(queue=0, wait=0)
            self._scan_seconds = time.monotonic() - started
            if report.kept_all and report.kept_all != self._kept_all:  # said once
                log.warning("%s", report.kept_all)
            self._kept_all = report.kept_all
            changed = report.files_added + report.files_changed + report.files_deleted
            if changed:
                log.warning(
                    "re-indexed %d changed note(s): %d chunks now", changed, report.chunks_total
                )
        except indexer.IndexBusy:  # `index` running in another process: it syncs anyway
            log.info("background sync skipped: another process is updating the index")
        except Busy:  # an ingest or delete of this process is syncing anyway
            pass
        except AskmdError as exc:
            log.warning("background sync skipped: %s", first_line(exc))
        except Exception:  # noqa: BLE001 - a bug; the server keeps serving
            log.exception("background sync failed")
