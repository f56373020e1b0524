"""Where one section's text may be cut, and the greedy packing of it into pieces: the
chunker's third pass (chunker.py). Cuts are tried from coarse to fine (paragraphs,
sentences, lines, words, then anywhere); a code fence is never cut unless it alone is over
the hard cap, and overlap re-reads the previous piece's tail from a sentence, line or
word start.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

HARD_CAP_FACTOR = 1.5

# Cut positions, from coarse to fine. Each finer level also contains the coarser ones.
_PARAGRAPH_BREAK = re.compile(r"\n(?:[ \t]*\n)+")
_SENTENCE_END = re.compile(
    r"[.!?][\"'”’)\]»]*(?:[ \t]+|\n+)"  # Latin: punctuation then whitespace
    r"|[。．｡！？；…]+[”’」』）】〕》\"')\]]*[ \t\n]*"  # CJK and full-width: no space needed
)
_LINE_BREAK = re.compile(r"\n")
_WHITESPACE = re.compile(r"\s+")


def hard_cap(size: int) -> int:
    return int(size * HARD_CAP_FACTOR)


@dataclass
class SectionFence:
    start: int  # offset of the opening line
    content: int  # offset just after the opening line
    content_end: int  # offset of the closing line, or the section end when unterminated
    end: int  # offset just after the closing line
    opener: str
    closer: str
    terminated: bool
    oversized: bool
    last_text: int = 0  # offset just after the last non-blank character of the content


class Cuts:
    """Allowed cut offsets of one section string, per level, with fence rules applied."""

    LEVELS = ("paragraph", "sentence", "line", "word")

    def __init__(self, text: str, fences: list[SectionFence]):
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

    def containing(self, pos: int) -> SectionFence | None:
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

    def splittable_fence_at(self, pos: int) -> SectionFence | None:
        f = self.containing(pos)
        return f if f is not None and f.oversized and f.content <= pos < f.content_end else None


@dataclass
class Piece:
    start: int  # offset where the piece text starts, overlap included
    own: int  # offset where its new content starts
    end: int


def cut(cuts: Cuts, size: int, overlap: int, reserve: int) -> list[Piece]:
    """Greedy packing: fill each piece to the target at the coarsest boundary that fills it
    at least half, never past the hard cap."""
    n = len(cuts.text)
    cap = hard_cap(size) - reserve
    target = max(size - reserve, 1)
    pieces: list[Piece] = []
    start = own = 0
    while True:
        if n - start <= cap:
            pieces.append(Piece(start, own, n))
            return pieces
        end = _choose_end(cuts, start, own, target, cap)
        if end is None:
            end = cuts.hard(own, min(max(start + target, own + 1), n))
            if (end - start > cap or cuts.bare_opener(own, end)) and start < own:
                start = own  # the overlap leaves no room for a fence that must stay whole
                continue
        pieces.append(Piece(start, own, end))
        start, own = _overlap_start(cuts, end, overlap), end


def _choose_end(cuts: Cuts, start: int, own: int, target: int, cap: int) -> int | None:
    n = len(cuts.text)
    # The overlap may eat most of the target; a piece still always adds new text.
    target_end = min(max(start + target, own + 1), n)
    cap_end = min(max(start + cap, target_end), n)
    for level in Cuts.LEVELS:
        end = cuts.farthest(level, own, target_end)
        if end is not None and end - start >= target // 2:
            return end
    for level in Cuts.LEVELS:
        end = cuts.farthest(level, own, target_end)
        if end is not None:
            return end
    for level in Cuts.LEVELS:  # e.g. a fence that starts the piece and fits under the cap
        end = cuts.nearest(level, target_end, cap_end + 1)
        if end is not None:
            return end
    return None


def _overlap_start(cuts: Cuts, end: int, overlap: int) -> int:
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
