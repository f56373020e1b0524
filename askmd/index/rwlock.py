"""The index's locks: who may read while a change is written, and who may write at all.

`WriterLock` makes one writer of the index: one thread of this process (a turn, waited
for in order) and one process of all that share the index folder (a lock file, `flock`,
which the kernel drops when its holder dies, however it dies). Every change to the index
holds it; finding that nothing changed needs neither.

`ReadWriteLock`: many searches at once, or one index change, never both.

The index is two stores (Chroma and the SQLite manifest) that a change updates one after
the other; a search that ran in between could see a file's new chunks with its old
keyword postings, or half its chunks. Searches hold the lock for reading and each commit
of a sync holds it for writing. Only the commits are guarded, not the slow embedding
before them, so searches wait at most one commit. A waiting writer stops new readers
from entering, so a stream of searches cannot starve it. The standard library has no such
lock, and a condition variable makes one in a few lines.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from askmd.errors import Busy, IndexBusy
from askmd.index.manifest import prepare_index_dir

LOCK_POLL_SECONDS = 0.1
_held = threading.local()  # the lock files this thread holds
_holders: dict[Path, int] = {}  # every lock file this process holds: the holding thread


class ReadWriteLock:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0
        self._writer: int | None = None  # thread id, so a writer may read (sync searches)

    @contextmanager
    def reading(self) -> Iterator[None]:
        me = threading.get_ident()
        if self._writer == me:  # the writing thread already excludes everyone else
            yield
            return
        with self._cond:
            while self._writing or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        me = threading.get_ident()
        if self._writer == me:  # re-entrant for the thread that holds it
            yield
            return
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writing or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writing, self._writer = True, me
        try:
            yield
        finally:
            with self._cond:
                self._writing, self._writer = False, None
                self._cond.notify_all()


WAIT_NOTICE_SECONDS = 2.0  # a wait for the writer's turn longer than this is said


class WriterLock:
    """The one writer of an index: a turn among this process's threads, then the lock
    file among processes. A thread that holds its turn may take it again, so a change to
    the folder can hold the lock from before it touches a file until its sync is done."""

    def __init__(self, index_dir: Path) -> None:
        self.index_dir = index_dir
        self._turn = threading.RLock()
        self._waiting = 0  # threads waiting for their turn
        self._count = threading.Lock()

    @property
    def wanted(self) -> bool:
        """Whether a thread waits for its turn: the background filler, which holds it
        for a group of notes at a time, lets it in at its next stopping point."""
        return self._waiting > 0

    @contextmanager
    def turn(
        self, queue: float | None = None, on_wait: Callable[[str], None] | None = None
    ) -> Iterator[None]:
        """This process's turn to write: wait up to `queue` seconds (None: as long as it
        takes) for another thread's change, then raise Busy. A wait longer than
        WAIT_NOTICE_SECONDS is said once through `on_wait`."""
        if not self._turn.acquire(blocking=False):
            if queue == 0:
                raise Busy("another change to the notes is still running; try again shortly")
            with self._count:
                self._waiting += 1
            try:
                got = self._wait_for_turn(queue, on_wait)
            finally:
                with self._count:
                    self._waiting -= 1
            if not got:
                raise Busy("another change to the notes is still running; try again shortly")
        try:
            yield
        finally:
            self._turn.release()

    def _wait_for_turn(self, queue: float | None, on_wait: Callable[[str], None] | None) -> bool:
        started = time.monotonic()
        first = WAIT_NOTICE_SECONDS if queue is None else min(queue, WAIT_NOTICE_SECONDS)
        if self._turn.acquire(timeout=first):
            return True
        if on_wait is not None:
            on_wait("waiting for the vectors being stored in the background to pause…")
        if queue is None:
            return self._turn.acquire()
        left = queue - (time.monotonic() - started)
        return left > 0 and self._turn.acquire(timeout=left)

    @contextmanager
    def holding(
        self,
        queue: float | None = None,
        wait: float = 0.0,
        on_wait: Callable[[str], None] | None = None,
    ) -> Iterator[None]:
        """The turn, then the lock file (see `file_lock` for `wait` and `on_wait`)."""
        with self.turn(queue), file_lock(self.index_dir, wait, on_wait):
            yield


@contextmanager
def file_lock(
    index_dir: Path, wait: float = 0.0, on_wait: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Hold the index's lock file. When another process holds it, wait up to `wait`
    seconds (saying so once through `on_wait`), then raise IndexBusy naming its pid. A
    thread that holds it already may take it again."""
    prepare_index_dir(index_dir)
    path = index_dir / "lock"
    held = _held.__dict__.setdefault("paths", set())
    if path.resolve() in held:  # this thread has it already (a change, then its sync)
        yield
        return
    with open(path, "a+") as handle:
        deadline = time.monotonic() + wait
        told = False
        while not _try_lock(handle):
            holder = _holder(handle)
            if time.monotonic() >= deadline:
                still = f", still after {wait:.0f} s" if wait else ""
                raise IndexBusy(
                    f"the index at {index_dir} is being updated by another askmd process "
                    f"(pid {holder}){still}. Wait for it to finish, or stop it.",
                    holder,
                ) from None
            if on_wait and not told:
                on_wait(
                    f"waiting for pid {holder} to finish updating the index (up to {wait:.0f} s)…"
                )
                told = True
            time.sleep(LOCK_POLL_SECONDS)
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        held.add(path.resolve())
        _holders[path.resolve()] = threading.get_ident()
        try:
            yield
        finally:
            _holders.pop(path.resolve(), None)
            held.discard(path.resolve())
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle, fcntl.LOCK_UN)


def held_by_another_thread(index_dir: Path) -> bool:
    """Whether another thread of this process holds the index's lock file: no other
    process can have changed the index meanwhile, so what changed is that thread's own."""
    holder = _holders.get((index_dir / "lock").resolve())
    return holder is not None and holder != threading.get_ident()


def _try_lock(handle) -> bool:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _holder(handle) -> str:
    handle.seek(0)
    return handle.read().strip() or "unknown"
