"""One index opened by one process: its store, manifest and embedder, built from Settings
only when first needed, and kept in step with the commits of other processes.

What every job on an index shares (keeping it in step with the folder, searching it,
answering from it, the notes' graph), so each of them opens nothing of its own.

Safe to use from several threads (the HTTP server's): the SQLite manifest gets one
connection per thread, since a connection's open transaction would be visible to every
thread using it, and searches read under `lock` while each commit of a sync writes under
it, so a search sees every file either as it was or as it is now.

Several processes may share one index (a server, a REPL, `index` in a terminal). A reader
keeps Chroma open between requests, and what Chroma holds in memory goes stale when
another process commits, so every read first compares the manifest's generation with the
one it last saw (one SQLite read) and reopens the store when it moved (`follow`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import cached_property

from askmd.errors import AskmdError, IndexReplaced
from askmd.index import index_home
from askmd.index import manifest as manifest_file
from askmd.index.fingerprint import store_meta
from askmd.index.manifest import Manifest
from askmd.index.rwlock import ReadWriteLock, WriterLock, held_by_another_thread
from askmd.index.store import Store
from askmd.search.tuning import SHIPPED, SearchTuning
from askmd.settings import Settings

Loading = Callable[[str], AbstractContextManager]  # around a slow load, e.g. a spinner


@dataclass
class IndexAccess:
    settings: Settings
    loading: Loading = nullcontext  # shows a slow load (a local model) to the user
    # The search's measured choices (search/tuning.py): a bench opens an index with a variant.
    tuning: SearchTuning = SHIPPED
    lock: ReadWriteLock = field(default_factory=ReadWriteLock, init=False, repr=False)
    _local: threading.local = field(default_factory=threading.local, init=False, repr=False)
    _seen: int | None = field(default=None, init=False, repr=False)  # generation read from

    @cached_property
    def read_only(self) -> bool:
        """An index folder that cannot be written (a read-only mount, someone else's files)
        is searched as it is: no sync, the manifest only read, Chroma through a copy."""
        return manifest_file.read_only(self.settings.index_dir)

    @cached_property
    def store(self) -> Store:
        s = self.settings
        return Store(s.index_dir, s.chroma_url, s.collection, read_only=self.read_only)

    @property
    def manifest(self) -> Manifest:
        manifest = getattr(self._local, "manifest", None)
        if manifest is None:
            path = self.settings.index_dir / manifest_file.MANIFEST
            manifest = Manifest(path, read_only=self.read_only)
            self._local.manifest = manifest
        return manifest

    @cached_property
    def embedder(self):
        # Loads onnxruntime: only when embedding. Paired with the multilingual model for
        # CJK chunks when the settings' model reads English only (embedding_models.py).
        from askmd.index.embedder import make_paired

        s = self.settings
        return make_paired(
            s.embedding_backend,
            s.embedding_model or None,
            threads=s.embed_threads,
            batch_size=s.embed_batch or None,
            # Its own server when it is not the chat server; else the chat server's.
            base_url=s.embedding_base_url or s.openai_base_url or None,
            api_key=s.embedding_api_key or s.openai_api_key or None,
            concurrency=s.embed_concurrency,
            settings=(
                "ASKMD_EMBEDDING_BASE_URL" if s.embedding_base_url else "OPENAI_BASE_URL",
                "ASKMD_EMBEDDING_API_KEY" if s.embedding_api_key else "OPENAI_API_KEY",
            ),
        )

    @cached_property
    def writer(self) -> WriterLock:
        return WriterLock(self.settings.index_dir)

    def has_index(self) -> bool:
        """Whether this folder has an index yet (one is made with its first note)."""
        return (self.settings.index_dir / manifest_file.MANIFEST).exists()

    def store_meta(self) -> dict[str, str]:
        return store_meta(self.embedder.id, self.settings)

    @contextmanager
    def reading(self) -> Iterator[Store]:
        """The store, open, for one read: no commit of this process lands meanwhile."""
        meta = self.store_meta()
        with self.lock.reading():
            self.store.ensure_open(meta)
            yield self.store

    @contextmanager
    def commit(self) -> Iterator[None]:
        """One commit of this process's sync: readers wait for it, and since it writes
        through this process's own store, the generation it makes needs no reopening."""
        with self.lock.writing():
            yield
            self._seen = self.manifest.generation()

    def follow(self) -> None:
        """Reopen the store if another process committed since this one last looked.
        Never while another thread of this process writes (the background filler): the
        store is in its hands, and no other process can have written meanwhile."""
        if self.manifest.generation() == self._seen:
            return
        if held_by_another_thread(self.settings.index_dir):
            return
        self._check_still_ours()
        with self.lock.writing():  # no search is using the store while it is replaced
            generation = self.manifest.generation()
            if generation != self._seen:
                self.store.close()
                self._seen = generation

    def _check_still_ours(self) -> None:
        """A running server over one folder must not answer from an index another process
        rebuilt for another (`index --rebuild` with the same --index-dir): its notes would
        be shown under this folder's name."""
        recorded = index_home.owner(self.settings.index_dir)
        real = os.path.realpath(self.settings.knowledge_dir)
        if recorded is not None and recorded != real:
            raise IndexReplaced(
                f"the index folder {self.settings.index_dir} was rebuilt for {recorded} by "
                f"another process: askmd over {real} stops answering from it (restart it "
                "with another --index-dir)"
            )

    def reopened_replaced(self) -> bool:
        """After a failed read: True when another process had replaced the collection (a
        rebuild) and it is now reopened, so the read is worth one more try. A store that
        is really broken fails again and its error, with its advice, stands."""
        if held_by_another_thread(self.settings.index_dir):
            return False  # nobody else can have replaced it; the store is the writer's
        meta = self.store_meta()
        with self.lock.writing():
            try:
                before = self.store.collection.id
            except RuntimeError:  # it never opened
                return False
            self.store.close()
            self._seen = self.manifest.generation()
            try:
                self.store.open(meta)
            except AskmdError:
                return False
            return self.store.collection.id != before
