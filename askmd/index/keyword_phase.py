"""The keyword phase of a sync: deleted files dropped, new and changed ones chunked and
recorded (chunks, texts, postings, links) a group of files per commit, so the folder is
searchable by keyword before any vector is stored."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from askmd.index import prepare
from askmd.index.changes import Current, touch
from askmd.index.manifest import FileRecord, Manifest
from askmd.index.sync_report import Progress, SyncReport
from askmd.read import notes
from askmd.settings import Settings

GROUP_CHUNKS = 256  # chunks stored and recorded per step: the most a killed run redoes


@dataclass
class Keywords:
    """One sync's keyword phase: what recording every group of files needs, held once."""

    settings: Settings
    manifest: Manifest
    known: dict[str, FileRecord]  # as the manifest had the files before this sync
    current: dict[str, Current]  # as they are on disk now
    report: SyncReport
    progress: Progress
    commit: Callable[[], AbstractContextManager]


def record_changes(k: Keywords) -> None:
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
    touch(manifest, known, current)
    if changed:  # their old vectors leave the store before the new ones are stored
        manifest.mark_stale(changed)
    _index(k, added + changed)


def _index(k: Keywords, sources: list[str]) -> None:
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


def _prepare_and_record(k: Keywords, jobs: list[prepare.Job]) -> None:
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


def _take_note(k: Keywords, source: str) -> notes.Note | None:
    """The note as read while hashing, if it was kept; let go of once taken."""
    state = k.current[source]
    note, state.note = state.note, None
    return note


def _record_group(k: Keywords, group: list[prepare.Prepared]) -> None:
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
        k.manifest.record(
            records,
            {done.source: done.links or [] for done in group},
            {done.source: done.properties for done in group},
        )
