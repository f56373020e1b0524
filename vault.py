"""Note-app syntax (Obsidian and friends), read once: what a reader sees, and the graph.

Pure functions, no I/O. `scan` finds wikilinks `[[Note#Heading|shown]]`, embeds
`![[Note]]`, inline `#tags`, callouts `> [!type] Title`, block ids `^id`, `%% comments %%`,
HTML comments and Logseq block refs `((uuid))` in a note's body, outside code. Its edits
turn the verbatim body into the searchable one: every edit keeps the newlines it covers, so
the two texts have the same lines and a chunk's line numbers hold for both. What is quoted
stays verbatim; what is embedded and keyword-indexed is the searchable text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

Edit = tuple[int, int, str]  # (start, end, replacement) on the verbatim body


@dataclass(frozen=True)
class Link:
    target: str  # as written, without heading: "Folder/Note", "Note.md", "diagram.png"
    heading: str  # "Heading", "^blockid", or "" for the whole note
    line: int  # 0-based line of the body it is on
    embed: bool = False
    start: int = 0  # offsets of the link in the body
    end: int = 0


@dataclass(frozen=True)
class Scan:
    edits: tuple[Edit, ...]
    links: tuple[Link, ...]
    tags: tuple[tuple[str, int], ...]  # (tag without '#', 0-based line)


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")
_COMMENT = re.compile(r"%%.*?%%|<!--.*?-->", re.S)
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_CALLOUT = re.compile(r"^((?:[ \t]*>)+[ \t]*)\[!([^\]\n]+)\][+-]?[ \t]*(.*)$")
_BLOCK_ID = re.compile(r"(?:(?<=\s)|^)\^[A-Za-z0-9-]+[ \t]*$")
_BLOCK_REF = re.compile(r"\(\([0-9a-fA-F-]{36}\)\)")
# Obsidian's tag: after a space or line start, letters, digits, _ - / and at least one
# character that is not a digit; `http://x/#frag` and `](#frag)` are not preceded by space.
_TAG = re.compile(r"(?:(?<=\s)|^)#([\w/-]*[^\W\d][\w/-]*)", re.U)
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
NOTE_SUFFIXES = (".md", ".markdown")


def scan(text: str) -> Scan:
    """The edits, links and tags of a note's body (front matter already removed)."""
    edits: list[Edit] = []
    links: list[Link] = []
    tags: list[tuple[str, int]] = []
    hidden = _comment_spans(text, edits)
    offset = 0
    fence = ""
    for number, line in enumerate(text.split("\n")):
        start, offset = offset, offset + len(line) + 1
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            continue
        if opened:
            fence = opened.group(1)
            continue
        masked = _mask(line, start, hidden)
        _line_edits(masked, start, number, edits, links)
        if not _HEADING.match(masked):
            tags.extend((m.group(1), number) for m in _TAG.finditer(masked))
    edits.sort()
    return Scan(tuple(edits), tuple(links), tuple(dict.fromkeys(tags)))


def _comment_spans(text: str, edits: list[Edit]) -> list[tuple[int, int]]:
    """`%% %%` and `<!-- -->` comments, removed with their newlines kept. Fenced code is
    not searched for them: a comment marker in code is code."""
    spans = []
    code = _fenced_spans(text)
    for m in _COMMENT.finditer(text):
        if any(a <= m.start() < b for a, b in code):
            continue
        spans.append((m.start(), m.end()))
        edits.append((m.start(), m.end(), "\n" * m.group().count("\n")))
    return spans


def _fenced_spans(text: str) -> list[tuple[int, int]]:
    spans, offset, fence, begin = [], 0, "", 0
    for line in text.split("\n"):
        opened = _FENCE.match(line)
        if fence and opened and opened.group(1)[0] == fence[0]:
            spans.append((begin, offset + len(line)))
            fence = ""
        elif not fence and opened:
            fence, begin = opened.group(1), offset
        offset += len(line) + 1
    if fence:
        spans.append((begin, offset))
    return spans


def _mask(line: str, start: int, hidden: list[tuple[int, int]]) -> str:
    """The line with comments and inline code blanked (same length), so nothing in them
    counts as a link or a tag."""
    chars = list(line)
    for a, b in hidden:
        for i in range(max(a - start, 0), min(b - start, len(line))):
            chars[i] = " "
    masked = "".join(chars)
    return _CODE_SPAN.sub(lambda m: " " * len(m.group()), masked)


def _line_edits(line: str, start: int, number: int, edits: list[Edit], links: list[Link]):
    for m in _WIKILINK.finditer(line):
        inner = m.group(2)
        target, _, shown = inner.partition("|")
        path, _, heading = target.partition("#")
        path, heading = path.strip(), heading.strip()
        embed = bool(m.group(1))
        links.append(Link(path, heading, number, embed, start + m.start(), start + m.end()))
        edits.append((start + m.start(), start + m.end(), display(path, heading, shown)))
    callout = _CALLOUT.match(line)
    if callout:
        # Only the marker is replaced: the title may hold links of its own.
        marker_end = start + callout.start(3)
        title = "" if callout.group(3).strip() else callout.group(2).strip().title()
        edits.append((start + callout.start(2) - 2, marker_end, title))
    block = _BLOCK_ID.search(line)
    if block and not callout:
        edits.append((start + block.start(), start + block.end(), ""))
    for m in _BLOCK_REF.finditer(line):
        edits.append((start + m.start(), start + m.end(), ""))


def display(path: str, heading: str, shown: str = "") -> str:
    """What the app shows for a link: the alias, else the note name and its heading."""
    if shown.strip():
        return shown.strip()
    name = path[: -len(".md")] if path.lower().endswith(".md") else path
    if heading.startswith("^"):
        return name
    if name and heading:
        return f"{name} > {heading}"
    return name or heading


def apply(text: str, edits: Sequence[Edit], lo: int = 0, hi: int | None = None) -> str:
    """The searchable text of text[lo:hi]. An edit cut by the range keeps only the newlines
    of its part inside (a comment), or its replacement when it starts inside."""
    hi = len(text) if hi is None else hi
    out: list[str] = []
    pos = lo
    for a, b, repl in edits:
        if b <= lo or a >= hi or a < pos < b and a >= lo:
            continue
        out.append(text[pos:a] if a > pos else "")
        if a >= lo and b <= hi:
            out.append(repl)
        elif not repl.strip():  # a comment: its lines stay lines
            out.append("\n" * text[max(a, lo) : min(b, hi)].count("\n"))
        elif a >= lo:
            out.append(repl)
        pos = min(b, hi)
    out.append(text[pos:hi])
    return "".join(out)


def tag_matches(wanted: str, tags: Iterable[str]) -> bool:
    """`project` matches `project` and `project/alpha`, case-insensitively, as in the app."""
    want = wanted.strip().lstrip("#").strip("/").lower()
    return any(t.lower() == want or t.lower().startswith(want + "/") for t in tags)


# --- link resolution -------------------------------------------------------------------


class Resolver:
    """Resolves links against the vault's files as the app does: case-insensitive, `.md`
    optional, a bare name found anywhere; of several candidates the one in the linking
    note's folder, else the shortest path, else the first by name. Built once per listing
    of the files, so resolving every link of a vault stays a dictionary look-up each."""

    def __init__(self, paths: Iterable[str]):
        self.exact: dict[str, list[str]] = {}
        self.by_name: dict[str, list[str]] = {}
        for p in sorted(paths):
            low = p.lower()
            self.exact.setdefault(low, []).append(p)
            name = low.rsplit("/", 1)[-1]
            self.by_name.setdefault(name, []).append(p)
            if is_note(name):
                self.by_name.setdefault(name.rsplit(".", 1)[0], []).append(p)

    def resolve(self, target: str, source: str) -> str | None:
        """The file a link from `source` points at; None for a broken link.
        `[[#Heading]]` (no target) points at the note itself."""
        if not target:
            return source
        want = target.strip().lstrip("/").lower()
        parent = str(PurePosixPath(source).parent)
        here = want if parent == "." else f"{parent.lower()}/{want}"
        for key in (want, want + ".md", here, here + ".md"):  # exact path, then relative
            if key in self.exact:
                return self.exact[key][0]
        name = want.rsplit("/", 1)[-1]
        found = [
            p for p in self.by_name.get(name, []) if "/" not in want or _ends_with(p.lower(), want)
        ]
        if not found:
            return None
        return min(found, key=lambda p: (str(PurePosixPath(p).parent) != parent, p.count("/"), p))


def _ends_with(path: str, want: str) -> bool:
    stem = path.rsplit(".", 1)[0] if is_note(path) else path
    return any(s == want or s.endswith("/" + want) for s in (path, stem))


def is_note(path: str) -> bool:
    return path.lower().endswith(NOTE_SUFFIXES)


@dataclass(frozen=True)
class Resolved:
    source: str  # the note the link is written in
    target: str  # as written
    heading: str
    line: int  # file line in the source
    embed: bool
    to: str | None  # the file it resolves to; None: broken


def graph(rows: Iterable[tuple[str, str, str, int, int]], paths: Iterable[str]) -> list[Resolved]:
    """Resolve stored links (source, target, heading, line, embed) against the vault's files."""
    resolver = Resolver(paths)
    return [Resolved(s, t, h, line, bool(e), resolver.resolve(t, s)) for s, t, h, line, e in rows]
