"""The embedding cache in the manifest: vectors by (embedder, text hash), so an edit or a
rebuild embeds only texts never embedded before, and window vectors (windows.py) kept
the same way under their own key."""

from __future__ import annotations

from typing import TYPE_CHECKING

from askmd.index.manifest_db import ManifestDB

if TYPE_CHECKING:  # numpy loads only when the embedding cache is used
    import numpy as np


class EmbeddingCache(ManifestDB):
    """Cached vectors and window vectors, by text hash."""

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
