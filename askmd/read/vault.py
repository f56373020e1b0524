"""Note-app syntax (Obsidian and friends), read once: what a reader sees, and the graph.

Pure functions, no I/O. `scan` finds wikilinks `[[Note#Heading|shown]]`, embeds
`![[Note]]`, inline `#tags`, callouts `> [!type] Title`, block ids `^id`, `%% comments %%`,
HTML comments, Logseq properties `key:: value` and block refs `((uuid))` in a note's body,
outside code. Its edits turn the verbatim body into the searchable one: every edit keeps the
newlines it covers, so the two texts have the same lines and a chunk's line numbers hold for
both. What is quoted stays verbatim; what is embedded and keyword-indexed is the searchable
text. `hierarchy` reads Dendron/Foam names (`lang.python.typing.md`) as a title chain.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote

Edit = tuple[int, int, str]  # (start, end, replacement) on the verbatim body
# What `scan` reads as links; an index whose links were read by another version reads
# every note's links again (indexer._reread_links). 2: Markdown links too.
LINKS_VERSION = "2"


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
    # Logseq page properties (the `key:: value` lines that open the page): (key lowered, value)
    properties: tuple[tuple[str, str], ...] = ()


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")
_COMMENT = re.compile(r"%%.*?%%|<!--.*?-->", re.S)
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
# A Markdown link or image: `[text](Folder/My%20Note.md#Heading)`, `![alt](<a b.png>)`,
# an optional "title" after the target. Its text stays as written (no edit).
_MDLINK = re.compile(
    r"(!?)\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\(\s*(?:<([^<>\n]+)>|((?:[^()\s]|\([^()\s]*\))+))"
    r"(?:\s+\"[^\"\n]*\")?\s*\)"
)
_SCHEME = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:|//)")  # http:, mailto:, obsidian:, //host
_CALLOUT = re.compile(r"^((?:[ \t]*>)+[ \t]*)\[!([^\]\n]+)\][+-]?[ \t]*(.*)$")
_BLOCK_ID = re.compile(r"(?:(?<=\s)|^)\^[A-Za-z0-9-]+[ \t]*$")
_BLOCK_REF = re.compile(r"\(\(([0-9a-fA-F-]{36})\)\)")
# Logseq (and Dataview) property: `key:: value` on its own line, under a block's bullet or not.
_PROPERTY = re.compile(r"^([ \t]*(?:[-*+][ \t]+)?)(\w[\w-]*)::(?=[ \t]|$)[ \t]*(.*?)[ \t]*$")
_BULLET = re.compile(r"^[ \t]*[-*+][ \t]+")
# Properties Logseq never shows: the line is dropped from the searchable text.
HIDDEN_PROPERTIES = frozenset({"id", "collapsed"})
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
    logseq = _Logseq(text)
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
            logseq.page = False
            continue
        masked = _mask(line, start, hidden)
        # The substring tests keep the common line (no property, no ref) to two lookups.
        if ("::" in masked or "((" in masked or logseq.page) and logseq.line(masked, start, edits):
            continue  # a hidden property: the whole line is gone
        _line_edits(masked, start, number, edits, links)
        if not _HEADING.match(masked):
            tags.extend((m.group(1), number) for m in _TAG.finditer(masked))
    edits.sort()
    edits.extend(logseq.ref_edits(text, edits))
    edits.sort()
    return Scan(tuple(edits), tuple(links), tuple(dict.fromkeys(tags)), logseq.properties())


class _Logseq:
    """Logseq's `key:: value` properties and `((uuid))` block refs, line by line.

    A property reads as Logseq shows it, `key: value`; `id::` and `collapsed::` lines, which
    it never shows, are dropped. The properties before the page's first other line are the
    page's (title, alias, tags). A ref becomes the text of the block whose `id::` it names
    when that block is in the same note, else nothing: a uuid is noise to search."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.page = True  # still in the lines that open the page
        self.page_props: dict[str, str] = {}
        self.blocks: dict[str, tuple[int, int]] = {}  # uuid -> offsets of its block's first line
        self.refs: list[tuple[int, int, str]] = []  # (start, end, uuid)

    def line(self, masked: str, start: int, edits: list[Edit]) -> bool:
        """Read one line; True when it is a hidden property (its edit already made)."""
        if "((" in masked:
            self.refs.extend(
                (start + m.start(), start + m.end(), m.group(1).lower())
                for m in _BLOCK_REF.finditer(masked)
            )
        prop = _PROPERTY.match(masked) if "::" in masked else None
        if prop is None:
            self.page = self.page and not masked.strip()
            return False
        key, value = prop.group(2).lower(), prop.group(3)
        if self.page:
            self.page_props.setdefault(key, value)
        if key in HIDDEN_PROPERTIES:
            block = self._block_above(start) if key == "id" else None
            if block is not None:
                self.blocks.setdefault(value.lower(), block)
            edits.append((start, start + len(masked), ""))
            return True
        colons = start + prop.end(2)
        edits.append((colons, colons + 2, ":"))
        return False

    def _block_above(self, start: int) -> tuple[int, int] | None:
        """Offsets of the nearest bullet line above `start`: the block a property is under.
        Looked for only when an `id::` is met, so other lines pay nothing for it."""
        end = start - 1
        while end > 0:
            begin = self.text.rfind("\n", 0, end) + 1
            line = self.text[begin:end]
            if _BULLET.match(line):
                return begin, end
            if not line.strip() or not line[0].isspace():
                return None  # a property of the page, or under a paragraph: not a block
            end = begin - 1  # the block's other lines and properties
        return None

    def ref_edits(self, text: str, edits: list[Edit]) -> list[Edit]:
        """Each ref's replacement: its block's searchable first line, refs in it dropped."""
        out = []
        for a, b, uuid in self.refs:
            span = self.blocks.get(uuid)
            shown = ""
            if span is not None:
                line = _BULLET.sub("", apply(text, edits, *span), count=1)
                shown = _BLOCK_REF.sub("", line).strip()
            out.append((a, b, shown))
        return out

    def properties(self) -> tuple[tuple[str, str], ...]:
        return tuple(self.page_props.items())


def property_names(value: str) -> tuple[str, ...]:
    """A Logseq list property (`alias::`, `tags::`): comma-separated names, each maybe a
    `[[link]]` or a `#tag` (`#[[two words]]` too), as plain names."""
    names = (n.strip().lstrip("#").strip() for n in _LIST_ITEM.findall(value))
    names = (n[2:-2].strip() if n.startswith("[[") and n.endswith("]]") else n for n in names)
    return tuple(dict.fromkeys(n for n in names if n))


_LIST_ITEM = re.compile(r"(?:#?\[\[[^\]]*\]\]|[^,])+")


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
    first = len(links)
    for m in _WIKILINK.finditer(line):
        inner = m.group(2)
        target, _, shown = inner.partition("|")
        path, _, heading = target.partition("#")
        path, heading = path.strip(), heading.strip()
        embed = bool(m.group(1))
        links.append(Link(path, heading, number, embed, start + m.start(), start + m.end()))
        edits.append((start + m.start(), start + m.end(), display(path, heading, shown)))
    if "](" in line:
        _markdown_links(line, start, number, links)
        links[first:] = sorted(links[first:], key=lambda k: k.start)  # in reading order
    callout = _CALLOUT.match(line)
    if callout:
        # Only the marker is replaced: the title may hold links of its own.
        marker_end = start + callout.start(3)
        title = "" if callout.group(3).strip() else callout.group(2).strip().title()
        edits.append((start + callout.start(2) - 2, marker_end, title))
    block = _BLOCK_ID.search(line)
    if block and not callout:
        edits.append((start + block.start(), start + block.end(), ""))


def _markdown_links(line: str, start: int, number: int, links: list[Link]) -> None:
    """Markdown links into the vault (a relative path, %-encoded as the app writes it):
    links like wikilinks, `![...](...)` an embed. Web and app URLs are not the vault's."""
    for m in _MDLINK.finditer(line):
        raw = m.group(2) or m.group(3)
        if _SCHEME.match(raw):
            continue
        path, _, heading = unquote(raw).partition("#")
        links.append(
            Link(path.strip(), heading.strip(), number, bool(m.group(1)), start + m.start(),
                 start + m.end())
        )  # fmt: skip


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


def hierarchy(source: str) -> tuple[str, ...]:
    """The parts of a Dendron/Foam hierarchy name, `lang.python.typing.md` -> (lang, python,
    typing); () for any other name. At least three parts, none empty, none with spaces and
    none digits only, so versions (`v1.2.3.md`) and dates (`2024.01.05.md`) stay names."""
    name = PurePosixPath(source).name
    if not is_note(name) or any(c.isspace() for c in name):
        return ()
    parts = name.rsplit(".", 1)[0].split(".")
    if len(parts) < 3 or any(not p or p.isdigit() for p in parts):
        return ()
    return tuple(parts)


def hierarchy_title(source: str, title: str) -> str:
    """The title under the note's hierarchy: `lang > python > Typing` for `lang.python.typing.md`
    titled `Typing` (by front matter, its H1 or its last part). A title that already spells
    the hierarchy (Logseq writes `title:: lang/python/typing`) is left as it is."""
    parents = hierarchy(source)[:-1]
    if not parents:
        return title
    spelled = re.sub(r"\s*(?:/|>|\.)\s*", ".", title.lower())
    if spelled.startswith(".".join(parents).lower() + "."):
        return title
    return " > ".join([*parents, title])


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
        if "./" in want:  # a Markdown link's relative path: ./x.md, ../Folder/x.md
            want, here = posixpath.normpath(want), posixpath.normpath(here)
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
