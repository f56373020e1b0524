"""Who writes a collection on a Chroma server: a writer's lease, kept in the collection's
metadata, taken before writing (`claim`), renewed while it writes and given up after
(`release`). An embedded Chroma needs none: the index folder's lock file already lets one
process write at a time.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from askmd.errors import IndexBusy

LEASE_SECONDS = 180.0  # a server collection's writer lease lasts this long unless renewed
RENEW_SECONDS = 60.0  # how often a writer renews its lease while it writes
SETTLE_SECONDS = 0.25  # between writing a lease and reading it back to see who won


@dataclass(frozen=True)
class Lease:
    """Who writes a collection on a Chroma server, as its metadata records it: host, pid
    and knowledge folder for the message another writer sees, a token that tells two
    claims apart, and an expiry (seconds since the epoch, by the writer's clock: machines
    sharing a server need clocks that agree to well within LEASE_SECONDS)."""

    KEYS = ("writer_host", "writer_pid", "writer_folder", "writer_token", "writer_until")

    host: str
    pid: int
    folder: str
    token: str
    until: float = 0.0

    @classmethod
    def new(cls, knowledge_dir: Path | str) -> Lease:
        folder = os.path.realpath(knowledge_dir)
        return cls(socket.gethostname(), os.getpid(), folder, uuid.uuid4().hex)

    @classmethod
    def read(cls, meta: dict) -> Lease | None:
        """The lease in a collection's metadata, or None if there is none."""
        try:
            host, pid, folder, token, until = (meta[k] for k in cls.KEYS)
            return cls(str(host), int(pid), str(folder), str(token), float(until))
        except (KeyError, TypeError, ValueError):
            return None

    def fields(self, until: float | None = None) -> dict[str, str | int | float]:
        until = self.until if until is None else until
        values = (self.host, self.pid, self.folder, self.token, until)
        return dict(zip(self.KEYS, values, strict=True))

    def live(self, now: float) -> bool:
        """Unexpired, and on this host only while its process runs: a writer killed here
        leaves no wait behind."""
        if self.until <= now:
            return False
        return self.host != socket.gethostname() or _pid_alive(self.pid)

    def busy(self, name: str, where: str) -> IndexBusy:
        until = time.strftime("%H:%M:%S UTC", time.gmtime(self.until))
        return IndexBusy(
            f"pid {self.pid} on {self.host} is writing the Chroma collection {name} at {where} "
            f"(indexing {self.folder}; its lease runs to {until} and is renewed while it "
            "writes): run again when it is done",
            holder=f"{self.pid} on {self.host}",
        )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


class Leasing:
    """The writer lease of a Store's collection (store.Store mixes this in): it reads and
    writes the collection through the store's own connection and error handling."""

    chroma_url: str | None
    name: str
    _lease: Lease | None = None
    _renewer: tuple[threading.Event, threading.Thread] | None = None

    def claim(self, knowledge_dir: Path | str) -> None:
        """Take the writer lease of this (open) collection on a Chroma server before
        writing it, or raise IndexBusy naming the writer that holds a live one. The lease
        is renewed every RENEW_SECONDS until `release`; a killed writer's lease expires
        LEASE_SECONDS after its last renewal (at once for a claim on its own host).

        Chroma has no compare-and-set, so the lease is written, read back SETTLE_SECONDS
        later, and kept only if it is still ours: of two writers that both found the
        collection free, the one written last wins. Both can still win if one of them
        takes longer than SETTLE_SECONDS from its check to its write (a stalled process
        or network). Embedded: nothing to do, the lock file already serialises writers."""
        if not self.chroma_url or self._owner is not None or self._lease is not None:
            return
        _ = self.collection  # the lease lives in the metadata of the opened collection
        found = self._fetch()
        held = Lease.read(dict(found.metadata or {}))
        if held is not None and held.live(time.time()):
            raise held.busy(self.name, self.where)
        mine = Lease.new(knowledge_dir)
        self._write_lease(mine, found=found)  # one call after the check: a narrow window
        time.sleep(SETTLE_SECONDS)
        held = Lease.read(self._metadata())
        if held is None or held.token != mine.token:
            if held is not None and held.live(time.time()):
                raise held.busy(self.name, self.where)
            raise IndexBusy(
                f"another askmd claimed the Chroma collection {self.name} at {self.where} "
                "at the same moment: run again",
                holder="another process",
            )
        self._lease = mine
        self._start_renewing(mine)

    def release(self) -> None:
        """Give up the writer lease, if this store holds one: stop renewing it and mark it
        expired, unless another writer has taken it over since. Never raises (it runs
        after failures too): a lease that cannot be cleared expires by itself."""
        mine, self._lease = self._lease, None
        if self._renewer is not None:
            stop, thread = self._renewer
            self._renewer = None
            stop.set()
            thread.join(timeout=10)
        if mine is None:
            return
        try:
            held = Lease.read(self._metadata())
            if held is not None and held.token == mine.token:
                self._write_lease(mine, until=0.0)
        except Exception:  # noqa: BLE001 - the lease then runs out on its own
            logging.getLogger("askmd").debug("releasing the writer lease failed", exc_info=True)

    @contextmanager
    def releasing(self) -> Iterator[None]:
        """Release the writer lease (if one is claimed in the block) when the block ends,
        however it ends."""
        try:
            yield
        finally:
            self.release()

    def _fetch(self):
        """The collection as the server has it now (a Collection object keeps the
        metadata it was fetched with)."""
        return self._call(self._connect().get_collection, self.name, embedding_function=None)

    def _metadata(self) -> dict:
        return dict(self._fetch().metadata or {})

    def _write_lease(self, lease: Lease, until: float | None = None, found=None) -> None:
        """Write the lease into the collection's metadata (`found`: as just fetched),
        keeping its other keys: Chroma replaces a collection's metadata as a whole."""
        found = found or self._fetch()
        until = time.time() + LEASE_SECONDS if until is None else until
        meta = {k: v for k, v in (found.metadata or {}).items() if not k.startswith("hnsw:")}
        meta.update(lease.fields(until))
        self._call(found.modify, metadata=meta)

    def _start_renewing(self, mine: Lease) -> None:
        """Renew the lease in a thread while this process writes; stop (with a warning)
        if another writer has taken it over, after it expired."""
        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(RENEW_SECONDS):
                try:
                    held = Lease.read(self._metadata())
                    if held is None or held.token != mine.token:
                        logging.getLogger("askmd").warning(
                            "lost the writer lease on the Chroma collection %s", self.name
                        )
                        return
                    self._write_lease(mine)
                except Exception:  # noqa: BLE001 - tried again at the next interval
                    logging.getLogger("askmd").debug("renewing the lease failed", exc_info=True)

        thread = threading.Thread(target=renew, name="askmd-lease", daemon=True)
        self._renewer = (stop, thread)
        thread.start()
