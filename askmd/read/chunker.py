"""Split one note's Markdown body into chunks that keep their place in the document.

Pure functions, no I/O: text in, list[Chunk] out. A file is in *separator* mode when,
outside code fences, a thematic break (`---`, `***`, `___`) follows a blank line; each
note between separators is then a unit. Otherwise it is in *heading* mode. In both,
H1-H4 headings (ATX and setext) build the heading chain. Sections longer than the hard
cap are split at paragraphs, then sentences, then lines, then words, then anywhere;
code fences are never split unless a fence alone is over the cap. Overlap repeats the
tail of the previous piece of the same section only: never across a heading or separator.

Three passes: what each line is and the sections it makes (note_layout.py), where a long
section is cut (section_cuts.py), and here the chunks assembled with their lines, chain
and search text.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from askmd.read import vault
from askmd.read.note_layout import Fence, Layout, Section, scan, sections
from askmd.read.section_cuts import Cuts, Piece, SectionFence, cut, hard_cap

if TYPE_CHECKING:
    from collections.abc import Sequence

    from askmd.read.notes import Note

# Bump when chunk boundaries or their search text change, so indexes built by older code
# rebuild (from the embedding cache where a chunk's text is unchanged).
VERSION = "4"


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
        text = self.text if self.search_text is None else self.search_text
        return embedding_text(self.title, self.heading_chain, text)


def embedding_text(title: str, heading_chain: Sequence[str], text: str) -> str:
    """The text to embed: file title and heading chain first, so a section knows its context."""
    chain = list(heading_chain)
    if chain and (chain[0] == title or title.endswith(" > " + chain[0])):
        chain = chain[1:]  # the H1 that is the title (under a hierarchy name, its last part)
    prefix = " > ".join([title, *chain]) if title else " > ".join(chain)
    return f"{prefix}\n\n{text}" if prefix else text


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
    layout = scan(lines)
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
    for note in sections(lines, layout):
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


def _default_title(layout: Layout, source: str) -> str:
    """The first heading when it is an H1 (the document's own title), else the file name
    (of a hierarchy name, its last part: split puts the rest before it)."""
    if layout.headings and layout.headings[0].level == 1 and layout.headings[0].text:
        return layout.headings[0].text
    return (vault.hierarchy(source) or (PurePosixPath(source).stem,))[-1]


def _split_section(
    lines: list[str], section: Section, fences: list[Fence], size: int, overlap: int
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
        pieces = [Piece(0, 0, len(text))]  # most sections: one piece, no cut to look for
    else:
        pieces = cut(Cuts(text, local), size, overlap, reserve)
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
    section: Section,
    section_lines: list[str],
    starts: list[int],
    fences: list[Fence],
    text: str,
    cap: int,
) -> list[SectionFence]:
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
            SectionFence(
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
