"""What the index holds of each file of the knowledge folder (`stats --files`).

Read, never synced: the folder is listed as a sync lists it (notes.find, with its skips),
and each file is compared with the manifest. A file the manifest lacks is read once, as a
sync would read it, so that one the next sync would skip says why now (too large, not
UTF-8, a broken PDF) instead of "not indexed yet" for ever; a file indexed but changed
since is read too, since a change that made it unreadable keeps its earlier chunks.
"""

from __future__ import annotations

from askmd.index.manifest import Manifest
from askmd.read import notes
from askmd.settings import Settings

INDEXED = "indexed"
WAITING = "keyword only: waiting for vectors"
NOT_YET = "not indexed yet"
GONE = "deleted since the last sync"


def skipped(reason: str) -> str:
    return f"skipped: {reason}"


def files(settings: Settings, manifest: Manifest | None) -> list[dict]:
    """[{"source", "status", "chunks", "date", "indexed_at"}], sorted by source."""
    root = settings.knowledge_dir
    found, skips = notes.find(
        root, settings.include, settings.exclude, follow_symlinks=settings.follow_symlinks
    )
    known = manifest.files() if manifest is not None else {}
    waiting = manifest.pending_by_source() if manifest is not None else {}
    times = manifest.indexed_at() if manifest is not None else {}
    days = manifest.dates_of_sources() if manifest is not None else {}
    rows: dict[str, dict] = {}

    def row(source: str, status: str) -> None:
        rec = known.get(source)
        rows[source] = {
            "source": source,
            "status": status,
            "chunks": rec.chunks if rec else 0,
            "date": days.get(source) if rec else None,
            "indexed_at": times.get(source) if rec else None,
        }

    for skip in skips:
        row(skip.source, skipped(skip.reason))
    for source in found:
        rec = known.get(source)
        if rec is None or _moved(root / source, rec):
            reason = _unreadable(settings, source)
            if reason:
                row(source, skipped(reason))
                continue
        if rec is None:
            row(source, NOT_YET)
        else:
            row(source, WAITING if waiting.get(source) else INDEXED)
    unlisted = [s.source for s in skips if s.unreadable_folder]
    for source in known.keys() - rows.keys():  # indexed, but not where the listing looked
        kept = any(source.startswith("" if f == "./" else f) for f in unlisted)
        row(source, (WAITING if waiting.get(source) else INDEXED) if kept else GONE)
    return [rows[s] for s in sorted(rows)]


def _moved(path, rec) -> bool:
    try:
        st = path.stat()
    except OSError:
        return True
    return (st.st_size, st.st_mtime_ns) != (rec.size, rec.mtime_ns)


def _unreadable(settings: Settings, source: str) -> str:
    """Why a sync would skip this file now, or ""."""
    try:
        notes.read(settings.knowledge_dir, source, settings.max_file_bytes)
    except notes.Unreadable as exc:
        return str(exc)
    return ""
