"""The pipeline that every interface drives: sync the index, search it, answer from it.

`Index` is the composition root: it builds the store, the manifest, the embedder and the
LLM from Settings, each only when first needed, so a no-change sync never loads a model.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cached_property

import answer
import console
import indexer
import retriever
from manifest import Manifest
from rwlock import ReadWriteLock
from settings import Settings
from store import Store


@dataclass
class Index:
    """What the commands and the server share, built once from Settings.

    Safe to use from several threads (the HTTP server's): the SQLite manifest gets one
    connection per thread, since a connection's open transaction would be visible to
    every thread using it, and searches read under `lock` while each commit of a sync
    writes under it, so a search sees every file either as it was or as it is now.
    """

    settings: Settings
    lock: ReadWriteLock = field(default_factory=ReadWriteLock, init=False, repr=False)
    _local: threading.local = field(default_factory=threading.local, init=False, repr=False)

    @cached_property
    def store(self) -> Store:
        s = self.settings
        return Store(s.index_dir, s.chroma_url, s.collection)

    @property
    def manifest(self) -> Manifest:
        manifest = getattr(self._local, "manifest", None)
        if manifest is None:
            manifest = Manifest(self.settings.index_dir / "manifest.sqlite3")
            self._local.manifest = manifest
        return manifest

    @cached_property
    def chat(self):
        """The LLM that answers, or None for extractive answers. A local model loads here."""
        s = self.settings
        if not s.llm_configured:
            return None
        from llm import Chat

        url, key, model = s.openai_base_url, s.openai_api_key, s.llm_model
        if s.local_model is not None:
            import local_llm

            with console.status(f"loading {s.local_model.name} with llama.cpp"):
                self.local_server = local_llm.start(
                    s.local_model, threads=s.local_threads, context=s.local_context
                )
            url, key, model = (
                self.local_server.url,
                self.local_server.api_key,
                self.local_server.model,
            )
        return Chat(
            url or None,
            key or None,
            model,
            temperature=s.llm_temperature,
            max_tokens=s.llm_max_tokens,
            timeout=s.llm_timeout,
        )

    @cached_property
    def embedder(self):
        from embedder import make_embedder  # loads onnxruntime: only when embedding

        s = self.settings
        return make_embedder(
            s.embedding_backend,
            s.embedding_model or None,
            threads=s.embed_threads,
            batch_size=s.embed_batch or None,
            base_url=s.openai_base_url or None,
            api_key=s.openai_api_key or None,
        )

    def sync(self, rebuild: bool = False, show_progress: bool = True) -> indexer.SyncReport:
        progress = console.SyncProgress() if show_progress else None
        report = indexer.sync(
            self.settings,
            self.store,
            self.manifest,
            lambda: self.embedder,
            rebuild=rebuild,
            progress=progress,
            commit=self.lock.writing,
        )
        return report

    def show(self, report: indexer.SyncReport) -> None:
        console.show_sync(report, self.settings.knowledge_dir, self.settings.include)

    def search(
        self,
        query: str,
        k: int,
        mode: str = "hybrid",
        filters: retriever.Filters | None = None,
    ) -> list[retriever.Hit]:
        fp = indexer.fingerprint(self.settings)
        self.store.ensure_open({"embedder": self.embedder.id, "fingerprint": fp})
        with self.lock.reading():
            return retriever.search(
                query, self.embedder, self.store, self.manifest, k, mode=mode, filters=filters
            )

    def ask(
        self,
        question: str,
        history: list[answer.Turn],
        k: int,
        stream: bool = True,
        filters: retriever.Filters | None = None,
    ) -> answer.Answer:
        """Answer one question; on a terminal the reply is shown as it streams."""
        return answer.ask(
            question,
            history,
            lambda query: self.search(query, k, filters=filters),
            self.chat,
            show=console.stream_answer if stream else None,
        )

    def stats(self) -> dict:
        stats = {
            "files": 0,
            "chunks": 0,
            "embedder": indexer.embedder_id(self.settings),
            "dimension": 0,
            "index_dir": str(self.settings.index_dir),
            "last_sync": None,
        }
        if not (self.settings.index_dir / "manifest.sqlite3").exists():
            return stats  # nothing indexed yet; do not create an index just to say so
        m = self.manifest
        stats.update(
            files=len(m.files()),
            chunks=m.total_chunks(),
            embedder=m.get("embedder") or stats["embedder"],
            dimension=int(m.get("dimension") or 0),
            last_sync=m.get("last_sync"),
        )
        return stats
