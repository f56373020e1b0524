"""Choose how to fuse keyword and dense search, by measurement on a labelled set.

    python -m bench.fusion_bench ../shared/data/scifact/corpus \
        ../shared/data/scifact/queries.jsonl --index-dir /tmp/ev/scifact

Builds (or reuses) the index of the folder, then for every query takes the top 100
chunks of each retriever once, and scores fusion rules offline on those lists, so every
rule sees exactly the same candidates: weighted reciprocal rank fusion with several k
and weights, and a convex blend of min-max normalised scores. Files are ranked by their
best chunk, as `rag.py eval` does. One JSON line per rule, best MRR@10 last; then the
warm latency of the real search (k=5) in each mode.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from bench.common import POOL, files, labelled_set, tiny_labelled_set


def metrics(runs: list[tuple[list[str], set[str]]]) -> dict:
    hit1 = hit10 = recall = mrr = 0.0
    for ranked, relevant in runs:
        ranks = [i for i, f in enumerate(ranked[:10], start=1) if f in relevant]
        hit1 += bool(ranks and ranks[0] == 1)
        hit10 += bool(ranks)
        recall += len({f for f in ranked[:10] if f in relevant}) / max(1, len(relevant))
        mrr += 1 / ranks[0] if ranks else 0
    n = max(1, len(runs))
    return {
        "hit@1": round(hit1 / n, 3),
        "hit@10": round(hit10 / n, 3),
        "recall@10": round(recall / n, 3),
        "mrr@10": round(mrr / n, 3),
    }


def rrf(dense, keyword, k: int, w_dense: float, w_keyword: float) -> list[str]:
    score: dict[str, float] = {}
    for rank, (c, _) in enumerate(dense, start=1):
        score[c] = score.get(c, 0.0) + w_dense / (k + rank)
    for rank, (c, _) in enumerate(keyword, start=1):
        score[c] = score.get(c, 0.0) + w_keyword / (k + rank)
    return sorted(score, key=lambda c: -score[c])


def blend(dense, keyword, alpha: float) -> list[str]:
    """alpha * dense + (1 - alpha) * keyword, each min-max normalised over its list."""

    def norm(pairs):
        if not pairs:
            return {}
        values = [v for _, v in pairs]
        low, high = min(values), max(values)
        return {c: (v - low) / (high - low) if high > low else 1.0 for c, v in pairs}

    d, kw = norm(dense), norm(keyword)
    score = {c: alpha * d.get(c, 0.0) + (1 - alpha) * kw.get(c, 0.0) for c in {*d, *kw}}
    return sorted(score, key=lambda c: -score[c])


def main(argv: list[str] | None = None) -> None:
    index, queries = labelled_set(__doc__, argv)
    lists = []
    for q in queries:
        dense = [(h.chunk_id, h.score) for h in index.search(q.query, POOL, mode="dense")]
        keyword = [(h.chunk_id, h.score) for h in index.search(q.query, POOL, mode="keyword")]
        lists.append((dense, keyword, set(q.relevant)))
    rules = {"dense": lambda d, kw: [c for c, _ in d], "keyword": lambda d, kw: [c for c, _ in kw]}
    for k in (10, 30, 60):
        for w in (0.5, 1.0, 2.0):
            rules[f"rrf k={k} dense weight={w}"] = lambda d, kw, k=k, w=w: rrf(d, kw, k, w, 1.0)
    for alpha in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7):
        rules[f"blend alpha={alpha}"] = lambda d, kw, a=alpha: blend(d, kw, a)
    results = []
    for name, rule in rules.items():
        runs = [(files(rule(d, kw)), rel) for d, kw, rel in lists]
        results.append({"rule": name, "queries": len(runs), **metrics(runs)})
    for row in sorted(results, key=lambda r: r["mrr@10"]):
        print(json.dumps(row), flush=True)
    # Warm latency of the real search, k=5 as `ask` uses it, each mode over every query.
    for mode in ("keyword", "dense", "hybrid"):
        times = []
        for q in queries:
            started = time.perf_counter()
            index.search(q.query, 5, mode=mode)
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
        row = {"latency": mode, "k": 5, "p50_ms": round(statistics.median(times), 1)}
        print(json.dumps({**row, "p95_ms": round(p95, 1)}), flush=True)


def smoke(tmp: Path) -> None:
    """The tiny English notes and their two questions."""
    main(tiny_labelled_set(tmp))


if __name__ == "__main__":
    main()
