"""Split one note's Markdown body into chunks that keep their place in the document.

Pure functions, no I/O: text in, list[Chunk] out. A file is in *separator* mode when,
outside code fences, a thematic break (`---`, `***`, `___`) follows a blank line; each
note between separators is then a unit. Otherwise it is in *heading* mode. In both,
H1-H4 headings (ATX and setext) build the heading chain. Sections longer than the hard
cap are split at paragraphs, then sentences, then lines, then words, then anywhere;
code fences are never split unless a fence alone is over the cap. Overlap repeats the
tail of the previous piece of the same section only: never across a heading or separator.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from askmd.read import vault

if TYPE_CHECKING:
    from collections.abc import Sequence

    from askmd.read.notes import Note

# Bump when chunk boundaries or their search text change, so indexes built by older code
# rebuild (from the embedding cache where a chunk's text is unchanged).
VERSION = "4"
HARD_CAP_FACTOR = 1.5
MAX_CHAIN_LEVEL = 4  # H5/H6 are body text: too fine-grained to be worth a section

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_THEMATIC_BREAK = re.compile(r"^ {0,3}(?:-{3,}|\*{3,}|_{3,})[ \t]*$")
_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_LIST_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_NOT_PARAGRAPH = re.compile(r"^ {0,3}(?:>|\|)")

# Cut positions, from coarse to fine. Each finer level also contains the coarser ones.
_PARAGRAPH_BREAK = re.compile(r"\n(?:[ \t]*\n)+")
_SENTENCE_END = re.compile(
    r"[.!?][\"'”’)\]»]*(?:[ \t]+|\n+)"  # Latin: punctuation then whitespace
    r"|[。．｡！？；…]+[”’」』）】〕》\"')\]]*[ \t\n]*"  # CJK and full-width: no space needed
)
_LINE_BREAK = re.compile(r"\n")
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Chunk:
    id: str
    source: str
    chunk_index: int
    text: str
    heading_chain: tuple[str, ...]
    heading_level: int
    line_start: int
    line_end: int
    mode: str
    title: str
    overlap: int = 0  # characters at the start of `text` repeated from the previous chunk
    # The same lines as a reader sees them (note-app syntax resolved), when they differ:
    # what is embedded and keyword-indexed, while `text` is what is quoted.
    search_text: str | None = None
    page_start: int | None = None  # 1-based pages, for paged formats (PDF); else None
    page_end: int | None = None

    @property
    def chain_text(self) -> str:
        return " > ".join(self.heading_chain)

    @property
    def embedding_text(self) -> str:
        """The text to embed: file title and heading chain first, so a section knows its context."""
        chain = list(self.heading_chain)
        if chain and (chain[0] == self.title or self.title.endswith(" > " + chain[0])):
            chain = chain[1:]  # the H1 that is the title (under a hierarchy name, its last part)
        prefix = " > ".join([self.title, *chain]) if self.title else " > ".join(chain)
        text = self.text if self.search_text is None else self.search_text
        return f"{prefix}\n\n{text}" if prefix else text


def hard_cap(size: int) -> int:
    return int(size * HARD_CAP_FACTOR)


# --- pass 1: what each line is -------------------------------------------------------


@dataclass
class _Fence:
    first: int  # index of the opening line
    last: int  # index of the closing line, or of the last line when unterminated
    opener: str  # the opening line without indentation, e.g. "```python"
    closer: str  # what closes it, e.g. "```"
    terminated: bool


@dataclass
class _Heading:
    first: int  # first line (a setext heading starts at its paragraph)
    last: int  # last line (the underline for setext)
    level: int
    text: str


@dataclass
class _Layout:
    headings: list[_Heading] = field(default_factory=list)
    separators: list[int] = field(default_factory=list)
    fences: list[_Fence] = field(default_factory=list)


def _scan(lines: list[str]) -> _Layout:
    """Find fences, headings and separators, in one pass that knows fences hide the rest."""
    layout = _Layout()
    fence: _Fence | None = None
    paragraph_start: int | None = None  # first line of the paragraph being read, if any
    for i, line in enumerate(lines):
        if fence is not None:
            stripped = line.strip()
            if (
                len(line) - len(line.lstrip(" ")) <= 3
                and stripped
                and set(stripped) == {fence.closer[0]}
                and len(stripped) >= len(fence.closer)
            ):
                fence.last, fence.terminated = i, True
                fence = None
            else:
                fence.last = i
            continue
        opened = _FENCE_OPEN.match(line)
        if opened and not (opened.group(2)[0] == "`" and "`" in opened.group(3)):
            fence = _Fence(i, i, line.lstrip(" ").rstrip(), opened.group(2), False)
            layout.fences.append(fence)
            paragraph_start = None
            continue
        if not line.strip():
            paragraph_start = None
            continue
        atx = _ATX.match(line)
        if atx:
            text = _ATX_CLOSING.sub("", (atx.group(2) or "").strip()).strip()
            layout.headings.append(_Heading(i, i, len(atx.group(1)), text))
            paragraph_start = None
            continue
        underline = _SETEXT_UNDERLINE.match(line)
        if underline and paragraph_start is not None:
            # `Title` + `---` is a setext H2, not a separator: the classic pitfall.
            level = 1 if underline.group(1)[0] == "=" else 2
            text = " ".join(s.strip() for s in lines[paragraph_start:i])
            layout.headings.append(_Heading(paragraph_start, i, level, text))
            paragraph_start = None
            continue
        if _THEMATIC_BREAK.match(line) and (i == 0 or not lines[i - 1].strip()):
            layout.separators.append(i)
            paragraph_start = None
            continue
        if _LIST_ITEM.match(line) or _NOT_PARAGRAPH.match(line) or _THEMATIC_BREAK.match(line):
            paragraph_start = None
        elif paragraph_start is None:
            paragraph_start = i
    return layout


# --- pass 2: sections ----------------------------------------------------------------


@dataclass
class _Section:
    first: int
    end: int  # exclusive
    chain: tuple[str, ...]
    level: int
    heading_lines: set[int]

    def is_heading_only(self, lines: list[str]) -> bool:
        return all(
            i in self.heading_lines or not lines[i].strip() for i in range(self.first, self.end)
        )


def _sections(lines: list[str], layout: _Layout) -> list[list[_Section]]:
    """Group lines into sections, grouped again by separator note (one group in heading mode)."""
    starts: dict[int, _Heading] = {
        h.first: h for h in layout.headings if h.level <= MAX_CHAIN_LEVEL
    }
    separators = set(layout.separators)
    notes: list[list[_Section]] = [[]]
    stack: list[tuple[int, str]] = []
    current = _Section(0, 0, (), 0, set())
    i = 0
    while i < len(lines):
        if i in separators:
            current.end = i
            notes[-1].append(current)
            notes.append([])
            stack = []  # a separator starts a new note: its headings owe nothing to the last one
            current = _Section(i + 1, i + 1, (), 0, set())
            i += 1
            continue
        heading = starts.get(i)
        if heading is not None:
            current.end = i
            notes[-1].append(current)
            while stack and stack[-1][0] >= heading.level:
                stack.pop()
            if heading.text:
                stack.append((heading.level, heading.text))
            chain = tuple(text for _, text in stack)
            level = stack[-1][0] if stack else 0
            current = _Section(i, i, chain, level, set(range(heading.first, heading.last + 1)))
            i = heading.last + 1
            continue
        i += 1
    current.end = len(lines)
    notes[-1].append(current)
    return [_merge_heading_only(note, lines) for note in notes]


def _merge_heading_only(sections: list[_Section], lines: list[str]) -> list[_Section]:
    """A heading with no text of its own joins the next section, so no chunk is a bare title."""
    sections = [s for s in sections if any(lines[i].strip() for i in range(s.first, s.end))]
    merged: list[_Section] = []
    pending: _Section | None = None
    for section in sections:
        if pending is not None:
            section.first = pending.first
            section.heading_lines |= pending.heading_lines
            pending = None
        if section.is_heading_only(lines) and section is not sections[-1]:
            pending = section
            continue
        merged.append(section)
    return merged


# --- pass 3: cutting one section into pieces -----------------------------------------


@dataclass
class _SectionFence:
    start: int  # offset of the opening line
    content: int  # offset just after the opening line
    content_end: int  # offset of the closing line, or the section end when unterminated
    end: int  # offset just after the closing line
    opener: str
    closer: str
    terminated: bool
    oversized: bool
    last_text: int = 0  # offset just after the last non-blank character of the content


class _Cuts:
    """Allowed cut offsets of one section string, per level, with fence rules applied."""

    LEVELS = ("paragraph", "sentence", "line", "word")

    def __init__(self, text: str, fences: list[_SectionFence]):
        self.text = text
        self.fences = fences
        self._fence_starts = [f.start for f in fences]
        paragraph = {m.end() for m in _PARAGRAPH_BREAK.finditer(text)}
        for f in fences:
            paragraph.update((f.start, f.end))
        sentence = paragraph | {m.end() for m in _SENTENCE_END.finditer(text)}
        line = sentence | {m.end() for m in _LINE_BREAK.finditer(text)}
        word = line | {m.end() for m in _WHITESPACE.finditer(text)}
        n = len(text)
        self.by_level = {
            name: sorted(p for p in positions if 0 < p < n and self._allowed(p, name))
            for name, positions in zip(self.LEVELS, (paragraph, sentence, line, word), strict=False)
        }

    def containing(self, pos: int) -> _SectionFence | None:
        """The fence that strictly contains `pos`, if any (fences never overlap)."""
        i = bisect.bisect_left(self._fence_starts, pos) - 1
        if i >= 0 and pos < self.fences[i].end:
            return self.fences[i]
        return None

    def _allowed(self, pos: int, level: str) -> bool:
        f = self.containing(pos)
        if f is None:
            return True
        # Inside a fence: only an oversized one may be cut, and only between its lines.
        return (
            f.oversized
            and level in ("line", "word")
            and f.content < pos < f.last_text
            and self.text[pos - 1] == "\n"
        )

    def farthest(self, level: str, lo: int, hi: int) -> int | None:
        """The largest allowed cut in (lo, hi]."""
        positions = self.by_level[level]
        i = bisect.bisect_right(positions, hi) - 1
        return positions[i] if i >= 0 and positions[i] > lo else None

    def nearest(self, level: str, lo: int, hi: int) -> int | None:
        """The smallest allowed cut in [lo, hi)."""
        positions = self.by_level[level]
        i = bisect.bisect_left(positions, lo)
        return positions[i] if i < len(positions) and positions[i] < hi else None

    def hard(self, lo: int, hi: int) -> int:
        """A cut anywhere in (lo, hi], but never inside a fence that must stay whole."""
        f = self.containing(hi)
        if f is not None and not f.oversized:
            return f.start if f.start > lo else f.end
        if f is not None and hi <= f.content:  # never end a piece on a bare opener line
            return f.start if f.start > lo else f.content
        return hi

    def bare_opener(self, own: int, end: int) -> bool:
        """Would a piece whose new text is own..end hold a fence opener and none of its code?"""
        f = self.containing(end - 1) if end > 0 else None
        return f is not None and own <= f.start and end <= f.content

    def splittable_fence_at(self, pos: int) -> _SectionFence | None:
        f = self.containing(pos)
        return f if f is not None and f.oversized and f.content <= pos < f.content_end else None


@dataclass
class _Piece:
    start: int  # offset where the piece text starts, overlap included
    own: int  # offset where its new content starts
    end: int


def _cut(cuts: _Cuts, size: int, overlap: int, reserve: int) -> list[_Piece]:
    """Greedy packing: fill each piece to the target at the coarsest boundary that fills it
    at least half, never past the hard cap."""
    n = len(cuts.text)
    cap = hard_cap(size) - reserve
    target = max(size - reserve, 1)
    pieces: list[_Piece] = []
    start = own = 0
    while True:
        if n - start <= cap:
            pieces.append(_Piece(start, own, n))
            return pieces
        end = _choose_end(cuts, start, own, target, cap)
        if end is None:
            end = cuts.hard(own, min(max(start + target, own + 1), n))
            if (end - start > cap or cuts.bare_opener(own, end)) and start < own:
                start = own  # the overlap leaves no room for a fence that must stay whole
                continue
        pieces.append(_Piece(start, own, end))
        start, own = _overlap_start(cuts, end, overlap), end


def _choose_end(cuts: _Cuts, start: int, own: int, target: int, cap: int) -> int | None:
    n = len(cuts.text)
    # The overlap may eat most of the target; a piece still always adds new text.
    target_end = min(max(start + target, own + 1), n)
    cap_end = min(max(start + cap, target_end), n)
    for level in _Cuts.LEVELS:
        end = cuts.farthest(level, own, target_end)
        if end is not None and end - start >= target // 2:
            return end
    for level in _Cuts.LEVELS:
        end = cuts.farthest(level, own, target_end)
        if end is not None:
            return end
    for level in _Cuts.LEVELS:  # e.g. a fence that starts the piece and fits under the cap
        end = cuts.nearest(level, target_end, cap_end + 1)
        if end is not None:
            return end
    return None


def _overlap_start(cuts: _Cuts, end: int, overlap: int) -> int:
    """Where the next piece starts re-reading: at a sentence, line or word start within
    `overlap` characters before `end`, never inside a fence it could not close."""
    if overlap <= 0:
        return end
    lo = max(end - overlap, 0)
    inside = cuts.splittable_fence_at(end)
    if inside is not None:
        lo = max(lo, inside.content)  # re-read code lines only: the opener is added back
    else:
        f = cuts.containing(lo)
        if f is not None:
            lo = f.end  # a fence tail without its opener would unbalance the next piece
    if lo >= end:
        return end
    useful = max(overlap // 4, 1)
    for level in ("sentence", "line", "word"):
        pos = cuts.nearest(level, lo, end)
        if pos is not None and end - pos >= useful:
            return pos
    return lo


# --- assembly ------------------------------------------------------------------------


_LEADING_BLANK_LINES = re.compile(r"^(?:[ \t]*\n)+")


def split(
    text: str,
    *,
    source: str,
    title: str | None = None,
    first_line: int = 1,
    size: int = 1000,
    overlap: int = 200,
    edits: Sequence[tuple[int, int, str]] = (),
) -> list[Chunk]:
    """Chunk a Markdown body (front matter already removed, newlines normalised to \\n).

    `first_line` is the file line number of the body's first line, so that line_start and
    line_end point into the file as the user sees it. `edits` (start, end, replacement)
    on the body make each chunk's search_text (vault.py); they keep lines, so the cuts,
    made on the verbatim text, hold for both.

    >>> [c.heading_chain for c in split("# A\\n\\ntext\\n\\n## B\\n\\nmore", source="n.md")]
    [('A',), ('A', 'B')]
    """
    if not 0 <= overlap < size:
        raise ValueError(f"overlap ({overlap}) must be at least 0 and smaller than size ({size})")
    lines = text.split("\n")
    layout = _scan(lines)
    mode = "separator" if layout.separators else "heading"
    if title is None:
        title = _default_title(layout, source)
    title = vault.hierarchy_title(source, title)
    chunks: list[Chunk] = []
    fence_firsts = [f.first for f in layout.fences]
    line_offsets = [0]
    if edits:
        for line in lines[:-1]:
            line_offsets.append(line_offsets[-1] + len(line) + 1)
    for note in _sections(lines, layout):
        for section in note:
            inside = layout.fences[
                bisect.bisect_left(fence_firsts, section.first) : bisect.bisect_left(
                    fence_firsts, section.end
                )
            ]
            for piece_text, start, end, overlap_chars, span in _split_section(
                lines, section, inside, size, overlap
            ):
                index = len(chunks)
                searchable = None
                if edits:
                    base = line_offsets[section.first]
                    lo, hi = base + span[0], base + span[1]
                    searchable = _searchable(text, edits, piece_text, lo, hi)
                chunks.append(
                    Chunk(
                        id=f"{source}#{index}",
                        source=source,
                        chunk_index=index,
                        text=piece_text,
                        heading_chain=section.chain,
                        heading_level=section.level,
                        line_start=first_line + start,
                        line_end=first_line + end,
                        mode=mode,
                        title=title,
                        overlap=overlap_chars,
                        search_text=searchable,
                    )
                )
    return chunks


def _searchable(
    text: str, edits: Sequence[tuple[int, int, str]], piece: str, lo: int, hi: int
) -> str | None:
    """The search text of a piece whose body is text[lo:hi] (a fence opener or closer the
    piece gained kept around it); None when no edit touches it."""
    clean = vault.apply(text, edits, lo, hi)
    body = text[lo:hi]
    if clean == body:
        return None
    head = piece.find(body)
    return piece[:head] + clean + piece[head + len(body) :] if head >= 0 else clean


def pages_label(page_start: int | None, page_end: int | None) -> str:
    """`p. 12` or `p. 12–13`; empty for formats without pages."""
    if page_start is None:
        return ""
    if page_end is None or page_end == page_start:
        return f"p. {page_start}"
    return f"p. {page_start}–{page_end}"


def split_note(note: Note, size: int = 1000, overlap: int = 200) -> list[Chunk]:
    """Chunk a notes.Note: its body, title and first line number in the file. A paged
    note's chunks then learn their pages from the note's line-to-page map."""
    chunks = split(
        note.text,
        source=note.source,
        title=note.title,
        first_line=note.first_line,
        size=size,
        overlap=overlap,
        edits=note.edits,
    )
    if not note.pages:
        return chunks
    paged = []
    for c in chunks:
        first, last = note.page_span(c.line_start, c.line_end)
        paged.append(replace(c, page_start=first, page_end=last))
    return paged


def _default_title(layout: _Layout, source: str) -> str:
    """The first heading when it is an H1 (the document's own title), else the file name
    (of a hierarchy name, its last part: split puts the rest before it)."""
    if layout.headings and layout.headings[0].level == 1 and layout.headings[0].text:
        return layout.headings[0].text
    return (vault.hierarchy(source) or (PurePosixPath(source).stem,))[-1]


def _split_section(
    lines: list[str], section: _Section, fences: list[_Fence], size: int, overlap: int
) -> list[tuple[str, int, int, int, tuple[int, int]]]:
    """Cut one section (`fences`: those inside it); return (text, first line index,
    last line index, overlap chars, body offsets in the section) per piece."""
    section_lines = lines[section.first : section.end]
    text = "\n".join(section_lines)
    starts = [0]
    for line in section_lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    local = _section_fences(section, section_lines, starts, fences, text, hard_cap(size))
    # Room kept free in every piece for a fence opener or closer added to keep it balanced.
    reserve = max((len(f.opener) + len(f.closer) + 2 for f in local), default=0)
    if len(text) + reserve <= hard_cap(size):
        pieces = [_Piece(0, 0, len(text))]  # most sections: one piece, no cut to look for
    else:
        pieces = _cut(_Cuts(text, local), size, overlap, reserve)
    result = []
    for piece in pieces:
        body = text[piece.start : piece.end]
        blank = _LEADING_BLANK_LINES.match(body)
        begin = piece.start + (blank.end() if blank else 0)
        body = text[begin : piece.end].rstrip()
        if not body.strip():
            continue
        prefix = suffix = ""
        for f in local:
            if f.oversized and f.content <= piece.start < f.content_end:
                prefix = f.opener + "\n"
            ends_inside = f.content < piece.end < f.content_end
            runs_off = not f.terminated and piece.end >= f.content_end and f.start < piece.end
            if ends_inside or (runs_off and piece.start < f.end):
                suffix = "\n" + f.closer
        first_index = bisect.bisect_right(starts, begin) - 1
        last_index = bisect.bisect_right(starts, begin + len(body) - 1) - 1
        overlap_chars = max(0, min(piece.own - begin, len(body)))
        result.append(
            (
                prefix + body + suffix,
                section.first + first_index,
                section.first + last_index,
                overlap_chars,
                (begin, begin + len(body)),
            )
        )
    return result


def _section_fences(
    section: _Section,
    section_lines: list[str],
    starts: list[int],
    fences: list[_Fence],
    text: str,
    cap: int,
) -> list[_SectionFence]:
    """The fences of one section (`fences` are those inside it) as offsets into its text."""
    reserve = max((len(f.opener) + len(f.closer) + 2 for f in fences), default=0)
    length = len(text)
    local = []
    for f in fences:
        first = f.first - section.first
        last = min(f.last, section.end - 1) - section.first
        start = starts[first]
        content = min(start + len(section_lines[first]) + 1, length)
        end = min(starts[last] + len(section_lines[last]) + 1, length)
        content_end = max(starts[last] if f.terminated else length, content)
        local.append(
            _SectionFence(
                start=start,
                content=content,
                content_end=content_end,
                end=end,
                opener=f.opener,
                closer=f.closer,
                terminated=f.terminated,
                oversized=end - start > cap - reserve,
                last_text=content + len(text[content:content_end].rstrip()),
            )
        )
    return local
