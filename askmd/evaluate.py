"""Measure retrieval on labelled questions (hit@1/5/10, recall@10, MRR@10) and answers.

Reads JSON lines `{"id", "query", "relevant": [paths relative to the knowledge folder]}`,
runs each query through the given search function, and ranks *files* by their best
chunk, as a person reading the answer's references would. With answers (`evaluate_answers`)
each line also holds `"answers": [gold text]` or `"unanswerable": true`, and each question
is asked: how often the answer declines, and how much of the gold answer it says. It
does not index and never prints: the caller passes the functions and shows the Report.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from askmd.answer.display import display_text
from askmd.errors import AskmdError
from askmd.terms import content_terms

if TYPE_CHECKING:
    from askmd.answer.result import Answer
    from askmd.search.hits import Hit

CHUNKS_PER_FILE = 5  # chunks fetched per file wanted: enough to fill k files after ties


@dataclass(frozen=True)
class Query:
    id: str
    query: str
    relevant: tuple[str, ...]
    answers: tuple[str, ...] = ()  # gold answer texts (eval --answers)
    unanswerable: bool = False  # the notes do not answer it (eval --answers)
    lang: str = ""


@dataclass(frozen=True)
class Miss:
    id: str
    query: str
    relevant: tuple[str, ...]
    found: tuple[str, ...]  # the top files returned instead


@dataclass
class Report:
    queries: int
    k: int
    hit_at: dict[int, float] = field(default_factory=dict)
    recall_at_10: float = 0.0
    mrr_at_10: float = 0.0
    misses: list[Miss] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "queries": self.queries,
            "k": self.k,
            "hit@1": round(self.hit_at[1], 4),
            "hit@5": round(self.hit_at[5], 4),
            "hit@10": round(self.hit_at[10], 4),
            "recall@10": round(self.recall_at_10, 4),
            "mrr@10": round(self.mrr_at_10, 4),
        }

    def latency(self, q: float) -> float:
        ordered = sorted(self.latencies_ms) or [0.0]
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    @property
    def latency_p50(self) -> float:
        return statistics.median(self.latencies_ms) if self.latencies_ms else 0.0


def read_queries(
    path: Path, skipped: list[int] | None = None, answers: bool = False
) -> list[Query]:
    """The query file, checked line by line; a bad line is one error naming its number.

    A line whose query is empty (real data sets have them) cannot be asked: its number
    goes to `skipped` instead of failing the whole run. With `answers`, each line needs
    `"answers": [text, ...]` or `"unanswerable": true`, and "relevant" may be left out."""
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "it is not UTF-8"
        raise AskmdError(f"cannot read the queries file {path}: {reason}") from None
    queries = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            if not isinstance(item, dict):
                raise TypeError
            relevant = item.get("relevant", []) if answers else item["relevant"]
            if not isinstance(relevant, list) or not all(isinstance(r, str) for r in relevant):
                raise TypeError
            ident = item.get("id", number)
            if not isinstance(item["query"], str) or not isinstance(ident, (str, int)):
                raise TypeError
            gold, unanswerable = _gold(item) if answers else ((), False)
            text = item["query"].strip()
            if not text:
                if skipped is None:
                    raise ValueError
                skipped.append(number)
                continue
            lang = item.get("lang", "")
            queries.append(
                Query(
                    str(ident),
                    text,
                    tuple(relevant),
                    gold,
                    unanswerable,
                    lang if isinstance(lang, str) else "",
                )  # fmt: skip
            )
        except (ValueError, KeyError, TypeError):
            expected = (
                '{"id": "...", "query": "...", "answers": ["the answer, as the note says it"]} '
                'or {"id": "...", "query": "...", "unanswerable": true}'
                if answers
                else '{"id": "...", "query": "...", "relevant": ["path/in/the/folder.md", ...]}'
            )
            raise AskmdError(f"{path} line {number} is not a query: expected {expected}") from None
    if not queries:
        raise AskmdError(f"{path} has no queries: one JSON object a line is expected")
    return queries


def unknown_paths(queries: list[Query], indexed: set[str]) -> list[str]:
    """Relevant paths that name no indexed file (a typo, an absolute path, a note since
    renamed): each would score its question a miss in silence."""
    return list(dict.fromkeys(r for q in queries for r in q.relevant if r not in indexed))


def rank_files(hits: list[Hit]) -> list[str]:
    """Files in the order of their best chunk; a note that shows a chunk through an embed
    (`Hit.shown_in`) ranks right after the note the words are written in."""
    shown = ((hit.source, *(s for s, _ in hit.shown_in)) for hit in hits)
    return list(dict.fromkeys(f for files in shown for f in files))


def evaluate(queries: list[Query], search: Callable[[str, int], list[Hit]], k: int = 10) -> Report:
    """Run every query; a file counts as found at the rank of its best chunk.

    Each metric is taken at the depth its name says, whatever `k`: `k` is how many files
    a question may rank before it is a miss (hit@5 at k=1 would otherwise be hit@1)."""
    report = Report(queries=len(queries), k=k)
    hits_at = {1: 0, 5: 0, 10: 0}
    recall = reciprocal = 0.0
    depth = max(k, max(hits_at))
    for q in queries:
        started = time.perf_counter()
        files = rank_files(search(q.query, depth * CHUNKS_PER_FILE))[:depth]
        report.latencies_ms.append((time.perf_counter() - started) * 1000)
        relevant = set(q.relevant)
        ranks = [i for i, f in enumerate(files, start=1) if f in relevant]
        for n in hits_at:
            hits_at[n] += bool(ranks and ranks[0] <= n)
        recall += len({f for f in files[:10] if f in relevant}) / len(relevant) if relevant else 0
        reciprocal += 1 / ranks[0] if ranks and ranks[0] <= 10 else 0
        if not ranks or ranks[0] > k:
            report.misses.append(Miss(q.id, q.query, q.relevant, tuple(files[:3])))
    total = max(1, len(queries))
    report.hit_at = {n: v / total for n, v in hits_at.items()}
    report.recall_at_10 = recall / total
    report.mrr_at_10 = reciprocal / total
    return report


def _gold(item: dict) -> tuple[tuple[str, ...], bool]:
    """A line's gold answers, or that it has none to find; a line must say one of them."""
    unanswerable = item.get("unanswerable", False)
    gold = item.get("answers", [])
    if not isinstance(unanswerable, bool) or not isinstance(gold, list):
        raise TypeError
    if not all(isinstance(g, str) and g.strip() for g in gold) or bool(gold) == unanswerable:
        raise ValueError
    return tuple(gold), unanswerable


# --- answers -----------------------------------------------------------------------------


@dataclass
class Asked:
    """One question of an answers evaluation: what was answered, against the gold."""

    id: str
    lang: str
    unanswerable: bool
    answered: bool
    confidence: float | None
    gold_recall: float | None  # None: an unanswerable question has no gold
    top_chunk_recall: float | None
    answer_chars: int
    top_chunk_chars: int
    ms: float
    unmentioned: list[str] = field(default_factory=list)  # names the notes never mention
    lacking: list[str] = field(default_factory=list)  # kinds of value no close sentence gives
    uncompared: list[str] = field(default_factory=list)  # weighed, never named together
    absent: list[str] = field(default_factory=list)  # named in the notes, not in the passages

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "lang": self.lang,
            "unanswerable": self.unanswerable,
            "answered": self.answered,
            "confidence": None if self.confidence is None else round(self.confidence, 3),
            "gold_recall": _rounded(self.gold_recall),
            "top_chunk_recall": _rounded(self.top_chunk_recall),
            "answer_chars": self.answer_chars,
            "top_chunk_chars": self.top_chunk_chars,
            "ms": round(self.ms, 1),
            "unmentioned": self.unmentioned,
            "lacking": self.lacking,
            "uncompared": self.uncompared,
            "absent": self.absent,
        }


@dataclass
class AnswerReport:
    asked: list[Asked] = field(default_factory=list)

    def summary(self, asked: list[Asked] | None = None) -> dict:
        """The figures over `asked` (all by default): the share of unanswerable questions
        declined and of answerable ones declined (lower is better), and over the answerable
        ones the gold recall of the answer (a declined answer says none of it) beside the
        top chunk's, and their lengths."""
        rows = self.asked if asked is None else asked
        unanswerable = [a for a in rows if a.unanswerable]
        answerable = [a for a in rows if not a.unanswerable]
        answered = [a for a in answerable if a.answered]
        return {
            "questions": len(rows),
            "unanswerable": len(unanswerable),
            "answerable": len(answerable),
            "declined_unanswerable": _mean([not a.answered for a in unanswerable]),
            "declined_answerable": _mean([not a.answered for a in answerable]),
            "gold_recall": _mean([a.gold_recall or 0.0 for a in answerable]),
            "top_chunk_recall": _mean([a.top_chunk_recall or 0.0 for a in answerable]),
            "answer_chars": _mean([a.answer_chars for a in answered]),
            "top_chunk_chars": _mean([a.top_chunk_chars for a in answered]),
            "ms_p50": round(statistics.median(a.ms for a in rows), 1) if rows else None,
        }

    def to_json(self) -> dict:
        langs = sorted({a.lang for a in self.asked if a.lang})
        found = self.summary()
        if langs:
            found["by_lang"] = {
                lang: self.summary([a for a in self.asked if a.lang == lang]) for lang in langs
            }
        found["asked"] = [a.to_json() for a in self.asked]
        return found


def evaluate_answers(queries: list[Query], ask: Callable[[str], Answer]) -> AnswerReport:
    """Ask every question, as `ask` answers it (the same as `python rag.py ask`)."""
    report = AnswerReport()
    for q in queries:
        started = time.perf_counter()
        result = ask(q.query)
        ms = (time.perf_counter() - started) * 1000
        said = _without_citations(result.text) if result.answered else ""
        top = result.hits[0].text if result.hits else ""
        report.asked.append(
            Asked(
                q.id,
                q.lang,
                q.unanswerable,
                result.answered,
                result.confidence,
                None if q.unanswerable else recall(q.answers, said),
                None if q.unanswerable else recall(q.answers, top),
                len(said),
                len(top),
                ms,
                list(result.unmentioned),
                list(result.lacking),
                list(result.uncompared),
                list(result.absent),
            )
        )
    return report


def recall(gold: tuple[str, ...], text: str) -> float:
    """The share of the gold answers' content words (CJK: bigrams) that `text` holds. The
    gold is read as an answer shows it (display.py): a link's address is not a word the
    answer left out."""
    wanted = {t for g in gold for t in content_terms(display_text(g))}
    if not wanted:
        return 0.0
    return len(wanted & set(content_terms(text))) / len(wanted)


_CITED = re.compile(r"\[\d+\]")


def _without_citations(text: str) -> str:
    return _CITED.sub("", text)


def _mean(values: list) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
