"""The day each dated chunk is about (read/dates.py), kept in the manifest beside it.

A table of its own, not a column of `chunks` nor a key of the chunk's metadata: an index
written before dates were read opens as it is (`create` only adds the empty table), and
its chunks are dated by `backfill`, which re-reads front matter and file names and
takes headings from the stored chunks: nothing is chunked or embedded again. Only
dated chunks have a row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

VERSION = "1"  # bump when dates are read differently: every chunk is dated again
KEY = "dates_version"  # the meta key saying which VERSION dated the index's chunks


# The table and its indexes, made by migration m008 (index/migrations.py).
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS chunk_dates ("
    " chunk TEXT PRIMARY KEY, source TEXT NOT NULL, date TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS chunk_dates_by_source ON chunk_dates (source)",
    "CREATE INDEX IF NOT EXISTS chunk_dates_by_date ON chunk_dates (date)",
)


def record(db: sqlite3.Connection, source: str, rows: Iterable[tuple[str, str]]) -> None:
    """(chunk id, ISO date) of a file's dated chunks, inside the caller's transaction."""
    db.executemany(
        "INSERT OR REPLACE INTO chunk_dates VALUES (?, ?, ?)", [(c, source, d) for c, d in rows]
    )


def drop(db: sqlite3.Connection, source: str) -> None:
    db.execute("DELETE FROM chunk_dates WHERE source = ?", (source,))


def of(db: sqlite3.Connection, ids: list[str]) -> dict[str, str]:
    """Chunk id -> date, for those of these chunks that have one."""
    found: dict[str, str] = {}
    try:
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            found.update(
                db.execute(f"SELECT chunk, date FROM chunk_dates WHERE chunk IN ({marks})", part)
            )
    except sqlite3.OperationalError:  # a read-only index from before dates were kept
        return {}
    return found


def of_sources(db: sqlite3.Connection) -> dict[str, str]:
    """Each dated file's day: its earliest chunk's (a journal's day; a log's first)."""
    try:
        return dict(db.execute("SELECT source, MIN(date) FROM chunk_dates GROUP BY source"))
    except sqlite3.OperationalError:
        return {}


def between(db: sqlite3.Connection, since: str, until: str, limit: int) -> list[str]:
    """Up to `limit` chunks dated within since..until (both included), by date."""
    try:
        rows = db.execute(
            "SELECT chunk FROM chunk_dates WHERE date BETWEEN ? AND ? ORDER BY date LIMIT ?",
            (since, until, limit),
        )
        return [r[0] for r in rows]
    except sqlite3.OperationalError:
        return []
