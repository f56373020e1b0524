"""What the MCP tools return: the objects of the CLI's --json output, as typed dicts the
SDK turns into each tool's output schema. A field the CLI's JSON gains is passed on, not
dropped by the schema (OPEN)."""

from __future__ import annotations

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

OPEN = ConfigDict(extra="allow")


@with_config(OPEN)
class SearchResult(TypedDict):
    rank: int
    score: float
    source: str
    heading_chain: str
    line_start: int
    line_end: int
    chunk_id: str
    text: str


class SearchResults(TypedDict):
    query: str
    retriever: str  # "hybrid", or "keyword" while the vectors are still being stored
    results: list[SearchResult]


@with_config(OPEN)
class ReferenceJson(TypedDict):
    n: int
    source: str
    heading_chain: str
    line_start: int
    line_end: int
    text: str
    supported: bool | None  # False: the answer cites this passage for what it does not say


@with_config(OPEN)
class PointerJson(TypedDict):
    source: str
    heading_chain: str
    line_start: int
    line_end: int


class ReasonJson(TypedDict):
    # why the notes do not answer (askmd/answer/reasons.py): "unmentioned", "uncompared",
    # "absent", "not_days", "other_days", "neighbour" or "lacking"
    kind: str
    items: list[str]  # the names, days or kinds of value it is about
    given_for: list[str]  # "neighbour": what the closest passages give the value for
    value: str  # "neighbour": the kind of value


@with_config(OPEN)
class AskResult(TypedDict):
    question: str
    answer: str
    mode: str  # "llm", or "extractive" (no LLM configured, or it failed: llm_error says why)
    citations: list[int]
    invalid_citations: list[int]
    references: list[ReferenceJson]
    retrieval_ms: float
    generation_ms: float
    rerank_ms: float | None
    query: str
    llm_error: str | None
    retriever: str
    answered: bool  # False: the notes don't answer it; nothing is cited, `nearest` points
    confidence: float | None
    nearest: list[PointerJson]
    unsupported_citations: list[int]
    dates: dict | None  # {"since", "until"}: the days the question named or were given
    reasons: list[ReasonJson]  # why it was declined, or what to check in an answer


class NoteText(TypedDict):
    path: str
    line_start: int
    line_end: int
    total_lines: int
    truncated: bool  # the range was longer than MAX_READ_CHARS: read on from line_end + 1
    text: str


class NoteEntry(TypedDict):
    path: str
    chunks: int
    title: str


class NoteList(TypedDict):
    glob: str | None
    count: int  # notes matching, all of them
    truncated: bool  # more than MAX_LISTED matched: narrow the glob
    notes: list[NoteEntry]


@with_config(OPEN)
class IndexStatus(TypedDict):
    knowledge_dir: str
    files: int
    chunks: int
    embedder: str
    dimension: int
    index_dir: str
    last_sync: str | None
    links: int  # links written in the notes
    broken_links: int  # of those, the ones that lead to no note
    chunks_embedded: int  # chunks whose vectors are stored; the rest are found by keyword
    keyword_ready: bool  # every note is recorded for keyword search
    collection: str  # the Chroma collection holding the vectors
    filler: str  # vectors stored in the background: "running", "stopped: <why>" or "off"
    properties: dict[str, int]  # each front matter key and how many notes carry it
    syncing: bool  # this server's start-up sync, or any process's update, is running
    watching: bool  # changes saved in the folder reach the index as they happen


@with_config(OPEN)
class RelatedNote(TypedDict):
    source: str
    score: float
    linked: bool  # already linked to or from the note
    why: list[str]  # "similar", "links to it", "linked from it", "shared links", "shared tag #x"


class RelatedNotes(TypedDict):
    note: str
    related: list[RelatedNote]


class AddResult(TypedDict):
    status: str  # "created", "updated" or "unchanged"
    file: str
    chunks: int


class DeleteResult(TypedDict):
    status: str
    file: str
    chunks: int
    trash: str | None
