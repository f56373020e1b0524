"""The read-write lock that keeps searches from seeing a half-replaced file."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from askmd.index.rwlock import ReadWriteLock

WAIT = 5.0  # seconds a thread may take to get where a test expects it


def test_readers_share_the_lock() -> None:
    lock = ReadWriteLock()
    inside = threading.Barrier(3, timeout=WAIT)

    def reader() -> None:
        with lock.reading():
            inside.wait()  # all three are inside at once, or this times out

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    with lock.reading():
        inside.wait()
    for t in threads:
        t.join(WAIT)


def test_a_writer_waits_for_readers_and_excludes_them() -> None:
    lock = ReadWriteLock()
    events: list[str] = []
    reading = threading.Event()
    release = threading.Event()

    def reader() -> None:
        with lock.reading():
            events.append("read start")
            reading.set()
            release.wait(WAIT)
            events.append("read end")

    def writer() -> None:
        with lock.writing():
            events.append("write")

    r = threading.Thread(target=reader)
    r.start()
    reading.wait(WAIT)
    w = threading.Thread(target=writer)
    w.start()
    time.sleep(0.1)
    assert events == ["read start"]  # the writer is waiting
    release.set()
    r.join(WAIT)
    w.join(WAIT)
    assert events == ["read start", "read end", "write"]


def test_a_waiting_writer_goes_before_new_readers() -> None:
    lock = ReadWriteLock()
    order: list[str] = []
    first_in = threading.Event()
    release = threading.Event()

    def first_reader() -> None:
        with lock.reading():
            first_in.set()
            release.wait(WAIT)

    def writer() -> None:
        with lock.writing():
            order.append("writer")

    def late_reader() -> None:
        with lock.reading():
            order.append("late reader")

    threads = [threading.Thread(target=first_reader)]
    threads[0].start()
    first_in.wait(WAIT)
    threads.append(threading.Thread(target=writer))
    threads[1].start()
    time.sleep(0.1)  # the writer is now waiting
    threads.append(threading.Thread(target=late_reader))
    threads[2].start()
    time.sleep(0.1)
    assert order == []  # the late reader does not overtake the waiting writer
    release.set()
    for t in threads:
        t.join(WAIT)
    assert order == ["writer", "late reader"]


def test_the_writing_thread_may_read_and_write_again() -> None:
    lock = ReadWriteLock()
    with lock.writing():
        with lock.reading():
            with lock.writing():
                pass
    with lock.reading():  # and the lock is free afterwards
        pass


def test_the_lock_is_released_when_the_body_raises() -> None:
    lock = ReadWriteLock()
    for mode in (lock.reading, lock.writing):
        try:
            with mode():
                raise ValueError
        except ValueError:
            pass
    done = threading.Event()

    def writer() -> None:
        with lock.writing():
            done.set()

    threading.Thread(target=writer).start()
    assert done.wait(WAIT)


def test_a_thread_waiting_for_its_turn_is_seen_and_told_why(monkeypatch) -> None:
    """A thread kept waiting for its turn (a /reindex while the filler stores a group) is
    seen by the holder (`wanted`), which lets it in at its next stopping point, and says
    after WAIT_NOTICE_SECONDS what it waits for, once."""
    from askmd.index import rwlock

    monkeypatch.setattr(rwlock, "WAIT_NOTICE_SECONDS", 0.05)
    lock = rwlock.WriterLock(Path("/nonexistent"))
    said: list[str] = []
    holding, waiting = threading.Event(), threading.Event()
    release = threading.Event()

    def holder() -> None:
        with lock.turn():
            holding.set()
            release.wait(WAIT)

    def waiter() -> None:
        waiting.set()
        with lock.turn(on_wait=said.append):
            pass

    threads = [threading.Thread(target=holder), threading.Thread(target=waiter)]
    threads[0].start()
    holding.wait(WAIT)
    assert not lock.wanted
    threads[1].start()
    waiting.wait(WAIT)
    deadline = time.monotonic() + WAIT
    while not (lock.wanted and said) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert lock.wanted
    release.set()
    for t in threads:
        t.join(WAIT)
    assert not lock.wanted
    assert len(said) == 1 and "waiting" in said[0], said
