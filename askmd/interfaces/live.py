"""An index kept live while an interface runs: synced, then watched, its vectors stored in
the background, and all of it stopped on leaving. The REPL, `watch`, `serve` and `mcp`
each use one, so the order (sync, watch, fill, stop, leave) is written once.

On leaving, the watcher and the filler finish what they hold (a group of vectors, a
saved note's sync) within `leave_wait` seconds; one still at work inside native code then
would take the process down with the interpreter, so the process leaves at once instead
(leaving.exit_now_if_busy): every commit is whole, and the next run goes on from there.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from askmd.interfaces import leaving

if TYPE_CHECKING:
    from askmd.index.sync_report import Progress, SyncReport
    from askmd.interfaces.watcher import Change, Watcher
    from askmd.pipeline import Index

LEAVE_WAIT_SECONDS = 30  # leaving waits this long for a sync or a group of vectors to end


class LiveIndex:
    def __init__(
        self,
        index: Index,
        *,
        warn: Callable[[str], None] = lambda line: None,
        on_change: Callable[[Change], None] | None = None,
        on_notice: Callable[[str], None] | None = None,
        watch: bool | None = None,
        leave_wait: float = LEAVE_WAIT_SECONDS,
    ) -> None:
        """`warn` hears what the start-up sync and the filler have to say (once each);
        `on_change` each change a watcher applies, `on_notice` what it has to say. `watch`
        (default: the settings' ASKMD_WATCH) says whether the folder is watched; a
        read-only index folder never is."""
        self.index = index
        self.warn = warn
        self.on_change, self.on_notice = on_change, on_notice
        wanted = index.settings.watch if watch is None else watch
        self.watching = bool(wanted) and not index.read_only
        self.leave_wait = leave_wait
        self.watcher: Watcher | None = None
        self.started = threading.Event()  # the start-up sync is over (done, or given up)
        self.leaving = threading.Event()  # stop() was called: start nothing more
        self._starting: threading.Thread | None = None

    def __enter__(self) -> LiveIndex:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()
        leaving.exit_now_if_busy(0)

    def sync(
        self, progress: Progress | None = None, foreground: int | None = None
    ) -> SyncReport | None:
        """The start-up sync: every note recorded, so each is searchable by keyword, then
        the vectors stored in the background (`foreground`: how many are stored here
        first, Keeper.sync_to_read). None when another process was updating the index."""
        try:
            return self.index.keeper.sync_to_read(
                progress, warn=self.warn, background=True, foreground=foreground
            )
        finally:
            self.started.set()

    def watch(self, on_ready: Callable[[], None] | None = None) -> None:
        """Start watching the folder on a thread of its own, when it is to be watched."""
        if not self.watching or self.leaving.is_set():
            return
        self.watcher = self._watcher(on_ready)
        self.watcher.start()

    def watch_here(self, on_ready: Callable[[], None] | None = None) -> None:
        """Watch the folder on this thread until Ctrl-C (the `watch` command)."""
        self.watcher = self._watcher(on_ready)
        try:
            self.watcher.run()
        except KeyboardInterrupt:
            pass

    def start_in_background(self, sync: Callable[[], None]) -> threading.Thread:
        """Run `sync` (the start-up sync and what is shown of it), then watch, on a thread:
        a client's handshake is answered at once, and a read waits for `started`. The
        folder is watched even when that sync failed: the notes saved next are taken in."""

        self._starting = _started(self, sync)
        return self._starting

    def stop(self) -> None:
        """Wait for the start-up sync (a sync left inside native code while the interpreter
        shuts down aborts the process), then stop the watcher and the filler: the group in
        flight ends, and the rest waits for the next run."""
        self.leaving.set()
        if self._starting is not None and self._starting is not threading.current_thread():
            self._starting.join(self.leave_wait)
        if self.watcher is not None:
            self.watcher.stop(timeout=self.leave_wait)
        filler = self.index.keeper.filler
        if filler is not None:
            filler.stop(timeout=self.leave_wait)

    def _watcher(self, on_ready: Callable[[], None] | None) -> Watcher:
        from askmd.interfaces.watcher import Watcher

        return Watcher(self.index, self.on_change, self.on_notice, on_ready=on_ready)


class LiveShelf:
    """Several folders kept live as one: a LiveIndex each (one watcher per folder), synced
    one after another, stopped together."""

    def __init__(self, shelf, **options) -> None:
        self.shelf = shelf
        told = options.pop("on_change", None)

        def labelled(label: str):
            if told is None:
                return None
            return lambda change: told(dataclasses.replace(change, folder=label))

        self.lives = [
            (f, LiveIndex(f.index, on_change=labelled(f.label), **options)) for f in shelf.folders
        ]
        self.started = threading.Event()
        self._starting: threading.Thread | None = None

    def __enter__(self) -> LiveShelf:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()
        leaving.exit_now_if_busy(0)

    @property
    def watcher(self):
        """The folders' watchers as one, for what the REPL says between answers."""
        watchers = [live.watcher for _, live in self.lives if live.watcher is not None]
        return _Watchers(watchers) if watchers else None

    def sync(self, progress=None, foreground: int | None = None) -> list:
        """Each folder's start-up sync (LiveIndex.sync); `progress` makes a display each."""
        try:
            return [
                (f, live.sync(progress() if progress else None, foreground))
                for f, live in self.lives
            ]
        finally:
            self.started.set()

    def watch(self, on_ready: Callable[[], None] | None = None) -> None:
        for _, live in self.lives:
            live.watch(on_ready)

    def watch_here(self, on_ready: Callable[[], None] | None = None) -> None:
        """Watch every folder until Ctrl-C (the `watch` command): each on a thread of its
        own, this one waiting."""
        for _, live in self.lives:
            live.watching = True
            live.watch()
        if on_ready is not None:
            on_ready()
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass

    def start_in_background(self, sync: Callable[[], None]) -> threading.Thread:
        """As LiveIndex.start_in_background, every folder's sync in `sync`."""
        self._starting = _started(self, sync)
        return self._starting

    def stop(self) -> None:
        if self._starting is not None and self._starting is not threading.current_thread():
            self._starting.join(LEAVE_WAIT_SECONDS)
        for _, live in self.lives:
            live.stop()


def _started(live: LiveIndex | LiveShelf, sync: Callable[[], None]) -> threading.Thread:
    """`sync`, then `started` set and the watching begun, on a thread of its own."""

    def start() -> None:
        try:
            sync()
        finally:
            live.started.set()
            live.watch()

    thread = threading.Thread(target=start, name="askmd-start", daemon=True)
    thread.start()
    return thread


class _Watchers:
    def __init__(self, watchers: list) -> None:
        self.watchers = watchers

    def take_updated(self) -> list:
        return [u for w in self.watchers for u in w.take_updated()]
