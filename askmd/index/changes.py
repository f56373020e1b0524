"""Change detection: which notes are new, changed, gone or only touched, read from stat()s
and the manifest, hashing only files whose size or mtime moved. A one-file change (a
watcher's `paths`) looks at that file alone; the gate hash over every file's MD5 says at
once that nothing changed."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from askmd import wording
from askmd.index.manifest import FileRecord, Manifest
from askmd.index.sync_report import SyncReport
from askmd.read import notes, vault
from askmd.settings import Settings


@dataclass
class Current:
    md5: str
    size: int
    mtime_ns: int
    note: notes.Note | None  # None when the stat matched the manifest and it was not read
    kept: bool = False  # unreadable now, but its earlier chunks stay


# Notes read while hashing are kept for chunking up to this many characters; past it they
# are read again when chunked, so a 200 MB folder is never held in memory whole.
KEEP_READ_CHARS = 32_000_000


def unchanged(
    settings: Settings,
    manifest: Manifest,
    fp: str,
    paths: list[str] | None,
    emptying: bool = False,
) -> tuple[SyncReport, int, dict[str, Current], bool]:
    """A look at the folder without the write lock (it only reads: stat()s, the files
    whose stat moved, and the manifest): its report, the manifest generation it saw, what
    it found, and whether nothing needs writing."""
    report = SyncReport()
    generation = manifest.generation()
    known = manifest.files()
    current = scan(
        settings, known, report, trust_stat=True, only=limited_to(settings, known, paths)
    )
    if known and not emptying and not settings.knowledge_dir.is_dir():
        kept_all(settings, known, current, report)  # said, with no lock taken
        report.chunks_total = manifest.total_chunks()
        return report, generation, current, True
    if manifest.get("gate") != gate(fp, current) or resaved(known, current):
        return report, generation, current, False
    if manifest.loading():  # a build killed before its postings were sorted in
        return report, generation, current, False
    if manifest.get("links_version") != vault.LINKS_VERSION and known:
        return report, generation, current, False  # links read by older code
    report.files_unchanged = len(current)
    report.chunks_total = manifest.total_chunks()
    return report, generation, current, True


def kept_all(
    settings: Settings,
    known: dict[str, FileRecord],
    current: dict[str, Current],
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
        f"{wording.command('index')})"
    )
    report.warnings.append(report.kept_all)
    report.files_deleted = report.files_added = report.files_changed = 0
    report.files_unchanged = len(known)
    return True


def scan(
    settings: Settings,
    known: dict[str, FileRecord],
    report: SyncReport,
    trust_stat: bool,
    only: set[str] | None = None,
) -> dict[str, Current]:
    """Hash every note, reading only files whose size or mtime differ from the manifest.

    What cannot be read now (a file, or a whole folder) keeps its earlier chunks: a
    permission slip or an unmounted disk must not delete anything from the index.

    With `only`, just those sources are looked at; every other note is as the manifest
    has it."""
    root = settings.knowledge_dir
    current: dict[str, Current] = {}
    if only is None:
        found, skipped = notes.find(
            root, settings.include, settings.exclude, follow_symlinks=settings.follow_symlinks
        )
    else:
        found, skipped = sorted(s for s in only if _is_note(settings, s)), []
        for source, rec in known.items():
            if source not in only:
                current[source] = Current(rec.md5, rec.size, rec.mtime_ns, None)
    report.files_scanned = len(found) + len(current)
    report.files_skipped.extend(skipped)
    kept = 0  # characters of the notes read and held for chunking
    for folder in (s.source for s in skipped if s.unreadable_folder):
        prefix = "" if folder == "./" else folder
        for source, rec in known.items():
            if source.startswith(prefix):
                current[source] = Current(rec.md5, rec.size, rec.mtime_ns, None, kept=True)
    for source in found:
        rec = known.get(source)
        try:
            st = (root / source).stat()
        except OSError:
            st = None
        if trust_stat and rec and st and (rec.size, rec.mtime_ns) == (st.st_size, st.st_mtime_ns):
            current[source] = Current(rec.md5, rec.size, rec.mtime_ns, None)
            continue
        try:
            note = notes.read(root, source, settings.max_file_bytes)
        except notes.Unreadable as exc:
            report.files_skipped.append(notes.Skipped(source, str(exc)))
            if rec and st is not None:  # bad input never destroys what is already indexed
                current[source] = Current(rec.md5, rec.size, rec.mtime_ns, None, kept=True)
            continue
        report.warnings.extend(f"{source}: {w}" for w in note.warnings)
        kept += len(note.text)
        current[source] = Current(
            note.md5, st.st_size, st.st_mtime_ns, note if kept <= KEEP_READ_CHARS else None
        )
    return current


def limited_to(
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
    return limited_to(settings, {}, paths)


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


def gate(fp: str, current: dict[str, Current]) -> str:
    digest = hashlib.md5(fp.encode())
    for source in sorted(current):
        digest.update(f"\n{source}\t{current[source].md5}".encode())
    return digest.hexdigest()


def touch(manifest: Manifest, known: dict[str, FileRecord], current: dict[str, Current]) -> None:
    """Remember new mtimes of files saved without a change, so they are not read again."""
    moved = resaved(known, current)
    if moved:
        manifest.touch(moved)


def resaved(known: dict[str, FileRecord], current: dict[str, Current]) -> list[FileRecord]:
    """Files saved without a change: same content, new size or mtime."""
    return [
        FileRecord(s, c.md5, c.size, c.mtime_ns, known[s].chunks)
        for s, c in current.items()
        if s in known
        and not c.kept
        and c.md5 == known[s].md5
        and (c.size, c.mtime_ns) != (known[s].size, known[s].mtime_ns)
    ]
