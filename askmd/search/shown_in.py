"""Where embeds show a chunk: an embedded section stays one set of chunks, in the note it
is written in, and the notes that embed it (`![[Note#Heading]]`) are added to a hit as
the places it is shown, at search time. Expanding embeds into the embedding notes' text
ranked no better (docs/benchmarks/reading-notes.md, "Embeds and link-aware ranking") and
would make every edit re-index the notes that embed it."""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING

from askmd.read import vault

if TYPE_CHECKING:
    from askmd.index.manifest import Manifest
    from askmd.search.hits import Hit

_EMBEDS: dict[tuple[str, int], dict[str, list[tuple[str, str, int]]]] = {}
_EMBEDS_LOCK = threading.Lock()


def embedded_by(manifest: Manifest) -> dict[str, list[tuple[str, str, int]]]:
    """Indexed file -> the embeds of it: (heading, embedding note, line). Resolved once per
    generation of the index, so an edit to either note is seen by the next search."""
    key = (str(getattr(manifest, "path", id(manifest))), manifest.generation())
    with _EMBEDS_LOCK:
        found = _EMBEDS.get(key)
    if found is not None:
        return found
    found = {}
    rows = [row for row in manifest.links() if row[4]]
    if rows:
        resolver = vault.Resolver(manifest.files())
        for source, target, heading, line, _ in rows:
            to = resolver.resolve(target, source)
            if to is not None and to != source:
                found.setdefault(to, []).append((heading, source, line))
    with _EMBEDS_LOCK:
        if len(_EMBEDS) >= 8:  # older generations, mostly: a process searches one index or few
            _EMBEDS.clear()
        _EMBEDS[key] = found
    return found


def shown_in(
    manifest: Manifest,
    embeds: dict[str, list[tuple[str, str, int]]],
    hit: Hit,
    depth: int,
) -> tuple[tuple[str, int], ...]:
    """The notes that show the hit's lines, following embeds of embeds up to `depth`
    deep; each note once, so a cycle ends where it closes."""
    found: list[tuple[str, int]] = []
    seen = {hit.source}
    frontier = [(hit.source, hit.heading_chain, hit.text)]
    for _ in range(depth):
        following = []
        for note, note_chain, note_text in frontier:
            for heading, where, line in embeds.get(note, ()):
                if where in seen or not _covers(heading, note_chain, note_text):
                    continue
                seen.add(where)
                found.append((where, line))
                if where in embeds:  # shown further only if that note is embedded too
                    following.append((where, *_lines_at(manifest, where, line)))
        frontier = following
    return tuple(found)


def _covers(heading: str, chain: str, text: str) -> bool:
    """Whether an embed of `heading` ("" the whole note, "^id" a block, else a section,
    `A#B` its subsection B) shows a chunk under `chain` with this verbatim text."""
    if not heading:
        return True
    if heading.startswith("^"):
        return re.search(rf"(?:^|\s)\^{re.escape(heading[1:])}[ \t]*$", text, re.M) is not None
    wanted = heading.rsplit("#", 1)[-1].strip().lower()
    return any(part.strip().lower() == wanted for part in chain.split(" > "))


def _lines_at(manifest: Manifest, source: str, line: int) -> tuple[str, str]:
    """The heading chain and text of the chunk of `source` holding file line `line`."""
    for chunk in manifest.chunks_of([source]):
        meta = chunk.metadata
        if int(meta.get("line_start", 0)) <= line <= int(meta.get("line_end", 0)):
            return str(meta.get("heading_chain", "")), chunk.text
    return "", ""
