"""The vector store: the only module that uses chromadb (imported by chroma_import.py).

An embedded PersistentClient in the index folder, or an HttpClient when ASKMD_CHROMA_URL
names a Chroma server; one code path otherwise. Vectors are always passed explicitly (a
text query would make Chroma download its own model), telemetry is off, distances are
cosine. A file's chunks are replaced as a unit. Chroma errors become AskmdError here:
`Damaged` when the local collection cannot be read back, which the sync repairs by moving
the folder aside (`set_aside`) and rebuilding, and `DiskFull` when the disk is full.

Chroma cannot open a folder it may not write to, even to read ("attempt to write a
readonly database"), so a read-only index is searched through a private copy of its
Chroma folder in a temporary folder, deleted when the process ends.

An index may hold a second collection (`side`), named after the embedder that fills it:
the multilingual vectors of its Chinese and Japanese chunks (see embedding_models.py). It
shares the client, and deleting a file's chunks deletes them from it too.

On a Chroma server several machines may write one collection; a writer first takes a
lease in the collection's metadata (`claim`, `release`: store_lease.py). An embedded Chroma
needs none: the index folder's lock file already lets one process write at a time.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
import threading
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

if TYPE_CHECKING:
    import numpy as np


from askmd.errors import AskmdError, DiskFull, disk_full
from askmd.index import chroma_import
from askmd.index.embedding_models import collection_name
from askmd.index.store_failures import Failing
from askmd.index.store_lease import LEASE_SECONDS, Lease, Leasing
from askmd.read.chunker import Chunk

# Chroma's client start is not safe to run twice at once in one process.
_CONNECTING = threading.RLock()
# Candidates Chroma's HNSW search explores. Its default (100) equals the retriever's pool,
# so the pool's tail was approximate and differed between processes (the graph search is
# not repeatable at that depth); min-max scaling reads the pool's last score, so near-tie
# first places flipped from run to run. At 800 the pool holds 0.997 of the exact top 100
# (0.90-0.96 at 100) and the paraphrase sets score the same in every run, for +0.7 ms a
# query at 250k vectors (BENCHMARKS.md, "Dense search depth").
EF_SEARCH = 800
# Identical vectors (notes made from one template and never filled in, a page kept in two
# folders) sit at distance 0 from each other, and HNSW then fills their neighbour lists
# with one another: 200 copies of a daily-note template cut every other note out of the
# graph, and dense search found none of them. Each vector is stored moved by this share of
# its length in a direction of its own, which keeps copies apart; cosines move by about
# 1e-3 (BENCHMARKS.md, "Identical notes and the HNSW graph").
JITTER = 1e-3


@dataclass(frozen=True)
class Stored:
    """A chunk as it comes back from the store."""

    id: str
    text: str
    metadata: dict
    distance: float


def chunk_metadata(chunk: Chunk, md5: str, tags: Sequence[str], text_hash: str) -> dict:
    """Chroma metadata is scalar: the chain and tags are joined into strings. Pages are
    left out for formats without them (Chroma stores no nulls)."""
    pages = {"page_start": chunk.page_start, "page_end": chunk.page_end}
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
        **({} if chunk.page_start is None else pages),
    }


class Store(Leasing, Failing):
    def __init__(
        self,
        index_dir: Path,
        chroma_url: str = "",
        collection: str = "askmd",
        read_only: bool = False,
    ):
        self.index_dir = index_dir
        self.chroma_url = chroma_url
        self.name = collection
        self.read_only = read_only  # a local folder that is read through a copy
        self._client = None
        self._collection = None
        self._filled = None  # the collection object last seen holding a chunk
        self._copy: Path | None = None
        self._owner: Store | None = None  # the index's main store, for a side collection
        self._sides: dict[str, Store] = {}
        self._lease: Lease | None = None  # this store's writer lease on a server collection
        self._renewer: tuple[threading.Event, threading.Thread] | None = None

    def side(self, embedder_id: str) -> Store:
        """The index's second collection, for the vectors of this embedder; it shares this
        store's client (and, read-only, its copy). Not created until `open`ed."""
        name = collection_name(self.name, embedder_id)
        if name not in self._sides:
            other = Store(self.index_dir, self.chroma_url, name, self.read_only)
            other._owner = self
            self._sides[name] = other
        return self._sides[name]

    def _existing_sides(self) -> list[Store]:
        """This index's side collections that Chroma holds: each is named after the
        embedder its metadata records."""
        client = self._connect()
        try:
            found = client.list_collections()
        except Exception as exc:  # noqa: BLE001
            raise self._failure(exc) from None
        sides = []
        for c in found:
            embedder = str((c.metadata or {}).get("embedder", ""))
            if c.name != self.name and embedder and c.name == collection_name(self.name, embedder):
                sides.append(self.side(embedder))
        return sides

    def open_existing(self) -> bool:
        """Open the collection if Chroma has it; False (and nothing created) when not."""
        if self._collection is not None:
            return True
        client = self._connect()
        try:
            if self.name not in [c.name for c in client.list_collections()]:
                return False
            self._collection = client.get_collection(self.name, embedding_function=None)
            _deepen(self._collection)
        except Exception as exc:  # noqa: BLE001
            raise self._failure(exc) from None
        return True

    def drop(self) -> None:
        """Delete the collection, if there is one (a side collection that is out of date)."""
        client = self._connect()
        self._collection = None
        try:
            if self.name in [c.name for c in client.list_collections()]:
                client.delete_collection(self.name)
        except Exception as exc:  # noqa: BLE001
            raise self._failure(exc) from None

    @property
    def where(self) -> str:
        return self.chroma_url or str(self.index_dir / "chroma")

    def _connect(self):
        if self._owner is not None:
            return self._owner._connect()
        with _CONNECTING:  # two threads (a search, the background filler) may start together
            return self._connect_once()

    def _connect_once(self):
        if self._client is None:
            chromadb = chroma_import.imported()  # slow: only when the store is really used
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
                        path=str(self._local_folder()), settings=settings
                    )
            except Exception as exc:  # noqa: BLE001 - every failure here means one thing
                self._client = None
                raise self._failure(exc) from None
        return self._client

    def _local_folder(self) -> Path:
        """The Chroma folder to open: the index's own, or for a read-only index a fresh
        copy of it (taken at each connect, so a reopen sees what the folder's owner wrote
        since)."""
        folder = self.index_dir / "chroma"
        if not self.read_only:
            return folder
        self._drop_copy()
        self._copy = Path(tempfile.mkdtemp(prefix="askmd-readonly-")) / "chroma"
        atexit.register(_remove, self._copy.parent)
        try:
            if folder.is_dir():
                shutil.copytree(folder, self._copy, copy_function=shutil.copyfile)
                _make_writable(self._copy)  # copytree copies the folders' modes
        except OSError as exc:
            if disk_full(exc):
                raise DiskFull(
                    "the index folder is read-only and there is no room in "
                    f"{tempfile.gettempdir()} for the copy that is searched: free some space"
                ) from None
            raise AskmdError(
                f"the index folder is read-only and its Chroma folder {folder} cannot be "
                f"copied to be searched ({exc.strerror or exc})"
            ) from None
        return self._copy

    def _drop_copy(self) -> None:
        if self._copy is not None:
            _remove(self._copy.parent)
            self._copy = None

    def open(self, meta: dict[str, str | int]) -> dict:
        """Open (creating if needed) the collection; return the metadata it was created with."""
        client = self._connect()
        # A collection made again by a reset keeps this store's lease.
        held = self._lease.fields(time.time() + LEASE_SECONDS) if self._lease else {}
        try:
            self._collection = client.get_or_create_collection(
                self.name,
                metadata={**meta, **held} or None,
                configuration={"hnsw": {"space": "cosine", "ef_search": EF_SEARCH}},
                embedding_function=None,
            )
            stored = dict(self._collection.metadata or {})
            _deepen(self._collection)
        except Exception as exc:  # noqa: BLE001
            raise self._failure(exc) from None
        other = Lease.read(stored)
        if self._lease and other and other.token != self._lease.token and other.live(time.time()):
            raise other.busy(self.name, self.where)  # another writer made it between our calls
        return {k: v for k, v in stored.items() if k not in Lease.KEYS}

    def close(self) -> None:
        """Let go of the client and the collection; the next use opens them afresh. An
        embedded client keeps segments in memory that another process's writes make
        stale, and holds a collection that another process's rebuild replaces."""
        client, self._client, self._collection = self._client, None, None
        for side in self._sides.values():
            side._collection = None
        if self._owner is not None:
            return  # the client is the main store's
        if client is not None and hasattr(client, "close"):
            try:
                client.close()  # stops the shared in-process Chroma system when it is the last
            except Exception:  # noqa: BLE001 - nothing to release then
                pass

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
            raise self._failure(exc) from None
        for side in self._existing_sides():
            side.drop()
        self.open(meta)

    def check(self) -> int:
        """The chunk count, after reading the collection the way a search will: Chroma
        replays its pending log into the HNSW segment on the first read, and a segment a
        kill left half-saved fails only then (as `Damaged`). One stored vector is the
        probe, so no embedder is needed."""
        total = self.count()
        if total:
            one = self._call(self.collection.get, limit=1, include=["embeddings"])
            probe = one["embeddings"][:1]
            if len(probe):
                self._call(self.collection.query, query_embeddings=probe, n_results=1, include=[])
        return total

    def _stop_system(self) -> None:
        """Close the client and stop Chroma's in-process system for this folder even if
        another client still shares it, so no open file follows the folder being moved
        and the next client opens the new one."""
        client = self._client
        self.close()
        if client is None:
            return
        from chromadb.api.shared_system_client import SharedSystemClient

        identifier = getattr(client, "_identifier", None)
        system = SharedSystemClient._identifier_to_system.pop(identifier, None)
        SharedSystemClient._identifier_to_refcount.pop(identifier, None)
        if system is not None:
            try:
                system.stop()
            except Exception:  # noqa: BLE001 - the folder is being discarded anyway
                logging.getLogger("askmd").debug("stopping Chroma failed", exc_info=True)

    @property
    def collection(self):
        if self._collection is None:
            raise RuntimeError("Store.open() must be called first")
        return self._collection

    def count(self) -> int:
        return self._call(self.collection.count)

    def has_chunks(self) -> bool:
        """Whether the collection holds a chunk. A yes is kept for as long as this
        collection object is (a search asks on every question, and a count costs Chroma a
        millisecond); a no is asked again, as another process may be filling it. A side
        collection emptied elsewhere then costs one empty query, not a wrong answer."""
        collection = self.collection
        if self._filled is not collection:
            if self.count() == 0:
                return False
            self._filled = collection
        return True

    def source_counts(self) -> dict[str, int]:
        """How many chunks each source has in the store (pages through all metadata)."""
        return {source: len(chunks) for source, chunks in self.chunk_hashes().items()}

    def chunk_hashes(self) -> dict[str, dict[str, str]]:
        """{source: {chunk id: text hash}} of every chunk in the store (pages through all
        metadata): what lets a sync adopt vectors another machine stored for the same text."""
        found: dict[str, dict[str, str]] = {}
        page = 5000
        offset = 0
        while True:
            batch = self._call(
                self.collection.get, include=["metadatas"], limit=page, offset=offset
            )
            for chunk_id, meta in zip(batch["ids"], batch["metadatas"] or [], strict=False):
                meta = meta or {}
                source = str(meta.get("source", ""))
                found.setdefault(source, {})[chunk_id] = str(meta.get("text_hash", ""))
            if len(batch["ids"]) < page:
                return found
            offset += page

    def delete(self, sources: Sequence[str]) -> None:
        """Delete these sources' chunks, from the side collections too."""
        for side in self._existing_sides() if sources else []:
            side.open_existing()
            side.delete(sources)
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
                embeddings=_jittered(ids[start:end], vectors[start:end]),
            )
        stale = sorted(before - set(ids))
        for start in range(0, len(stale), step):
            self._call(self.collection.delete, ids=stale[start : start + step])

    def nearest(
        self, vector: np.ndarray, k: int, where: dict | None = None, content: bool = True
    ) -> list[Stored]:
        """The k nearest chunks. With content=False only ids and distances come back (text
        and metadata empty), five times faster for a pool of 100: the caller fetches the
        few it keeps with `get`. Chroma returns fewer than k when it holds fewer (an empty
        collection gives none), so no count is asked first."""
        include = ["documents", "metadatas", "distances"] if content else ["distances"]
        result = self._call(
            self.collection.query,
            query_embeddings=[vector],
            n_results=k,
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

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by chunk id (for those the store has)."""
        import numpy as np

        if not ids:
            return {}
        result = self._call(self.collection.get, ids=list(ids), include=["embeddings"])
        return {
            i: np.asarray(v, dtype=np.float32)
            for i, v in zip(result["ids"], result["embeddings"], strict=True)
        }

    def _call(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AskmdError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise self._failure(exc) from None


def _jittered(ids: Sequence[str], vectors: np.ndarray) -> np.ndarray:
    """The vectors each moved by JITTER of its length in a direction of its own (the same
    for the same batch of ids, so a run stores what the run before it stored)."""
    import numpy as np

    if JITTER <= 0 or not len(ids):
        return vectors
    rows = np.asarray(vectors, dtype=np.float32)
    rng = np.random.default_rng(zlib.crc32("\0".join(ids).encode()))
    noise = rng.standard_normal(rows.shape).astype(np.float32)
    noise *= (JITTER * np.linalg.norm(rows, axis=1, keepdims=True)) / np.linalg.norm(
        noise, axis=1, keepdims=True
    )
    return rows + noise


def _deepen(collection) -> None:
    """Give a collection made by older code (HNSW ef_search 100) the search depth of
    EF_SEARCH. It is kept in the collection's configuration; this process, which has not
    searched it yet, searches at the new depth too. A failed change (a server that refuses
    it, a locked database) leaves the old depth: shallower, still correct."""
    hnsw = (collection.configuration_json or {}).get("hnsw") or {}
    if hnsw.get("ef_search", EF_SEARCH) >= EF_SEARCH:
        return
    try:
        collection.modify(configuration={"hnsw": {"ef_search": EF_SEARCH}})
    except Exception:  # noqa: BLE001 - see the docstring
        logging.getLogger(__name__).debug("could not deepen %s", collection.name, exc_info=True)


def _make_writable(folder: Path) -> None:
    for place, _, files in os.walk(folder):
        os.chmod(place, 0o700)
        for name in files:
            os.chmod(os.path.join(place, name), 0o600)


def _remove(folder: Path) -> None:
    """Delete a copy of a read-only index, even one whose copying stopped half-way with
    folders still read-only."""
    try:
        _make_writable(folder)
    except OSError:
        pass
    shutil.rmtree(folder, ignore_errors=True)
