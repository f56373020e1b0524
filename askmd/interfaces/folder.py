"""Changes made to the knowledge folder on a client's behalf: the HTTP API's ingest and
delete. The folder stays the source of truth, so these write files and leave the index
to the next sync.

Every name a client sends is checked before anything is touched: it must resolve inside
the knowledge folder (no `..`, no absolute path elsewhere, no symlink out), be a file askmd
reads (the include and exclude globs, no hidden part), and a note's bytes are parsed as the
indexer would parse them before they are written. Files are written to a hidden temporary
file and renamed into place, so no reader ever sees half of one. Nothing is destroyed: a
deleted or overwritten note is moved into the trash folder inside the index folder.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from askmd.errors import AskmdError, BadNote, BadRequest, Forbidden, NotFound
from askmd.read import notes, readers
from askmd.settings import Settings
from askmd.wording import INVISIBLE

if TYPE_CHECKING:
    from askmd.pipeline import Index

_INVISIBLE = re.compile(f"[{INVISIBLE}]")
MAX_NAME_CHARS = 1024
MAX_PART_BYTES = 255  # the longest file name common file systems allow
# Notes sent as content: indexing is embedding, ~1,400 chunks per MB, so a 10 MB note
# kept one request (and the machine) busy for minutes. Larger notes can be put into the
# folder and ingested by file_path.
MAX_SENT_NOTE_BYTES = 1024 * 1024


class TooLarge(AskmdError):
    status = 413


class FolderGone(AskmdError):
    status = 409  # the folder's state, not the request, is wrong: sent again later, it works


def sent_note_limit(settings: Settings) -> int:
    """The largest note a client may send as content."""
    return min(settings.max_file_bytes, MAX_SENT_NOTE_BYTES)


def source_of(settings: Settings, name: str) -> str:
    """The note's path relative to the knowledge folder, for a client's file name or path.

    Raises BadRequest for a malformed name, Forbidden for one outside the folder.
    """
    if not isinstance(name, str) or not name.strip():
        raise BadRequest("the file name is empty")
    if len(name) > MAX_NAME_CHARS or any(ord(c) < 32 or c == "\x7f" for c in name):
        raise BadRequest("the file name is too long or contains control characters")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest("the file name is not valid Unicode (a lone surrogate)") from None
    if hidden := _INVISIBLE.search(name):
        raise BadRequest(
            f"the file name contains U+{ord(hidden.group()):04X}, a character that is invisible "
            "or changes the direction text is shown in (a name could show as another)"
        )
    if "\\" in name:
        raise BadRequest(f"{name!r}: use / to separate folders")
    if any(part in (".", "..") for part in name.split("/")):
        raise Forbidden(f"{name}: . and .. are not allowed in a note's path")
    root = settings.knowledge_dir.absolute()
    path = Path(name)
    if path.is_absolute():
        lexical = Path(os.path.normpath(path))
        if not lexical.is_relative_to(root):
            real = _real(lexical, name)
            if not real.is_relative_to(_real(root, name)):
                raise Forbidden(f"{name}: not inside the knowledge folder")
            lexical = root / real.relative_to(_real(root, name))
        relative = PurePosixPath(lexical.relative_to(root).as_posix())
    else:
        if "" in name.split("/"):
            raise BadRequest(f"{name}: empty folder names (//, or a trailing /)")
        relative = PurePosixPath(name)
    parts = relative.parts
    if any(len(part.encode()) > MAX_PART_BYTES for part in parts):
        raise BadRequest(f"a file or folder name is over {MAX_PART_BYTES} bytes")
    if any(p.startswith(".") for p in parts):
        raise Forbidden(f"{name}: hidden files and folders are not notes")
    source = relative.as_posix()
    if not _real(root / source, name).is_relative_to(_real(root, name)):
        raise Forbidden(f"{name}: a symlink leads outside the knowledge folder")
    if not notes.matches(source, settings.include) or notes.matches(source, settings.exclude):
        raise BadRequest(
            f"{source}: not a file askmd reads (include {', '.join(settings.include)}"
            + (f"; exclude {', '.join(settings.exclude)}" if settings.exclude else "")
            + ")"
        )
    return source


def _real(path: Path, name: str) -> Path:
    """The path with its symlinks resolved; a symlink loop (which Path.resolve raises
    RuntimeError for) is refused as any path that cannot be a note is."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        raise Forbidden(f"{name}: a symlink loop, not a note") from None


def existing(settings: Settings, name: str) -> str:
    """The source of a note that exists in the knowledge folder."""
    source = source_of(settings, name)
    path = settings.knowledge_dir / source
    if not path.exists():
        raise NotFound(f"{source}: no such note in the knowledge folder")
    if not path.is_file():
        raise BadRequest(f"{source}: not a regular file")
    return source


def write(settings: Settings, name: str, content: str | bytes) -> str:
    """Write a note (UTF-8 text, or a PDF/DOCX/HTML/TXT file's bytes) into the knowledge
    folder; returns "created", "updated" or "unchanged". The previous version of a note
    that is overwritten goes to the trash."""
    source = source_of(settings, name)
    _no_link_on_the_way(settings, source)
    if isinstance(content, bytes):
        data = content
    else:
        data = content.encode("utf-8", errors="surrogatepass")
    if len(data) > settings.max_file_bytes:
        raise BadNote(
            f"{source}: {len(data) / 1048576:.1f} MB, over the "
            f"{settings.max_file_bytes / 1048576:.4g} MB limit (ASKMD_MAX_FILE_MB)"
        )
    if len(data) > sent_note_limit(settings):
        raise TooLarge(
            f"{source}: {len(data) / 1048576:.1f} MB; notes sent as content may be up to "
            f"{sent_note_limit(settings) / 1048576:.4g} MB: put a larger one into the "
            "knowledge folder and ingest it by file_path"
        )
    try:
        if readers.kind(source) is None:
            notes.parse(data, source)  # the indexer's own checks: NUL bytes, encoding
        else:
            _check_converts(settings, source, data)
    except notes.Unreadable as exc:
        raise BadNote(f"{source}: {exc}") from None
    path = settings.knowledge_dir / source
    if path.is_file() and path.read_bytes() == data:
        return "unchanged"
    existed = path.exists()
    if existed and not path.is_file():
        raise BadRequest(f"{source}: a folder or special file is in the way")
    _check_folders(settings, source)
    try:
        _make_folders(settings.knowledge_dir, source)
        if existed:
            to_trash(settings, source, copy=True)
        handle, temp = tempfile.mkstemp(prefix=".askmd-", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(temp, 0o644)
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise Forbidden(
            f"{source}: cannot be written ({exc.strerror or exc}); is the knowledge folder "
            "writable?"
        ) from None
    return "updated" if existed else "created"


def _check_converts(settings: Settings, source: str, data: bytes) -> None:
    """Convert the bytes from a private temporary file, so a PDF or DOCX that would be
    skipped (encrypted, scanned, a zip bomb) is refused before it reaches the folder."""
    with tempfile.TemporaryDirectory(prefix="askmd-check-") as tmp:
        path = Path(tmp, "note" + PurePosixPath(source).suffix.lower())
        path.write_bytes(data)
        notes.read(path.parent, path.name, settings.max_file_bytes)


def ingest(
    index: Index,
    *,
    file_path: str | None = None,
    content: str | bytes | None = None,
    file_name: str | None = None,
    queue: float | None = None,
    wait: float = 5.0,
) -> dict:
    """Index a note already in the folder (`file_path`), or write `content` as `file_name`
    first; the `{"status", "file", "chunks"}` of the API's ingest. The change and its sync
    hold the writer together (up to `queue` s behind this process's other changes, `wait`
    s behind another process's), so a refused change has changed nothing."""
    settings = index.settings
    with index.keeper.writing(queue=queue, wait=wait):
        check_folder_there(settings)
        if file_path is not None:
            source = existing(settings, file_path)
        else:
            source = source_of(settings, file_name or "")
        before = index.manifest.files().get(source)
        written = None
        if content is not None:
            written = write(settings, source, content)
        report = index.sync([source], wait=wait)  # this note only: no scan of the folder
        for skipped in report.files_skipped:
            if skipped.source == source:
                raise BadNote(f"{source}: {skipped.reason}")
        after = index.manifest.files().get(source)
        if after is None:
            raise AskmdError(f"{source} was not indexed")
        if written:  # content: what happened to the file
            status = written
        elif before is None:  # file_path: what happened in the index
            status = "created"
        else:
            status = "updated" if before.md5 != after.md5 else "unchanged"
        return {"status": status, "file": source, "chunks": after.chunks}


def delete(index: Index, name: str, queue: float | None = None, wait: float = 5.0) -> dict:
    """Move a note to the trash and take its chunks out of the index: the API's DELETE,
    `{"status": "deleted", "file", "chunks", "trash"}`."""
    settings = index.settings
    with index.keeper.writing(queue=queue, wait=wait):
        check_folder_there(settings)
        source = source_of(settings, name)
        _no_link_on_the_way(settings, source)
        before = index.manifest.files().get(source)
        on_disk = (settings.knowledge_dir / source).is_file()
        if not on_disk and before is None:
            raise NotFound(f"{source}: no such note")
        trash = to_trash(settings, source) if on_disk else None
        index.sync([source], wait=wait)
        return {
            "status": "deleted",
            "file": source,
            "chunks": before.chunks if before else 0,
            "trash": str(trash) if trash else None,
        }


def _no_link_on_the_way(settings: Settings, source: str) -> None:
    """Refuse a change through a symlink inside the folder (`sub/g -> ../guides`): it
    would land on another path, and which of the two the index knows the note by depends
    on the order the folder is walked in, so the change could not be reported truly. The
    refusal names the real path, where the change can be made."""
    root = settings.knowledge_dir
    parts = PurePosixPath(source).parts
    for end in range(1, len(parts) + 1):
        link = "/".join(parts[:end])
        if os.path.islink(root / link):
            real = _real(root / source, source)
            try:
                said = real.relative_to(_real(root, source)).as_posix()
            except ValueError:
                said = str(real)
            raise Forbidden(
                f"{source}: {link} is a symlink; notes are changed at their real path ({said})"
            )


def _make_folders(root: Path, source: str) -> None:
    """The note's folders under the knowledge folder, never the knowledge folder itself:
    one moved away meanwhile must not come back holding only this note."""
    for parent in reversed(PurePosixPath(source).parents):
        if str(parent) != ".":
            (root / parent).mkdir(exist_ok=True)  # FileNotFoundError when root is gone


def check_folder_there(settings: Settings) -> None:
    """Refuse a change to the notes while the knowledge folder itself is gone (moved
    away, a disk unmounted): writing would make a new folder with one note in it, and the
    next sync would take every other note for deleted."""
    if not settings.knowledge_dir.is_dir():
        raise FolderGone(
            f"the knowledge folder {settings.knowledge_dir} is gone: no note can be written "
            "or deleted until it is back"
        )


def _check_folders(settings: Settings, source: str) -> None:
    """Refuse a path whose folders include an existing file (`keep.md/new.md`): mkdir
    would fail with an error that blames the folder's permissions."""
    for parent in reversed(PurePosixPath(source).parents):
        if str(parent) == ".":
            continue
        where = settings.knowledge_dir / parent
        if where.exists() and not where.is_dir():
            raise BadRequest(f"{source}: {parent} is a file, not a folder")


def to_trash(settings: Settings, source: str, copy: bool = False) -> Path:
    """Move (or copy) a note into index_dir/trash/<time>/<its path>; return where it went."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f".{time.time_ns() % 10**9:09d}Z"
    target = settings.index_dir / "trash" / stamp / source
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if copy:
            shutil.copy2(settings.knowledge_dir / source, target)
        else:
            shutil.move(settings.knowledge_dir / source, target)
            _remove_empty_parents(settings.knowledge_dir, source)
    except OSError as exc:
        raise Forbidden(f"{source}: cannot be moved to the trash ({exc.strerror or exc})") from None
    return target


def _remove_empty_parents(root: Path, source: str) -> None:
    """Folders that held only the deleted note go too (never the knowledge folder)."""
    for parent in PurePosixPath(source).parents:
        if str(parent) == ".":
            return
        try:
            (root / parent).rmdir()
        except OSError:  # not empty, or already gone
            return
