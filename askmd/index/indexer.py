"""Bring the index in step with the knowledge folder, re-embedding only what changed.

The fast path: one gate hash over every file's MD5, the chunker version, the chunk
settings and the embedder id; if it matches the last sync, nothing else happens (Chroma
is not even opened). Otherwise files are compared one by one with the manifest: new and
changed files are re-chunked and their chunks replaced as a unit, deleted files' chunks
go, and only chunk texts missing from the embedding cache are embedded. A different
embedder or chunker setting means a rebuild. One writer at a time, by a lock file.

Given `paths`, only those notes are looked at (a watcher's changed files): the others are
taken as the manifest has them, so a one-file change costs no walk of the folder.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import chunker
from askmd import terms
from askmd.errors import Damaged, IndexBusy  # noqa: F401 - raised by sync; callers catch it here
from askmd.index import chunk_dates, prepare, windows
from askmd.index import embedding_models as models
from askmd.index.manifest import FileRecord, Manifest, now
from askmd.index.rwlock import file_lock
from askmd.index.store import Store
from askmd.read import notes, vault
from askmd.settings import Settings

if TYPE_CHECKING:  # embedder and numpy load only when something must be embedded
    from askmd.index.embedder import Embedder

GROUP_CHUNKS = 256  # chunks stored and recorded per step: the most a killed run redoes
# Texts handed to the embedder per call: enough for it to sort by length and batch well,
# few enough for the progress bar to move every few seconds.
EMBED_SLICE = 64
SLICE_CAP = 256  # the most texts per call however many batches a server takes at once
# Cached vectors no chunk uses are kept until they outnumber the index by this much, so a
# file deleted and restored (a branch switch, an undo) is not embedded again.
CACHE_SLACK = 1000


@dataclass
class SyncReport:
    files_scanned: int = 0
    files_added: int = 0
    files_changed: int = 0
    files_deleted: int = 0
    files_unchanged: int = 0
    files_skipped: list[notes.Skipped] = field(default_factory=list)
    chunks_embedded: int = 0
    chunks_deleted: int = 0
    chunks_total: int = 0
    chunks_waiting: int = 0  # recorded, searchable by keyword, their vectors not stored yet
    rebuilt: bool = False
    rebuild_reason: str = ""
    seconds: float = 0.0
    embed_seconds: float = 0.0  # of `seconds`, spent inside the embedder
    warnings: list[str] = field(default_factory=list)
    # Set when the folder was gone or held no notes and the index kept them: said at once
    # by a watcher too, which shows no warnings. Not in the JSON (the warning is).
    kept_all: str = field(default="", repr=False)

    def to_json(self) -> dict:
        data = asdict(self)
        del data["kept_all"]
        data["files_skipped"] = [{"path": s.source, "reason": s.reason} for s in self.files_skipped]
        return data


class Progress(Protocol):
    """What a sync reports as it goes: `start` with the files to index, `chunked` per file
    as it is read and split (so the file count moves from the start), `advance` per group
    of files recorded, `step` naming a long step that moves no count ("" when it is over);
    then `filling` with the chunks that wait for vectors and `advance` per batch of them
    embedded or found cached; then `finish`."""

    def start(self, files: int, chunks: int) -> None: ...
    def chunked(self, chunks: int) -> None: ...
    def filling(self, chunks: int) -> None: ...
    def advance(self, files: int = 0, chunks: int = 0) -> None: ...
    def step(self, label: str) -> None: ...
    def finish(self) -> None: ...


class NoProgress:
    def start(self, files: int, chunks: int) -> None: ...
    def chunked(self, chunks: int) -> None: ...
    def filling(self, chunks: int) -> None: ...
    def advance(self, files: int = 0, chunks: int = 0) -> None: ...
    def step(self, label: str) -> None: ...
    def finish(self) -> None: ...


def embedder_id(settings: Settings) -> str:
    """The embedder's id without loading it, so a no-change sync stays instant."""
    return models.embedder_id(settings.embedding_backend, settings.embedding_model)


def companion_id(settings: Settings) -> str:
    """The id of the model that embeds CJK chunks beside the settings' one, or ""."""
    side = models.companion(embedder_id(settings))
    return side.id if side else ""


# What the manifest records per chunk; a change means every file is recorded again.
LAYOUT = 2  # 2: chunk texts and metadata kept, vectors filled after (keyword first)


def fingerprint(settings: Settings) -> str:
    """What the index depends on. `cjk=` (the CJK chunks' second model) is left out of
    the rebuild decision: a change of it redoes only those chunks (`_change_side_model`)."""
    cjk = companion_id(settings)
    return (
        f"embedder={embedder_id(settings)};chunker={chunker.VERSION};terms={terms.VERSION};"
        f"layout={LAYOUT};"
        f"size={settings.chunk_size};overlap={settings.chunk_overlap}"
        + (f";cjk={cjk}" if cjk else "")
    )


def _reread_links(settings: Settings, manifest: Manifest) -> None:
    """The links of every note, read again where an older version of the link reader
    recorded them (Markdown links were not read before LINKS_VERSION 2): only the links
    table changes, nothing is chunked or embedded again."""
    found: dict[str, list] = {}
    for source in manifest.files():
        if not vault.is_note(source):
            continue  # PDFs and Word files hold no links the reader looks for
        try:
            note = notes.read(settings.knowledge_dir, source, settings.max_file_bytes)
        except notes.Unreadable:
            continue  # its next sync says why; its old links stay meanwhile
        found[source] = prepare.link_rows(note)
    manifest.replace_links(found)
    manifest.set(links_version=vault.LINKS_VERSION)


def _hint_language(manifest: Manifest, embedder: str, report: SyncReport) -> None:
    """Say once per change when an English-only model meets mostly Chinese notes and the
    multilingual model that would embed them is not installed."""
    share = manifest.cjk_share()
    if models.english_only(embedder) and not models.companion(embedder) and share >= 0.5:
        report.warnings.append(
            f"{share:.0%} of your notes' text is Chinese or Japanese, and the default "
            "embedding model reads English only, so keyword search alone finds those notes. "
            f"For search by meaning in Chinese install {models.CJK_MODEL.pin} "
            "(pip install -r requirements.txt): it then embeds them too."
        )


@dataclass
class _Current:
    md5: str
    size: int
    mtime_ns: int
    note: notes.Note | None  # None when the stat matched the manifest and it was not read
    kept: bool = False  # unreadable now, but its earlier chunks stay


def sync(
    settings: Settings,
    store: Store,
    manifest: Manifest,
    make_embedder: Callable[[], Embedder],
    *,
    rebuild: bool = False,
    progress: Progress | None = None,
    commit: Callable[[], AbstractContextManager] = nullcontext,
    wait: float = 0.0,
    on_wait: Callable[[str], None] | None = None,
    locked: Callable[[], None] = lambda: None,
    paths: list[str] | None = None,
    vectors: bool | list[str] = True,
    windows_too: bool = True,
    emptying: bool = False,
) -> SyncReport:
    """Make the index match the folder; see the module docstring.

    Two phases: every new or changed file is chunked and its chunks, texts and keyword
    postings recorded (the folder is then searchable by keyword), then the vector store is
    filled (`fill`). `vectors` says how much of the second phase runs here: True all of
    it, False none (a background filler does it), a list of sources only theirs (a
    watcher's few changed notes, while a background filler works through the rest).
    With all of it and `windows_too`, chunks stored without window vectors (an index
    built before them) get theirs too (`backfill_windows`).

    Every change that readers could see (a group of files recorded, the deleted files
    dropped, a group of vectors stored) happens inside `commit()`, so a caller serving
    searches at the same time can keep them from seeing a file half-replaced. Finding that
    nothing changed takes no lock, so a server re-scanning its folder never keeps other
    processes waiting; to write, it waits up to `wait` seconds for the lock file (see
    rwlock.file_lock) and then calls `locked()`, where a long-lived caller reopens what
    another process changed before it writes through it.

    `paths` (relative to the knowledge folder, or absolute) limits the sync to those
    notes, and to every note known under a path that is a folder: each is added,
    updated or, when it is gone or no longer a note, deleted. A folder that exists is
    walked whole, as is everything when the index must be rebuilt.

    A knowledge folder that is gone, or that holds no notes while the index holds some,
    is taken for a folder moved away or a disk not mounted: the index keeps every note and
    the report says so (`kept_all`). Only `emptying` (the `index` command, asked for by
    hand) applies the removal of every note.
    """
    started = time.perf_counter()
    progress = progress or NoProgress()
    try:  # the bar goes on Ctrl-C too: the terminal gets its cursor back
        fp = fingerprint(settings)
        looked = None  # the lock-free look, reused under the lock if nothing moved since
        if not rebuild:
            report, generation, current, same = _unchanged(settings, manifest, fp, paths, emptying)
            looked = (report, generation, current)
            same = same and not manifest.packing_due()  # an index from older code packs once
            same = same and not manifest.repeats_due()  # ... and drops a note's repeats once
            same = same and not manifest.copies_due()  # ... and stores shared passages apart
            same = same and not chunk_dates.due(manifest)  # ... and dates its chunks once
            if same:
                filling = bool(vectors) and needs_filling(settings, manifest)
                backfill = vectors is True and windows_too and windows_due(settings, manifest)
                if filling or backfill:
                    with file_lock(settings.index_dir, wait, on_wait):
                        locked()
                        only = None if vectors is True else vectors
                        if filling:
                            fill(settings, store, manifest, make_embedder, report=report,
                                 progress=progress, commit=commit, sources=only)  # fmt: skip
                        if backfill:
                            backfill_windows(settings, manifest, make_embedder, progress=progress)
                report.chunks_waiting = manifest.pending()
                report.seconds = time.perf_counter() - started
                return report
        with file_lock(settings.index_dir, wait, on_wait):
            locked()
            if manifest.loading():
                with commit():
                    manifest.finish_load()
            if manifest.repeats_due():  # notes indexed by older code with repeated chunks
                with commit():
                    if manifest.reread_repeats():
                        looked, paths = None, None  # those notes are read again, all of them
            known = manifest.files()
            first = not known  # every file is recorded now, its links read by this code
            old_fp = manifest.get("fingerprint")
            reason = ""
            if old_fp and old_fp != fp and not rebuild:
                reason = _what_changed(old_fp, fp)
            elif rebuild:
                reason = "asked for"
            elif manifest.copies_due():  # identical vectors cut HNSW's graph: rebuilt once
                if manifest.copies_shared():  # ... every vector from the embedding cache
                    reason = "passages several notes share are now stored apart"
                else:
                    manifest.set(copies="apart")
            fresh = bool(reason)
            if looked is not None and not fresh and manifest.generation() == looked[1]:
                report, current = looked[0], looked[2]  # nobody wrote since: no second read
            else:
                report = SyncReport()
                only = None if fresh else _only(settings, known, paths)
                current = _scan(settings, known, report, trust_stat=not fresh, only=only)
            if known and not emptying and _kept_all(settings, known, current, report):
                report.chunks_total = manifest.total_chunks()
                report.chunks_waiting = manifest.pending()
                report.seconds = time.perf_counter() - started
                return report
            if known and not current:  # `index` over a folder emptied on purpose
                report.warnings.append(
                    f"the knowledge folder holds no notes: all {len(known):,} indexed notes "
                    "are removed from the index"
                )
            report.rebuild_reason = reason
            if not fresh and manifest.get("gate") == _gate(fp, current):
                _touch(manifest, known, current)
                report.files_unchanged = len(current)
            else:
                if fresh:
                    with commit():
                        manifest.forget_all()  # the vector store is emptied by the filling
                    known = {}
                    report.rebuilt = True
                if fresh or first:  # every file recorded from here on is this code's
                    _mark_format(manifest, fp)
                _record(_Keywords(settings, manifest, known, current, report, progress, commit))
                manifest.set(gate=_gate(fp, current), fingerprint=fp,
                             embedder=embedder_id(settings), last_sync=now())  # fmt: skip
                if report.files_added or report.files_changed:
                    _hint_language(manifest, embedder_id(settings), report)
            if manifest.get("links_version") != vault.LINKS_VERSION:
                with commit():
                    _reread_links(settings, manifest)
            if chunk_dates.due(manifest):  # an index from before dates: its chunks dated
                with commit():
                    chunk_dates.backfill(manifest, settings.knowledge_dir, settings.max_file_bytes)
            if manifest.packing_due():  # common terms' postings as arrays: fast keyword search
                # Outside commit(): searches need not wait (seconds on a big folder). They
                # read through their own connections, which see the packing before or after,
                # and a packing changes no score, so the generation stays as it is.
                progress.step("packing common terms")
                manifest.pack()
                progress.step("")
            if vectors and needs_filling(settings, manifest):
                only = None if vectors is True else vectors
                fill(settings, store, manifest, make_embedder, report=report,
                     progress=progress, commit=commit, sources=only)  # fmt: skip
            if vectors is True and windows_too and windows_due(settings, manifest):
                backfill_windows(settings, manifest, make_embedder, progress=progress)
            report.chunks_total = manifest.total_chunks()
            report.chunks_waiting = manifest.pending()
        report.seconds = time.perf_counter() - started
        return report
    finally:
        progress.finish()


def _kept_all(
    settings: Settings,
    known: dict[str, FileRecord],
    current: dict[str, _Current],
    report: SyncReport,
) -> bool:
    """Whether this sync must change nothing because the folder is gone or holds no notes
    (it would delete every indexed note); then the report says so."""
    root = settings.knowledge_dir
    if root.is_dir() and current:
        return False
    what = "is gone" if not root.is_dir() else "holds no notes"
    report.kept_all = (
        f"the knowledge folder {root} {what}: the index keeps its {len(known):,} notes "
        "(if the folder was moved, put it back; to remove them all from the index, run "
        "python rag.py index)"
    )
    report.warnings.append(report.kept_all)
    report.files_deleted = report.files_added = report.files_changed = 0
    report.files_unchanged = len(known)
    return True


def _mark_format(manifest: Manifest, fp: str) -> None:
    """Record, before the first file, that this index is this code's: links read, repeats
    dropped, shared passages stored apart, these settings. A first build killed half-way
    is then resumed by the next run, not taken for an index of older code and rebuilt."""
    manifest.set(links_version=vault.LINKS_VERSION, repeats="once", copies="apart", fingerprint=fp)
    manifest.set(**{chunk_dates.KEY: chunk_dates.VERSION})


@dataclass
class _Keywords:
    """One sync's keyword phase: what recording every group of files needs, held once."""

    settings: Settings
    manifest: Manifest
    known: dict[str, FileRecord]  # as the manifest had the files before this sync
    current: dict[str, _Current]  # as they are on disk now
    report: SyncReport
    progress: Progress
    commit: Callable[[], AbstractContextManager]


def _record(k: _Keywords) -> None:
    """The keyword phase: drop deleted files, record new and changed ones (chunks, texts,
    postings, links), each group of files in one commit."""
    manifest, known, current, report = k.manifest, k.known, k.current, k.report
    deleted = sorted(s for s in known if s not in current)
    changed = [s for s in current if s in known and known[s].md5 != current[s].md5]
    added = [s for s in current if s not in known and not current[s].kept]
    report.files_added, report.files_changed = len(added), len(changed)
    report.files_deleted = len(deleted)
    report.files_unchanged = len(current) - len(added) - len(changed)
    report.files_unchanged -= sum(1 for s in current if current[s].kept and s not in known)
    if deleted:
        with k.commit():
            manifest.forget(deleted)
        report.chunks_deleted += sum(known[s].chunks for s in deleted)
    _touch(manifest, known, current)
    if changed:  # their old vectors leave the store before the new ones are stored
        manifest.mark_stale(changed)
    _index(k, added + changed)


def needs_filling(settings: Settings, manifest: Manifest) -> bool:
    """Whether the vector store lags the manifest: chunks without vectors, files whose
    vectors must go, an emptied index, or a second (CJK) model that changed. Read from
    the manifest alone, without loading a model."""
    if not manifest.vectors_kept():
        return False
    return bool(
        manifest.pending()
        or manifest.stale()
        or manifest.get("reset_vectors")
        or (manifest.get("companion") or "") != companion_id(settings)
        and manifest.total_chunks()
        or bool(companion_id(settings))
        and manifest.get("side_scope") != "all"
        and manifest.has_cjk_chunks()
    )


def windows_due(settings: Settings, manifest: Manifest) -> bool:
    """Whether stored chunks may lack window vectors (windows.py): the settings' model (or
    the second model beside it) makes them and the manifest does not say every chunk has
    its entry. Read from the manifest alone."""
    return bool(_owed_windows(settings, manifest))


def _owed_windows(settings: Settings, manifest: Manifest) -> list[tuple[str, str, str]]:
    """(meta key, window key, the embedder whose vectors mark the chunks that get them) of
    each kind of window vectors not marked done: MiniLM's of every chunk, and those of
    the second model's space (embedding_models.companion), chunks with its vector."""
    embedder = embedder_id(settings)
    if embedder != models.MINILM.id or not manifest.vectors_kept():
        return []
    if manifest.total_chunks() == 0:
        return []
    owed = []
    if manifest.get("windows") != windows.key(embedder):
        owed.append(("windows", windows.key(embedder), ""))
    side = manifest.get("companion") or ""
    if side and manifest.get("side_windows") != windows.key(side):
        owed.append(("side_windows", windows.key(side), side))
    return owed


def backfill_windows(
    settings: Settings,
    manifest: Manifest,
    make_embedder: Callable[[], Embedder],
    *,
    chunks: int | None = None,
    stop: Callable[[], bool] = lambda: False,
    progress: Progress | None = None,
) -> None:
    """Give window vectors to stored chunks that have none: an index built before they
    existed gets them without a rebuild, whole files at a time (the vectors are kept; the
    model runs once more over those chunks), `stop` asked between groups, about `chunks`
    at most per kind. Searches meanwhile use the windows that are there. Once every chunk
    has its entry the manifest says so and `windows_due` is False. Called with the lock
    file held."""
    embedder = None
    progress = progress or NoProgress()
    for meta, key, having in _owed_windows(settings, manifest):
        # Where the last call stopped, so a filler's small calls do not look through the
        # files already done each time (a scan of all chunks takes seconds at 250k).
        cursor = meta + "_after"
        after = manifest.get(cursor) or ""
        if not manifest.without_windows(key, 1, after, having) and not (
            after and manifest.without_windows(key, 1, "", having)
        ):  # all done already: no model to load
            manifest.set(**{meta: key, cursor: ""})
            continue
        embedder = embedder or make_embedder()
        keep = _window_keeper(embedder, key, manifest)
        if keep is None:  # nothing here makes them
            manifest.set(**{meta: key, cursor: ""})
            continue
        w = _Writer(settings, None, manifest, embedder, SyncReport(), progress, nullcontext)
        done, skipped, from_start = 0, set(), not after
        while not stop() and (chunks is None or done < chunks):
            size = GROUP_CHUNKS if chunks is None else min(GROUP_CHUNKS, chunks - done)
            wanted = manifest.without_windows(key, size, after, having)
            if not wanted and not from_start:  # then the files before where this call began
                after, from_start = "", True
                continue
            if not wanted:
                # Every file looked at: no look-up from now on. A file that changed on disk
                # or cannot be read (`skipped`) is not retried here, or a filler would retry
                # it without end: its next sync records its chunks again, with their windows.
                manifest.set(**{meta: key})
                after = ""
                break
            after = wanted[-1][0]
            rows = manifest.chunks_of(sorted({s for s, _ in wanted}))
            hashes = sorted({h for _, h in wanted})
            starts: dict[str, int] = {}
            progress.step("storing window vectors")
            text_of = _embedding_texts(w, rows, hashes, skipped, starts)
            missing = sorted((h for h in hashes if h in text_of), key=lambda h: len(text_of[h]))
            latin = _latin(rows, set(missing))
            for first in range(0, len(missing), EMBED_SLICE):
                part = missing[first : first + EMBED_SLICE]
                keep(part, [text_of[h] for h in part], [starts[h] for h in part], latin)
            done += len(hashes)
        manifest.set(**{cursor: after})
        progress.step("")


def _window_keeper(embedder: Embedder, key: str, manifest: Manifest):
    """How this embedder makes and caches the window vectors kept under `key`: a function
    of (text hashes, their embedding texts, where their own lines start, the Latin-script
    ones), or None when it makes none."""
    with_windows = getattr(embedder, "embed_windows", None)
    if with_windows is not None and windows.key(embedder.id) == key:

        def late(part: list[str], texts: list[str], starts: list[int], latin: set[str]) -> None:
            _, pooled = with_windows(texts, starts)
            _keep_windows(manifest, embedder.id, part, pooled, latin)

        return late
    side = getattr(embedder, "companion_id", None)
    if side and windows.key(side) == key:
        return lambda part, texts, starts, _latin: _keep_side_windows(
            manifest, embedder.companion(), side, part, texts, starts
        )
    return None


def fill(
    settings: Settings,
    store: Store,
    manifest: Manifest,
    make_embedder: Callable[[], Embedder],
    *,
    report: SyncReport | None = None,
    progress: Progress | None = None,
    commit: Callable[[], AbstractContextManager] = nullcontext,
    sources: list[str] | None = None,
    chunks: int | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> SyncReport:
    """The vector phase: embed (cache misses only) and store the chunks that wait for
    vectors, whole files at a time, each group in one commit, marking them filled. Called
    with the lock file held. `sources` limits it to those files, `chunks` stops it after
    about that many, `stop` is asked between groups. Resumable at any point: a killed run
    loses at most the group in flight, whose vectors are in the cache already."""
    report = report if report is not None else SyncReport()
    progress = progress or NoProgress()
    embedder = make_embedder()
    meta = {"embedder": embedder.id, "fingerprint": fingerprint(settings)}
    with store.releasing():  # a Chroma server's writer lease, claimed when it is opened
        _open_for_filling(store, manifest, meta, report, commit, settings.knowledge_dir)
        _fill(settings, store, manifest, embedder, report, progress, commit, sources, chunks, stop)
    return report


def _fill(
    settings: Settings,
    store: Store,
    manifest: Manifest,
    embedder: Embedder,
    report: SyncReport,
    progress: Progress,
    commit: Callable[[], AbstractContextManager],
    sources: list[str] | None,
    chunks: int | None,
    stop: Callable[[], bool],
) -> None:
    # Both may make chunks wait again: a commit, or a thread of a long-lived caller would
    # take the new generation for another process's and reopen the store under this one.
    with commit():
        _change_side_model(store, manifest, getattr(embedder, "companion_id", None) or "")
        _widen_side(manifest, getattr(embedder, "companion_id", None) or "")
    w = _Writer(settings, store, manifest, embedder, report, progress, commit)
    progress.filling(manifest.pending(sources))
    done = 0
    skipped: set[str] = set()  # files changed on disk since recorded: their sync redoes them
    while not stop():
        # An embeddings server with several batches in flight gets groups that fill them.
        group = max(GROUP_CHUNKS, int(getattr(embedder, "slice_size", 0)))
        size = group if chunks is None else min(group, chunks)
        picked = manifest.pending_sources(size, among=sources, skip=skipped)
        if not picked:
            break
        done += _fill_group(w, picked, skipped, budget=chunks, stop=stop)
        if chunks is not None and done >= chunks:
            break
    manifest.set(
        embedder=embedder.id,
        dimension=str(embedder.dimension),
        companion=getattr(embedder, "companion_id", None) or "",
    )
    if not manifest.pending() and manifest.cache_size(embedder.id) > 2 * (
        manifest.total_chunks() + CACHE_SLACK
    ):
        manifest.prune_cache(embedder.id)
        manifest.prune_cache(windows.key(embedder.id))


def _open_for_filling(
    store: Store, manifest: Manifest, meta: dict, report: SyncReport, commit, folder: Path
) -> None:
    """Open the vector store and make it agree with the manifest: emptied after a
    rebuild or when built with other settings, moved aside when damaged, the vectors of
    deleted and changed files removed, and any file whose vector count differs from the
    manifest's (a killed run, a store changed behind our back) made to wait again."""
    try:
        stored = store.open(meta)
        store.claim(folder)  # a Chroma server shared by machines: one writer at a time
        in_store = store.check()
    except Damaged as exc:
        with commit():
            _recover(store, manifest, meta, exc, report)
        return
    built_for = str(stored.get("fingerprint", ""))
    if manifest.get("reset_vectors") or _what_changed(built_for, meta["fingerprint"]):
        with commit():
            store.reset(meta)
            manifest.unfill()
            manifest.cleared(manifest.stale())
            manifest.set(reset_vectors="")
        return
    gone = manifest.stale()
    if gone:
        with commit():
            store.delete(gone)
        manifest.cleared(gone)
        in_store = store.count()
    if in_store != manifest.embedded():
        with commit():
            _repair(store, manifest, report)


def _unchanged(
    settings: Settings,
    manifest: Manifest,
    fp: str,
    paths: list[str] | None,
    emptying: bool = False,
) -> tuple[SyncReport, int, dict[str, _Current], bool]:
    """A look at the folder without the write lock (it only reads: stat()s, the files
    whose stat moved, and the manifest): its report, the manifest generation it saw, what
    it found, and whether nothing needs writing."""
    report = SyncReport()
    generation = manifest.generation()
    known = manifest.files()
    current = _scan(settings, known, report, trust_stat=True, only=_only(settings, known, paths))
    if known and not emptying and not settings.knowledge_dir.is_dir():
        _kept_all(settings, known, current, report)  # said, with no lock taken
        report.chunks_total = manifest.total_chunks()
        return report, generation, current, True
    if manifest.get("gate") != _gate(fp, current) or _moved(known, current):
        return report, generation, current, False
    if manifest.loading():  # a build killed before its postings were sorted in
        return report, generation, current, False
    if manifest.get("links_version") != vault.LINKS_VERSION and known:
        return report, generation, current, False  # links read by older code
    report.files_unchanged = len(current)
    report.chunks_total = manifest.total_chunks()
    return report, generation, current, True


def _scan(
    settings: Settings,
    known: dict[str, FileRecord],
    report: SyncReport,
    trust_stat: bool,
    only: set[str] | None = None,
) -> dict[str, _Current]:
    """Hash every note, reading only files whose size or mtime differ from the manifest.

    What cannot be read now (a file, or a whole folder) keeps its earlier chunks: a
    permission slip or an unmounted disk must not delete anything from the index.

    With `only`, just those sources are looked at; every other note is as the manifest
    has it."""
    root = settings.knowledge_dir
    current: dict[str, _Current] = {}
    if only is None:
        found, skipped = notes.find(
            root, settings.include, settings.exclude, follow_symlinks=settings.follow_symlinks
        )
    else:
        found, skipped = sorted(s for s in only if _is_note(settings, s)), []
        for source, rec in known.items():
            if source not in only:
                current[source] = _Current(rec.md5, rec.size, rec.mtime_ns, None)
    report.files_scanned = len(found) + len(current)
    report.files_skipped.extend(skipped)
    kept = 0  # characters of the notes read and held for chunking
    for folder in (s.source for s in skipped if s.unreadable_folder):
        prefix = "" if folder == "./" else folder
        for source, rec in known.items():
            if source.startswith(prefix):
                current[source] = _Current(rec.md5, rec.size, rec.mtime_ns, None, kept=True)
    for source in found:
        rec = known.get(source)
        try:
            st = (root / source).stat()
        except OSError:
            st = None
        if trust_stat and rec and st and (rec.size, rec.mtime_ns) == (st.st_size, st.st_mtime_ns):
            current[source] = _Current(rec.md5, rec.size, rec.mtime_ns, None)
            continue
        try:
            note = notes.read(root, source, settings.max_file_bytes)
        except notes.Unreadable as exc:
            report.files_skipped.append(notes.Skipped(source, str(exc)))
            if rec and st is not None:  # bad input never destroys what is already indexed
                current[source] = _Current(rec.md5, rec.size, rec.mtime_ns, None, kept=True)
            continue
        report.warnings.extend(f"{source}: {w}" for w in note.warnings)
        kept += len(note.text)
        current[source] = _Current(
            note.md5, st.st_size, st.st_mtime_ns, note if kept <= KEEP_READ_CHARS else None
        )
    return current


def _only(
    settings: Settings, known: dict[str, FileRecord], paths: list[str] | None
) -> set[str] | None:
    """The sources a sync limited to `paths` looks at, or None for the whole folder: each
    path inside the folder, and every known note under a path that was a folder. A folder
    that exists now (created, or moved in) is walked whole, as is the folder itself."""
    if paths is None:
        return None
    root = settings.knowledge_dir.resolve()
    only: set[str] = set()
    for path in paths:
        try:
            full = (root / path).resolve() if not str(path).startswith("/") else _absolute(path)
        except RuntimeError:  # a symlink loop: no note, though one may have stood there
            full = Path(os.path.normpath(root / path))
        if not full.is_relative_to(root):
            continue  # outside the folder: not a note of this index
        source = full.relative_to(root).as_posix()
        if source == "." or full.is_dir():
            return None
        only.add(source)
        only.update(s for s in known if s.startswith(source + "/"))
    return only


def sources_of(settings: Settings, paths: list[str]) -> set[str] | None:
    """The notes these paths name, relative to the folder; None when one is a folder."""
    return _only(settings, {}, paths)


def _absolute(path: str) -> Path:
    """An absolute path with its folders' symlinks resolved, the file itself kept."""
    given = Path(path)
    return given.parent.resolve() / given.name


def _is_note(settings: Settings, source: str) -> bool:
    """Whether one path is a note `notes.find` would return: a file the include globs
    match and the exclude globs do not, under no hidden or excluded folder, not hidden
    itself, and not a link out of the folder (unless links are followed)."""
    root = settings.knowledge_dir
    parts = source.split("/")
    if any(part.startswith(".") for part in parts):
        return False
    folders = ["/".join(parts[: n + 1]) for n in range(len(parts) - 1)]
    if any(notes.matches(folder, settings.exclude) for folder in folders):
        return False
    if not notes.matches(source, settings.include) or notes.matches(source, settings.exclude):
        return False
    path = root / source
    if not (path.is_file() or path.is_symlink()):
        return False
    if settings.follow_symlinks:
        return True
    real_root = Path(os.path.realpath(root))
    return Path(os.path.realpath(path)).is_relative_to(real_root)


def _gate(fp: str, current: dict[str, _Current]) -> str:
    digest = hashlib.md5(fp.encode())
    for source in sorted(current):
        digest.update(f"\n{source}\t{current[source].md5}".encode())
    return digest.hexdigest()


def _touch(manifest: Manifest, known: dict[str, FileRecord], current: dict[str, _Current]) -> None:
    """Remember new mtimes of files saved without a change, so they are not read again."""
    moved = _moved(known, current)
    if moved:
        manifest.touch(moved)


def _moved(known: dict[str, FileRecord], current: dict[str, _Current]) -> list[FileRecord]:
    """Files saved without a change: same content, new size or mtime."""
    return [
        FileRecord(s, c.md5, c.size, c.mtime_ns, known[s].chunks)
        for s, c in current.items()
        if s in known
        and not c.kept
        and c.md5 == known[s].md5
        and (c.size, c.mtime_ns) != (known[s].size, known[s].mtime_ns)
    ]


def _what_changed(old: str, new: str) -> str:
    """Why vectors built under the `old` fingerprint must be rebuilt, or "" if they need
    not (only the CJK chunks' second model differs: `_change_side_model` handles that)."""
    before = dict(part.split("=", 1) for part in old.split(";") if "=" in part)
    after = dict(part.split("=", 1) for part in new.split(";") if "=" in part)
    before.pop("cjk", None)
    after.pop("cjk", None)
    if before == after:
        return ""
    if before.get("embedder") != after.get("embedder"):
        return f"embedder changed ({before.get('embedder')} → {after.get('embedder')})"
    if before.get("chunker") != after.get("chunker"):
        return "the chunker changed"
    if before.get("terms") != after.get("terms"):
        return "the keyword index changed (new search terms or fields)"
    if before.get("layout") != after.get("layout"):
        return "the index layout changed (chunk texts are now kept, for keyword-first indexing)"
    return (
        f"chunk settings changed (size {before.get('size')} → {after.get('size')}, "
        f"overlap {before.get('overlap')} → {after.get('overlap')})"
    )


def _repair(store: Store, manifest: Manifest, report: SyncReport) -> None:
    """The store and the manifest disagree on some file's vectors (a run killed between
    storing a group and recording it, or the store changed behind our back): those files'
    vectors go from the store and wait to be stored again; no file is re-chunked."""
    stored = store.chunk_hashes()
    have = manifest.embedded_by_source()
    bad = sorted(s for s in set(stored) | set(have) if len(stored.get(s, {})) != have.get(s, 0))
    # A file whose every chunk the store holds for exactly its recorded text (a run killed
    # after storing it, another machine sharing a Chroma server) is adopted, not redone.
    adopt = [s for s in bad if stored.get(s) and stored[s] == manifest.chunk_ids(s)]
    redo = [s for s in bad if s not in adopt]
    manifest.filled(adopt)
    store.delete([s for s in redo if s in stored])
    manifest.unfill([s for s in redo if s in have])
    if redo:
        report.warnings.append(f"repaired the index: {len(redo)} file(s) were out of step with it")


def _recover(
    store: Store, manifest: Manifest, meta: dict, damage: Damaged, report: SyncReport
) -> dict:
    """The local Chroma folder cannot be read back (a kill while Chroma saved its HNSW
    segment: the graph on disk is newer than its id map and log watermark, so every
    replay of the log fails). Move it aside and start an empty collection; every chunk
    then waits for its vector, taken from the embedding cache."""
    moved = store.set_aside()
    manifest.unfill()  # every chunk waits for its vector again; the embedding cache stays
    manifest.cleared(manifest.stale())
    stored = store.open(meta)
    report.warnings.append(
        f"the vector index could not be read ({damage.cause}); moved it to {moved.name} "
        "and rebuilt it from your notes and the embedding cache"
    )
    return stored


@dataclass
class _Writer:
    """One filling's writing side: what every group of files needs, held once."""

    settings: Settings
    store: Store
    manifest: Manifest
    embedder: Embedder
    report: SyncReport
    progress: Progress
    commit: Callable[[], AbstractContextManager]


# Notes read while hashing are kept for chunking up to this many characters; past it they
# are read again when chunked, so a 200 MB folder is never held in memory whole.
KEEP_READ_CHARS = 32_000_000


def _index(k: _Keywords, sources: list[str]) -> None:
    """Chunk and record the given files (texts, postings, links), a group at a time; into
    an empty index, the postings are bulk-loaded (Manifest.begin_load)."""
    settings, progress = k.settings, k.progress
    progress.start(len(sources), 0)
    jobs = [
        prepare.Job(settings.knowledge_dir, s, settings.max_file_bytes, settings.chunk_size,
                    settings.chunk_overlap)
        for s in sources
    ]  # fmt: skip
    loading = bool(jobs) and k.manifest.begin_load()
    try:
        _prepare_and_record(k, jobs)
    finally:  # on Ctrl-C too: the files recorded so far become searchable
        if loading:
            progress.step("sorting the keyword index")  # a minute for 200 MB of notes
            with k.commit():
                k.manifest.finish_load()
            progress.step("")


def _prepare_and_record(k: _Keywords, jobs: list[prepare.Job]) -> None:
    """A big cold sync prepares the notes in a worker process while this one records them."""
    progress = k.progress
    count = prepare.workers()
    if len(jobs) >= prepare.WORKERS_FROM_NOTES and count:
        for state in k.current.values():
            state.note = None  # the workers read the notes themselves
        ready = prepare.prepared_in_workers(jobs, count)
    else:
        ready = (prepare.prepare(job, _take_note(k, job.source)) for job in jobs)
    group: list[prepare.Prepared] = []
    size = 0
    for done in ready:
        if done.rows is None:
            k.report.files_skipped.append(notes.Skipped(done.source, done.error))
            progress.chunked(0)
            continue
        group.append(done)
        size += len(done.rows)
        progress.chunked(len(done.rows))
        if size >= GROUP_CHUNKS:
            _record_group(k, group)
            progress.advance(files=len(group))
            group, size = [], 0
    if group:
        _record_group(k, group)
        progress.advance(files=len(group))


def _take_note(k: _Keywords, source: str) -> notes.Note | None:
    """The note as read while hashing, if it was kept; let go of once taken."""
    state = k.current[source]
    note, state.note = state.note, None
    return note


def _record_group(k: _Keywords, group: list[prepare.Prepared]) -> None:
    """One commit of the keyword phase: these files' chunks, postings and links."""
    records = []
    for done in group:
        rows = done.rows or []
        state = k.current[done.source]
        records.append(
            (FileRecord(done.source, done.md5, state.size, state.mtime_ns, len(rows)), rows)
        )
        if done.source in k.known:
            old = set(k.manifest.chunk_hashes(done.source))
            k.report.chunks_deleted += len(old - {r.text_hash for r in rows})
    with k.commit():
        k.manifest.record(records, {done.source: done.links or [] for done in group})


def _fill_group(
    w: _Writer,
    sources: list[str],
    skipped: set[str],
    budget: int | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> int:
    """Embed (cache misses only) and store these files' vectors, then mark them filled,
    in one commit. Returns how many chunks it stored, or embedded when it stopped early.

    A file bigger than `budget` chunks (a 5 MB note is thousands) is embedded over
    several calls, `budget` at a time into the embedding cache, and stored by the call
    that finds every vector cached: the background filler lets go of the index between
    calls, so notes saved meanwhile are not kept waiting for the whole of it. `stop` is
    asked between slices too, so leaving does not wait for a big file either."""
    import numpy as np

    manifest, embedder, report = w.manifest, w.embedder, w.report
    rows = manifest.chunks_of(sources)
    hashes = [r.text_hash for r in rows]
    vectors = manifest.cached(embedder.id, sorted(set(hashes)))
    missing = sorted({h for h in hashes if h not in vectors})
    starts: dict[str, int] = {}
    text_of = _embedding_texts(w, rows, missing, skipped, starts)
    if skipped & set(sources):
        rows = [r for r in rows if r.source not in skipped]
        sources = [s for s in sources if s not in skipped]
        hashes = [r.text_hash for r in rows]
        missing = [h for h in missing if h in text_of]
    missing.sort(key=lambda h: len(text_of[h]))  # each slice pads as little as it can
    # An embeddings server takes a few rounds of batches in flight per call; capped so the
    # progress bar still moves every few calls.
    step = min(max(EMBED_SLICE, int(getattr(embedder, "slice_size", EMBED_SLICE))), SLICE_CAP)
    with_windows = getattr(embedder, "embed_windows", None)  # the local model's, from its run
    latin = _latin(rows, set(missing)) if with_windows is not None else set()
    pause = _pause_after(budget, len(missing), stop)
    for start in range(0, len(missing), step):
        if pause(start):
            return start  # the rest next time, from here: these are in the cache
        part = missing[start : start + step]
        began = time.perf_counter()
        if with_windows is None:
            fresh = embedder.embed([text_of[h] for h in part])
        else:  # CJK chunks' windows are left out: questions about them are not MiniLM's
            fresh, pooled = with_windows([text_of[h] for h in part], [starts[h] for h in part])
            _keep_windows(manifest, embedder.id, part, pooled, latin)
        report.embed_seconds += time.perf_counter() - began
        new = dict(zip(part, fresh, strict=True))
        manifest.cache(embedder.id, new)
        vectors.update(new)
        report.chunks_embedded += len(part)
        w.progress.advance(chunks=len(part))
    w.progress.advance(chunks=len(rows) - len(missing))
    try:
        side = _embed_side(w, rows, skipped, budget, stop)
        if skipped & set(sources):  # a file changed while its side vectors were looked for
            keep = [i for i, r in enumerate(rows) if r.source not in skipped]
            rows = [rows[i] for i in keep]
            sources = [s for s in sources if s not in skipped]
            side = _embed_side(w, rows, skipped, budget, stop)
    except _Paused as paused:
        return len(missing) + paused.embedded
    matrix = (
        np.stack([vectors[r.text_hash] for r in rows]) if rows else np.zeros((0, 1), np.float32)
    )
    metadatas = [r.metadata for r in rows]
    with w.commit():  # the vectors and the mark that they are there change together
        w.store.replace(sources, [r.id for r in rows], [r.text for r in rows], metadatas, matrix)
        _write_side(w, sources, side, metadatas)
        manifest.filled(sources)
    return len(rows)


class _Paused(Exception):  # noqa: N818 - not an error: a big file goes on next call
    def __init__(self, embedded: int) -> None:
        self.embedded = embedded


def _pause_after(
    budget: int | None, missing: int, stop: Callable[[], bool]
) -> Callable[[int], bool]:
    """Whether a group's embedding stops after `done` texts, to go on at the next call:
    when asked to stop, or when a file far bigger than the filler's budget has had its
    share (groups of a few ordinary notes are done in one call, as before)."""
    big = budget is not None and missing > 2 * budget
    return lambda done: done > 0 and (stop() or big and done >= budget)


def _latin(rows: list, hashes: set[str]) -> set[str]:
    """Which of these chunks (by text hash) are not CJK text: those get window vectors."""
    return {
        r.text_hash
        for r in rows
        if r.text_hash in hashes and terms.cjk_share(r.text) < models.CJK_CHUNK
    }


def _keep_windows(
    manifest: Manifest, embedder_id: str, hashes: list[str], pooled: list, latin: set[str]
) -> None:
    """Cache the window vectors of these chunks: an empty entry for a chunk without any
    (CJK text, no words), so `backfill_windows` knows it is done."""
    import numpy as np

    empty = np.zeros((0, 1), dtype=np.float16)
    kept = {h: v if h in latin and len(v) else empty for h, v in zip(hashes, pooled, strict=True)}
    manifest.cache(windows.key(embedder_id), kept, dtype="float16")


def _keep_side_windows(
    manifest: Manifest,
    model: Embedder,
    side_id: str,
    hashes: list[str],
    texts: list[str],
    starts: list[int],
) -> None:
    """Embed and cache the second model's window vectors of these chunks, each window by a
    run of its own (windows.own_run: that model gives no token states to pool)."""
    import numpy as np

    pieces, owners = [], []
    for text_hash, text, start in zip(hashes, texts, starts, strict=True):
        found = windows.own_run(text, start)
        if len(found) < 2:  # one window is the chunk's own text: its vector is the chunk's
            continue
        pieces.extend(found)
        owners.extend([text_hash] * len(found))
    order = sorted(range(len(pieces)), key=lambda i: len(pieces[i]))  # little padding
    vectors = model.embed([pieces[i] for i in order]) if pieces else []
    grouped: dict[str, list] = {h: [] for h in hashes}
    for i, vector in zip(order, vectors, strict=True):
        grouped[owners[i]].append(vector)
    empty = np.zeros((0, 1), dtype=np.float16)
    kept = {h: np.asarray(v, dtype=np.float32) if v else empty for h, v in grouped.items()}
    manifest.cache(windows.key(side_id), kept, dtype="float16")


def _embedding_texts(
    w: _Writer, rows: list, wanted: list[str], skipped: set[str], starts: dict | None = None
) -> dict[str, str]:
    """The texts to embed for these hashes. The note is read and chunked again (a
    millisecond a chunk, against tens for embedding it) rather than the manifest keeping
    a second copy of every text. A file whose chunks no longer match what was recorded
    (it changed on disk since) goes into `skipped`: its next sync records and fills it."""
    wanted_set = set(wanted)
    found: dict[str, str] = {}
    for source in sorted({r.source for r in rows if r.text_hash in wanted_set}):
        try:
            note = notes.read(w.settings.knowledge_dir, source, w.settings.max_file_bytes)
        except notes.Unreadable:
            skipped.add(source)
            continue
        chunks = chunker.split_note(note, w.settings.chunk_size, w.settings.chunk_overlap)
        texts, begins = {}, {}
        for c in chunks:
            text_hash = hashlib.sha1(c.embedding_text.encode()).hexdigest()
            texts[text_hash] = c.embedding_text
            # where the chunk's own lines begin, after its title and heading chain
            body = c.text if c.search_text is None else c.search_text
            begins[text_hash] = len(c.embedding_text) - len(body)
        mine = {r.text_hash for r in rows if r.source == source}
        if not mine <= set(texts):
            skipped.add(source)
            continue
        found.update((h, texts[h]) for h in mine & wanted_set)
        if starts is not None:
            starts.update((h, begins[h]) for h in mine & wanted_set)
    return found


@dataclass
class _Side:
    """A group's chunks with their vectors from the second (multilingual) model: the CJK
    ones, or every one once the folder has CJK chunks (`_widen_side`)."""

    positions: list[int]  # of the group's chunks that get a second vector
    ids: list[str]
    texts: list[str]
    vectors: object  # np.ndarray (n, dimension)
    cjk: list[bool]  # per position: the chunk's text is CJK (Latin questions search those)


def _embed_side(
    w: _Writer,
    rows: list,
    skipped: set[str],
    budget: int | None = None,
    stop: Callable[[], bool] = lambda: False,
):
    """The multilingual vectors of the group's CJK chunks (cache misses embedded, cached
    under that model's id), or None when the index has no second model. The model loads on
    the first CJK chunk, never for a folder without one. Raises _Paused when it stops
    early (see _fill_group): what it embedded is cached."""
    side_id = getattr(w.embedder, "companion_id", None)
    if not side_id:
        return None
    import numpy as np

    cjk = [terms.cjk_share(r.text) >= models.CJK_CHUNK for r in rows]
    every = w.manifest.get("side_scope") == "all"
    positions = [i for i in range(len(rows)) if every or cjk[i]]
    wanted = sorted({rows[i].text_hash for i in positions})
    vectors = w.manifest.cached(side_id, wanted) if wanted else {}
    missing = [h for h in wanted if h not in vectors]
    starts: dict[str, int] = {}
    text_of = (
        _embedding_texts(w, [rows[i] for i in positions], missing, skipped, starts)
        if missing
        else {}
    )
    missing = sorted((h for h in missing if h in text_of), key=lambda h: len(text_of[h]))
    pause = _pause_after(budget, len(missing), stop)
    for start in range(0, len(missing), EMBED_SLICE):
        if pause(start):
            raise _Paused(start)
        # Named beside the full vectors bar: this second model's work took 40 s of
        # knowledge/'s first start, and the screen sat still through it.
        w.progress.step(f"multilingual vectors {start}/{len(missing)}")
        part = missing[start : start + EMBED_SLICE]
        began = time.perf_counter()
        texts = [text_of[h] for h in part]
        fresh = w.embedder.companion().embed(texts)
        _keep_side_windows(
            w.manifest, w.embedder.companion(), side_id, part, texts, [starts[h] for h in part]
        )
        w.report.embed_seconds += time.perf_counter() - began
        new = dict(zip(part, fresh, strict=True))
        w.manifest.cache(side_id, new)
        vectors.update(new)
    if missing:
        w.progress.step("")
    positions = [i for i in positions if rows[i].text_hash in vectors]
    matrix = np.stack([vectors[rows[i].text_hash] for i in positions]) if positions else None
    return _Side(
        positions,
        [rows[i].id for i in positions],
        [rows[i].text for i in positions],
        matrix,
        [cjk[i] for i in positions],
    )


def _write_side(w: _Writer, sources: list[str], side: _Side | None, metadatas: list[dict]) -> None:
    """Make the side collection hold exactly these sources' CJK chunks (none for a source
    that has none now). Written with the main collection, in the same commit."""
    if side is None:
        return
    side_id = getattr(w.embedder, "companion_id", "")
    store = w.store.side(side_id)
    if not side.ids and not store.open_existing():
        return  # nothing to add, nothing to remove: an English folder gets no collection
    store.ensure_open({"embedder": side_id})
    metas = [{**metadatas[i], "cjk": c} for i, c in zip(side.positions, side.cjk, strict=True)]
    store.replace(sources, side.ids, side.texts, metas, side.vectors)


def _change_side_model(store: Store, manifest: Manifest, want: str) -> None:
    """When the index's second model changed since the last filling (it was installed,
    removed or replaced), drop the old side collection, and the chunks holding CJK text
    wait for their vectors again: their main vectors come from the cache, so only their
    CJK vectors are embedded, by the new model."""
    had = manifest.get("companion") or ""
    if want == had:
        return
    for old in {had, want} - {""}:
        store.side(old).drop()
    if want:
        redo = manifest.sources_with_cjk()
        store.delete(redo)
        manifest.unfill(redo)
    manifest.set(companion=want, side_scope="")  # the new side holds the CJK chunks first


def _widen_side(manifest: Manifest, companion: str) -> None:
    """Once a folder has CJK chunks, every chunk gets the multilingual vector too, so a
    Chinese question can reach an English note by meaning: with the CJK chunks alone in
    that space, Chinese questions about the English half of a mixed folder found their
    note in the top 5 for 0.06 of them, against 0.36 with every chunk in it (BENCHMARKS.md,
    "Chinese questions about English notes"). Every file waits for its vectors once:
    the existing ones come from the cache, only the English chunks' second ones are new.
    English-only folders never get here."""
    if not companion or manifest.get("side_scope") == "all" or not manifest.has_cjk_chunks():
        return
    manifest.unfill(None)
    manifest.set(side_scope="all")
