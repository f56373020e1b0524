"""Find the notes in the knowledge folder and read each into a Note.

Walks the folder (include/exclude globs, hidden names skipped, symlinks that lead out of
the folder refused, symlink loops survived), decodes UTF-8 (a BOM is accepted, CRLF
becomes LF) and splits off YAML front matter. A file that cannot be read is reported as
Skipped with a reason and the run goes on; this module never prints and never chunks.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import stat
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

import yaml

from askmd.read import dates, properties, readers, vault
from askmd.read.encoding import decoded, guessed_warning
from askmd.read.unreadable import Unreadable


@dataclass(frozen=True)
class Note:
    source: str  # path relative to the knowledge folder, with forward slashes
    text: str  # the body: front matter removed, newlines normalised to \n
    first_line: int  # file line number of the body's first line
    md5: str  # of the file's bytes
    title: str | None = None  # from front matter (or Logseq's `title::`)
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # other names of the note: front matter `aliases`, `alias::`
    warnings: tuple[str, ...] = ()  # problems that did not stop the file from being read
    # Note-app syntax (vault.py): edits that turn `text` into what a reader sees (same lines),
    # the links written in it, and its inline tags with their 0-based body line.
    edits: tuple[vault.Edit, ...] = ()
    links: tuple[vault.Link, ...] = ()
    inline_tags: tuple[tuple[str, int], ...] = ()
    pages: tuple[int, ...] = ()  # paged formats (PDF): the body line each page starts on
    date: str | None = None  # ISO day the note is about (dates.of_note), when it has one
    # (key, text, number, day) of each front matter item, for `--where` (properties.py)
    properties: tuple[tuple[str, str, float | None, str | None], ...] = ()

    def page_span(self, line_start: int, line_end: int) -> tuple[int | None, int | None]:
        """The 1-based pages a body line range covers; (None, None) for unpaged formats."""
        if not self.pages:
            return None, None
        return bisect.bisect_right(self.pages, line_start), bisect.bisect_right(
            self.pages, line_end
        )

    @property
    def search_text(self) -> str:
        """The body as embedded and keyword-indexed; `text` is what is quoted."""
        return vault.apply(self.text, self.edits) if self.edits else self.text


@dataclass(frozen=True)
class Skipped:
    source: str  # a folder's ends with "/"
    reason: str  # e.g. "not UTF-8 (byte 0xb0 at offset 412); re-save it as UTF-8"
    # A folder that could not be listed: the notes indexed from it keep their chunks, as an
    # unreadable file does, since a permission slip must not delete anything.
    unreadable_folder: bool = False


HIDDEN = "hidden (its name starts with a dot)"
OUTSIDE = (
    "a symlink that links outside the knowledge folder "
    "(set ASKMD_FOLLOW_SYMLINKS=1 to follow such links)"
)


def matches(source: str, patterns: tuple[str, ...]) -> bool:
    """Glob match on the relative path, gitignore-like: `*.md` and `drafts` match at any
    depth, `drafts/` or `notes/drafts/*` match that folder, `**/` spans zero or more
    folders, and a leading `/` anchors a pattern to the top of the knowledge folder."""
    path: PurePosixPath | None = None  # made only when a pattern needs the parts: a walk
    for raw in patterns:  # of a big folder calls this twice a file
        pattern = raw.strip().rstrip("/")
        anchored = pattern.startswith("/")
        pattern = pattern.lstrip("/")
        if not pattern:
            continue
        if anchored and "**" not in pattern:
            # Segment by segment, so `/*.md` is the top level only (fnmatch's * spans /):
            # the file itself, or a folder above it, must match the whole pattern.
            path = path or PurePosixPath(source)
            top = PurePosixPath("/" + pattern)
            if any(
                PurePosixPath("/", *path.parts[:i]).match(str(top))
                for i in range(1, len(path.parts) + 1)
            ):
                return True
            continue
        for variant in {pattern, pattern.replace("**/", "")}:
            if fnmatchcase(source, variant) or fnmatchcase(source, variant + "/*"):
                return True
        if not anchored and "/" not in pattern:
            path = path or PurePosixPath(source)
            if any(fnmatchcase(part, pattern) for part in path.parts):
                return True
    return False


def find(
    root: Path,
    include: tuple[str, ...],
    exclude: tuple[str, ...] = (),
    follow_symlinks: bool = False,
) -> tuple[list[str], list[Skipped]]:
    """Relative paths of the notes under `root`, sorted, plus what was not taken and why.

    Every file the include globs match that is not returned is reported, except under
    excluded folders (the user asked) and hidden folders (`.git`, `.obsidian`, `.trash`
    hold tools' state; naming them on every sync would bury the warnings that matter).
    A hidden file is reported as hidden: a name that starts with a dot, `..md` included, is
    hidden by the usual rule (ls, git and Obsidian agree), and saying so is what lets the
    user find it. A symlink whose real path leaves the knowledge folder is not followed
    (a link to /etc/passwd would be indexed and served) unless `follow_symlinks` is set.
    """
    found: list[str] = []
    skipped: list[Skipped] = []
    seen_dirs: set[tuple[int, int]] = set()
    real_root = Path(os.path.realpath(root))

    def escapes(path: Path | str) -> bool:
        """A symlink that leads out of the knowledge folder, and is not to be followed."""
        if follow_symlinks or not os.path.islink(path):
            return False
        return not Path(os.path.realpath(path)).is_relative_to(real_root)

    def on_error(exc: OSError) -> None:
        where = Path(exc.filename or root)
        try:
            rel = where.relative_to(root).as_posix()
        except ValueError:
            rel = str(where)
        reason = f"a folder that cannot be read ({exc.strerror or exc}); its notes stay indexed"
        skipped.append(Skipped(rel.rstrip("/") + "/", reason, unreadable_folder=True))

    for dirpath, dirnames, filenames in os.walk(root, followlinks=True, onerror=on_error):
        here = Path(dirpath)
        try:
            st = here.stat()
        except OSError:
            dirnames[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen_dirs:  # a symlink loop, or a folder linked twice
            dirnames[:] = []
            continue
        seen_dirs.add((st.st_dev, st.st_ino))
        rel_dir = here.relative_to(root)
        kept_dirs = []
        for d in sorted(dirnames):
            rel = (rel_dir / d).as_posix()
            if d.startswith(".") or matches(rel, exclude):
                continue
            if escapes(here / d):
                skipped.append(Skipped(rel + "/", OUTSIDE))
                continue
            kept_dirs.append(d)
        dirnames[:] = kept_dirs
        prefix = "" if rel_dir == Path(".") else rel_dir.as_posix() + "/"
        for name in filenames:  # strings, not Paths: a folder of 26k notes walks 3x faster
            source = prefix + name
            if not matches(source, include) or matches(source, exclude):
                continue
            try:
                source.encode("utf-8")
            except UnicodeEncodeError:  # a name in another encoding, kept by os.walk
                shown = os.fsencode(source).decode("utf-8", errors="replace")
                reason = "named in an encoding other than UTF-8; rename it"
                skipped.append(Skipped(shown, reason))
                continue
            if name.startswith("."):
                skipped.append(Skipped(source, HIDDEN))
            elif escapes(os.path.join(dirpath, name)):
                skipped.append(Skipped(source, OUTSIDE))
            else:
                found.append(source)
    return sorted(found), sorted(skipped, key=lambda s: s.source)


def read(root: Path, source: str, max_bytes: int | None = None) -> Note:
    """Read one note; raise Unreadable with a one-line reason."""
    path = root / source
    if path.is_symlink() and not path.exists():
        raise Unreadable("a broken symlink (its target is missing or loops)")
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable("not a regular file")
        fmt = readers.kind(source)
        if fmt in readers.BINARY:
            return _convert(path, source, fmt, st.st_size, max_bytes)
        if max_bytes is not None and st.st_size > max_bytes:
            raise Unreadable(
                f"{st.st_size / 1048576:.1f} MB, over the {max_bytes / 1048576:.4g} MB limit "
                "(ASKMD_MAX_FILE_MB)"
            )
        if fmt is not None:
            return _convert(path, source, fmt, st.st_size, max_bytes)
        data = path.read_bytes()
    except FileNotFoundError:
        raise Unreadable("vanished before it could be read") from None
    except PermissionError:
        raise Unreadable("cannot be read (permission denied)") from None
    except IsADirectoryError:
        raise Unreadable("not a regular file") from None
    except OSError as exc:
        raise Unreadable(f"cannot be read ({exc.strerror or exc})") from None
    return parse(data, source)


def _convert(path: Path, source: str, fmt: str, size: int, max_bytes: int | None) -> Note:
    """A PDF, Word, HTML or text file as a Note of Markdown (see readers). A PDF, DOCX or
    HTML file may be larger on disk, for its images or markup: the limit applies to the
    text taken from it."""
    limit = max_bytes
    if fmt in readers.BINARY and max_bytes is not None:
        if size > max_bytes * readers.RAW_FACTOR:
            raise Unreadable(
                f"{size / 1048576:.1f} MB, over the {max_bytes * readers.RAW_FACTOR / 1048576:.4g}"
                f" MB limit for {fmt.upper()} files ({readers.RAW_FACTOR}x ASKMD_MAX_FILE_MB)"
            )
    else:
        limit = None  # already checked on the file's size
    digest = hashlib.md5()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    converted = readers.convert(path, fmt, limit)
    return Note(
        source=source,
        text=converted.text,
        first_line=1,
        md5=digest.hexdigest(),
        title=converted.title,
        pages=converted.pages,
        warnings=converted.warnings,
        date=dates.from_name(source),
    )


def parse(data: bytes, source: str) -> Note:
    """Bytes of one file -> Note. Pure: the same bytes always give the same Note."""
    md5 = hashlib.md5(data).hexdigest()
    text, encoding = decoded(data)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    meta, body, first_line, warning = split_front_matter(text)
    found = vault.scan(body)
    # Logseq's page properties name the note as front matter does; front matter wins.
    page = dict(found.properties)
    title = meta.get("title")
    if title is None or not str(title).strip():
        title = page.get("title")
    return Note(
        source=source,
        text=body,
        first_line=first_line,
        md5=md5,
        title=str(title).strip() or None if title is not None else None,
        tags=_tags(meta.get("tags")) or vault.property_names(page.get("tags", "")),
        aliases=_aliases(meta.get("aliases"))
        or vault.property_names(page.get("alias") or page.get("aliases") or ""),
        warnings=tuple(
            w for w in (encoding and guessed_warning(encoding), warning) if w is not None
        ),
        edits=found.edits,
        links=found.links,
        inline_tags=found.tags,
        date=dates.of_note(source, meta),
        properties=properties.rows({**page, **meta}),
    )


def decode(data: bytes) -> str:
    return decoded(data)[0]


def split_front_matter(text: str) -> tuple[dict, str, int, str | None]:
    """(metadata, body, first line of the body, warning).

    Front matter is a YAML mapping between a `---` first line and the next `---` or `...`
    line. A block that is not a mapping (a journal that opens with a separator) stays text;
    one that is broken YAML stays text too, with a warning, so nothing the user wrote is lost.
    """
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return {}, text, 1, None
    for end in range(1, len(lines)):
        if lines[end].rstrip() in ("---", "..."):
            break
    else:
        return {}, text, 1, None
    block = "\n".join(lines[1:end])
    try:
        meta = yaml.safe_load(block) if block.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 2}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return {}, text, 1, f"front matter is not valid YAML ({where}{problem}); read as text"
    if not isinstance(meta, dict):
        return {}, text, 1, None
    return meta, "\n".join(lines[end + 1 :]), end + 2, None


def _aliases(value: object) -> tuple[str, ...]:
    """Front matter `aliases`: a list, or one name (not split at commas: names hold them)."""
    items = value if isinstance(value, (list, tuple)) else [] if value is None else [value]
    return tuple(dict.fromkeys(str(v).strip() for v in items if v is not None and str(v).strip()))


def _tags(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        items = value.replace(",", " ").split()
    elif isinstance(value, (list, tuple, set)):
        items = [str(v) for v in value if v is not None]
    else:
        items = [str(value)]
    cleaned = (t.strip().lstrip("#").strip() for t in items)
    return tuple(dict.fromkeys(t for t in cleaned if t))
