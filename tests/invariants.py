"""The chunker's promises, checked on any body: shared by the property tests and the bench."""

from __future__ import annotations

import re

import chunker
from askmd.read.note_layout import scan

_SEPARATOR = re.compile(r"^ {0,3}(?:-{3,}|\*{3,}|_{3,})[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def _nonspace(text: str) -> str:
    return re.sub(r"\s+", "", text)


def separator_lines(body: str) -> set[int]:
    """1-based numbers of the lines the chunker treats as separators."""
    lines = body.split("\n")
    return {i + 1 for i in scan(lines).separators}


def boundary_lines(body: str) -> set[int]:
    """1-based numbers of lines where a section with text of its own starts (an H1-H4
    heading, or the line after a separator). A heading with no text before the next one
    joins it, so the boundary between those two is not one."""
    lines = body.split("\n")
    layout = scan(lines)
    heading_lines = {
        i
        for h in layout.headings
        if h.level <= chunker.MAX_CHAIN_LEVEL
        for i in range(h.first, h.last + 1)
    }
    starts = sorted(
        [h.first for h in layout.headings if h.level <= chunker.MAX_CHAIN_LEVEL]
        + [i for i in layout.separators]
    )
    boundaries = set()
    previous = 0
    for start in starts:
        has_text = any(
            lines[i].strip() and i not in heading_lines and i not in layout.separators
            for i in range(previous, start)
        )
        if has_text:
            boundaries.add(start + 1)
        previous = start
    return boundaries


def unbalanced_fence(text: str) -> bool:
    """True when a fence opened in `text` is still open at its end."""
    open_marker = None
    for line in text.split("\n"):
        stripped = line.strip()
        if open_marker is None:
            m = _FENCE.match(line)
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                open_marker = m.group(1)
        elif (
            len(line) - len(line.lstrip(" ")) <= 3
            and stripped
            and set(stripped) == {open_marker[0]}
            and len(stripped) >= len(open_marker)
        ):
            open_marker = None
    return open_marker is not None


def own_text(chunk: chunker.Chunk, body_lines: list[str]) -> str:
    """The chunk's text without the fence lines it added and without its overlap.

    A chunk that starts inside a fence gets the opener prepended; one that ends inside a
    fence (or in an unterminated one) gets the closer appended."""
    lines = chunk.text.split("\n")
    first, last = chunk.line_start - 1, chunk.line_end - 1
    for f in scan(body_lines).fences:
        if f.first < first and (first < f.last or not f.terminated):
            lines = lines[1:]
        if f.first <= last and (last < f.last or not f.terminated):
            lines = lines[:-1]
    return "\n".join(lines)[chunk.overlap :]


def check(body: str, chunks: list[chunker.Chunk], size: int) -> None:
    """Assert every invariant; the message names the first one broken."""
    body_lines = body.split("\n")
    separators = separator_lines(body)
    kept = "\n".join(line for i, line in enumerate(body_lines, 1) if i not in separators)
    own = "".join(_nonspace(own_text(c, body_lines)) for c in chunks)
    assert own == _nonspace(kept), "chunks without overlap do not rebuild the body"
    boundaries = boundary_lines(body)
    for i, c in enumerate(chunks):
        assert c.id == f"{c.source}#{i}" and c.chunk_index == i
        assert c.text.strip(), f"chunk {i} is blank"
        assert len(c.text) <= chunker.hard_cap(size), f"chunk {i} is {len(c.text)} chars"
        assert not unbalanced_fence(c.text), f"chunk {i} leaves a fence open"
        assert 1 <= c.line_start <= c.line_end <= len(body_lines), f"chunk {i} lines"
        span = "\n".join(body_lines[c.line_start - 1 : c.line_end])
        assert _nonspace(own_text(c, body_lines)) in _nonspace(span), (
            f"chunk {i} text not in its lines"
        )
        if c.overlap:
            prev = chunks[i - 1]
            assert c.heading_chain == prev.heading_chain
            crossed = [b for b in boundaries if prev.line_start < b <= c.line_end]
            assert not crossed, f"chunk {i} overlaps across line {crossed[0]}"
