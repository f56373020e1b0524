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
import embedding_models as models
import notes
import terms
from errors import Damaged, IndexBusy  # noqa: F401 - raised by sync; callers catch it here
from manifest import ChunkRow, FileRecord, Manifest, chunk_row, now
from rwlock import file_lock
from settings import Settings
from store import Store, chunk_metadata

if TYPE_CHECKING:  # embedder and numpy load only when something must be embedded
    from embedder import Embedder

GROUP_CHUNKS = 256  # chunks stored and recorded per step: the most a killed run redoes
# Texts handed to the embedder per call: enough for it to sort by length and batch well,
# few enough for the progress bar to move every few seconds.
EMBED_SLICE = 64
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
    rebuilt: bool = False
    rebuild_reason: str = ""
    seconds: float = 0.0
    embed_seconds: float = 0.0  # of `seconds`, spent inside the embedder
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        data = asdict(self)
        data["files_skipped"] = [{"path": s.source, "reason": s.reason} for s in self.files_skipped]
        return data


class Progress(Protocol):
    """What a sync reports as it goes: `start` with the files to index, `chunked` per file
    as it is read and split (so the file count moves from the start), `advance` per batch
    of chunks embedded or found cached and per group of files stored, then `finish`."""

    def start(self, files: int, chunks: int) -> None: ...
    def chunked(self, chunks: int) -> None: ...
    def advance(self, files: int = 0, chunks: int = 0) -> None: ...
    def finish(self) -> None: ...


class NoProgress:
    def start(self, files: int, chunks: int) -> None: ...
    def chunked(self, chunks: int) -> None: ...
    def advance(self, files: int = 0, chunks: int = 0) -> None: ...
    def finish(self) -> None: ...


def embedder_id(settings: Settings) -> str:
    """The embedder's id without loading it, so a no-change sync stays instant."""
    return models.embedder_id(settings.embedding_backend, settings.embedding_model)


def companion_id(settings: Settings) -> str:
    """The id of the model that embeds CJK chunks beside the settings' one, or ""."""
    side = models.companion(embedder_id(settings))
    return side.id if side else ""


def fingerprint(settings: Settings) -> str:
    """What the vectors depend on. `cjk=` (the CJK chunks' second model) is left out of
    the rebuild decision: a change of it redoes only those chunks (`_side_upgrade`)."""
    cjk = companion_id(settings)
    return (
        f"embedder={embedder_id(settings)};chunker={chunker.VERSION};terms={terms.VERSION};"
        f"size={settings.chunk_size};overlap={settings.chunk_overlap}"
        + (f";cjk={cjk}" if cjk else "")
    )


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
) -> SyncReport:
    """Make the index match the folder; see the module docstring.

    Every change that readers could see (a group of files replaced in both stores, the
    deleted files dropped, a reset) happens inside `commit()`, so a caller serving searches
    at the same time can keep them from seeing a file half-replaced. Finding that nothing
    changed takes no lock, so a server re-scanning its folder never keeps other processes
    waiting; to write, it waits up to `wait` seconds for the lock file (see rwlock.file_lock)
    and then calls `locked()`, where a long-lived caller reopens what another process
    changed before it writes through it.

    `paths` (relative to the knowledge folder, or absolute) limits the sync to those
    notes, and to every note known under a path that is a folder: each is added,
    updated or, when it is gone or no longer a note, deleted. A folder that exists is
    walked whole, as is everything when the index must be rebuilt.
    """
    started = time.perf_counter()
    progress = progress or NoProgress()
    fp = fingerprint(settings)
    if not rebuild:
        report = _unchanged(settings, manifest, fp, paths)
        if report is not None:
            report.seconds = time.perf_counter() - started
            return report
    report = SyncReport()
    with file_lock(settings.index_dir, wait, on_wait):
        locked()
        known = manifest.files()
        old_fp = manifest.get("fingerprint")
        if old_fp and old_fp != fp and not rebuild:
            report.rebuild_reason = _what_changed(old_fp, fp)
        fresh = rebuild or bool(report.rebuild_reason)
        only = None if fresh else _only(settings, known, paths)
        current = _scan(settings, known, report, trust_stat=not fresh, only=only)
        gate = _gate(fp, current)
        if not fresh and manifest.get("gate") == gate:
            _touch(manifest, known, current)
            report.files_unchanged = len(current)
            report.chunks_total = manifest.total_chunks()
            report.seconds = time.perf_counter() - started
            return report

        embedder = make_embedder()
        meta = {"embedder": embedder.id, "fingerprint": fp}
        try:
            stored = store.open(meta)
            in_store = store.check()
        except Damaged as exc:
            with commit():
                stored, in_store = _recover(store, manifest, meta, exc, report), 0
            known = {}
        if rebuild:
            report.rebuild_reason = "asked for"
        elif not report.rebuild_reason and _what_changed(str(stored.get("fingerprint", fp)), fp):
            report.rebuild_reason = "the Chroma collection was built with other settings"
        if report.rebuild_reason:
            with commit():
                store.reset(meta)
                manifest.forget_all()
            known = {}
            report.rebuilt = True
        elif in_store != manifest.total_chunks():
            with commit():
                known = _repair(store, manifest, known, report)

        deleted = sorted(s for s in known if s not in current)
        changed = [s for s in current if s in known and known[s].md5 != current[s].md5]
        added = [s for s in current if s not in known and not current[s].kept]
        report.files_added, report.files_changed = len(added), len(changed)
        report.files_deleted = len(deleted)
        report.files_unchanged = len(current) - len(added) - len(changed)
        report.files_unchanged -= sum(1 for s in current if current[s].kept and s not in known)

        if deleted:
            with commit():
                store.delete(deleted)
                manifest.forget(deleted)
            report.chunks_deleted += sum(known[s].chunks for s in deleted)
        _touch(manifest, known, current)
        writer = _Writer(
            settings, store, manifest, embedder, known, current, report, progress, commit
        )
        _index(writer, added + changed + _side_upgrade(writer, added + changed))
        manifest.set(
            gate=_gate(fp, current),
            fingerprint=fp,
            embedder=embedder.id,
            dimension=str(embedder.dimension),
            companion=getattr(embedder, "companion_id", None) or "",
            last_sync=now(),
        )
        if report.files_added or report.files_changed:
            _hint_language(manifest, embedder.id, report)
        total = manifest.total_chunks()
        if manifest.cache_size(embedder.id) > 2 * total + CACHE_SLACK:
            manifest.prune_cache(embedder.id)
        report.chunks_total = manifest.total_chunks()
    report.seconds = time.perf_counter() - started
    return report


def _unchanged(
    settings: Settings, manifest: Manifest, fp: str, paths: list[str] | None
) -> SyncReport | None:
    """The report of a sync that has nothing to write, found without the write lock (it
    only reads: stat()s, the files whose stat moved, and the manifest), or None."""
    report = SyncReport()
    known = manifest.files()
    current = _scan(settings, known, report, trust_stat=True, only=_only(settings, known, paths))
    if manifest.get("gate") != _gate(fp, current) or _moved(known, current):
        return None
    report.files_unchanged = len(current)
    report.chunks_total = manifest.total_chunks()
    return report


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
        current[source] = _Current(note.md5, st.st_size, st.st_mtime_ns, note)
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
        full = (root / path).resolve() if not str(path).startswith("/") else _absolute(path)
        if not full.is_relative_to(root):
            continue  # outside the folder: not a note of this index
        source = full.relative_to(root).as_posix()
        if source == "." or full.is_dir():
            return None
        only.add(source)
        only.update(s for s in known if s.startswith(source + "/"))
    return only


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
    not (only the CJK chunks' second model differs: `_side_upgrade` handles that)."""
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
    return (
        f"chunk settings changed (size {before.get('size')} → {after.get('size')}, "
        f"overlap {before.get('overlap')} → {after.get('overlap')})"
    )


def _repair(
    store: Store, manifest: Manifest, known: dict[str, FileRecord], report: SyncReport
) -> dict[str, FileRecord]:
    """The store and the manifest disagree (a run was killed, or the store was changed
    behind our back): forget every file whose chunk count differs, so it is redone."""
    counts = store.source_counts()
    bad = sorted(
        s
        for s in set(counts) | set(known)
        if counts.get(s, 0) != (known[s].chunks if s in known else -1)
    )
    store.delete([s for s in bad if s in counts])
    manifest.forget(bad)
    report.warnings.append(f"repaired the index: {len(bad)} file(s) were out of step with it")
    return {s: r for s, r in known.items() if s not in bad}


def _recover(
    store: Store, manifest: Manifest, meta: dict, damage: Damaged, report: SyncReport
) -> dict:
    """The local Chroma folder cannot be read back (a kill while Chroma saved its HNSW
    segment: the graph on disk is newer than its id map and log watermark, so every
    replay of the log fails). Move it aside and start an empty collection; every file is
    then indexed again from the notes, its vectors taken from the embedding cache."""
    moved = store.set_aside()
    manifest.forget_all()  # the files' rows go; the embedding cache stays
    stored = store.open(meta)
    report.warnings.append(
        f"the vector index could not be read ({damage.cause}); moved it to {moved.name} "
        "and rebuilt it from your notes and the embedding cache"
    )
    return stored


@dataclass
class _Writer:
    """One sync's writing side: what every group of files needs, held once."""

    settings: Settings
    store: Store
    manifest: Manifest
    embedder: Embedder
    known: dict[str, FileRecord]
    current: dict[str, _Current]
    report: SyncReport
    progress: Progress
    commit: Callable[[], AbstractContextManager]


def _index(w: _Writer, sources: list[str]) -> None:
    """Chunk, embed (cache misses only), store and record the given files, in groups."""
    settings, report, progress = w.settings, w.report, w.progress
    root = settings.knowledge_dir
    work: list[tuple[str, notes.Note, list[chunker.Chunk]]] = []
    progress.start(len(sources), 0)
    try:  # the bar goes on Ctrl-C too: the terminal gets its cursor back
        for source in sources:
            note = w.current[source].note
            if note is None:
                try:
                    note = notes.read(root, source, settings.max_file_bytes)
                except notes.Unreadable as exc:
                    report.files_skipped.append(notes.Skipped(source, str(exc)))
                    progress.chunked(0)
                    continue
            chunks = chunker.split_note(note, settings.chunk_size, settings.chunk_overlap)
            work.append((source, note, chunks))
            progress.chunked(len(chunks))
        group: list[tuple[str, notes.Note, list[chunker.Chunk]]] = []
        size = 0
        for item in work:
            group.append(item)
            size += len(item[2])
            if size >= GROUP_CHUNKS:
                _store_group(w, group)
                group, size = [], 0
        if group:
            _store_group(w, group)
    finally:
        progress.finish()


def _store_group(w: _Writer, group: list[tuple[str, notes.Note, list[chunker.Chunk]]]) -> None:
    import numpy as np

    store, manifest, embedder, report, progress = (
        w.store, w.manifest, w.embedder, w.report, w.progress
    )  # fmt: skip

    chunks = [c for _, _, cs in group for c in cs]
    texts = [c.embedding_text for c in chunks]
    hashes = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
    vectors = manifest.cached(embedder.id, sorted(set(hashes)))
    text_of = dict(zip(hashes, texts, strict=True))
    # Sorted by length across the whole group, so each slice pads as little as one big call.
    missing = sorted(
        dict.fromkeys(h for h in hashes if h not in vectors), key=lambda h: len(text_of[h])
    )
    for start in range(0, len(missing), EMBED_SLICE):
        part = missing[start : start + EMBED_SLICE]
        started = time.perf_counter()
        fresh = embedder.embed([text_of[h] for h in part])
        report.embed_seconds += time.perf_counter() - started
        new = dict(zip(part, fresh, strict=True))
        manifest.cache(embedder.id, new)
        vectors.update(new)
        report.chunks_embedded += len(part)
        progress.advance(chunks=len(part))
    progress.advance(chunks=len(chunks) - len(missing))
    side = _embed_side(w, chunks, texts, hashes)
    aliases = {source: note.aliases for source, note, _ in group}
    md5s = {source: note.md5 for source, note, _ in group}
    records = []
    by_source: dict[str, list[ChunkRow]] = {}
    for c, h, text in zip(chunks, hashes, texts, strict=True):
        row = chunk_row(
            c.id, h, text, title=c.title, aliases=aliases[c.source], chain=c.heading_chain
        )
        by_source.setdefault(c.source, []).append(row)
    for source, note, cs in group:
        state = w.current[source]
        rec = FileRecord(source, note.md5, state.size, state.mtime_ns, len(cs))
        records.append((rec, by_source.get(source, [])))
        if source in w.known:
            old = set(manifest.chunk_hashes(source))
            report.chunks_deleted += len(old - {r.text_hash for r in by_source.get(source, [])})
    matrix = (
        np.stack([vectors[h] for h in hashes]) if chunks else np.zeros((0, 1), dtype=np.float32)
    )
    notes_of = {source: note for source, note, _ in group}
    metadatas = [
        chunk_metadata(c, md5s[c.source], _chunk_tags(notes_of[c.source], c), h)
        for c, h in zip(chunks, hashes, strict=True)
    ]
    with w.commit():  # both stores change together, as readers see them
        store.replace(
            [source for source, _, _ in group],
            [c.id for c in chunks],
            [c.text for c in chunks],
            metadatas,
            matrix,
        )
        _write_side(w, [source for source, _, _ in group], side, metadatas)
        manifest.record(records, _links(group))
    progress.advance(files=len(group))


def _chunk_tags(note: notes.Note, chunk: chunker.Chunk) -> tuple[str, ...]:
    """The note's front-matter tags and the inline tags written on the chunk's lines."""
    first, last = chunk.line_start - note.first_line, chunk.line_end - note.first_line
    inline = (t for t, line in note.inline_tags if first <= line <= last)
    return tuple(dict.fromkeys([*note.tags, *inline]))


def _links(group: list[tuple[str, notes.Note, list[chunker.Chunk]]]) -> dict[str, list]:
    """The links written in each note, with file line numbers, for the manifest."""
    return {
        source: [(k.target, k.heading, note.first_line + k.line, int(k.embed)) for k in note.links]
        for source, note, _ in group
    }


@dataclass
class _Side:
    """A group's CJK chunks with their vectors from the second (multilingual) model."""

    positions: list[int]  # of the group's chunks that are CJK
    ids: list[str]
    texts: list[str]
    vectors: object  # np.ndarray (n, dimension)


def _embed_side(w: _Writer, chunks: list[chunker.Chunk], texts: list[str], hashes: list[str]):
    """The multilingual vectors of the group's CJK chunks (cache misses embedded, cached
    under that model's id), or None when the index has no second model. The model loads on
    the first CJK chunk, never for a folder without one."""
    side_id = getattr(w.embedder, "companion_id", None)
    if not side_id:
        return None
    import numpy as np

    positions = [i for i, t in enumerate(texts) if terms.cjk_share(t) >= models.CJK_CHUNK]
    wanted = sorted({hashes[i] for i in positions})
    vectors = w.manifest.cached(side_id, wanted) if wanted else {}
    text_of = {hashes[i]: texts[i] for i in positions}
    missing = sorted((h for h in wanted if h not in vectors), key=lambda h: len(text_of[h]))
    for start in range(0, len(missing), EMBED_SLICE):
        part = missing[start : start + EMBED_SLICE]
        started = time.perf_counter()
        fresh = w.embedder.companion().embed([text_of[h] for h in part])
        w.report.embed_seconds += time.perf_counter() - started
        new = dict(zip(part, fresh, strict=True))
        w.manifest.cache(side_id, new)
        vectors.update(new)
    matrix = np.stack([vectors[hashes[i]] for i in positions]) if positions else None
    return _Side(
        positions, [chunks[i].id for i in positions], [chunks[i].text for i in positions], matrix
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
    metas = [metadatas[i] for i in side.positions]
    store.replace(sources, side.ids, side.texts, metas, side.vectors)


def _side_upgrade(w: _Writer, fresh: list[str]) -> list[str]:
    """When the index's second model changed since the last sync (it was installed, removed
    or replaced), drop the old side collection and return the unchanged files that hold
    CJK text, to be indexed again: their main vectors come from the cache, so only their
    CJK chunks are embedded, by the new model."""
    want = getattr(w.embedder, "companion_id", None) or ""
    had = w.manifest.get("companion") or ""
    if want == had and not w.report.rebuilt:
        return []
    for old in {had, want} - {""}:
        w.store.side(old).drop()
    if not want:
        return []
    redo = []
    skip = set(fresh)
    for source in sorted(w.known):
        state = w.current.get(source)
        if source in skip or state is None or state.kept:
            continue
        try:
            note = state.note or notes.read(
                w.settings.knowledge_dir, source, w.settings.max_file_bytes
            )
        except notes.Unreadable:
            continue
        if terms.cjk_share(note.text) > 0:
            state.note = note
            redo.append(source)
    return redo
