"""The manifest's SQLite file: where it lives, how it is opened for reading only, and the
one write transaction every part of the manifest goes through (a full disk said as such).

`ManifestDB` holds the connection and the `meta` table (settings the index was built
with, its generation); the parts of `Manifest` (manifest.py) build on it.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import tempfile
import time
import weakref
from pathlib import Path

from askmd.errors import AskmdError, DiskFull, disk_full
from askmd.version import __version__

MANIFEST = "manifest.sqlite3"  # its file name in the index folder
CACHE_KIB = 256 * 1024  # SQLite's page cache per connection at most (grows only as used)


def prepare_index_dir(index_dir: Path) -> None:
    """Create the index folder, or say in one line why it cannot be used."""
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = "it is a file" if index_dir.is_file() else exc.strerror or str(exc)
        raise AskmdError(
            f"the index folder {index_dir} cannot be created ({why}). "
            "Point ASKMD_INDEX_DIR or --index-dir at a writable folder."
        ) from None


def read_only(index_dir: Path) -> bool:
    """Whether the index folder exists but cannot be written: a read-only mount, or files
    owned by someone else. Found by trying, since os.access answers for the real user id
    and says yes to root even where a write fails. The probe is an unnamed file (Linux's
    O_TMPFILE), so a writable folder gains no entry; the manifest is opened for writing
    without truncating, which changes nothing."""
    if not index_dir.is_dir():
        return False
    try:
        with tempfile.TemporaryFile(dir=index_dir):
            pass
        manifest = index_dir / MANIFEST
        if manifest.exists():
            os.close(os.open(manifest, os.O_RDWR))
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EROFS, errno.EPERM):
            return True
        raise
    return False


class ManifestDB:
    """The connection and the meta table; see Manifest for how it is opened."""

    db: sqlite3.Connection
    path: Path
    read_only: bool
    _release: weakref.finalize

    def close(self) -> None:
        self._release.detach()
        self.db.close()

    def get(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set(self, **values: str) -> None:
        with self._transaction():
            self.db.executemany(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", values.items()
            )

    def generation(self) -> int:
        """How many commits have changed what searches see. Another process (a server, a
        REPL) compares it with the number it last saw to know its open store is stale."""
        return int(self.get("generation") or 0)

    def _bump(self) -> None:
        """Count a commit; called inside the transaction that changes the index, so a
        reader that sees the new number also sees the change."""
        self.db.execute(
            "INSERT INTO meta (key, value) VALUES ('generation', '1') ON CONFLICT (key) "
            "DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )
        # which askmd wrote it: a newer index refused by older code names it
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('writer', ?)", (__version__,))

    def _transaction(self) -> _Transaction:
        return _Transaction(self.db, self.path.parent)


class _Transaction:
    """One write; a full disk is said as such (rolled back: nothing half-written)."""

    def __init__(self, db: sqlite3.Connection, folder: Path):
        self.db = db
        self.folder = folder

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, error: BaseException | None, _: object) -> None:
        try:
            self.db.execute("ROLLBACK" if kind else "COMMIT")
        except sqlite3.Error as exc:
            error = error or exc
            if not disk_full(error):
                raise
        if error is not None and isinstance(error, sqlite3.Error) and disk_full(error):
            raise DiskFull(
                f"the disk holding the index ({self.folder}) is full: free some space and run again"
            ) from None


def _open_read_only(path: Path) -> sqlite3.Connection:
    """Open the manifest of a read-only folder for reading. SQLite reads a WAL database
    only where it can create the -shm file beside it; when it cannot, the file is opened
    as immutable: nobody can write to the folder, so nothing changes under the reader."""
    uri = path.resolve().as_uri()
    failure: sqlite3.Error | None = None
    for flags in ("mode=ro", "mode=ro&immutable=1"):
        db = sqlite3.connect(f"{uri}?{flags}", uri=True, timeout=30, isolation_level=None)
        try:
            db.execute("SELECT COUNT(*) FROM meta").fetchone()
            return db
        except sqlite3.Error as exc:
            db.close()
            failure = exc
    raise AskmdError(f"the index manifest {path} cannot be read ({failure})")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
