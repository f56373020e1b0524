"""What each line of a note's Markdown body is (fences, headings, separators), and the
sections they make: the first two passes of the chunker (chunker.py).

A separator (`---`, `***`, `___` after a blank line, outside fences) starts a new note
in the file; H1-H4 headings, ATX and setext, build the heading chain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_CHAIN_LEVEL = 4  # H5/H6 are body text: too fine-grained to be worth a section

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+$")
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_THEMATIC_BREAK = re.compile(r"^ {0,3}(?:-{3,}|\*{3,}|_{3,})[ \t]*$")
_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_LIST_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_NOT_PARAGRAPH = re.compile(r"^ {0,3}(?:>|\|)")


@dataclass
class Fence:
    first: int  # index of the opening line
    last: int  # index of the closing line, or of the last line when unterminated
    opener: str  # the opening line without indentation, e.g. "```python"
    closer: str  # what closes it, e.g. "```"
    terminated: bool


@dataclass
class Heading:
    first: int  # first line (a setext heading starts at its paragraph)
    last: int  # last line (the underline for setext)
    level: int
    text: str


@dataclass
class Layout:
    headings: list[Heading] = field(default_factory=list)
    separators: list[int] = field(default_factory=list)
    fences: list[Fence] = field(default_factory=list)


def scan(lines: list[str]) -> Layout:
    """Find fences, headings and separators, in one pass that knows fences hide the rest."""
    layout = Layout()
    fence: Fence | None = None
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
            fence = Fence(i, i, line.lstrip(" ").rstrip(), opened.group(2), False)
            layout.fences.append(fence)
            paragraph_start = None
            continue
        if not line.strip():
            paragraph_start = None
            continue
        atx = _ATX.match(line)
        if atx:
            text = _ATX_CLOSING.sub("", (atx.group(2) or "").strip()).strip()
            layout.headings.append(Heading(i, i, len(atx.group(1)), text))
            paragraph_start = None
            continue
        underline = _SETEXT_UNDERLINE.match(line)
        if underline and paragraph_start is not None:
            # `Title` + `---` is a setext H2, not a separator: the classic pitfall.
            level = 1 if underline.group(1)[0] == "=" else 2
            text = " ".join(s.strip() for s in lines[paragraph_start:i])
            layout.headings.append(Heading(paragraph_start, i, level, text))
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


@dataclass
class Section:
    first: int
    end: int  # exclusive
    chain: tuple[str, ...]
    level: int
    heading_lines: set[int]

    def is_heading_only(self, lines: list[str]) -> bool:
        return all(
            i in self.heading_lines or not lines[i].strip() for i in range(self.first, self.end)
        )


def sections(lines: list[str], layout: Layout) -> list[list[Section]]:
    """Group lines into sections, grouped again by separator note (one group in heading mode)."""
    starts: dict[int, Heading] = {h.first: h for h in layout.headings if h.level <= MAX_CHAIN_LEVEL}
    separators = set(layout.separators)
    notes: list[list[Section]] = [[]]
    stack: list[tuple[int, str]] = []
    current = Section(0, 0, (), 0, set())
    i = 0
    while i < len(lines):
        if i in separators:
            current.end = i
            notes[-1].append(current)
            notes.append([])
            stack = []  # a separator starts a new note: its headings owe nothing to the last one
            current = Section(i + 1, i + 1, (), 0, set())
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
            current = Section(i, i, chain, level, set(range(heading.first, heading.last + 1)))
            i = heading.last + 1
            continue
        i += 1
    current.end = len(lines)
    notes[-1].append(current)
    return [_merge_heading_only(note, lines) for note in notes]


def _merge_heading_only(sections: list[Section], lines: list[str]) -> list[Section]:
    """A heading with no text of its own joins the next section, so no chunk is a bare title."""
    sections = [s for s in sections if any(lines[i].strip() for i in range(s.first, s.end))]
    merged: list[Section] = []
    pending: Section | None = None
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
