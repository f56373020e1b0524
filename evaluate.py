"""Measure retrieval on labelled questions: hit@1/5/10, recall@10 and MRR@10.

Reads JSON lines `{"id", "query", "relevant": [paths relative to the knowledge folder]}`,
runs each query through the given search function, and ranks *files* by their best
chunk, as a person reading the answer's references would. It does not index and never
prints: the caller passes a search function and shows the Report.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from errors import AskmdError

if TYPE_CHECKING:
    from retriever import Hit

CHUNKS_PER_FILE = 5  # chunks fetched per file wanted: enough to fill k files after ties


@dataclass(frozen=True)
class Query:
    id: str
    query: str
    relevant: tuple[str, ...]


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


def read_queries(path: Path, skipped: list[int] | None = None) -> list[Query]:
    """The query file, checked line by line; a bad line is one error naming its number.

    A line whose query is empty (real data sets have them) cannot be asked: its number
    goes to `skipped` instead of failing the whole run."""
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
            relevant = item["relevant"]
            if not isinstance(relevant, list) or not all(isinstance(r, str) for r in relevant):
                raise TypeError
            ident = item.get("id", number)
            if not isinstance(item["query"], str) or not isinstance(ident, (str, int)):
                raise TypeError
            text = item["query"].strip()
            if not text:
                if skipped is None:
                    raise ValueError
                skipped.append(number)
                continue
            queries.append(Query(str(ident), text, tuple(relevant)))
        except (ValueError, KeyError, TypeError):
            raise AskmdError(
                f"{path} line {number} is not a query: expected "
                '{"id": "...", "query": "...", "relevant": ["path/in/the/folder.md", ...]}'
            ) from None
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
