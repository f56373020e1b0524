"""Indexes another askmd wrote: an older one, which does not keep the newer tables, and a
newer one, whose tables this one does not know.

An older askmd that writes an index this one upgraded records the notes it re-read in
the tables it knows (files, chunks, postings) and leaves the newer ones as they were: the
days of their chunks (`chunk_dates`) and their window vectors go stale, for good, since
the files table then says the notes are up to date. So this code keeps its own copy of
each note's hash (`kept`, a table older code never writes): a note whose hash in `files`
differs from it was written by someone else, and is read again.

A newer askmd's migrations are recorded by names this code does not know: such an index
is refused for writing, in one line naming the version that made it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager

from askmd.errors import AskmdError

KEPT_SQL = "CREATE TABLE IF NOT EXISTS kept (source TEXT PRIMARY KEY, md5 TEXT NOT NULL)"
WRITER = "writer"  # the meta key naming the askmd version that last wrote the index

_OTHERS = (
    "SELECT f.source FROM files f LEFT JOIN kept k ON k.source = f.source "
    "WHERE k.md5 IS NULL OR k.md5 != f.md5 "
    "UNION SELECT k.source FROM kept k LEFT JOIN files f ON f.source = k.source "
    "WHERE f.source IS NULL"
)


def touched(db: sqlite3.Connection) -> bool:
    """Whether another askmd changed notes in the index since this code last wrote it."""
    try:
        return db.execute(f"SELECT EXISTS ({_OTHERS})").fetchone()[0] == 1
    except sqlite3.OperationalError:  # a read-only index from before `kept`
        return False


def mend(db: sqlite3.Connection, commit: Callable[[], AbstractContextManager]) -> list[str]:
    """Make the notes another askmd wrote look changed, so the scan that follows records
    them again with every table this code keeps (their vectors from the embedding cache),
    and have the window vectors looked for again. Returns those notes."""
    if not touched(db):
        return []
    with commit():
        sources = [row[0] for row in db.execute(_OTHERS).fetchall()]
        for source in sources:
            db.execute("UPDATE files SET md5 = '', size = -1 WHERE source = ?", (source,))
            db.execute("DELETE FROM chunk_dates WHERE source = ?", (source,))
            db.execute("DELETE FROM kept WHERE source = ?", (source,))
            db.execute("INSERT INTO kept SELECT source, md5 FROM files WHERE source = ?", (source,))
        # the gate would say nothing changed; the window vectors of the chunks it stored
        # were never made
        db.execute("DELETE FROM meta WHERE key IN ('gate', 'windows', 'side_windows')")
    return sources


def refuse_newer(db: sqlite3.Connection, known: set[str], version: str) -> None:
    """Raise when the index holds migrations this code does not know: a newer askmd made
    it, and writing it here could undo what that one keeps."""
    try:
        names = {row[0] for row in db.execute("SELECT name FROM _migrations")}
    except sqlite3.OperationalError:  # an index from before migrations were recorded
        return
    unknown = sorted(names - known)
    if not unknown:
        return
    row = db.execute("SELECT value FROM meta WHERE key = ?", (WRITER,)).fetchone()
    made = f"askmd {row[0]}" if row else "a newer askmd"
    raise AskmdError(
        f"this index was written by {made}, which is newer than this askmd ({version}: it "
        f"does not know {unknown[-1]}); upgrade askmd, or give another --index-dir"
    )
