"""Numbered changes to an index made by older code, each applied once and recorded.

Two ordered lists, both recorded by name in the manifest's `_migrations` table:

- SCHEMA: SQL-only steps, run when a Manifest is opened for writing (a read-only one is
  read as it is). Each is written to be a no-op where older code already made the
  change, since indexes from before this record hold some of them without saying so.
- INDEX_UPGRADES (upgrades.py): steps that may change what is indexed, run by a sync
  under the writer lock (indexer.sync): each returns an `Upgraded` saying whether notes
  must be scanned again or the index rebuilt. A new or rebuilt index owes none
  (`upgrades.mark_current`).

To change the schema or mend indexes made by older code, append a function to the end of
the right list; never reorder, rename or remove one (its name is what is recorded).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from contextlib import AbstractContextManager

from askmd.index import chunk_dates, foreign, note_properties, packed_postings
from askmd.index.manifest_keywords import _CJK_TERM, FIELDS

_TABLE = "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied TEXT NOT NULL)"

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    source TEXT PRIMARY KEY, md5 TEXT NOT NULL, size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL, chunks INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, text_hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS stale (source TEXT PRIMARY KEY);
CREATE INDEX IF NOT EXISTS chunks_by_source ON chunks (source);
CREATE TABLE IF NOT EXISTS documents (
    doc INTEGER PRIMARY KEY, chunk TEXT NOT NULL UNIQUE, source TEXT NOT NULL,
    length INTEGER NOT NULL, cjk INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS documents_by_source ON documents (source);
CREATE TABLE IF NOT EXISTS postings (
    term TEXT NOT NULL, doc INTEGER NOT NULL, tf INTEGER NOT NULL,
    title_tf INTEGER NOT NULL DEFAULT 0, alias_tf INTEGER NOT NULL DEFAULT 0,
    heading_tf INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (term, doc)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS postings_by_doc ON postings (doc);
CREATE TABLE IF NOT EXISTS links (
    source TEXT NOT NULL, target TEXT NOT NULL, heading TEXT NOT NULL,
    line INTEGER NOT NULL, embed INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS links_by_source ON links (source);
CREATE TABLE IF NOT EXISTS embeddings (
    embedder TEXT NOT NULL, text_hash TEXT NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (embedder, text_hash)
);
"""


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _script(db: sqlite3.Connection, sql: str) -> None:
    """Run `sql` statement by statement: executescript would commit the caller's
    transaction first."""
    for statement in sql.split(";"):
        if statement.strip():
            db.execute(statement)


# --- SQL-only steps, run when a Manifest opens --------------------------------------


def m001_tables(db: sqlite3.Connection) -> None:
    """Every table, as this code creates them (those older code made are kept)."""
    _script(db, _TABLES)
    _script(db, packed_postings.SCHEMA)


def m002_documents_script_flag(db: sqlite3.Connection) -> None:
    """Indexes made before documents had a `cjk` flag get it, computed from their
    postings: no re-indexing needed."""
    if "cjk" in _columns(db, "documents"):
        return
    db.execute("ALTER TABLE documents ADD COLUMN cjk INTEGER NOT NULL DEFAULT 0")
    db.execute(
        "UPDATE documents SET cjk = (SELECT COALESCE(2 * SUM(CASE WHEN "
        f"{_CJK_TERM} THEN tf ELSE 0 END) >= SUM(tf), 0) FROM postings "
        "WHERE postings.doc = documents.doc)"
    )


def m003_documents_cjk_index(db: sqlite3.Connection) -> None:
    """Finds the first CJK chunk at once (`has_cjk_chunks`, asked at every start of a
    folder that may need a second model); without it, a scan of every chunk."""
    db.execute("CREATE INDEX IF NOT EXISTS documents_cjk ON documents (doc) WHERE cjk = 1")


def m004_postings_fields(db: sqlite3.Connection) -> None:
    """Indexes made before postings had field counts get the columns, empty; their
    fingerprint (terms.VERSION) differs, so the next sync re-records every file."""
    have = _columns(db, "postings")
    for column in FIELDS:
        if column not in have:
            db.execute(f"ALTER TABLE postings ADD COLUMN {column} INTEGER NOT NULL DEFAULT 0")


def m005_chunk_texts(db: sqlite3.Connection) -> None:
    """Indexes made before chunks kept their text get the columns, empty; their
    fingerprint (indexer.LAYOUT) differs, so the next sync records every file."""
    if "vector" in _columns(db, "chunks"):
        return
    for column in ("text TEXT", "meta TEXT"):
        db.execute(f"ALTER TABLE chunks ADD COLUMN {column} NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE chunks ADD COLUMN vector INTEGER NOT NULL DEFAULT 0")


def m006_chunks_pending_index(db: sqlite3.Connection) -> None:
    """The chunks that wait for vectors, counted before every question (`embedded`)."""
    db.execute("CREATE INDEX IF NOT EXISTS chunks_pending ON chunks (source) WHERE vector = 0")


def m007_indexed_times(db: sqlite3.Connection) -> None:
    """When each file's current text was recorded (`stats --files`); files recorded
    before this migration have none until their next change."""
    db.execute("CREATE TABLE IF NOT EXISTS indexed (source TEXT PRIMARY KEY, at TEXT NOT NULL)")


def m008_chunk_dates(db: sqlite3.Connection) -> None:
    """The day each dated chunk is about (index/chunk_dates.py); an older index's chunks
    are dated by the sync that follows (`chunk_dates.backfill`), with nothing embedded."""
    for statement in chunk_dates.SCHEMA:
        db.execute(statement)


def m009_kept_hashes(db: sqlite3.Connection) -> None:
    """This code's own copy of each note's hash (index/foreign.py): where an older askmd
    writes the files table, the two differ and the note is read again."""
    db.execute(foreign.KEPT_SQL)
    db.execute("INSERT OR IGNORE INTO kept SELECT source, md5 FROM files")


def m010_note_properties(db: sqlite3.Connection) -> None:
    """Each note's properties for `--where` (index/note_properties.py); an older index's
    notes are read again by the sync that follows (`note_properties.backfill`)."""
    for statement in note_properties.SCHEMA:
        db.execute(statement)


SCHEMA: list[Callable[[sqlite3.Connection], None]] = [
    m001_tables,
    m002_documents_script_flag,
    m003_documents_cjk_index,
    m004_postings_fields,
    m005_chunk_texts,
    m006_chunks_pending_index,
    m007_indexed_times,
    m008_chunk_dates,
    m009_kept_hashes,
    m010_note_properties,
]


# The names upgrades.INDEX_UPGRADES records, in its order: kept here as names so that
# opening a manifest (which refuses an index a newer askmd wrote) needs none of the
# upgrades' code; a test holds the two lists equal.
INDEX_UPGRADE_NAMES = ("u001_drop_repeats", "u002_store_copies_apart")


def known() -> set[str]:
    """The names of every migration this code has."""
    return {step.__name__ for step in SCHEMA} | set(INDEX_UPGRADE_NAMES)


def has_tables(db: sqlite3.Connection) -> bool:
    """Whether this file holds an index already (older code's, or this code's)."""
    found = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    return db.execute(found).fetchone() is not None


def applied(db: sqlite3.Connection) -> dict[str, str]:
    """The steps this manifest has applied: {name: when}."""
    exists = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
    ).fetchone()
    return dict(db.execute("SELECT name, applied FROM _migrations")) if exists else {}


def record(db: sqlite3.Connection, names: list[str]) -> None:
    """Note these steps as applied; inside the caller's transaction."""
    db.execute(_TABLE)
    when = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    db.executemany("INSERT OR IGNORE INTO _migrations VALUES (?, ?)", [(n, when) for n in names])


def migrate(db: sqlite3.Connection, transaction: Callable[[], AbstractContextManager]) -> list[str]:
    """Apply the SCHEMA steps this manifest lacks, in one transaction; their names. Looked
    at first without a write lock, so opening an up-to-date index writes nothing; looked
    at again inside, where another process may have applied them while this one waited."""
    if all(step.__name__ in applied(db) for step in SCHEMA):
        return []
    ran = []
    with transaction():
        done = applied(db)
        for step in SCHEMA:
            if step.__name__ not in done:
                step(db)
                ran.append(step.__name__)
        record(db, ran)
    return ran
