"""Keyword scoring from packed postings: a common term's postings as one array, scored
with numpy.

On a big folder most of a keyword query's time went into reading common terms' postings
row by row: a long question holds several terms found in 5,000 to 100,000 of 250,000
chunks. A term found in PACK_DF chunks or more is packed into one blob (its documents,
their lengths and the term's counts), so the query reads a few blobs and sums the BM25F
shares with numpy, exactly, for every chunk (BENCHMARKS.md, "Keyword search and no-change
start at documentation-set size"). Rarer terms are read from their rows, as few as they
are.

The postings table stays the truth. A packed term is its postings as of the packing
(documents up to `packed_upto`), less the documents deleted since (`packed_gone`), plus
its rows recorded since: document ids only grow past `packed_upto` (Manifest.record), so
a document is never both. A packing that falls behind costs speed, never a wrong score;
a sync packs again once the documents changed since are a fifth of those packed.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

PACK_DF = 1_000  # a term in this many chunks or more is packed
REPACK_SHARE = 0.2  # pack again when the documents added or deleted since reach this share
REPACK_MIN = 1_000  # ... and at least this many (a small folder is not repacked per edit)

SCHEMA = """
CREATE TABLE IF NOT EXISTS packed (term TEXT PRIMARY KEY, postings BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS packed_gone (doc INTEGER PRIMARY KEY);
"""

# One posting: (document, its length in terms, the term's count in the text, in the
# title, in the aliases, in the heading chain). A term with a count past these widths
# anywhere stays unpacked.
_FIELDS = (("doc", "<i4"), ("length", "<i4"), ("tf", "<u2"),
           ("title", "u1"), ("alias", "u1"), ("heading", "u1"))  # fmt: skip
_WIDEST = (None, None, 65_535, 255, 255, 255)


def row_type() -> np.dtype:
    import numpy as np

    return np.dtype(list(_FIELDS))


def has_tables(db: sqlite3.Connection) -> bool:
    """Whether this manifest has packing tables (a read-only one from older code may not)."""
    row = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'packed'")
    return row.fetchone() is not None


def upto(db: sqlite3.Connection) -> int | None:
    """The last document id the packing holds, or None before the first packing."""
    row = db.execute("SELECT value FROM meta WHERE key = 'packed_upto'").fetchone()
    return int(row[0]) if row else None


def due(db: sqlite3.Connection) -> bool:
    """Whether a sync should pack (again): never packed, or the documents added and
    deleted since are REPACK_SHARE of those packed and at least REPACK_MIN."""
    last = upto(db)
    if last is None:
        return db.execute("SELECT 1 FROM documents LIMIT 1").fetchone() is not None
    row = db.execute("SELECT value FROM meta WHERE key = 'packed_docs'").fetchone()
    if row is None:
        return True  # a packing without its count cannot be judged: pack again
    packed = int(row[0])
    added = db.execute("SELECT COUNT(*) FROM documents WHERE doc > ?", (last,)).fetchone()[0]
    gone = db.execute("SELECT COUNT(*) FROM packed_gone").fetchone()[0]
    return added + gone >= max(REPACK_MIN, REPACK_SHARE * packed)


def pack(db: sqlite3.Connection, fields: list[str]) -> int:
    """Pack every term found in PACK_DF chunks or more, replacing the packing; inside the
    caller's transaction. `fields` are the postings' field columns as SQL (a column or
    "0"). Returns how many terms were packed."""
    import numpy as np

    db.execute("DELETE FROM packed")
    db.execute("DELETE FROM packed_gone")
    last, count = db.execute("SELECT COALESCE(MAX(doc), 0), COUNT(*) FROM documents").fetchone()
    if last > np.iinfo(np.int32).max:
        terms = []  # ids past the record's width (billions of chunks recorded): rows only
    else:
        query = "SELECT term FROM postings GROUP BY term HAVING COUNT(*) >= ?"
        terms = [t for (t,) in db.execute(query, (PACK_DF,))]
    lengths = np.zeros(last + 1 if terms else 0, dtype=np.int64)
    if terms:
        pairs = db.execute("SELECT doc, length FROM documents")
        docs = np.fromiter((v for row in pairs for v in row), dtype=np.int64, count=2 * count)
        lengths[docs[0::2]] = docs[1::2]
    kind, widest = row_type(), np.array([w or 0 for w in _WIDEST])
    packed = 0
    for term in terms:
        rows = db.execute(
            f"SELECT doc, 0, tf, {', '.join(fields)} FROM postings WHERE term = ?", (term,)
        ).fetchall()
        values = np.array(rows, dtype=np.int64)
        if (values[:, 2:] > widest[2:]).any():
            continue  # a count too big for the packed widths: read from its rows
        values[:, 1] = lengths[values[:, 0]]
        array = np.empty(len(values), dtype=kind)
        for i, (name, _) in enumerate(_FIELDS):
            array[name] = values[:, i]
        db.execute("INSERT INTO packed VALUES (?, ?)", (term, array.tobytes()))
        packed += 1
    db.executemany(
        "INSERT OR REPLACE INTO meta VALUES (?, ?)",
        [("packed_upto", str(last)), ("packed_docs", str(count))],
    )
    return packed


def note_gone(db: sqlite3.Connection, docs: list[int]) -> None:
    """Documents being deleted: those a packing holds are left out of it from now on."""
    last = upto(db)
    if last is not None:
        db.executemany("INSERT OR IGNORE INTO packed_gone VALUES (?)",
                       [(d,) for d in docs if d <= last])  # fmt: skip


def postings(db: sqlite3.Connection, terms: list[str], fields: list[str]) -> dict[str, np.ndarray]:
    """Every posting of these terms as arrays of row_type(), for the terms found."""
    import numpy as np

    kind, wide = row_type(), [(name, "<i8") for name, _ in _FIELDS]
    columns = ", ".join(f"p.{f}" if f != "0" else f for f in fields)
    last, packed, gone = -1, {}, None
    if has_tables(db) and (mark := upto(db)) is not None:
        last = mark
        marks = ",".join("?" * len(terms))
        packed = dict(
            db.execute(f"SELECT term, postings FROM packed WHERE term IN ({marks})", terms)
        )
        if packed:
            gone = np.fromiter((d for (d,) in db.execute("SELECT doc FROM packed_gone")),
                               dtype=np.int64)  # fmt: skip
    found: dict[str, np.ndarray] = {}
    for term in terms:
        parts = []
        if term in packed:
            array = np.frombuffer(packed[term], dtype=kind)
            if gone is not None and len(gone):
                array = array[~np.isin(array["doc"], gone)]
            parts.append(array)
        rows = db.execute(
            f"SELECT p.doc, d.length, p.tf, {columns} FROM postings p "
            "JOIN documents d ON d.doc = p.doc WHERE p.term = ? AND p.doc > ?",
            (term, last if term in packed else -1),
        ).fetchall()
        if rows:
            values = np.array(rows, dtype=np.int64)
            array = np.empty(len(values), dtype=wide)
            for i, (name, _) in enumerate(_FIELDS):
                array[name] = values[:, i]
            parts.append(array)
        if parts:
            joined = np.concatenate([p.astype(wide) for p in parts])
            if len(joined):
                found[term] = joined
    return found


def only(found: dict[str, np.ndarray], kept: np.ndarray) -> dict[str, np.ndarray]:
    """The postings of the documents `kept` (a mask by document number) marks."""
    import numpy as np

    last = len(kept) - 1  # false: a document past the mask is not kept
    return {term: array[kept[np.minimum(array["doc"], last)]] for term, array in found.items()}


def bm25f(
    found: dict[str, np.ndarray],
    idfs: dict[str, float],
    average: float,
    weights: tuple[float, float, float],
    k1: float,
    b: float,
    limit: int,
) -> list[tuple[int, float]]:
    """The `limit` best (document, score), best first, equal scores (to 9 decimals) in
    document order: BM25 with one saturation over the text's length-normalised count plus
    the short fields' weighted counts (with no field weight, plain BM25)."""
    import numpy as np

    docs, shares = [], []
    for term, array in found.items():
        x = array["tf"] / (1 - b + b * array["length"] / average)
        x = x + weights[0] * array["title"] + weights[1] * array["alias"]
        x = x + weights[2] * array["heading"]
        docs.append(array["doc"])
        shares.append(idfs[term] * x * (k1 + 1) / (x + k1))
    if not docs:
        return []
    score = np.bincount(np.concatenate(docs), weights=np.concatenate(shares))
    scored = np.flatnonzero(score > 0)
    if not len(scored):
        return []
    if len(scored) > limit:
        cut = np.argpartition(-score[scored], limit - 1)[:limit]
        # ties at the cut: keep every chunk scoring as the last kept, then order them all
        floor = np.round(score[scored[cut]], 9).min()
        scored = scored[np.round(score[scored], 9) >= floor]
    rounded = np.round(score[scored], 9)
    order = np.lexsort((scored, -rounded))[:limit]
    return [(int(d), float(score[d])) for d in scored[order]]
