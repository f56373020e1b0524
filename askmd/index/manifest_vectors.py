"""The manifest's bookkeeping of the vector store: which chunks have their vectors stored,
which files wait for them, and which files' vectors must leave the store. It never
talks to Chroma: the filling (indexer) reads this and writes both."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from askmd.index.manifest_db import ManifestDB

# A chunk text holding any CJK character (the side model's chunks are among these).
_CJK_TEXT = "text GLOB '*[぀-ヿ㐀-䶿一-鿿가-힯]*'"


@dataclass(frozen=True)
class Pending:
    """A chunk as the filling of the vector store reads it back."""

    id: str
    source: str
    text_hash: str
    text: str  # stored and quoted
    metadata: dict


class VectorMarks(ManifestDB):
    """Which chunks the vector store holds, per file."""

    # --- chunks and their vectors ---------------------------------------------------
    # Indexing has two phases: every file's chunks, texts and postings are recorded first
    # (the folder is searchable by keyword), then the vector store is filled. `vector` on
    # a chunk says whether the store holds its vector (and, for a CJK chunk with a second
    # model, its second vector) for exactly this text: 0 until the filling stores it.

    def vectors_kept(self) -> bool:
        """Whether this manifest says which chunks have vectors (a read-only index from
        older code does not: its store is then taken as complete)."""
        return self._has_chunk_columns()

    def _has_chunk_columns(self) -> bool:
        return any(row[1] == "vector" for row in self.db.execute("PRAGMA table_info(chunks)"))

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

    def sources_with_cjk(self) -> list[str]:
        """Files with a chunk holding CJK text (those a second, multilingual model embeds)."""
        query = f"SELECT DISTINCT source FROM chunks WHERE {_CJK_TEXT} ORDER BY source"
        return [r[0] for r in self.db.execute(query)]

    def pending_by_source(self) -> dict[str, int]:
        """How many chunks of each file still wait for their vectors (files with none
        waiting are left out)."""
        if not self.vectors_kept():
            return {}
        query = "SELECT source, COUNT(*) FROM chunks WHERE vector = 0 GROUP BY source"
        return dict(self.db.execute(query).fetchall())

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
