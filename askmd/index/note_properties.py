"""Each note's properties (read/properties.py), kept in the manifest for `--where`.

A table of its own, one row per item, indexed by key and text, so a condition is one
indexed lookup however many notes there are. An index written before properties were
kept opens as it is (`SCHEMA` only adds the empty table), and the next sync reads every
note's front matter again (`upgrades.properties_backfill`): nothing is chunked or embedded again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from askmd.read.properties import operand

VERSION = "1"  # bump when properties are read differently: every note is read again
KEY = "properties_version"  # the meta key saying which VERSION read the notes' properties

# The table and its indexes, made by migration m010 (index/migrations.py).
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS note_properties ("
    " source TEXT NOT NULL, key TEXT NOT NULL, text TEXT NOT NULL, number REAL, day TEXT)",
    "CREATE INDEX IF NOT EXISTS note_properties_by_key ON note_properties (key, text)",
    "CREATE INDEX IF NOT EXISTS note_properties_by_source ON note_properties (source)",
)
_COLUMN = {"number": "number", "day": "day", "text": "text"}
_SQL_OPERATOR = {"=": "=", ">=": ">=", "<=": "<="}

Row = tuple[str, str, "float | None", "str | None"]


def record(db: sqlite3.Connection, source: str, rows: Iterable[Row]) -> None:
    """A note's (key, text, number, day) rows, inside the caller's transaction."""
    db.executemany(
        "INSERT INTO note_properties VALUES (?, ?, ?, ?, ?)", [(source, *row) for row in rows]
    )


def drop(db: sqlite3.Connection, source: str) -> None:
    db.execute("DELETE FROM note_properties WHERE source = ?", (source,))


def keys(db: sqlite3.Connection) -> dict[str, int]:
    """Each property key and how many notes carry it, most carried first."""
    try:
        rows = db.execute(
            "SELECT key, COUNT(DISTINCT source) AS n FROM note_properties "
            "GROUP BY key ORDER BY n DESC, key"
        )
        return dict(rows.fetchall())
    except sqlite3.OperationalError:  # a read-only index from before properties were kept
        return {}


def sources_where(db: sqlite3.Connection, conditions: Iterable) -> set[str]:
    """The notes every condition (search/where.py: key, op, value) holds for."""
    allowed: set[str] | None = None
    for condition in conditions:
        kind, value = operand(condition.op, condition.value)
        column = _COLUMN[kind]
        if condition.op == "~":
            test, args = "instr(text, ?) > 0", [value]
        elif condition.op == "!=":
            test, args = f"{column} = ?", [value]
        else:
            test, args = f"{column} {_SQL_OPERATOR[condition.op]} ?", [value]
        try:
            if condition.op == "!=":  # has the key, and no item equals the value
                rows = db.execute(
                    "SELECT DISTINCT source FROM note_properties WHERE key = ? EXCEPT "
                    f"SELECT source FROM note_properties WHERE key = ? AND {test}",
                    [condition.key, condition.key, *args],
                )
            else:
                rows = db.execute(
                    f"SELECT DISTINCT source FROM note_properties WHERE key = ? AND {test}",
                    [condition.key, *args],
                )
            found = {source for (source,) in rows}
        except sqlite3.OperationalError:  # a read-only index from before properties
            found = set()
        allowed = found if allowed is None else allowed & found
        if not allowed:
            return set()
    return allowed or set()
