"""The manifest's record of files: each indexed file's hash, size and mtime, its chunks
(id, text hash, text, metadata) and the links written in it, replaced as a unit with
the file's keyword postings, so a search never sees a file half-replaced."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from askmd.index import chunk_dates, note_properties, packed_postings
from askmd.index.manifest_db import ManifestDB, now
from askmd.index.manifest_keywords import _LOAD, ChunkRow, _postings
from askmd.terms import is_cjk_term


@dataclass(frozen=True)
class FileRecord:
    source: str
    md5: str
    size: int
    mtime_ns: int
    chunks: int


LinkRow = tuple[str, str, int, int]  # (target as written, heading, file line, embed)


class FileRecords(ManifestDB):
    """Files, their chunks and links; what a sync records and forgets."""

    def files(self) -> dict[str, FileRecord]:
        rows = self.db.execute("SELECT source, md5, size, mtime_ns, chunks FROM files")
        return {r[0]: FileRecord(*r) for r in rows}

    def indexed_at(self) -> dict[str, str]:
        """When each file's current text was recorded. Files recorded before these times
        were kept (or by a read-only index from older code) have none."""
        try:
            return dict(self.db.execute("SELECT source, at FROM indexed").fetchall())
        except sqlite3.OperationalError:  # a read-only index made before they were kept
            return {}

    def total_chunks(self) -> int:
        return self.db.execute("SELECT COALESCE(SUM(chunks), 0) FROM files").fetchone()[0]

    def record(
        self,
        files: Iterable[tuple[FileRecord, list[ChunkRow]]],
        links: dict[str, list[LinkRow]] | None = None,
        properties: dict[str, tuple] | None = None,
    ) -> None:
        """Store files with their chunks (id, text hash, search terms) and the links written
        in them, replacing what was there: the keyword postings and links change in the
        same transaction as the file's hash."""
        with self._transaction():
            postings: list[tuple[str, int, int]] = []
            documents: list[tuple[int, str, str, int, int]] = []
            doc = self.db.execute("SELECT COALESCE(MAX(doc), 0) FROM documents").fetchone()[0]
            doc = max(doc, packed_postings.upto(self.db) or 0)  # a packed id is never reused
            at = now()
            for rec, chunk_rows in files:
                self._drop(rec.source)
                self.db.executemany(
                    "INSERT INTO links VALUES (?, ?, ?, ?, ?)",
                    [(rec.source, *row) for row in (links or {}).get(rec.source, [])],
                )
                note_properties.record(self.db, rec.source, (properties or {}).get(rec.source, ()))
                self.db.execute(
                    "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)",
                    (rec.source, rec.md5, rec.size, rec.mtime_ns, rec.chunks),
                )
                self.db.execute("INSERT OR REPLACE INTO kept VALUES (?, ?)", (rec.source, rec.md5))
                self.db.execute("INSERT OR REPLACE INTO indexed VALUES (?, ?)", (rec.source, at))
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

    def _drop(self, source: str) -> None:
        self.db.execute("DELETE FROM chunks WHERE source = ?", (source,))
        self.db.execute("DELETE FROM links WHERE source = ?", (source,))
        chunk_dates.drop(self.db, source)
        note_properties.drop(self.db, source)
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

    def sources_where(self, conditions) -> frozenset[str]:
        """The notes whose properties meet every `--where` condition (search/where.py),
        kept while the index's generation stays the same."""
        from askmd.index.manifest_keywords import KEPT_FILTERS

        generation, key = self.generation(), tuple(conditions)
        memo = getattr(self, "_where_memo", None)
        if memo is None or memo[0] != generation:
            memo = self._where_memo = (generation, {})
        kept = memo[1]
        if key not in kept:
            while len(kept) >= KEPT_FILTERS:
                del kept[next(iter(kept))]  # the oldest
            kept[key] = frozenset(note_properties.sources_where(self.db, key))
        return kept[key]

    def property_keys(self) -> dict[str, int]:
        """Each property key the notes carry and how many notes carry it."""
        return note_properties.keys(self.db)

    def tags_by_source(self) -> dict[str, set[str]]:
        """Each note's tags (front matter and inline), the union over its chunks."""
        rows = self.db.execute(
            "SELECT DISTINCT source, json_extract(meta, '$.tags') FROM chunks "
            "WHERE meta LIKE '%\"tags\"%'"
        )
        found: dict[str, set[str]] = {}
        for source, tags in rows:
            found.setdefault(source, set()).update(t for t in str(tags or "").split(",") if t)
        return {source: tags for source, tags in found.items() if tags}

    def sources_of(self, ids: list[str]) -> dict[str, str]:
        """{chunk id: its file} for these chunks (those the manifest holds)."""
        sql = "SELECT id, source FROM chunks WHERE id IN ({})"
        return dict(self._rows_in(sql, [], ids))

    def dates(self, ids: list[str]) -> dict[str, str]:
        """Chunk id -> the ISO day it is about, for those of these chunks that have one."""
        return chunk_dates.of(self.db, ids)

    def dated_between(self, since: str, until: str, limit: int) -> list[str]:
        """Up to `limit` chunks about a day within since..until (ISO, both included)."""
        return chunk_dates.between(self.db, since, until, limit)

    def dates_of_sources(self) -> dict[str, str]:
        """Source -> the day its chunks are about (the earliest, for several)."""
        return chunk_dates.of_sources(self.db)

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
                self.db.execute("DELETE FROM indexed WHERE source = ?", (source,))
                self.db.execute("DELETE FROM kept WHERE source = ?", (source,))
                self.db.execute("INSERT OR IGNORE INTO stale VALUES (?)", (source,))
                self._drop(source)
            self._bump()

    def forget_all(self) -> None:
        """Drop every file; the vector store is emptied by the next filling (`reset`)."""
        with self._transaction():
            for table in ("files", "chunks", "postings", "documents", "links", "stale",
                          "packed", "packed_gone", "indexed", "chunk_dates", "kept",
                          "note_properties"):  # fmt: skip
                self.db.execute(f"DELETE FROM {table}")
            self.db.execute(f"DROP TABLE IF EXISTS {_LOAD}")
            self.db.execute(
                "DELETE FROM meta WHERE key IN ('gate', 'side_scope', 'packed_upto', 'packed_docs')"
            )
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('reset_vectors', '1')")
            self._bump()

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
                self.db.execute(
                    "UPDATE kept SET md5 = '' WHERE source IN ({})".format(
                        ",".join("?" * len(part))
                    ),
                    part,
                )
            if sources:  # the gate would say nothing changed
                self.db.execute("DELETE FROM meta WHERE key = 'gate'")
            self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('repeats', 'once')")
        return sources
