"""The vector store: the only module that imports chromadb.

An embedded PersistentClient in the index folder, or an HttpClient when ASKMD_CHROMA_URL
names a Chroma server; one code path otherwise. Vectors are always passed explicitly (a
text query would make Chroma download its own model), telemetry is off, distances are
cosine. A file's chunks are replaced as a unit. Chroma errors become AskmdError here.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

if TYPE_CHECKING:
    import numpy as np


from chunker import Chunk
from errors import AskmdError


@dataclass(frozen=True)
class Stored:
    """A chunk as it comes back from the store."""

    id: str
    text: str
    metadata: dict
    distance: float


def chunk_metadata(chunk: Chunk, md5: str, tags: Sequence[str], text_hash: str) -> dict:
    """Chroma metadata is scalar: the chain and tags are joined into strings."""
    return {
        "source": chunk.source,
        "chunk_index": chunk.chunk_index,
        "heading_chain": chunk.chain_text,
        "heading_level": chunk.heading_level,
        "line_start": chunk.line_start,
        "line_end": chunk.line_end,
        "mode": chunk.mode,
        "title": chunk.title,
        "tags": ",".join(tags),
        "md5": md5,
        "text_hash": text_hash,
    }


class Store:
    def __init__(self, index_dir: Path, chroma_url: str = "", collection: str = "askmd"):
        self.index_dir = index_dir
        self.chroma_url = chroma_url
        self.name = collection
        self._client = None
        self._collection = None

    @property
    def where(self) -> str:
        return self.chroma_url or str(self.index_dir / "chroma")

    def _connect(self):
        if self._client is None:
            import chromadb  # slow to import (~1-2 s): only when the store is really used
            from chromadb.config import Settings as ChromaSettings

            logging.getLogger("chromadb").setLevel(logging.ERROR)
            settings = ChromaSettings(anonymized_telemetry=False)
            try:
                if self.chroma_url:
                    url = urlparse(self.chroma_url)
                    self._client = chromadb.HttpClient(
                        host=url.hostname or "127.0.0.1",
                        port=url.port or (443 if url.scheme == "https" else 8000),
                        ssl=url.scheme == "https",
                        settings=settings,
                    )
                    self._client.heartbeat()
                else:
                    self._client = chromadb.PersistentClient(
                        path=str(self.index_dir / "chroma"), settings=settings
                    )
            except Exception as exc:  # noqa: BLE001 - every failure here means one thing
                self._client = None
                raise AskmdError(_explain(self.where, exc)) from None
        return self._client

    def open(self, meta: dict[str, str | int]) -> dict:
        """Open (creating if needed) the collection; return the metadata it was created with."""
        client = self._connect()
        try:
            self._collection = client.get_or_create_collection(
                self.name,
                metadata=dict(meta) or None,
                configuration={"hnsw": {"space": "cosine"}},
                embedding_function=None,
            )
            return dict(self._collection.metadata or {})
        except Exception as exc:  # noqa: BLE001
            raise AskmdError(_explain(self.where, exc)) from None

    def ensure_open(self, meta: dict[str, str | int]) -> None:
        if self._collection is None:
            self.open(meta)

    def reset(self, meta: dict[str, str | int]) -> None:
        """Drop every chunk and start an empty collection with new metadata."""
        client = self._connect()
        try:
            if self.name in [c.name for c in client.list_collections()]:
                client.delete_collection(self.name)
        except Exception as exc:  # noqa: BLE001
            raise AskmdError(_explain(self.where, exc)) from None
        self.open(meta)

    @property
    def collection(self):
        if self._collection is None:
            raise RuntimeError("Store.open() must be called first")
        return self._collection

    def count(self) -> int:
        return self._call(self.collection.count)

    def source_counts(self) -> dict[str, int]:
        """How many chunks each source has in the store (pages through all metadata)."""
        counts: dict[str, int] = {}
        page = 5000
        offset = 0
        while True:
            batch = self._call(
                self.collection.get, include=["metadatas"], limit=page, offset=offset
            )
            for meta in batch["metadatas"] or []:
                source = (meta or {}).get("source", "")
                counts[source] = counts.get(source, 0) + 1
            if len(batch["ids"]) < page:
                return counts
            offset += page

    def delete(self, sources: Sequence[str]) -> None:
        for start in range(0, len(sources), 500):
            part = list(sources[start : start + 500])
            self._call(self.collection.delete, where={"source": {"$in": part}})

    def replace(
        self,
        sources: Sequence[str],
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[dict],
        vectors: np.ndarray,
    ) -> None:
        """Make these sources hold exactly these chunks. The new chunks are written first
        and only then are the old ones that were not overwritten removed, so a failed write
        leaves the previous chunks in place."""
        before = set()
        for start in range(0, len(sources), 500):
            part = list(sources[start : start + 500])
            found = self._call(self.collection.get, where={"source": {"$in": part}}, include=[])
            before.update(found["ids"])
        step = self._call(self._connect().get_max_batch_size)
        for start in range(0, len(ids), step):
            end = start + step
            self._call(
                self.collection.upsert,
                ids=list(ids[start:end]),
                documents=list(texts[start:end]),
                metadatas=list(metadatas[start:end]),
                embeddings=vectors[start:end],
            )
        stale = sorted(before - set(ids))
        for start in range(0, len(stale), step):
            self._call(self.collection.delete, ids=stale[start : start + step])

    def nearest(
        self, vector: np.ndarray, k: int, where: dict | None = None, content: bool = True
    ) -> list[Stored]:
        """The k nearest chunks. With content=False only ids and distances come back (text
        and metadata empty), five times faster for a pool of 100: the caller fetches the
        few it keeps with `get`."""
        total = self.count()
        if total == 0:
            return []
        include = ["documents", "metadatas", "distances"] if content else ["distances"]
        result = self._call(
            self.collection.query,
            query_embeddings=[vector],
            n_results=min(k, total),
            where=where,
            include=include,
        )
        ids, distances = result["ids"][0], result["distances"][0]
        texts = result["documents"][0] if content else [""] * len(ids)
        metadatas = result["metadatas"][0] if content else [{}] * len(ids)
        return [
            Stored(id=i, text=t or "", metadata=m or {}, distance=float(d))
            for i, t, m, d in zip(ids, texts, metadatas, distances, strict=True)
        ]

    def get(self, ids: Sequence[str]) -> list[Stored]:
        """Chunks by id, in the order asked; ids the store does not have are left out."""
        if not ids:
            return []
        result = self._call(self.collection.get, ids=list(ids), include=["documents", "metadatas"])
        found = {
            i: Stored(id=i, text=t or "", metadata=m or {}, distance=1.0)
            for i, t, m in zip(result["ids"], result["documents"], result["metadatas"], strict=True)
        }
        return [found[i] for i in ids if i in found]

    def _call(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AskmdError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise AskmdError(_explain(self.where, exc)) from None


def _explain(where: str, exc: Exception) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    first = first.rstrip(" :")
    end = " " if first.endswith((".", "?", "!")) else ". "
    if where.startswith("http"):
        return (
            f"the Chroma server at {where} failed: {first}{end}Is it running "
            "(chroma run --path DIR --port N)? Check ASKMD_CHROMA_URL."
        )
    return (
        f"the index at {where} cannot be used: {first}{end}"
        "Rebuild it with: python rag.py index --rebuild"
    )
