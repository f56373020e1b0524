"""The units of a passage that can tie a thing to a value, each with what governs it.

A value is said of a thing in one unit of text: a sentence, a list item, a table row.
What the unit is about may be written above it rather than in it: the table's header
row ("| Service | Port |"), the line that introduces a list ("Emergency numbers:"), a
heading inside the passage or in its heading chain, the note's file name. A unit is
read with those (`Unit.context`), never with its neighbours: "Audiobookshelf on port
13378" two lines under "Jellyfin" says nothing of Jellyfin's port.

Notes are hard-wrapped: a sentence of prose runs on over several lines, so prose lines
are joined into their paragraph before it is cut into sentences. A list item's
continuation lines (indented, or plain lines right under it) belong to the item.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from askmd.answer.sentences import FENCE, TABLE_RULE

if TYPE_CHECKING:
    from askmd.search.hits import Hit

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?(.*)$")
_ROW = re.compile(r"^\s*\|.*\|\s*$")
_QUOTE = re.compile(r"^\s*>\s?")
# A sentence ends at . ! ? before a space, or at a CJK end mark; not inside "v2.17" or
# "e.g." followed by a lower-case word.
_SENTENCE = re.compile(r".+?(?:[.!?](?=\s+[^a-z\s])|[。！？；]+|$)", re.S)


@dataclass(frozen=True)
class Unit:
    """One sentence, list item or table row, and the text that governs it."""

    text: str
    governing: str  # headings, table header, introducing line, file name
    day: str = ""  # the day of the entry the unit is in (a journal's), which dates it
    heading: bool = False  # a heading, read with the section it heads

    @property
    def context(self) -> str:
        return f"{self.governing}\n{self.text}"

    @property
    def label(self) -> str:
        """What the unit gives a value for, as a reader would name it: a table row's first
        cell, a list item's label before its colon, else the heading that governs it."""
        if self.text.startswith("|"):
            cells = [c.strip() for c in self.text.strip("|").split("|")]
            first = next((c for c in cells if c), "")
            return _plain(first)
        label = re.split(r"[:：]", self.text, maxsplit=1)
        if len(label) == 2 and 0 < len(label[0]) <= LABEL_CHARS:
            return _plain(label[0])
        headings = [h for h in self.governing.split("\n") if h and not h.startswith("|")]
        return _plain(headings[-1]) if headings else ""


LABEL_CHARS = 40  # a label before a colon longer than this is a sentence, not a label


def units(hit: Hit) -> list[Unit]:
    """The units of one passage, in order."""
    above = [h for h in (hit.heading_chain or "").split(" > ") if h]
    stem = PurePosixPath(hit.source).stem
    day = hit.date or ""
    return [replace(u, day=day) if day else u for u in _units(hit.text, [stem, *above])]


def _units(text: str, governing: list[str]) -> Iterator[Unit]:
    headings = list(governing)
    header = ""  # the header row of the table being read
    intro = ""  # the line that introduced the list being read
    paragraph: list[str] = []
    item: list[str] = []
    fenced = False
    section: list[str] = []  # the lines under the last heading of the passage
    heading: tuple[str, str] | None = None  # that heading, and what governs it

    def under() -> Iterator[Unit]:
        # a heading may give the value itself ("## 2025-03-08", "## 2.4.1 — 2025-03-12"):
        # it is read with the section it heads ("Finally bought the new bike.")
        if heading is not None:
            yield Unit(heading[0], "\n".join([heading[1], *section]), heading=True)

    def flush() -> Iterator[Unit]:
        above = "\n".join([*headings, intro] if intro else headings)
        if item:
            yield Unit(" ".join(item), above)
            item.clear()
        if paragraph:
            for sentence in _sentences(_join(paragraph)):
                yield Unit(sentence, "\n".join(headings))
            paragraph.clear()

    lines = text.split("\n")
    for i, line in enumerate(lines):
        if FENCE.match(line):
            fenced = not fenced
            yield from flush()
            continue
        if fenced:
            continue
        line = _QUOTE.sub("", line)
        titled = _HEADING.match(line)
        if titled:
            yield from flush()
            yield from under()
            heading, section = (titled.group(1), "\n".join(headings)), []
            headings.append(titled.group(1))
            header = intro = ""
            continue
        section.append(line.strip())
        if not line.strip():
            listing = i + 1 < len(lines) and bool(_ITEM.match(lines[i + 1]))
            # "Emergency numbers:", a blank line, then the list it introduces
            opening = _sentences(_join(paragraph))[-1:] if paragraph and listing else []
            yield from flush()
            header = ""
            if opening:
                intro = opening[0]
            elif not listing:
                intro = ""
            continue
        if _ROW.match(line):
            yield from flush()
            if TABLE_RULE.match(line):
                continue
            following = lines[i + 1] if i + 1 < len(lines) else ""
            if not header and TABLE_RULE.match(following):
                header = line.strip()
                continue
            above = "\n".join([*headings, header] if header else headings)
            yield Unit(line.strip(), above)
            continue
        listed = _ITEM.match(line)
        if listed:
            if paragraph:  # the line before the list introduces it
                said = _join(paragraph)
                paragraph.clear()
                *before, last = _sentences(said) or [""]
                for sentence in before:
                    yield Unit(sentence, "\n".join(headings))
                if last:
                    yield Unit(last, "\n".join(headings))
                    intro = last
            yield from flush()
            item.append(listed.group(2).strip())
            continue
        if item:  # a continuation of the list item
            item.append(line.strip())
            continue
        paragraph.append(line.strip())
    yield from flush()
    yield from under()


def _join(lines: list[str]) -> str:
    """Hard-wrapped lines as the sentence they were: a space between Latin words, nothing
    between two CJK characters."""
    out = ""
    for line in lines:
        if out and not (_cjk(out[-1]) and _cjk(line[:1])):
            out += " "
        out += line
    return out


def _cjk(char: str) -> bool:
    return bool(char) and ("\u3000" <= char <= "\u9fff" or "\uff00" <= char <= "\uffef")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def _plain(text: str) -> str:
    """Markdown marks and links taken off a label: "**Jellyfin**", "[[NAS]]"."""
    text = re.sub(r"\[\[([^\]|]*\|)?([^\]]*)\]\]", r"\2", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[*_`~]+", "", text).strip()
