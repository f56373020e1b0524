"""A readers-writer lock: many searches at once, or one index change, never both.

The index is two stores (Chroma and the SQLite manifest) that a change updates one after
the other; a search that ran in between could see a file's new chunks with its old
keyword postings, or half its chunks. Searches hold the lock for reading and each commit
of a sync holds it for writing. Only the commits are guarded, not the slow embedding
before them, so searches wait at most one commit. A waiting writer stops new readers
from entering, so a stream of searches cannot starve it. The standard library has no such
lock, and a condition variable makes one in a few lines.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


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
