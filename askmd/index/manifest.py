"""The local record of what is indexed: per-file hashes, chunk ids, the folder's gate hash,
the embedding cache and the keyword (BM25) postings, in one SQLite file in the index folder.

It is what makes a sync cheap: a no-change run compares the gate hash here without
opening Chroma, and an edit re-embeds only chunks whose text is not in the cache. A
file's rows are committed only after its chunks are stored, so a killed run leaves rows
that describe an older state, which the next run repairs. It never talks to Chroma.

`Manifest` opens the file (applying the schema migrations it lacks, migrations.py) and
is made of one part per role: files and their chunks (manifest_files), keyword postings
and BM25 (manifest_keywords), the vector store's bookkeeping (manifest_vectors) and the
embedding cache (manifest_cache), all on one connection (manifest_db).
"""

from __future__ import annotations

import contextlib
import sqlite3
import weakref
from pathlib import Path

from askmd import wording
from askmd.errors import AskmdError
from askmd.index import foreign, migrations
from askmd.index.manifest_cache import EmbeddingCache
from askmd.index.manifest_db import (
    CACHE_KIB,
    MANIFEST,
    _open_read_only,
    now,
    prepare_index_dir,
    read_only,
)
from askmd.index.manifest_files import FileRecord, FileRecords, LinkRow
from askmd.index.manifest_keywords import (
    BM25_B,
    BM25_K1,
    FIELD_WEIGHTS,
    FIELDS,
    ChunkRow,
    KeywordPostings,
    chunk_row,
)
from askmd.index.manifest_vectors import Pending, VectorMarks
from askmd.version import __version__

__all__ = [
    "BM25_B", "BM25_K1", "FIELD_WEIGHTS", "FIELDS", "MANIFEST", "ChunkRow", "FileRecord",
    "LinkRow", "Manifest", "Pending", "chunk_row", "now", "prepare_index_dir", "read_only",
]  # fmt: skip


class Manifest(FileRecords, KeywordPostings, VectorMarks, EmbeddingCache):
    def __init__(self, path: Path, read_only: bool = False):
        """With `read_only` the file is only read (a folder nobody may write to): no WAL
        switch, no migration; every method that writes then fails."""
        self.read_only = read_only
        self.path = path
        self._fields: bool | None = None  # whether postings have field counts, once known
        self.migrated: list[str] = []  # the schema migrations this open applied to an index
        if read_only:
            self.db = _open_read_only(path)
            self._release = _releaser(self, self.db)
            return
        prepare_index_dir(path.parent)
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
        # A connection and its statement cache hold each other (Python 3.11): left to the
        # garbage collector, its three open files outlive the Manifest by minutes.
        self._release = _releaser(self, self.db)
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            # A big page cache: recording a big folder inserts postings all over a B-tree of
            # hundreds of MB, and SQLite's default 2 MB cache makes each insert a page read.
            self.db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            foreign.refuse_newer(self.db, migrations.known(), __version__)
            new = not migrations.has_tables(self.db)  # its steps make it: nothing upgraded
            ran = migrations.migrate(self.db, self._transaction)
            self.migrated = [] if new else ran
        except AskmdError:
            self.close()
            raise
        except sqlite3.Error as exc:
            self.close()
            raise AskmdError(
                f"the index manifest {path} cannot be opened ({exc}). Delete the index "
                f"folder and run {wording.command('index')} again."
            ) from None

    def take_migrated(self) -> list[str]:
        """The schema migrations this open applied, said once: by the first sync's report."""
        taken, self.migrated = self.migrated, []
        return taken

    def record_upgrades(self, names: list[str]) -> None:
        """Note these index upgrades (upgrades.INDEX_UPGRADES) as applied."""
        with self._transaction():
            migrations.record(self.db, names)


def _releaser(owner: Manifest, db: sqlite3.Connection) -> weakref.finalize:
    """Close `db` when `owner` is let go. Not at exit (the process's end closes it), and
    quietly when the last reference goes in another thread than the one that opened it."""
    release = weakref.finalize(owner, _close_quietly, db)
    release.atexit = False
    return release


def _close_quietly(db: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.ProgrammingError):
        db.close()
