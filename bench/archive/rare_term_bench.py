"""How should fusion treat a query term that occurs in few chunks? Measured offline.

    python bench/rare_term_bench.py ../shared/data/scifact/corpus \
        ../shared/data/scifact/queries.jsonl --index-dir /tmp/ev/scifact

Min-max scaling gives the best dense candidate 1.0 however weak it is, so a chunk that
holds the query's one rare word (an identifier, an error code, a made-up name) can tie
with, or lose to, an unrelated dense neighbour. For every query this takes the top 100
of each retriever once, plus the document frequency of each query term, and scores rules
on the same candidates: today's blend, tie-breaking by keyword score, a lower dense share
when a rare term matches, a minimum dense spread, and a rare-term guarantee. One JSON line
per rule, best MRR@10 last.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fusion_bench import POOL, files_of, labelled_set, metrics  # noqa: E402

from askmd.search import retriever  # noqa: E402
from askmd.terms import content_terms  # noqa: E402


def scaled(pairs, spread: float = 0.0):
    if not pairs:
        return {}
    values = [v for _, v in pairs]
    low, high = min(values), max(values)
    width = max(high - low, spread)
    return {c: (v - low) / width if width > 0 else 1.0 for c, v in pairs}


def fuse(q, alpha, spread=0.0, rare_df=0, rare_alpha=None, guarantee=0, tiebreak=False):
    """One rule: see the module docstring; q holds the query's candidates and term counts."""
    dense, keyword = q["dense"], q["keyword"]
    rare = {t for t, n in q["df"].items() if 0 < n <= rare_df}
    if rare and rare_alpha is not None:
        alpha = min(alpha, rare_alpha)
    d, kw = scaled(dense, spread), scaled(keyword)
    score = {c: alpha * d.get(c, 0.0) + (1 - alpha) * kw.get(c, 0.0) for c in {*d, *kw}}
    holds = {c: sum(c in q["holders"].get(t, ()) for t in rare) for c in score}
    if guarantee and rare:
        key = lambda c: (-holds[c], -score[c], -kw.get(c, 0.0))  # noqa: E731
    elif tiebreak:
        key = lambda c: (-round(score[c], 9), -kw.get(c, 0.0))  # noqa: E731
    else:
        key = lambda c: -score[c]  # noqa: E731
    return sorted(score, key=key)


def main() -> None:
    index, queries = labelled_set(__doc__)
    db = index.manifest.db
    data = []
    for query in queries:
        words = sorted(set(content_terms(query.query)))
        df, holders = {}, {}
        for t in words:
            chunks = [row[0] for row in db.execute(
                "SELECT d.chunk FROM postings p JOIN documents d ON d.doc = p.doc "
                "WHERE p.term = ? LIMIT 51", (t,))]  # fmt: skip
            df[t] = len(chunks)
            if len(chunks) <= 50:
                holders[t] = set(chunks)
        dense = [(h.chunk_id, h.score) for h in index.search(query.query, POOL, mode="dense")]
        keyword = [(h.chunk_id, h.score) for h in index.search(query.query, POOL, mode="keyword")]
        alpha = retriever.dense_share(query.query, index.embedder.id)
        data.append(
            {"dense": dense, "keyword": keyword, "df": df, "holders": holders, "alpha": alpha}
        )
    relevant = [set(q.relevant) for q in queries]
    rules = {"today: blend": {}, "blend, ties broken by keyword": {"tiebreak": True}}
    for spread in (0.1, 0.2, 0.3, 0.4, 0.5):
        rules[f"dense spread >= {spread}"] = {"spread": spread}
    for rare_df in (1, 3, 10):
        for rare_alpha in (0.0, 0.2, 0.3):
            rules[f"rare df<={rare_df}: alpha {rare_alpha}"] = {
                "rare_df": rare_df,
                "rare_alpha": rare_alpha,
            }
        rules[f"rare df<={rare_df}: holders first"] = {"rare_df": rare_df, "guarantee": 1}
    results = []
    for name, rule in rules.items():
        runs = [
            (files_of(fuse(q, q["alpha"], **rule)), rel)
            for q, rel in zip(data, relevant, strict=True)
        ]
        results.append({"rule": name, "queries": len(runs), **metrics(runs)})
    rare_share = sum(any(0 < n <= 3 for n in q["df"].values()) for q in data) / max(1, len(data))
    print(json.dumps({"queries_with_a_term_in_3_chunks_or_fewer": round(rare_share, 3)}))
    for row in sorted(results, key=lambda r: r["mrr@10"]):
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
