"""The local record of what is indexed: per-file hashes, chunk ids, the folder's gate hash,
the embedding cache and the keyword (BM25) postings, in one SQLite file in the index folder.

It is what makes a sync cheap: a no-change run compares the gate hash here without
opening Chroma, and an edit re-embeds only chunks whose text is not in the cache. A
file's rows are committed only after its chunks are stored, so a killed run leaves rows
that describe an older state, which the next run repairs. It never talks to Chroma.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import math
import os
import sqlite3
import tempfile
import time
import weakref
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from askmd.errors import AskmdError, DiskFull, disk_full
from askmd.index import chunk_dates, packed_postings
from askmd.terms import content_terms, is_cjk_term

if TYPE_CHECKING:  # numpy loads only when the embedding cache is used
    import numpy as np

BM25_K1 = 1.2  # term-frequency saturation
BM25_B = 0.75  # length normalisation
# BM25F: a query term in the note's title, its front matter aliases or the chunk's heading
# chain counts this many extra times on top of the chunk's text, unnormalised by length
# since these fields are short. Measured on the paraphrase sets, SciFact and CMRC
# (bench/field_bench.py, BENCHMARKS.md): the text already holds title and chain once, and
# extra weight on them (0.5 to 2) lost first places; a quarter count on aliases, names the
# text may never use, changes no measured hybrid result and makes such a name findable.
FIELD_WEIGHTS = (0.0, 0.25, 0.0)  # (title, aliases, headings)
FIELDS = ("title_tf", "alias_tf", "heading_tf")  # their postings columns, in that order
MANIFEST = "manifest.sqlite3"  # its file name in the index folder
_LOAD = "postings_load"  # a cold build's postings before they are sorted in (begin_load)
CACHE_KIB = 256 * 1024  # SQLite's page cache per connection at most (grows only as used)


_SCHEMA = """
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


# A search term is CJK when its first character is (the ranges of terms._CJK_CLASS).
_CJK_TERM = (
    "(unicode(term) BETWEEN 12352 AND 12543 OR unicode(term) BETWEEN 13312 AND 19903 "
    "OR unicode(term) BETWEEN 19968 AND 40959 OR unicode(term) BETWEEN 44032 AND 55215 "
    "OR unicode(term) BETWEEN 63744 AND 64255 OR unicode(term) BETWEEN 65382 AND 65439)"
)


# A chunk text holding any CJK character (the side model's chunks are among these).
_CJK_TEXT = "text GLOB '*[぀-ヿ㐀-䶿一-鿿가-힯]*'"


@dataclass(frozen=True)
class FileRecord:
    source: str
    md5: str
    size: int
    mtime_ns: int
    chunks: int


@dataclass(frozen=True)
class Pending:
    """A chunk as the filling of the vector store reads it back."""

    id: str
    source: str
    text_hash: str
    text: str  # stored and quoted
    metadata: dict


LinkRow = tuple[str, str, int, int]  # (target as written, heading, file line, embed)


@dataclass(frozen=True)
class ChunkRow:
    id: str
    text_hash: str
    terms: list[str]  # search terms of the chunk's embedded text (title and chain included)
    # Search terms of the fields ranked on their own (FIELD_WEIGHTS): title, aliases, headings.
    fields: tuple[list[str], list[str], list[str]] = ([], [], [])
    text: str = ""  # the chunk's text as stored and quoted (verbatim from the file)
    meta: str = ""  # its metadata (store.chunk_metadata) as JSON
    date: str = ""  # the ISO day it is about (read/dates.py), "" when it has none


def chunk_row(
    chunk_id: str, text_hash: str, text: str, *, title: str, aliases: Iterable[str],
    chain: Iterable[str], stored: str = "", meta: dict | None = None,
    date: str | None = None,
) -> ChunkRow:  # fmt: skip
    """A chunk's keyword record: the terms of its searchable `text`, and those of its
    note's title and aliases and of its heading chain (the title left out of it when it
    heads the chain), with the `stored` text and `meta` that a search returns."""
    headings = [h for h in chain if h != title]
    return ChunkRow(
        chunk_id,
        text_hash,
        content_terms(text),
        (
            list(_field_terms(title)),
            list(_field_terms(" ; ".join(aliases))),
            list(_field_terms(" ; ".join(headings))),
        ),
        stored,
        json.dumps(meta, ensure_ascii=False) if meta else "",
        date or "",
    )


@functools.lru_cache(maxsize=4096)
def _field_terms(text: str) -> tuple[str, ...]:
    """A short field's terms, cached: a note's title, aliases and headings repeat in
    every chunk of it."""
    return tuple(content_terms(text))


def _postings(doc: int, row: ChunkRow) -> list[tuple[str, int, int, int, int, int]]:
    """(term, doc, tf, title_tf, alias_tf, heading_tf) for every term of the chunk."""
    text = Counter(row.terms)
    title, alias, heading = (Counter(f) for f in row.fields)
    if not (title or alias or heading):  # most chunks: one tuple per term, no lookups
        return [(t, doc, n, 0, 0, 0) for t, n in text.items()]
    keys = dict.fromkeys([*text, *title, *alias, *heading])
    return [(t, doc, text[t], title[t], alias[t], heading[t]) for t in keys]


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


class Manifest:
    def __init__(self, path: Path, read_only: bool = False):
        """With `read_only` the file is only read (a folder nobody may write to): no WAL
        switch, no schema update; every method that writes then fails."""
        self.read_only = read_only
        self.path = path
        self._fields: bool | None = None  # whether postings have field counts, once known
        if read_only:
            self.db = _open_read_only(path)
            self._release = weakref.finalize(self, self.db.close)
            return
        prepare_index_dir(path.parent)
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
        # A connection and its statement cache hold each other (Python 3.11): left to the
        # garbage collector, its three open files outlive the Manifest by minutes.
        self._release = weakref.finalize(self, self.db.close)
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            # A big page cache: recording a big folder inserts postings all over a B-tree of
            # hundreds of MB, and SQLite's default 2 MB cache makes each insert a page read.
            self.db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            self.db.executescript(_SCHEMA)
            self.db.executescript(packed_postings.SCHEMA)
            self._add_script_column()
            # Finds the first CJK chunk at once (`has_cjk_chunks`, asked at every start of
            # a folder that may need a second model); without it, a scan of every chunk.
            self.db.execute(
                "CREATE INDEX IF NOT EXISTS documents_cjk ON documents (doc) WHERE cjk = 1"
            )
            self._add_field_columns()
            self._add_chunk_columns()
            chunk_dates.create(self.db)
        except sqlite3.Error as exc:
            self._release()
            raise AskmdError(
                f"the index manifest {path} cannot be opened ({exc}). Delete the index "
                "folder and run python rag.py index again."
            ) from None

    def close(self) -> None:
        self._release()

    def _has_script_column(self) -> bool:
        return any(row[1] == "cjk" for row in self.db.execute("PRAGMA table_info(documents)"))

    def _add_script_column(self) -> None:
        """Indexes made before documents had a `cjk` flag get it, computed from their
        postings: no re-indexing needed."""
        if self._has_script_column():
            return
        with self._transaction():
            if self._has_script_column():  # another process upgraded it while we waited
                return
            self.db.execute("ALTER TABLE documents ADD COLUMN cjk INTEGER NOT NULL DEFAULT 0")
            self.db.execute(
                "UPDATE documents SET cjk = (SELECT COALESCE(2 * SUM(CASE WHEN "
                f"{_CJK_TERM} THEN tf ELSE 0 END) >= SUM(tf), 0) FROM postings "
                "WHERE postings.doc = documents.doc)"
            )

    # --- meta -------------------------------------------------------------------------

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

    # --- files ------------------------------------------------------------------------

    def files(self) -> dict[str, FileRecord]:
        rows = self.db.execute("SELECT source, md5, size, mtime_ns, chunks FROM files")
        return {r[0]: FileRecord(*r) for r in rows}

    def total_chunks(self) -> int:
        return self.db.execute("SELECT COALESCE(SUM(chunks), 0) FROM files").fetchone()[0]

    def record(
        self,
        files: Iterable[tuple[FileRecord, list[ChunkRow]]],
        links: dict[str, list[LinkRow]] | None = None,
    ) -> None:
        """Store files with their chunks (id, text hash, search terms) and the links written
        in them, replacing what was there: the keyword postings and links change in the
        same transaction as the file's hash."""
        with self._transaction():
            postings: list[tuple[str, int, int]] = []
            documents: list[tuple[int, str, str, int, int]] = []
            doc = self.db.execute("SELECT COALESCE(MAX(doc), 0) FROM documents").fetchone()[0]
            doc = max(doc, packed_postings.upto(self.db) or 0)  # a packed id is never reused
            for rec, chunk_rows in files:
                self._drop(rec.source)
                self.db.executemany(
                    "INSERT INTO links VALUES (?, ?, ?, ?, ?)",
                    [(rec.source, *row) for row in (links or {}).get(rec.source, [])],
                )
                self.db.execute(
                    "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)",
                    (rec.source, rec.md5, rec.size, rec.mtime_ns, rec.chunks),
                )
                self.db.executemany(
                    "INSERT OR REPLACE INTO chunks (id, source, text_hash, text, meta, vector) "
                    "VALUES (?, ?, ?, ?, ?, 0)",
                    [(row.id, rec.source, row.text_hash, row.text, row.meta) for row in chunk_rows],
                )
                chunk_dates.record(
                    self.db, rec.source, [(row.id, row.date) for row in chunk_rows if row.date]
                )
                for row in chunk_rows:
                    cjk = (
                        2 * sum(1 for t in row.terms if t >= "\u3040" and is_cjk_term(t))
                        >= len(row.terms)
                        > 0
                    )
                    doc += 1
                    documents.append((doc, row.id, rec.source, len(row.terms), int(cjk)))
                    postings.extend(_postings(doc, row))
            self.db.executemany(
                "INSERT INTO documents (doc, chunk, source, length, cjk) VALUES (?, ?, ?, ?, ?)",
                documents,
            )
            if self.loading():  # a cold build: appended now, sorted in once at the end
                self.db.executemany(f"INSERT INTO {_LOAD} VALUES (?, ?, ?, ?, ?, ?)", postings)
            else:
                # In key order, so SQLite appends to its B-tree pages instead of splitting
                # them at random: about 3x faster for a group of a few hundred chunks.
                postings.sort()
                self.db.executemany("INSERT INTO postings VALUES (?, ?, ?, ?, ?, ?)", postings)
            self._bump()

    # A cold build's postings (tens of millions for a big folder) are not inserted into the
    # keyed table group by group: each group's terms land all over a B-tree that ends far
    # bigger than the page cache, and the build waits on the disk. They are appended to
    # an unkeyed table instead and moved in one sorted pass when the keyword phase ends
    # (or, after a kill, when the next sync starts): SQLite then fills pages in key order.

    def begin_load(self) -> bool:
        """Start a bulk load if the keyed postings are empty (a first or rebuilt index);
        whether one is on."""
        if self.loading():
            return True
        with self._transaction():
            if self.db.execute("SELECT 1 FROM postings LIMIT 1").fetchone():
                return False
            self.db.execute(f"CREATE TABLE {_LOAD} AS SELECT * FROM postings WHERE 0")
            self.db.execute("DROP INDEX IF EXISTS postings_by_doc")  # built once, at the end
        return True

    def loading(self) -> bool:
        """Whether postings wait in the load table (searches do not see them yet)."""
        return bool(
            self.db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (_LOAD,)
            ).fetchone()
        )

    def finish_load(self) -> None:
        """Move the loaded postings into the keyed table in key order, in one commit: a
        kill meanwhile leaves the load table whole for the next sync to finish."""
        if self.read_only or not self.loading():
            return
        with self._transaction():
            self.db.execute("DROP INDEX IF EXISTS postings_by_doc")
            self.db.execute(f"INSERT INTO postings SELECT * FROM {_LOAD} ORDER BY term, doc")
            self.db.execute(f"DROP TABLE {_LOAD}")
            self.db.execute("CREATE INDEX postings_by_doc ON postings (doc)")
            self._bump()

    def _drop(self, source: str) -> None:
        self.db.execute("DELETE FROM chunks WHERE source = ?", (source,))
        self.db.execute("DELETE FROM links WHERE source = ?", (source,))
        chunk_dates.drop(self.db, source)
        docs = [
            r[0] for r in self.db.execute("SELECT doc FROM documents WHERE source = ?", (source,))
        ]
        if docs:  # a new file has none: skip the delete rather than scan for nothing
            packed_postings.note_gone(self.db, docs)
            self.db.executemany("DELETE FROM postings WHERE doc = ?", [(d,) for d in docs])
            self.db.execute("DELETE FROM documents WHERE source = ?", (source,))

    def replace_links(self, links: dict[str, list[LinkRow]]) -> None:
        """The links written in these files, replacing those recorded for them."""
        with self._transaction():
            self.db.executemany("DELETE FROM links WHERE source = ?", [(s,) for s in links])
            self.db.executemany(
                "INSERT INTO links VALUES (?, ?, ?, ?, ?)",
                [(source, *row) for source, rows in links.items() for row in rows],
            )
            self._bump()

    def links(self) -> list[tuple[str, str, str, int, int]]:
        """Every link written in the indexed notes: (source, target as written, heading,
        file line, embed). Resolved when read, against the files there are then, so a
        note added later mends the links to it without re-indexing their sources."""
        try:
            return self.db.execute(
                "SELECT source, target, heading, line, embed FROM links ORDER BY source, line"
            ).fetchall()
        except sqlite3.OperationalError:  # a read-only index made before links were kept
            return []

    def tags(self) -> set[str]:
        """Every tag the indexed chunks carry (front matter and inline), to name the ones
        near a tag that no note has."""
        rows = self.db.execute(
            "SELECT DISTINCT json_extract(meta, '$.tags') FROM chunks WHERE meta LIKE '%\"tags\"%'"
        )
        return {t for (tags,) in rows if tags for t in str(tags).split(",") if t}

    def dates(self, ids: list[str]) -> dict[str, str]:
        """Chunk id -> the ISO day it is about, for those of these chunks that have one."""
        return chunk_dates.of(self.db, ids)

    def dated_between(self, since: str, until: str, limit: int) -> list[str]:
        """Up to `limit` chunks about a day within since..until (ISO, both included)."""
        return chunk_dates.between(self.db, since, until, limit)

    def chunk_ids(self, source: str) -> dict[str, str]:
        """{chunk id: text hash} of a file's recorded chunks."""
        rows = self.db.execute("SELECT id, text_hash FROM chunks WHERE source = ?", (source,))
        return dict(rows.fetchall())

    def chunk_hashes(self, source: str) -> list[str]:
        rows = self.db.execute("SELECT text_hash FROM chunks WHERE source = ?", (source,))
        return [r[0] for r in rows]

    def touch(self, records: Iterable[FileRecord]) -> None:
        """Update size and mtime of files whose content did not change."""
        with self._transaction():
            self.db.executemany(
                "UPDATE files SET size = ?, mtime_ns = ? WHERE source = ?",
                [(r.size, r.mtime_ns, r.source) for r in records],
            )

    def forget(self, sources: Iterable[str]) -> None:
        """Drop these files; their vectors are marked stale, for the next filling of the
        vector store to delete (searches never return a chunk the manifest lacks)."""
        with self._transaction():
            for source in sources:
                self.db.execute("DELETE FROM files WHERE source = ?", (source,))
                self.db.execute("INSERT OR IGNORE INTO stale VALUES (?)", (source,))
                self._drop(source)
            self._bump()

    def forget_all(self) -> None:
        """Drop every file; the vector store is emptied by the next filling (`reset`)."""
        with self._transaction():
            for table in ("files", "chunks", "postings", "documents", "links", "stale",
                          "packed", "packed_gone", "chunk_dates"):  # fmt: skip
                self.db.execute(f"DELETE FROM {table}")
            self.db.execute(f"DROP TABLE IF EXISTS {_LOAD}")
            self.db.execute(
                "DELETE FROM meta WHERE key IN ('gate', 'side_scope', 'packed_upto', 'packed_docs')"
            )
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('reset_vectors', '1')")
            self._bump()

    # --- keyword search ---------------------------------------------------------------

    def keyword(
        self,
        terms: list[str],
        limit: int,
        cjk: bool | None = None,
        weights: tuple[float, float, float] | None = None,
    ) -> list[tuple[str, float]]:
        """BM25F (BM25_K1, BM25_B, FIELD_WEIGHTS) of every indexed chunk for these terms:
        (chunk id, score), best first (equal scores in indexing order). Exact: every
        posting of every term is scored, common terms from their packed arrays
        (packed_postings), so a long question on a 250k-chunk folder takes milliseconds.

        With `cjk` (the question's script) the collection statistics, the number of
        chunks and their average length, are those of the chunks in that script, when
        there are any: a folder of Chinese notes scores a Chinese question the same
        whether or not 5,000 English notes sit beside it. Every chunk is still scored."""
        unique = sorted(set(terms))
        if not unique or limit <= 0:
            return []
        with self._snapshot():
            count, average = self._collection(self._keyword_cache(), cjk)
            if not count:
                return []
            found = packed_postings.postings(self.db, unique, self._field_columns())
            idfs = {t: self._idf(len(array), count) for t, array in found.items()}
            weights = weights or FIELD_WEIGHTS
            top = packed_postings.bm25f(
                found, idfs, max(average, 1.0), weights, BM25_K1, BM25_B, limit
            )
            if not top:
                return []
            docs = [doc for doc, _ in top]
            marks = ",".join("?" * len(docs))
            chunk_of = dict(
                self.db.execute(f"SELECT doc, chunk FROM documents WHERE doc IN ({marks})", docs)
            )
            return [(chunk_of[doc], score) for doc, score in top]

    def frequencies(self, terms: list[str], cjk: bool | None = None) -> tuple[dict[str, int], int]:
        """How many chunks hold each term, and how many chunks there are (of the question's
        script, as `keyword` counts them): what makes a term rare, and its idf."""
        unique = sorted(set(terms))
        with self._snapshot():
            count, _ = self._collection(self._keyword_cache(), cjk)
            if not unique or not count:
                return dict.fromkeys(unique, 0), count
            found = packed_postings.postings(self.db, unique, self._field_columns())
            return {t: len(found[t]) if t in found else 0 for t in unique}, count

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[None]:
        """One consistent view of the postings for a read, however long it takes (inside a
        writer's transaction, that transaction's view)."""
        if self.db.in_transaction:
            yield
            return
        self.db.execute("BEGIN")
        try:
            yield
        finally:
            self.db.execute("COMMIT")

    def idf(self, terms: list[str], cjk: bool | None = None) -> dict[str, float]:
        """BM25's idf of each term over the indexed chunks (a term no chunk holds: the most)."""
        counts, count = self.frequencies(terms, cjk)
        return {t: self._idf(n, max(count, 1)) for t, n in counts.items()}

    def packing_due(self) -> bool:
        """Whether the common terms' postings should be packed (again): see packed_postings."""
        return not self.read_only and packed_postings.due(self.db)

    def repeats_due(self) -> bool:
        """Whether notes may hold word-for-word repeats of a chunk, indexed by older code
        (prepare.py now indexes each once): looked for once per index."""
        return not self.read_only and self.get("repeats") != "once" and self.total_chunks() > 0

    def copies_due(self) -> bool:
        """Whether chunks that several notes share word for word may be stored as older
        code stored them, as identical vectors (store.JITTER now keeps them apart):
        looked for once per index, under the write lock (`copies_shared`)."""
        return not self.read_only and self.get("copies") != "apart" and self.total_chunks() > 0

    def copies_shared(self) -> bool:
        """Whether two notes hold a chunk of the same text."""
        return bool(
            self.db.execute(
                "SELECT 1 FROM chunks GROUP BY text_hash HAVING COUNT(DISTINCT source) > 1 LIMIT 1"
            ).fetchone()
        )

    def reread_repeats(self) -> list[str]:
        """Make the notes that hold repeats of a chunk look changed, so the scan that follows
        records them again (their vectors come from the embedding cache), and note that
        it was done. Returns those notes."""
        with self._transaction():
            found = self.db.execute(
                "SELECT DISTINCT source FROM chunks GROUP BY source, text_hash HAVING COUNT(*) > 1"
            )
            sources = [row[0] for row in found.fetchall()]
            for start in range(0, len(sources), 500):
                part = sources[start : start + 500]
                self.db.execute(
                    "UPDATE files SET md5 = '', size = -1 WHERE source IN ({})".format(
                        ",".join("?" * len(part))
                    ),
                    part,
                )
            if sources:  # the gate would say nothing changed
                self.db.execute("DELETE FROM meta WHERE key = 'gate'")
            self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('repeats', 'once')")
        return sources

    def pack(self) -> int:
        """Pack the common terms' postings; how many terms (packed_postings)."""
        with self._transaction():
            return packed_postings.pack(self.db, self._field_columns())

    def _field_columns(self) -> list[str]:
        return list(FIELDS) if self._has_fields() else ["0"] * len(FIELDS)

    def _keyword_exact(
        self,
        terms: list[str],
        limit: int,
        cjk: bool | None = None,
        weights: tuple[float, float, float] | None = None,
    ) -> list[tuple[str, float]]:
        """`keyword` in SQL over the posting rows alone, nothing packed or cached: the
        reference the packed scoring is tested against."""
        unique = sorted(set(terms))
        if not unique or limit <= 0:
            return []
        count, average = self._collection({"collection": {}}, cjk)
        if not count:
            return []
        marks = ",".join("?" * len(unique))
        frequency = self.db.execute(
            f"SELECT term, COUNT(*) FROM postings WHERE term IN ({marks}) GROUP BY term", unique
        )
        idfs = {t: self._idf(n, count) for t, n in frequency}
        if not idfs:
            return []
        values = ",".join("(?, ?)" for _ in idfs)
        # BM25F with one saturation: x is the term's length-normalised count in the text
        # plus its weighted counts in the short fields; with no field weight this is BM25.
        fields = " ".join(f"+ ? * {f}" for f in self._field_columns())
        rows = self.db.execute(
            f"WITH q(term, idf) AS (VALUES {values}), "
            "s(doc, idf, x) AS (SELECT p.doc, q.idf, "
            f"p.tf / (1 - ? + ? * d.length / ?) {fields} "
            "FROM q JOIN postings p ON p.term = q.term JOIN documents d ON d.doc = p.doc) "
            "SELECT d.chunk, SUM(s.idf * s.x * (? + 1) / (s.x + ?)) AS score "
            "FROM s JOIN documents d ON d.doc = s.doc "
            "GROUP BY s.doc HAVING score > 0 ORDER BY ROUND(score, 9) DESC, s.doc LIMIT ?",
            [x for pair in idfs.items() for x in pair]
            + [BM25_B, BM25_B, max(average, 1.0), *(weights or FIELD_WEIGHTS)]
            + [BM25_K1, BM25_K1, limit],
        )
        return [(chunk, float(score)) for chunk, score in rows]

    @staticmethod
    def _idf(n: int, count: int) -> float:
        """BM25's inverse document frequency of a term in `n` of `count` chunks."""
        n = min(n, count)
        return math.log(1 + (count - n + 0.5) / (n + 0.5))

    def _keyword_cache(self) -> dict:
        """Collection statistics, kept while the index's generation stays the same (every
        change to the postings bumps it): counting a big index's chunks takes milliseconds."""
        generation = self.generation()
        cache = getattr(self, "_keyword_memo", None)
        if cache is None or cache["generation"] != generation:
            cache = {"generation": generation, "collection": {}}
            self._keyword_memo = cache
        return cache

    def non_cjk_share(self) -> float:
        """The share of chunks whose terms are not mostly CJK (0.0 with no chunks)."""
        cache = self._keyword_cache()
        if "non_cjk" not in cache:
            total, cjk = self.db.execute(
                "SELECT COUNT(*), COALESCE(SUM(cjk), 0) FROM documents"
            ).fetchone()
            cache["non_cjk"] = (total - cjk) / total if total else 0.0
        return cache["non_cjk"]

    def _collection(self, cache: dict, cjk: bool | None) -> tuple[int, float]:
        """(number of chunks, their average length) of the chunks in that script, or of
        all when there are none (or no script is given)."""
        if cjk not in cache["collection"]:
            count, average = 0, 0.0
            if cjk is not None:
                count, average = self.db.execute(
                    "SELECT COUNT(*), COALESCE(AVG(length), 0) FROM documents WHERE cjk = ?",
                    (int(cjk),),
                ).fetchone()
            if not count:
                count, average = self.db.execute(
                    "SELECT COUNT(*), COALESCE(AVG(length), 0) FROM documents"
                ).fetchone()
            cache["collection"][cjk] = (count, average)
        return cache["collection"][cjk]

    def _has_fields(self) -> bool:
        """Whether the postings hold field counts (a read-only index from older code may not)."""
        if self._fields is None:
            columns = {row[1] for row in self.db.execute("PRAGMA table_info(postings)")}
            self._fields = set(FIELDS) <= columns
        return self._fields

    def _add_field_columns(self) -> None:
        """Indexes made before postings had field counts get the columns, empty; their
        fingerprint (terms.VERSION) differs, so the next sync re-records every file."""
        if self._has_fields():
            return
        with self._transaction():
            self._fields = None
            if self._has_fields():  # another process upgraded it while we waited
                return
            for column in FIELDS:
                self.db.execute(
                    f"ALTER TABLE postings ADD COLUMN {column} INTEGER NOT NULL DEFAULT 0"
                )
        self._fields = True

    def cjk_share(self) -> float:
        """The share of the indexed search terms that are CJK (0.0: none, 1.0: all)."""
        total, cjk = self.db.execute(
            f"SELECT COALESCE(SUM(tf), 0), COALESCE(SUM(CASE WHEN {_CJK_TERM} "
            "THEN tf ELSE 0 END), 0) FROM postings"
        ).fetchone()
        return cjk / total if total else 0.0

    # --- chunks and their vectors ---------------------------------------------------
    # Indexing has two phases: every file's chunks, texts and postings are recorded first
    # (the folder is searchable by keyword), then the vector store is filled. `vector` on
    # a chunk says whether the store holds its vector (and, for a CJK chunk with a second
    # model, its second vector) for exactly this text: 0 until the filling stores it.

    def _has_chunk_columns(self) -> bool:
        return any(row[1] == "vector" for row in self.db.execute("PRAGMA table_info(chunks)"))

    def _add_chunk_columns(self) -> None:
        """Indexes made before chunks kept their text get the columns, empty; their
        fingerprint (LAYOUT in indexer.py) differs, so the next sync records every file."""
        if not self._has_chunk_columns():
            with self._transaction():
                if not self._has_chunk_columns():
                    for column in ("text TEXT", "meta TEXT"):
                        self.db.execute(
                            f"ALTER TABLE chunks ADD COLUMN {column} NOT NULL DEFAULT ''"
                        )
                    self.db.execute(
                        "ALTER TABLE chunks ADD COLUMN vector INTEGER NOT NULL DEFAULT 0"
                    )
        self.db.execute(
            "CREATE INDEX IF NOT EXISTS chunks_pending ON chunks (source) WHERE vector = 0"
        )

    def vectors_kept(self) -> bool:
        """Whether this manifest says which chunks have vectors (a read-only index from
        older code does not: its store is then taken as complete)."""
        return self._has_chunk_columns()

    def embedded(self) -> int:
        """How many chunks the vector store holds vectors of: counted as all but those
        pending, which the partial index `chunks_pending` holds (counting the others
        would read the whole chunks table, 0.7 s at 250k chunks, before every question)."""
        return self.total_chunks() - self.pending()

    def pending(self, sources: Iterable[str] | None = None) -> int:
        """How many chunks (of these sources) still wait for their vectors."""
        if not self.vectors_kept():
            return 0
        if sources is None:
            return self.db.execute("SELECT COUNT(*) FROM chunks WHERE vector = 0").fetchone()[0]
        return sum(
            self.db.execute(
                "SELECT COUNT(*) FROM chunks WHERE vector = 0 AND source = ?", (s,)
            ).fetchone()[0]
            for s in set(sources)
        )

    def pending_sources(
        self, chunks: int, among: Iterable[str] | None = None, skip: Iterable[str] = ()
    ) -> list[str]:
        """The next files to fill, whole files in the order they were recorded, until they
        hold at least `chunks` pending chunks (one file at least, however big)."""
        wanted = None if among is None else set(among)
        skipped = set(skip)
        rows = self.db.execute(
            "SELECT source, COUNT(*), MIN(rowid) AS first FROM chunks WHERE vector = 0 "
            "GROUP BY source ORDER BY first"
        )
        picked: list[str] = []
        total = 0
        for source, count, _ in rows:
            if wanted is not None and source not in wanted or source in skipped:
                continue
            picked.append(source)
            total += count
            if total >= chunks:
                break
        return picked

    def chunks_of(self, sources: Iterable[str]) -> list[Pending]:
        """These files' chunks, in file order."""
        found = []
        for source in sources:
            rows = self.db.execute(
                "SELECT id, source, text_hash, text, meta FROM chunks WHERE source = ? "
                "ORDER BY rowid",
                (source,),
            )
            found.extend(Pending(i, s, h, t, json.loads(m) if m else {}) for i, s, h, t, m in rows)
        return found

    def stored(self, ids: list[str]) -> dict[str, tuple[str, dict]]:
        """Chunks by id: (text, metadata), for those the manifest holds with their text."""
        if not ids or not self.vectors_kept():
            return {}
        found: dict[str, tuple[str, dict]] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                f"SELECT id, text, meta FROM chunks WHERE id IN ({marks}) AND meta != ''", part
            )
            found.update((i, (t, json.loads(m))) for i, t, m in rows)
        return found

    def with_vectors(self, ids: list[str]) -> set[str]:
        """Which of these chunks the vector store holds for their current text."""
        if not self.vectors_kept():
            return set(ids)
        found: set[str] = set()
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                f"SELECT id FROM chunks WHERE id IN ({marks}) AND vector = 1", part
            )
            found.update(r[0] for r in rows)
        return found

    def filled(self, sources: Iterable[str]) -> None:
        """The vector store now holds these files' chunks: a commit readers see."""
        with self._transaction():
            self.db.executemany(
                "UPDATE chunks SET vector = 1 WHERE source = ? AND vector = 0",
                [(s,) for s in sources],
            )
            self._bump()

    def unfill(self, sources: Iterable[str] | None = None) -> None:
        """These files' chunks (None: all) wait for their vectors again: the store lost
        them, or a model changed."""
        with self._transaction():
            if sources is None:
                self.db.execute("UPDATE chunks SET vector = 0 WHERE vector = 1")
            else:
                self.db.executemany(
                    "UPDATE chunks SET vector = 0 WHERE vector = 1 AND source = ?",
                    [(s,) for s in sources],
                )
            self._bump()

    def has_cjk_chunks(self) -> bool:
        """Whether any chunk's terms are mostly CJK (index `documents_cjk`)."""
        return (
            self.db.execute("SELECT 1 FROM documents WHERE cjk = 1 LIMIT 1").fetchone() is not None
        )

    def cjk_chunks(self, ids: list[str]) -> set[str]:
        """Those of these chunks whose terms are mostly CJK."""
        if not ids:
            return set()
        marks = ",".join("?" * len(ids))
        rows = self.db.execute(
            f"SELECT chunk FROM documents WHERE cjk = 1 AND chunk IN ({marks})", ids
        )
        return {chunk for (chunk,) in rows}

    def sources_with_cjk(self) -> list[str]:
        """Files with a chunk holding CJK text (those a second, multilingual model embeds)."""
        query = f"SELECT DISTINCT source FROM chunks WHERE {_CJK_TEXT} ORDER BY source"
        return [r[0] for r in self.db.execute(query)]

    def embedded_by_source(self) -> dict[str, int]:
        """How many chunks with vectors each file has, to compare with the store."""
        query = "SELECT source, COUNT(*) FROM chunks WHERE vector = 1 GROUP BY source"
        return dict(self.db.execute(query).fetchall())

    def stale(self) -> list[str]:
        """Files whose vectors the store may still hold though the manifest dropped them."""
        return [r[0] for r in self.db.execute("SELECT source FROM stale ORDER BY source")]

    def cleared(self, sources: Iterable[str]) -> None:
        with self._transaction():
            self.db.executemany("DELETE FROM stale WHERE source = ?", [(s,) for s in sources])

    def mark_stale(self, sources: Iterable[str]) -> None:
        with self._transaction():
            self.db.executemany("INSERT OR IGNORE INTO stale VALUES (?)", [(s,) for s in sources])

    # --- embedding cache --------------------------------------------------------------

    def cached(self, embedder: str, hashes: list[str]) -> dict[str, np.ndarray]:
        import numpy as np

        sql = "SELECT text_hash, vector FROM embeddings WHERE embedder = ? AND text_hash IN ({})"
        rows = self._rows_in(sql, [embedder], hashes)
        return {h: np.frombuffer(v, dtype=np.float32) for h, v in rows}

    def _rows_in(self, sql: str, first: list, keys: list[str]):
        """The rows of `sql` whose `IN ({})` takes the keys, asked 500 at a time (SQLite's
        limit on parameters is 999 in older builds)."""
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            yield from self.db.execute(sql.format(",".join("?" * len(part))), [*first, *part])

    def cache(self, embedder: str, vectors: dict[str, np.ndarray], dtype: str = "float32") -> None:
        """Vectors by text hash. Window vectors (windows.py) are kept as float16: half the
        bytes, and cosines move by about 1e-3."""
        with self._transaction():
            self.db.executemany(
                "INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)",
                [(embedder, h, v.astype(dtype).tobytes()) for h, v in vectors.items()],
            )

    def windows(self, key: str, ids: list[str], dimension: int) -> dict[str, np.ndarray]:
        """The window vectors of these chunks, for their current text, by chunk id (chunks
        without any are left out)."""
        import numpy as np

        sql = (
            "SELECT c.id, e.vector FROM chunks c JOIN embeddings e "
            "ON e.embedder = ? AND e.text_hash = c.text_hash WHERE c.id IN ({})"
        )
        return {
            chunk_id: np.frombuffer(blob, dtype=np.float16).reshape(-1, dimension)
            for chunk_id, blob in self._rows_in(sql, [key], ids)
            if blob
        }

    def without_windows(
        self, key: str, limit: int, after: str = "", having: str = ""
    ) -> list[tuple[str, str]]:
        """(source, text hash) of stored chunks with no window entry under `key`, in the
        files after `after` in path order, whole files until `limit` chunks are reached;
        with `having`, only chunks whose text has a vector cached under that embedder (a
        second model's: the chunks in its space)."""
        if not self.vectors_kept():
            return []
        also = (
            "AND EXISTS (SELECT 1 FROM embeddings h WHERE h.embedder = ? "
            "AND h.text_hash = c.text_hash) "
            if having
            else ""
        )
        rows = self.db.execute(
            "SELECT c.source, c.text_hash FROM chunks c WHERE c.source > ? AND c.vector = 1 "
            "AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.embedder = ? "
            f"AND e.text_hash = c.text_hash) {also}ORDER BY c.source",
            (after, key, *([having] if having else [])),
        )
        found: list[tuple[str, str]] = []
        for source, text_hash in rows:
            if len(found) >= limit and source != found[-1][0]:
                break
            found.append((source, text_hash))
        return found

    def cache_size(self, embedder: str) -> int:
        query = "SELECT COUNT(*) FROM embeddings WHERE embedder = ?"
        return self.db.execute(query, (embedder,)).fetchone()[0]

    def prune_cache(self, embedder: str) -> int:
        """Drop cached vectors of this embedder that no indexed chunk uses any more."""
        with self._transaction():
            cursor = self.db.execute(
                "DELETE FROM embeddings WHERE embedder = ? AND text_hash NOT IN "
                "(SELECT text_hash FROM chunks)",
                (embedder,),
            )
        return cursor.rowcount

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
