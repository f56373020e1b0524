"""Bring the index in step with the knowledge folder, re-embedding only what changed.

The fast path: one gate hash over every file's MD5, the chunker version, the chunk
settings and the embedder id; if it matches the last sync, nothing else happens (Chroma
is not even opened). Otherwise files are compared one by one with the manifest: new and
changed files are re-chunked and their chunks replaced as a unit, deleted files' chunks
go, and only chunk texts missing from the embedding cache are embedded. A different
embedder or chunker setting means a rebuild. One writer at a time, by a lock file.

Given `paths`, only those notes are looked at (a watcher's changed files): the others are
taken as the manifest has them, so a one-file change costs no walk of the folder.

The steps live by role: change detection (changes.py), the keyword phase
(keyword_phase.py), the vector phase (vector_fill.py, with side_model.py for the second
model and repair.py to make the store agree first), window vectors for older indexes
(window_backfill.py), and one-time upgrades of older indexes (migrations.py). This module
runs them in order.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from askmd.errors import Damaged, IndexBusy  # noqa: F401 - raised by sync; callers catch it here
from askmd.index import chunk_dates, foreign, note_properties, prepare, upgrades
from askmd.index import embedding_models as models
from askmd.index.changes import (
    Current,
    gate,
    kept_all,
    limited_to,
    scan,
    sources_of,  # noqa: F401 - callers find it here
    touch,
    unchanged,
)
from askmd.index.fingerprint import (  # noqa: F401 - callers find them here
    LAYOUT,
    companion_id,
    embedder_id,
    fingerprint,
    what_changed,
)
from askmd.index.keyword_phase import GROUP_CHUNKS, Keywords, record_changes  # noqa: F401
from askmd.index.manifest import FileRecord, Manifest, now
from askmd.index.rwlock import file_lock
from askmd.index.store import Store
from askmd.index.sync_report import NoProgress, Progress, SyncReport
from askmd.index.vector_fill import fill, needs_filling
from askmd.index.window_backfill import backfill_windows, windows_due
from askmd.read import notes, vault
from askmd.settings import Settings

if TYPE_CHECKING:  # embedder and numpy load only when something must be embedded
    from askmd.index.embedder import Embedder


@dataclass
class SyncOptions:
    """How one sync runs (see `sync`); the defaults are a plain `index`."""

    rebuild: bool = False
    progress: Progress | None = None
    commit: Callable[[], AbstractContextManager] = nullcontext
    wait: float = 0.0  # seconds to wait for the lock file
    on_wait: Callable[[str], None] | None = None
    locked: Callable[[], None] = field(default=lambda: None)
    paths: list[str] | None = None
    vectors: bool | list[str] = True
    windows_too: bool = True
    emptying: bool = False


@dataclass
class _Run:
    """One sync: what every step needs, held once."""

    settings: Settings
    store: Store
    manifest: Manifest
    make_embedder: Callable[[], Embedder]
    options: SyncOptions
    progress: Progress
    fp: str  # the settings' fingerprint


def sync(
    settings: Settings,
    store: Store,
    manifest: Manifest,
    make_embedder: Callable[[], Embedder],
    options: SyncOptions | None = None,
) -> SyncReport:
    """Make the index match the folder; see the module docstring.

    Two phases: every new or changed file is chunked and its chunks, texts and keyword
    postings recorded (the folder is then searchable by keyword), then the vector store is
    filled (`fill`). `options.vectors` says how much of the second phase runs here: True all of
    it, False none (a background filler does it), a list of sources only theirs (a
    watcher's few changed notes, while a background filler works through the rest).
    With all of it and `options.windows_too`, chunks stored without window vectors (an index
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
    o = options or SyncOptions()
    progress = o.progress or NoProgress()
    run = _Run(settings, store, manifest, make_embedder, o, progress, fingerprint(settings))
    try:  # the bar goes on Ctrl-C too: the terminal gets its cursor back
        looked = None  # the lock-free look, reused under the lock if nothing moved since
        if not o.rebuild:
            report, generation, current, same = unchanged(
                settings, manifest, run.fp, o.paths, o.emptying
            )
            looked = (report, generation, current)
            same = same and not manifest.packing_due()  # an index from older code packs once
            same = same and not upgrades.upgrades_due(manifest)  # ... and is upgraded once
            same = same and not upgrades.dates_due(manifest)  # ... and dates its chunks
            same = same and not upgrades.properties_due(manifest)  # ... and reads properties
            same = same and not foreign.touched(manifest.db)  # ... and mends an older askmd's
            if same:
                report.migrations = manifest.take_migrated()
                _vectors_only(run, report)
                report.seconds = time.perf_counter() - started
                return report
        with file_lock(settings.index_dir, o.wait, o.on_wait):
            o.locked()
            report = _under_lock(run, looked)
        report.seconds = time.perf_counter() - started
        return report
    finally:
        progress.finish()


def _vectors_only(run: _Run, report: SyncReport) -> None:
    """Nothing to record: fill the vector store and back-fill windows where they lag,
    taking the lock file only then."""
    settings, manifest, o = run.settings, run.manifest, run.options
    filling = bool(o.vectors) and needs_filling(settings, manifest)
    backfill = o.vectors is True and o.windows_too and windows_due(settings, manifest)
    if filling or backfill:
        with file_lock(settings.index_dir, o.wait, o.on_wait):
            o.locked()
            if filling:
                _fill(run, report)
            if backfill:
                backfill_windows(
                    settings, manifest, run.make_embedder, progress=run.progress, report=report
                )
    report.chunks_waiting = manifest.pending()


def _under_lock(run: _Run, looked: tuple[SyncReport, int, dict[str, Current]] | None) -> SyncReport:
    """The sync proper, with the lock file held: upgrades owed, the keyword phase, upkeep,
    then the vector phase."""
    settings, manifest, o = run.settings, run.manifest, run.options
    paths = o.paths
    if manifest.loading():
        with o.commit():
            manifest.finish_load()
    upgrade = upgrades.upgrade_index(manifest, o.commit)  # of an index of older code
    applied = [*manifest.take_migrated(), *upgrade.applied]
    mended = foreign.mend(manifest.db, o.commit)  # notes an older askmd wrote since
    if upgrade.rescan or mended:
        looked, paths = None, None  # notes it made look changed are read again
    known = manifest.files()
    first = not known  # every file is recorded now, its links read by this code
    reason = _rebuild_reason(manifest.get("fingerprint"), run.fp, o.rebuild, upgrade)
    fresh = bool(reason)
    if looked is not None and not fresh and manifest.generation() == looked[1]:
        report, current = looked[0], looked[2]  # nobody wrote since: no second read
    else:
        report = SyncReport()
        only = None if fresh else limited_to(settings, known, paths)
        current = scan(settings, known, report, trust_stat=not fresh, only=only)
    report.migrations = applied
    if known and not o.emptying and kept_all(settings, known, current, report):
        report.chunks_total = manifest.total_chunks()
        report.chunks_waiting = manifest.pending()
        return report
    if known and not current:  # `index` over a folder emptied on purpose
        report.warnings.append(
            f"the knowledge folder holds no notes: all {len(known):,} indexed notes "
            "are removed from the index"
        )
    report.rebuild_reason = reason
    if mended:
        report.warnings.append(
            f"{len(mended):,} notes were written by an older askmd since: read again "
            "(their dates and window vectors)"
        )
    if not fresh and manifest.get("gate") == gate(run.fp, current):
        touch(manifest, known, current)
        report.files_unchanged = len(current)
    else:
        _keyword_phase(run, report, known, current, fresh=fresh, first=first)
    _upkeep(run)
    if o.vectors and needs_filling(settings, manifest):
        _fill(run, report)
    if o.vectors is True and o.windows_too and windows_due(settings, manifest):
        backfill_windows(
            settings, manifest, run.make_embedder, progress=run.progress, report=report
        )
    report.chunks_total = manifest.total_chunks()
    report.chunks_waiting = manifest.pending()
    return report


def _rebuild_reason(old_fp: str | None, fp: str, rebuild: bool, upgrade) -> str:
    """Why every file is recorded again, or "": other settings, asked for, or an index
    upgrade that needs it (recorded done when the rebuild starts, `_mark_format`)."""
    if old_fp and old_fp != fp and not rebuild:
        return what_changed(old_fp, fp)
    if rebuild:
        return "asked for"
    return upgrade.rebuild


def _keyword_phase(
    run: _Run,
    report: SyncReport,
    known: dict[str, FileRecord],
    current: dict[str, Current],
    *,
    fresh: bool,
    first: bool,
) -> None:
    """Record what changed (everything when `fresh`), then the gate that says so."""
    settings, manifest, o = run.settings, run.manifest, run.options
    if fresh:
        with o.commit():
            manifest.forget_all()  # the vector store is emptied by the filling
        known = {}
        report.rebuilt = True
    if fresh or first:  # every file recorded from here on is this code's
        _mark_format(manifest, run.fp)
    record_changes(Keywords(settings, manifest, known, current, report, run.progress, o.commit))
    manifest.set(gate=gate(run.fp, current), fingerprint=run.fp,
                 embedder=embedder_id(settings), last_sync=now())  # fmt: skip
    if report.files_added or report.files_changed:
        _hint_language(manifest, embedder_id(settings), report)


def _upkeep(run: _Run) -> None:
    """Links read again where older code read them, and common terms' postings packed
    (again) once enough changed."""
    manifest, progress = run.manifest, run.progress
    if manifest.get("links_version") != vault.LINKS_VERSION:
        with run.options.commit():
            _reread_links(run.settings, manifest)
    if upgrades.dates_due(manifest):  # an index from before dates: its chunks dated
        with run.options.commit():
            upgrades.backfill(manifest, run.settings.knowledge_dir, run.settings.max_file_bytes)
    if upgrades.properties_due(manifest):  # an index from before properties: notes read again
        with run.options.commit():
            s = run.settings
            upgrades.properties_backfill(manifest, s.knowledge_dir, s.max_file_bytes)
    if manifest.packing_due():  # common terms' postings as arrays: fast keyword search
        # Outside commit(): searches need not wait (seconds on a big folder). They
        # read through their own connections, which see the packing before or after,
        # and a packing changes no score, so the generation stays as it is.
        progress.step("packing common terms")
        manifest.pack()
        progress.step("")


def _fill(run: _Run, report: SyncReport) -> None:
    o = run.options
    fill(run.settings, run.store, run.manifest, run.make_embedder, report=report,
         progress=run.progress, commit=o.commit,
         sources=None if o.vectors is True else o.vectors)  # fmt: skip


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


def _mark_format(manifest: Manifest, fp: str) -> None:
    """Record, before the first file, that this index is this code's: links read, repeats
    dropped, shared passages stored apart, these settings. A first build killed half-way
    is then resumed by the next run, not taken for an index of older code and rebuilt."""
    upgrades.mark_current(manifest)
    manifest.set(links_version=vault.LINKS_VERSION, fingerprint=fp)
    manifest.set(
        **{chunk_dates.KEY: chunk_dates.VERSION, note_properties.KEY: note_properties.VERSION}
    )
