"""What an answer is: the exchange kept for follow-ups, the references it cites and the
Answer every interface shows or serialises, in one place so none of them depends on how
an answer is made."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from askmd.answer.reasons import Reason, ReasonViews

if TYPE_CHECKING:
    from askmd.search.hits import Hit


@dataclass(frozen=True)
class Turn:
    """One exchange of a conversation, kept to understand the next question."""

    question: str
    query: str
    answer: str


@dataclass(frozen=True)
class Reference:
    n: int
    source: str
    heading_chain: str
    line_start: int
    line_end: int
    text: str  # the quoted fragment: a verbatim piece of the passage
    page_start: int | None = None  # 1-based, for paged formats (PDF); else None
    page_end: int | None = None
    # False: the answer cites this passage for a sentence it does not say (checked after
    # an LLM's reply); None: not checked (an extractive answer quotes the passage itself)
    supported: bool | None = None
    folder: str = ""  # the label of its folder, when several are answered from

    @property
    def shown_source(self) -> str:
        return f"{self.folder}:{self.source}" if self.folder else self.source

    @classmethod
    def of(cls, n: int, hit: Hit, text: str) -> Reference:
        """Passage `n` of an answer, `hit`, cited for the fragment `text`."""
        return cls(
            n, hit.source, hit.heading_chain, hit.line_start, hit.line_end, text,
            hit.page_start, hit.page_end, folder=hit.folder,
        )  # fmt: skip

    def to_json(self) -> dict:
        return {
            "n": self.n,
            "source": self.source,
            "heading_chain": self.heading_chain,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "page_start": self.page_start,
            "page_end": self.page_end,
            "text": self.text,
            "supported": self.supported,
        } | ({"folder": self.folder} if self.folder else {})


def pointer(hit: Hit) -> dict:
    """Where a passage is, without quoting it: what a declined answer points to."""
    return {
        "source": hit.source,
        "heading_chain": hit.heading_chain,
        "line_start": hit.line_start,
        "line_end": hit.line_end,
    } | ({"folder": hit.folder} if hit.folder else {})


@dataclass
class Answer(ReasonViews):
    question: str
    query: str  # what was searched: the question, or its standalone rewrite
    mode: str  # "llm" or "extractive"
    text: str = ""
    citations: list[int] = field(default_factory=list)
    invalid_citations: list[int] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)
    retrieval_ms: float = 0.0
    generation_ms: float = 0.0
    rerank_ms: float | None = None  # the second look at the passages; None: none was taken
    llm_error: str | None = None  # why the LLM gave no answer, when it failed: then extractive
    retriever: str = "hybrid"  # what ranked the passages: "keyword" while vectors are stored
    cancelled: bool = False  # Ctrl-C while it streamed: `text` is what had come, checked
    # Whether the notes answer the question (grounding.judge, or the LLM saying they do
    # not). When False, `text` says so, nothing is cited, and `nearest` points at the
    # closest passages.
    answered: bool = True
    confidence: float | None = None  # the judgement's confidence, 0..1; None: not judged
    nearest: list[Hit] = field(default_factory=list)
    unsupported_citations: list[int] = field(default_factory=list)  # cited, not supported
    # The days searched: the period the question names, else the --since/--until given
    # ({"since", "until"}, ISO); None when neither limited the search.
    dates: dict | None = None
    # Why the notes do not answer (answer/reasons.py), as the judgement's checks found
    # it; the older fields below are views of them, kept in the JSON.
    reasons: list[Reason] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "question": self.question,
            "answer": self.text,
            "mode": self.mode,
            "citations": self.citations,
            "invalid_citations": self.invalid_citations,
            "references": [r.to_json() for r in self.references],
            "retrieval_ms": round(self.retrieval_ms, 1),
            "generation_ms": round(self.generation_ms, 1),
            "rerank_ms": None if self.rerank_ms is None else round(self.rerank_ms, 1),
            "query": self.query,
            "llm_error": self.llm_error,
            "retriever": self.retriever,
            "answered": self.answered,
            "confidence": None if self.confidence is None else round(self.confidence, 3),
            "nearest": [pointer(h) for h in self.nearest],
            "unsupported_citations": self.unsupported_citations,
            "dates": self.dates,
            "unmentioned": self.unmentioned,
            "lacking": self.lacking,
            "uncompared": self.uncompared,
            "absent": self.absent,
            "other_days": self.other_days,
            "not_days": self.not_days,
            "reasons": [r.to_json() for r in self.reasons],
        }
