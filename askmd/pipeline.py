"""The pipeline that every interface drives: sync the index, search it, answer from it.

`Index` is the composition root: it builds the store, the manifest, the embedder and the
LLM from Settings, each only when first needed, so a no-change sync never loads a model.

It never prints: progress, waiting and streamed answers go through what the caller
passes in, so the same core serves a terminal, HTTP and a protocol spoken over stdout.

Every change to the index goes through `sync` (and `writing`, for a change to the folder
that a sync then takes in): the CLI's `index`, the REPL, the API's ingest and delete, the
background re-scan and a watcher. Several processes may share one index (a server, a REPL,
`index` in a terminal). Only one writes at a time (`rwlock.WriterLock`: one thread of this
process, and one process by the lock file); the others read. A reader keeps Chroma open between
requests, and what Chroma holds in memory goes stale when another process commits, so
every read first compares the manifest's generation with the one it last saw (one SQLite
read) and reopens the store when it moved.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

from askmd import wording
from askmd.answer.limits import MAX_QUESTION_CHARS
from askmd.answer.result import Answer, Turn
from askmd.errors import AskmdError, BadRequest, IndexReplaced, NotFound
from askmd.index import index_home, indexer
from askmd.index import manifest as manifest_file
from askmd.index.manifest import Manifest
from askmd.index.rwlock import ReadWriteLock, WriterLock, file_lock, held_by_another_thread
from askmd.index.store import Store
from askmd.read import notes, vault
from askmd.search import rerank, retriever
from askmd.settings import Settings

if TYPE_CHECKING:
    from askmd.answer import grounding
    from askmd.index.filler import Filler
    from askmd.search import dates_in_query

# A one-shot search or question stores up to this many missing vectors first (a minute or
# so with the local model); more, and it answers by keyword at once and says so.
FOREGROUND_CHUNKS = 1000
# A REPL, serve or mcp, which can store vectors in the background, waits for this many at
# most (about 15 s with the local model) before it is ready.
FOREGROUND_CHUNKS_LIVE = 256
FOREGROUND_NOTES = 20  # a sync of at most this many notes embeds them itself, filler or not
FOREGROUND_BYTES = 256 * 1024  # ... when they are this small together (~15 s of embedding)
WRITE_WAIT_SECONDS = 60.0  # a change waits this long for another process's update
RELATED_K = 10  # notes `related` lists unless told
READ_WAIT_SECONDS = 3.0  # a search or question waits this long, then reads the index as it is

# How a caller shows what the core does, passed in: the core itself never prints.
Show = Callable[[Iterator[str], int], str]  # an answer's pieces and its source count -> text
Searched = Callable[[str, list[retriever.Hit]], None]  # each search of an answer, as it ends
Loading = Callable[[str], AbstractContextManager]  # around a slow load, e.g. a spinner


def filters(
    source: str | None,
    heading_level: int | None,
    name: str = "heading_level",
    tags: Iterable[str] | None = None,
    since: str | None = None,
    until: str | None = None,
) -> retriever.Filters | None:
    """Search filters from what a user gave (a path glob, a heading level, tags: `#project`
    also takes `#project/alpha`), or None; a bad level is refused in one line that calls
    it by the `name` the user gave it by."""
    if heading_level is not None and not 1 <= heading_level <= 4:
        raise BadRequest(f"{name} {heading_level}: give 1 to 4 (1 = only under H1 headings)")
    wanted = tuple(dict.fromkeys(t.strip().lstrip("#").strip("/") for t in tags or ()))
    if "" in wanted:
        raise BadRequest("an empty tag: give it as #project or project")
    from askmd.search import dates_in_query  # its patterns load when a date is given

    since = dates_in_query.parse_day(since, "since") if since else ""
    until = dates_in_query.parse_day(until, "until") if until else ""
    if since and until and since > until:
        raise BadRequest(f"since {since} is after until {until}: nothing could match")
    if not source and not heading_level and not wanted and not since and not until:
        return None
    return retriever.Filters(
        source=source or "", heading_level=heading_level or 0, tags=wanted, since=since, until=until
    )


def search_json(query: str, hits: list[retriever.Hit]) -> dict:
    """The `search --json` object: the query, what ranked the results, the results."""
    return {
        "query": query,
        "retriever": getattr(hits, "retriever", "hybrid"),
        "results": [h.to_json() for h in hits],
    }


def _saved_answers_in(hits: list[retriever.Hit], filters: retriever.Filters | None) -> bool:
    """Whether answers askmd saved among the notes were found, and not asked for."""
    wanted = filters is not None and retriever.SAVED_ANSWER in filters.tags
    return not wanted and any(retriever.SAVED_ANSWER in hit.tags for hit in hits)


def check_question(text: str, what: str = "the question") -> None:
    """Refuse, in one line, a question or query no interface can take: longer than any
    accepts, or holding bytes that are not UTF-8 text (the command line hands those on
    as lone surrogates, which no tokenizer reads)."""
    if len(text) > MAX_QUESTION_CHARS:
        raise BadRequest(
            f"{what} is {len(text):,} characters long; the most is {MAX_QUESTION_CHARS:,}"
        )
    if bad := _NOT_TEXT.search(text):
        raise BadRequest(
            f"{what} holds bytes that are not UTF-8 text (at character {bad.start() + 1}): "
            "type it again, or set the terminal to UTF-8"
        )


_NOT_TEXT = re.compile("[\ud800-\udfff]")


@dataclass
class Index:
    """What the commands and the server share, built once from Settings.

    Safe to use from several threads (the HTTP server's): the SQLite manifest gets one
    connection per thread, since a connection's open transaction would be visible to
    every thread using it, and searches read under `lock` while each commit of a sync
    writes under it, so a search sees every file either as it was or as it is now.
    """

    settings: Settings
    loading: Loading = nullcontext  # shows a slow load (a local model) to the user
    lock: ReadWriteLock = field(default_factory=ReadWriteLock, init=False, repr=False)
    _local: threading.local = field(default_factory=threading.local, init=False, repr=False)
    _seen: int | None = field(default=None, init=False, repr=False)  # generation read from
    filler: Filler | None = field(default=None, init=False, repr=False)  # background vectors

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
    def chat(self):
        """The LLM that answers, or None for extractive answers. A local model loads here."""
        s = self.settings
        if not s.llm_configured:
            return None
        from askmd.answer.chat import Chat

        url, key, model = s.openai_base_url, s.openai_api_key, s.llm_model
        max_tokens, extra_body = s.llm_max_tokens, None
        if s.local_model is not None:
            from askmd.answer import local_llm

            with self.loading(f"loading {s.local_model.name} with llama.cpp"):
                self.local_server = local_llm.start(
                    s.local_model, threads=s.local_threads, context=s.local_context
                )
            max_tokens, extra_body = local_llm.sampling(s.local_model, max_tokens, s.local_context)
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
            max_tokens=max_tokens,
            timeout=s.llm_timeout,
            budget=s.llm_budget,
            extra_body=extra_body,
        )

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

    def sync(
        self,
        paths: list[str] | None = None,
        *,
        rebuild: bool = False,
        progress: indexer.Progress | None = None,
        wait: float = WRITE_WAIT_SECONDS,
        on_wait: Callable[[str], None] | None = None,
        queue: float | None = None,
        vectors: bool | None = None,
        windows_too: bool = True,
        emptying: bool = False,
    ) -> indexer.SyncReport:
        """Bring the index in step with the folder: the one door for every change to it.

        `paths` (relative to the knowledge folder, or absolute) limits the sync to those
        notes: each is added, updated or, when it is gone, deleted; a path that was a
        folder takes its known notes along. None looks at the whole folder. `rebuild`
        starts from an empty index (vectors still come from the embedding cache).

        One thread of this process writes at a time: another waits up to `queue` seconds
        (None: its turn, however long) and then raises Busy. Finding that nothing changed
        takes no lock file; to write, a sync waits up to `wait` seconds for another
        process's update (said once through `on_wait`), then raises IndexBusy.

        `vectors` says whether the vector phase runs here too (True), or only the keyword
        phase (False: `index --keyword-only`, or a caller that starts `fill_in_background`).
        None: all of it, unless a background filler runs: then just the vectors of the
        notes in `paths` (a watcher's few saved notes), and the filler does the rest.
        A whole vector phase also gives window vectors to chunks stored without them,
        unless `windows_too` is False (a one-shot search's quick fill).

        A folder that is gone or holds no notes never empties the index, unless
        `emptying` (the `index` command): the report's `kept_all` says it was kept.
        """
        if self.read_only:
            raise AskmdError(
                f"the index folder {self.settings.index_dir} is read-only: it can be searched "
                "but not updated (make it writable, or point --index-dir at another folder)"
            )
        started = time.perf_counter()
        if paths is None and not rebuild and not self.has_index():
            found, skipped = self._notes()
            if not found:  # nothing to keep: a folder with no notes leaves no index behind
                return indexer.SyncReport(files_skipped=skipped)
        # An index holding another folder's notes is never wiped; one made here is marked
        # as this folder's before anything is written into it.
        index_home.check_owner(self.settings.index_dir, self.settings.knowledge_dir, rebuild)
        index_home.record_owner(self.settings.index_dir, self.settings.knowledge_dir)
        auto = vectors is None
        # a filler with nothing left to store: a rebuild's vectors, all in the cache, are
        # stored here at once (a /reindex of a small folder), not waited for
        settled = self.filler is not None and not (self.has_index() and self.manifest.pending())
        if vectors is None:
            vectors = self._foreground_vectors(paths)
        with self.writer.turn(queue, on_wait):
            report = indexer.sync(
                self.settings,
                self.store,
                self.manifest,
                lambda: self.embedder,
                indexer.SyncOptions(
                    rebuild=rebuild,
                    progress=progress,
                    commit=self._commit,
                    wait=wait,
                    on_wait=on_wait,
                    locked=self.follow,
                    paths=paths,
                    vectors=vectors,
                    windows_too=windows_too,
                    emptying=emptying,
                ),
            )
        # The vectors are the running filler's; a few are stored here from the cache when
        # it had nothing left to do: waiting for a group of its own (a model loading) kept
        # the prompt still for 40 s
        if auto and vectors is False and settled:
            self._fill_few(report, progress, wait, FOREGROUND_CHUNKS_LIVE, on_wait)
        if self.filler is not None:
            self.filler.wake()
        report.seconds = time.perf_counter() - started  # waits for a turn included
        return report

    def has_index(self) -> bool:
        """Whether this folder has an index yet (one is made with its first note)."""
        return (self.settings.index_dir / manifest_file.MANIFEST).exists()

    def _notes(self) -> tuple[list[str], list[notes.Skipped]]:
        s = self.settings
        return notes.find(s.knowledge_dir, s.include, s.exclude, follow_symlinks=s.follow_symlinks)

    def _fill_few(
        self,
        report: indexer.SyncReport,
        progress: indexer.Progress | None,
        wait: float,
        limit: int,
        on_wait: Callable[[str], None] | None = None,
    ) -> int:
        """Store the missing vectors here and now when at most `limit` wait (seconds of
        embedding), adding what was done to `report`; how many still wait."""
        if not self.has_index():
            return 0
        waiting = self.manifest.pending()
        if waiting <= limit and indexer.needs_filling(self.settings, self.manifest):
            filled = self.sync(
                progress=progress, wait=wait, on_wait=on_wait, vectors=True, windows_too=False
            )
            report.absorb(filled)
            waiting = filled.chunks_waiting
        return waiting

    def _foreground_vectors(self, paths: list[str] | None) -> bool | list[str]:
        """What a sync embeds itself: everything, unless a background filler runs; then
        only the notes it was given, when they are few (a folder, or many notes, are the
        filler's)."""
        if self.filler is None or not self.filler.running:
            return True
        if paths is None or len(paths) > FOREGROUND_NOTES:
            return False
        sources = indexer.sources_of(self.settings, paths)
        if not sources:
            return False  # a folder among them (a new one, a move): the filler's
        small, size = [], 0  # a 5 MB note is minutes of embedding: the filler's, in slices
        for source in sorted(sources):
            try:
                bytes_ = (self.settings.knowledge_dir / source).stat().st_size
            except OSError:
                bytes_ = 0  # gone (a delete): its vectors are removed, nothing is embedded
            if size + bytes_ <= FOREGROUND_BYTES:
                small.append(source)
                size += bytes_
        return small or False

    def fill_in_background(self, on_error: Callable[[str], None] = lambda message: None) -> None:
        """Store the missing vectors on a background thread, a small group at a time,
        while searches rank by keyword; `on_error` hears once why it stopped, if it fails."""
        if self.read_only or self.filler is not None or not self.has_index():
            return
        from askmd.index.filler import Filler

        self.filler = Filler(self, on_error)
        self.filler.start()

    def fill_some(self, chunks: int, stop: Callable[[], bool]) -> bool:
        """Store the vectors of about `chunks` more chunks (whole notes), or when none wait,
        the window vectors of as many stored without them; True while more wait and this
        call got somewhere. Notes that changed on disk since they were recorded cannot be
        filled until a sync records them again (which wakes the filler): with only those
        left it is False, or the filler would re-read them in a loop. Waits for nobody:
        Busy when another thread of this process is writing, IndexBusy when another
        process is."""
        with self.writer.turn(0):
            vectors = indexer.needs_filling(self.settings, self.manifest)
            if not vectors and not indexer.windows_due(self.settings, self.manifest):
                return False
            with file_lock(self.settings.index_dir):
                self.follow()
                if vectors:
                    waiting = self.manifest.pending()
                    filled = indexer.fill(
                        self.settings,
                        self.store,
                        self.manifest,
                        lambda: self.embedder,
                        commit=self._commit,
                        chunks=chunks,
                        stop=stop,
                    )
                    # A big note is embedded over several calls before it is stored.
                    moved = self.manifest.pending() != waiting or filled.embed_seconds > 0
                    if not moved and not stop():
                        return False  # only notes changed on disk since recorded wait
                else:  # then the window vectors an older index lacks (windows.py)
                    embedder = lambda: self.embedder  # noqa: E731
                    indexer.backfill_windows(
                        self.settings, self.manifest, embedder, chunks=chunks, stop=stop
                    )
            more = indexer.needs_filling(self.settings, self.manifest)
            return more or indexer.windows_due(self.settings, self.manifest)

    def filling(self) -> dict:
        """How far the vectors are: {"chunks", "chunks_embedded", "keyword_ready"}."""
        if not self.has_index():
            return {"chunks": 0, "chunks_embedded": 0, "keyword_ready": False}
        m = self.manifest
        return {
            "chunks": m.total_chunks(),
            "chunks_embedded": m.embedded(),
            "keyword_ready": bool(m.get("gate")),
        }

    @contextmanager
    def writing(
        self,
        queue: float | None = None,
        wait: float = WRITE_WAIT_SECONDS,
        on_wait: Callable[[str], None] | None = None,
    ) -> Iterator[None]:
        """Hold the writer (this process's turn, then the lock file) around a change to
        the folder and the `sync` that takes it in, so that a change refused because
        another process is updating the index has changed nothing."""
        if self.read_only:
            raise AskmdError(
                f"the index folder {self.settings.index_dir} is read-only: it can be searched "
                "but not updated (make it writable, or point --index-dir at another folder)"
            )
        with self.writer.holding(queue, wait, on_wait):
            yield

    def sync_to_read(
        self,
        progress: indexer.Progress | None = None,
        warn: Callable[[str], None] = lambda message: None,
        background: bool = False,
        foreground: int | None = None,
    ) -> indexer.SyncReport | None:
        """Sync before answering, unless another process is updating the index: then wait
        READ_WAIT_SECONDS at most and answer from the index as it is (None, after one
        `warn`), since a search needs no writer lock. A read-only index folder is not
        synced at all (one `warn`).

        With `background` (a REPL, a server: they stay up) only the keyword phase runs
        here and the vectors are stored by `fill_in_background`, so the first question is
        answered as soon as every note is chunked, ranked by keyword until the vectors
        are in. `foreground` overrides how many missing vectors are stored here first (0:
        none, for a person waiting at a prompt; by default FOREGROUND_CHUNKS_LIVE with
        `background`, else FOREGROUND_CHUNKS)."""
        if self.read_only:
            warn("the index folder is read-only: searching it as it is")
            return None
        try:
            report = self.sync(progress=progress, wait=READ_WAIT_SECONDS, vectors=False)
            limit = FOREGROUND_CHUNKS_LIVE if background else FOREGROUND_CHUNKS
            limit = limit if foreground is None else foreground
            waiting = self._fill_few(report, progress, READ_WAIT_SECONDS, limit)
            if waiting and not background and self.filler is None:
                warn(
                    f"{waiting:,} chunks wait for their vectors: ranking by keyword until "
                    f"{wording.command('index')} (or the REPL, or serve) has stored them"
                )
        except indexer.IndexBusy as exc:
            warn(f"pid {exc.holder} is updating the index; answering from the index as it is")
            report = None
        if background:
            self.fill_in_background(warn)
        return report

    @contextmanager
    def _commit(self) -> Iterator[None]:
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

    def search(
        self,
        query: str,
        k: int,
        mode: str = "hybrid",
        filters: retriever.Filters | None = None,
    ) -> list[retriever.Hit]:
        check_question(query, "the query")
        if not self.has_index():
            return []  # no notes yet: nothing to find, and no index to make for it
        self.follow()
        try:
            return self._search(query, k, mode, filters)
        except AskmdError:
            if not self._reopened_replaced():
                raise
            return self._search(query, k, mode, filters)

    def _search(
        self, query: str, k: int, mode: str, filters: retriever.Filters | None
    ) -> list[retriever.Hit]:
        embedder = self.embedder
        meta = {"embedder": embedder.id, "fingerprint": indexer.fingerprint(self.settings)}
        with self.lock.reading():
            self.store.ensure_open(meta)
            return retriever.search(
                query, embedder, self.store, self.manifest, k, mode=mode, filters=filters,
                period=self.dates_in(query),
            )  # fmt: skip

    def dates_in(self, query: str) -> dates_in_query.Period | None:
        """The day or period a question names, against today (or ASKMD_TODAY); a day
        without its year is the latest such day a note or entry is of."""
        from askmd.search import dates_in_query  # loaded by the first search, not by a sync

        def held(since: str, until: str) -> bool:
            return bool(self.manifest.dated_between(since, until, 1))

        return dates_in_query.understand(query, dates_in_query.today(), held)

    def _reopened_replaced(self) -> bool:
        """After a failed search: True when another process had replaced the collection
        (a rebuild) and it is now reopened, so the search is worth one more try. A store
        that is really broken fails again and its error, with its advice, stands."""
        if held_by_another_thread(self.settings.index_dir):
            return False  # nobody else can have replaced it; the store is the writer's
        meta = {"embedder": self.embedder.id, "fingerprint": indexer.fingerprint(self.settings)}
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

    def ask(
        self,
        question: str,
        history: list[Turn],
        k: int,
        filters: retriever.Filters | None = None,
        show: Show | None = None,
        searched: Searched | None = None,
    ) -> Answer:
        """Answer one question from the notes. `show`, when given, displays the model's
        reply as it streams (its pieces, and how many passages it may cite) and returns
        the text; `searched` hears of each search with what it found. The citations are
        checked against the passages of the last search (the one answered from)."""
        check_question(question)
        found: list[retriever.Hit] = []
        ranked_by = ["hybrid"]
        reranker = rerank.from_settings(self.settings, self.chat)
        depth = max(k, rerank.DEPTH) if reranker else k  # a reranker reads more, keeps k
        restate = rerank.search_rewrite(self.settings, self.chat)

        asked = filters.dates() if filters else None
        dated: list[dict | None] = [asked]

        def search(query: str) -> list[retriever.Hit]:
            named = self.dates_in(query)
            dated[0] = named.to_json() if named else asked
            asked_for = restate(query) if restate else query
            hits = self.search(asked_for, depth, filters=filters)
            if _saved_answers_in(hits, filters):  # again without them: see Filters
                without = replace(filters or retriever.Filters(), saved_answers=False)
                hits = self.search(asked_for, depth, filters=without)
            ranked_by[0] = getattr(hits, "retriever", "hybrid")
            if named is not None:  # the day asked about: which passages are its entries
                from askmd.answer.dated import entries

                hits = entries(hits, self.settings.knowledge_dir)
            found[:] = hits
            if searched is not None:
                searched(query, list(found))
            return list(found)

        def reorder(query: str, hits: list[retriever.Hit]) -> list[retriever.Hit]:
            assert reranker is not None
            found[:] = reranker(query, hits)[:k]
            return list(found)

        def stream(pieces: Iterator[str]) -> str:
            assert show is not None
            return show(pieces, len(found))

        from askmd.answer import exchange  # the answer stage loads with the first question

        result = exchange.ask(
            question,
            history,
            search,
            self.chat,
            show=stream if show else None,
            rerank=reorder if reranker else None,
            ground=self.grounding(),
        )
        result.retriever = ranked_by[0]
        result.dates = dated[0]
        return result

    def grounding(self) -> grounding.Grounding:
        """What judges whether passages answer a question, over this index."""
        from askmd.answer import grounding

        def idf(terms: list[str], cjk: bool | None) -> dict[str, float]:
            with self.lock.reading():
                return self.manifest.idf(terms, cjk)

        def mentioned(terms: list[str]) -> set[str]:
            if not self.has_index():  # a folder with no notes has no index, nor gets one
                return set()
            with self.lock.reading():
                return self.manifest.mentioned(terms)

        def together(terms: list[str]) -> bool:
            with self.lock.reading():
                return self.manifest.together(terms)

        def chinese_notes() -> bool:
            if not self.has_index():
                return False
            with self.lock.reading():
                return self.manifest.non_cjk_share() < 1.0

        english, multilingual = grounding.local_models(self.embedder)
        return grounding.Grounding(
            english,
            multilingual,
            idf,
            self.settings.min_confidence,
            mentioned=mentioned,
            together=together,
            chinese_notes=chinese_notes,
        )

    def stats(self) -> dict:
        stats = {
            "knowledge_dir": str(self.settings.knowledge_dir.resolve()),
            "files": 0,
            "chunks": 0,
            "embedder": indexer.embedder_id(self.settings),
            "dimension": 0,
            "index_dir": str(self.settings.index_dir),
            "last_sync": None,
            "links": 0,
            "broken_links": 0,
            "chunks_embedded": 0,
            "keyword_ready": False,
            "collection": self.settings.collection,
            "filler": self.filler.state if self.filler is not None else "off",
        }
        if not (self.settings.index_dir / manifest_file.MANIFEST).exists():
            return stats  # nothing indexed yet; do not create an index just to say so
        self.follow()
        m = self.manifest
        if self.filler is None:  # a REPL or server's, when one runs over this index
            from askmd.index.filler import recorded

            stats["filler"] = recorded(m.get("filler"))
        stats.update(
            files=len(m.files()),
            embedder=m.get("embedder") or stats["embedder"],
            dimension=int(m.get("dimension") or 0),
            last_sync=m.get("last_sync"),
            **self.filling(),  # chunks, chunks_embedded, keyword_ready
        )
        found = self.link_graph()
        stats.update(links=len(found), broken_links=sum(1 for k in found if k.to is None))
        return stats

    def link_graph(self) -> list[vault.Resolved]:
        """Every indexed link, resolved against the indexed notes and the files on disk
        (attachments are link targets too)."""
        m = self.manifest
        return vault.graph(m.links(), set(m.files()) | _folder_files(self.settings))

    def backlinks(self) -> dict[str, int]:
        """How many other notes link to each note (for /debug)."""
        linking: dict[str, set[str]] = {}
        for k in self.link_graph():
            if k.to and k.to != k.source:
                linking.setdefault(k.to, set()).add(k.source)
        return {note: len(sources) for note, sources in linking.items()}

    def links(self, note: str) -> dict:
        """A note's outgoing links and its backlinks; `note` is a path or a name, found
        as a link to it would be."""
        source = self.find_note(note)
        found = self.link_graph()
        return {
            "note": source,
            "links": [
                {"target": k.to or k.target, "heading": k.heading, "line": k.line,
                 "broken": k.to is None}
                for k in found
                if k.source == source
            ],
            "backlinks": [
                {"source": k.source, "line": k.line}
                for k in found
                if k.to == source and k.source != source
            ],
        }  # fmt: skip

    def find_note(self, name: str) -> str:
        """The indexed note a path or a name means, found as a link to it would be."""
        self.follow()
        indexed = set(self.manifest.files())
        source = vault.Resolver(indexed).resolve(name.strip().lstrip("/"), "")
        if not name.strip() or source is None or source not in indexed:
            raise NotFound(f"no indexed note named {name!r}")
        return source

    def related(self, note: str, k: int = RELATED_K, method: str = "maxsim") -> dict:
        """The notes most related to `note` (a path or a name, as `links` takes it): by
        meaning, links and tags (search/related.py). While its vectors wait, meaning is
        judged by keyword and each such result says "similar words"."""
        from askmd.search import related  # only `related` needs it

        if k < 1:
            raise BadRequest(f"k {k}: give 1 or more")
        source = self.find_note(note)
        edges = [(link.source, link.to) for link in self.link_graph() if link.to is not None]
        m = self.manifest
        indexed = set(m.files())
        similar, why = self.similar_notes(source, method)
        ranked = related.rank(source, k, indexed, edges, m.tags_by_source(), similar, why)
        return {"note": source, "related": [r.to_json() for r in ranked]}

    def similar_notes(
        self, source: str, method: str = "maxsim"
    ) -> tuple[list[tuple[str, float]], str]:
        """Other notes by meaning, best first, and the why it gives: by the note's vectors
        ("similar") when every chunk of it has one and no note waits for its own, else by
        its most telling words ("similar words")."""
        from askmd.search import related  # only `related` needs it

        m = self.manifest
        chunks = m.chunks_of([source])
        ids = [c.id for c in chunks]
        if chunks and not m.pending() and len(m.with_vectors(ids)) == len(ids):
            embedder = self.embedder
            meta = {"embedder": embedder.id, "fingerprint": indexer.fingerprint(self.settings)}
            with self.lock.reading():
                self.store.ensure_open(meta)
                vectors = self._vectors(chunks, embedder.id)

                def nearest(vector, n: int) -> list[tuple[str, float]]:
                    found = self.store.nearest(vector, n, content=False)
                    sources = m.sources_of([f.id for f in found])
                    return [(sources[f.id], 1 - f.distance) for f in found if f.id in sources]

                return related.by_meaning(vectors, nearest, source, method), related.SIMILAR
        terms = related.keyword_terms((c.text for c in chunks), m.idf)
        best: dict[str, float] = {}
        found = m.keyword(terms, related.POOL * 4)
        sources = m.sources_of([i for i, _ in found])
        for chunk_id, score in found:
            other = sources.get(chunk_id)
            if other and other != source and score > best.get(other, -1.0):
                best[other] = score
        return sorted(best.items(), key=lambda i: (-i[1], i[0])), related.SIMILAR_WORDS

    def _vectors(self, chunks: list[manifest_file.Pending], embedder_id: str):
        """The note's chunk vectors: from the embedding cache, else from the store."""
        import numpy as np

        cached = self.manifest.cached(embedder_id, [c.text_hash for c in chunks])
        missing = [c.id for c in chunks if c.text_hash not in cached]
        stored = self.store.vectors(missing)
        rows = [cached.get(c.text_hash, stored.get(c.id)) for c in chunks]
        return np.array([r for r in rows if r is not None], dtype=np.float32)


def _folder_files(settings: Settings) -> set[str]:
    """Every file under the knowledge folder but hidden ones, as relative paths."""
    root = settings.knowledge_dir
    found: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        rel = os.path.relpath(dirpath, root)
        for name in filenames:
            if not name.startswith("."):
                found.add(name if rel == "." else f"{rel}/{name}".replace(os.sep, "/"))
    return found
