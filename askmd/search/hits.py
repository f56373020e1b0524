"""What a search returns (Hit, Ranked) and what limits it (Filters): the types every
stage after the index shares, apart from the search that makes them."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from askmd.read import notes, vault

if TYPE_CHECKING:
    from askmd.search.dates_in_query import Period


@dataclass(frozen=True)
class Hit:
    rank: int
    score: float
    chunk_id: str
    source: str
    heading_chain: str
    line_start: int
    line_end: int
    text: str
    page_start: int | None = None  # 1-based, for paged formats (PDF); else None
    page_end: int | None = None
    tags: tuple[str, ...] = ()  # the chunk's tags (front matter and inline), for /debug
    # The notes that show this chunk's words through an embed (`![[Note#Heading]]`), with
    # the line of the embed, nearest first: the words are cited where they are written
    # (`source`), and these are the other places a reader sees them.
    shown_in: tuple[tuple[str, int], ...] = ()
    date: str | None = None  # the ISO day the chunk is about (read/dates.py), when known
    folder: str = ""  # the label of its folder, when several are answered from (shelf.py)
    folder_description: str = ""  # what that folder holds, in its owner's words (folders.py)

    def to_json(self) -> dict:
        found = {
            "rank": self.rank,
            "score": round(self.score, 4),
            "source": self.source,
            "heading_chain": self.heading_chain,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "page_start": self.page_start,
            "page_end": self.page_end,
            "chunk_id": self.chunk_id,
            "text": self.text,
        }
        if self.shown_in:  # only where an embed shows it: most notes are embedded nowhere
            found["shown_in"] = [{"source": s, "line": line} for s, line in self.shown_in]
        if self.date:
            found["date"] = self.date
        if self.folder:
            found["folder"] = self.folder
            found["folder_description"] = self.folder_description
        return found

    @property
    def shown_source(self) -> str:
        """Its note, named with its folder when several are answered from."""
        return f"{self.folder}:{self.source}" if self.folder else self.source


def page(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[arg-type]


SAVED_ANSWER = "askmd-answer"  # the tag of an answer askmd saved (answer/saving.py)


@dataclass(frozen=True)
class Filters:
    """Optional limits on what a search may return."""

    source: str = ""  # a glob on the path inside the knowledge folder, e.g. "guides/**"
    heading_level: int = 0  # only chunks under a heading of this level or higher (1 = H1)
    tags: tuple[str, ...] = ()  # only chunks with every one of these tags (or tags under them)
    # Only chunks dated within since..until (ISO days, both included; "" leaves that end
    # open): undated chunks are left out too, since the user asked for dates.
    since: str = ""
    until: str = ""
    # Answers askmd saved into the notes (tagged SAVED_ANSWER): searched, but not answered
    # from unless their tag is asked for: quoting them would crowd out the notes they cite.
    saved_answers: bool = True
    # Conditions on a note's properties (where.py), all of which must hold; `sources` is
    # the notes they allow, read from the manifest once per search (`resolved`).
    where: tuple = ()
    sources: frozenset[str] | None = None
    # Only these folders' notes, by label, when several are answered from (shelf.py).
    folders: tuple[str, ...] = ()

    @property
    def notes_only(self) -> bool:
        """Whether the only limit is which notes (`where`): then a keyword search that
        scored those notes alone needs no other check."""
        return bool(self.where) and replace(self, where=(), sources=None) == Filters()

    def resolved(self, manifest) -> Filters:
        if not self.where or self.sources is not None:
            return self
        return replace(self, sources=manifest.sources_where(self.where))

    @property
    def period(self) -> Period | None:
        if not (self.since or self.until):
            return None
        from askmd.search.dates_in_query import Period  # its patterns load when asked

        return Period(self.since or "0001-01-01", self.until or "9999-12-31")

    def dates(self) -> dict | None:
        """The days given, as `ask --json` shows them (an open end is null)."""
        if not (self.since or self.until):
            return None
        return {"since": self.since or None, "until": self.until or None}

    def allows(self, metadata: dict) -> bool:
        if self.sources is not None and str(metadata.get("source", "")) not in self.sources:
            return False
        if self.source and not notes.matches(str(metadata.get("source", "")), (self.source,)):
            return False
        have = [t for t in str(metadata.get("tags", "")).split(",") if t]
        if self.tags and not all(vault.tag_matches(t, have) for t in self.tags):
            return False
        if not self.saved_answers and SAVED_ANSWER in have and SAVED_ANSWER not in self.tags:
            return False
        level = int(metadata.get("heading_level", 0) or 0)
        return not self.heading_level or level <= self.heading_level


class Ranked(list):
    """Hits, best first, and which retriever ranked them ("hybrid", "keyword", "dense"):
    a hybrid search is ranked by keyword alone while the vectors are stored when the
    tuning says so (`filling_candidates=0`). `evidence` holds each hit's raw cosine and
    BM25 score (None where that retriever did not find it), which mean the same in every
    folder, so several folders' hits can be ranked as one (shelf.py)."""

    retriever: str = "hybrid"
    evidence: dict[str, tuple[float | None, float | None]] = {}  # noqa: RUF012 (replaced whole)
    alpha: float = 0.5  # the dense share of the blend the hits were ranked by


def ranked_as(
    hits: list[Hit],
    retriever: str,
    dense: list[tuple[str, float]] = (),  # type: ignore[assignment]
    keyword: list[tuple[str, float]] = (),  # type: ignore[assignment]
    alpha: float = 0.5,
) -> Ranked:
    ranked = Ranked(hits)
    ranked.retriever = retriever
    ranked.alpha = alpha
    if dense or keyword:
        by_dense, by_keyword = dict(dense), dict(keyword)
        ranked.evidence = {
            h.chunk_id: (by_dense.get(h.chunk_id), by_keyword.get(h.chunk_id)) for h in hits
        }
    return ranked
