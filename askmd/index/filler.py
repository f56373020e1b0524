"""Store an index's missing vectors on a background thread, while it answers by keyword.

A REPL, `serve` and `mcp` stay up, so they need not wait for every vector before the
first question: the sync records every note's chunks and keyword postings (minutes for
a big folder), and this thread embeds the rest a small group of notes at a time (hours,
on a laptop, for a 200 MB folder). Each group is one commit and takes the writer only
for its own time, so a note saved meanwhile is taken in between; a crash or kill loses
at most the group in flight, whose vectors the embedding cache already holds.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from askmd.errors import AskmdError, Busy, IndexBusy

if TYPE_CHECKING:
    from askmd.index.access import IndexAccess

GROUP_CHUNKS = 64  # chunks per group: a saved note waits at most one group (seconds)
IDLE_SECONDS = 30.0  # with nothing to do, look again this often (another process's sync)
BUSY_SECONDS = 2.0  # another process is writing: try again after this long
HANDOVER_SECONDS = 0.05  # between groups: time for a waiting writer to take its turn
RETRIES = 3  # an unexpected failure this many times in a row stops the filler
RETRY_SECONDS = 2.0  # ... and it tries again after this long (times the failures so far)


def recorded(state: str | None) -> str:
    """The state a filler of another process recorded, while that process lives; else
    "off" (no vectors are being stored in the background)."""
    pid, _, said = (state or "").partition(" ")
    if not pid.isdigit() or int(pid) == os.getpid():
        return "off"
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return "off"
    except OSError:
        pass  # another user's process: it lives
    return said or "off"


class Fills(Protocol):
    """What the filler drives (keeper.Keeper): the index it fills, and a group at a time."""

    access: IndexAccess

    def fill_some(self, chunks: int, stop: Callable[[], bool]) -> bool: ...


class Filler:
    def __init__(self, keeper: Fills, on_error: Callable[[str], None]) -> None:
        self.keeper = keeper
        self.on_error = on_error
        self.error: str | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="askmd-filler", daemon=True)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    @property
    def state(self) -> str:
        """What `stats` shows: "running", or "stopped: <why>" (with no reason once asked
        to stop, on leaving)."""
        if self.running:
            return "running"
        return f"stopped: {self.error}" if self.error else "stopped"

    def paused(self) -> bool:
        """Whether to stop at the next group of vectors: on leaving, or when another
        thread of this process waits to write (a /reindex, a saved note): it should not
        wait for the filler's whole turn."""
        return self._stop.is_set() or self.keeper.access.writer.wanted

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """A sync recorded notes: their vectors are wanted."""
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        """Finish the group in flight (its vectors are cached either way), then stop."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        self._record("running")
        failures = 0
        while not self._stop.is_set():
            try:
                more = self.keeper.fill_some(GROUP_CHUNKS, self.paused)
            except (Busy, IndexBusy):  # another writer (a saved note, another process) first
                self._stop.wait(BUSY_SECONDS)
                continue
            except AskmdError as exc:  # a full disk, a model that will not load: said once
                self._give_up(str(exc))
                return
            except Exception as exc:  # noqa: BLE001 - a thread's traceback lands over the prompt
                # Not askmd's own error: a bug, or a library failing once. Tried again a
                # few times (a group's vectors are cached, so little is redone), said once.
                failures += 1
                logging.getLogger("askmd").debug("storing vectors failed", exc_info=True)
                why = f"{type(exc).__name__}: {exc}".rstrip(": ")
                if failures >= RETRIES:
                    self._give_up(why)
                    return
                if failures == 1:
                    self.on_error(f"storing vectors failed ({why}); trying again")
                self._stop.wait(RETRY_SECONDS * failures)
                continue
            failures = 0
            if not more:
                self._wake.wait(IDLE_SECONDS)
                self._wake.clear()
            else:  # a thread waiting for its turn (a saved note's sync) gets it now: the
                # turn is not handed over in order, and this loop would take it straight back
                self._stop.wait(HANDOVER_SECONDS)

    def _record(self, state: str) -> None:
        """Note the state in the index (`stats` of another process reads it)."""
        try:
            self.keeper.access.manifest.set(filler=f"{os.getpid()} {state}")
        except Exception:  # noqa: BLE001 - only a report; this process's own stats has it
            logging.getLogger("askmd").debug("recording the filler's state failed", exc_info=True)

    def _give_up(self, why: str) -> None:
        self.error = why
        self._record(f"stopped: {why}")
        self.on_error(
            f"storing vectors stopped: {why} (searches rank by keyword; restart to retry)"
        )
