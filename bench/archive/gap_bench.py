"""Closing the vocabulary gap without new weights: rules scored offline on fixed candidates.

    python bench/gap_bench.py --index-root /tmp/askmd-para-f            # paraphrase sets
    python bench/gap_bench.py --eval KNOWLEDGE QUERIES INDEX             # SciFact, CMRC

For every query this takes the top 100 of each retriever once (as bench/rare_term_bench.py
does), and scores rules on the same candidates, files ranked as `rag.py eval` ranks them:
- today: the blend, ties to keyword evidence, files by their best chunk;
- file evidence: a file's score is its best chunk's plus `lam` times its second best;
- pseudo-relevance feedback: the `m` terms (by tf x idf) of the top 3 dense chunks that
  the question lacks are searched by keyword too, that list blended in with weight `beta`;
- title vector: each note's title and aliases embedded once; a file gains `gamma` times
  the cosine of the question with it (min-max scaled over the 100 nearest titles).
One table row per rule and set. Indexes must exist (bench/paraphrase_bench.py builds them).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from paraphrase_bench import DATA, ROWS, SETS_DIR, load_set  # noqa: E402

import chunker  # noqa: E402
from askmd import evaluate  # noqa: E402
from askmd.pipeline import Index  # noqa: E402
from askmd.read import notes  # noqa: E402
from askmd.search import retriever  # noqa: E402
from askmd.settings import load_settings  # noqa: E402
from askmd.terms import content_terms  # noqa: E402

POOL = 100


def scaled(pairs) -> dict[str, float]:
    if not pairs:
        return {}
    values = [v for _, v in pairs]
    low, high = min(values), max(values)
    return {c: (v - low) / (high - low) if high > low else 1.0 for c, v in pairs}


def source(chunk_id: str) -> str:
    return chunk_id.split("#", 1)[0]


def fuse(dense, keyword, alpha, extra=None, beta=0.0) -> dict[str, float]:
    """Today's blend (chunk -> score); `extra` a second keyword list blended in by `beta`."""
    d, k = scaled(dense), scaled(keyword)
    if extra:
        x = scaled(extra)
        k = {c: (k.get(c, 0.0) + beta * x.get(c, 0.0)) / (1 + beta) for c in {*k, *x}}
    top = (alpha * bool(d) + (1 - alpha) * bool(k)) or 1.0
    score = {c: (alpha * d.get(c, 0.0) + (1 - alpha) * k.get(c, 0.0)) / top for c in {*d, *k}}
    # ties to keyword evidence, as the retriever does
    return {c: v + 1e-9 * k.get(c, 0.0) for c, v in score.items()}


def files(score: dict[str, float], lam: float = 0.0, title: dict[str, float] | None = None,
          gamma: float = 0.0) -> list[str]:  # fmt: skip
    by_file: dict[str, list[float]] = {}
    for c, v in score.items():
        by_file.setdefault(source(c), []).append(v)
    total = {}
    for f, values in by_file.items():
        values.sort(reverse=True)
        total[f] = values[0] + lam * (values[1] if len(values) > 1 else 0.0)
        if title:
            total[f] += gamma * title.get(f, 0.0)
    return sorted(total, key=lambda f: -total[f])


def metrics(runs) -> dict:
    hit1 = hit5 = hit10 = mrr = 0.0
    for ranked, relevant in runs:
        ranks = [i for i, f in enumerate(ranked[:10], start=1) if f in relevant]
        hit1 += bool(ranks and ranks[0] == 1)
        hit5 += bool(ranks and ranks[0] <= 5)
        hit10 += bool(ranks)
        mrr += 1 / ranks[0] if ranks else 0
    n = max(1, len(runs))
    return {"hit@1": hit1 / n, "hit@5": hit5 / n, "hit@10": hit10 / n, "mrr@10": mrr / n}


def expansion(index: Index, dense, query: str, m: int) -> list[str]:
    """The m best tf x idf terms of the top 3 dense chunks that the query does not have."""
    if m <= 0 or not dense:
        return []
    db = index.manifest.db
    count = db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
    tf: Counter[str] = Counter()
    for chunk_id, _ in dense[:3]:
        rows = db.execute(
            "SELECT p.term, p.tf FROM postings p JOIN documents d ON d.doc = p.doc "
            "WHERE d.chunk = ?",
            (chunk_id,),
        )
        tf.update(dict(rows))
    asked = set(content_terms(query))
    weights = {}
    for term, n in tf.items():
        if term in asked or len(term) < 3:
            continue
        df = db.execute("SELECT COUNT(*) FROM postings WHERE term = ?", (term,)).fetchone()[0]
        weights[term] = n * math.log(1 + count / max(df, 1))
    return sorted(weights, key=lambda t: -weights[t])[:m]


def title_vectors(index: Index, kb: Path):
    """Each note's title (and aliases) embedded once: {source: vector}."""
    import numpy as np

    names, texts = [], []
    for source_ in index.manifest.files():
        try:
            note = notes.read(kb, source_, 10 * 1024 * 1024)
        except notes.Unreadable:
            continue
        pieces = chunker.split_note(note, 1000, 200)
        title = pieces[0].title if pieces else source_
        names.append(source_)
        texts.append(" ; ".join([title, *note.aliases]))
    vectors = np.asarray(index.embedder.embed(texts), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9
    return names, vectors


def title_scores(index: Index, titles, query: str) -> dict[str, float]:
    import numpy as np

    names, vectors = titles
    q = np.asarray(index.embedder.embed_queries([query])[0], dtype=np.float32)
    sims = vectors @ (q / (np.linalg.norm(q) + 1e-9))
    best = np.argsort(-sims)[:POOL]
    return scaled([(names[i], float(sims[i])) for i in best])


def collect(index: Index, queries, kb: Path, with_titles: bool):
    titles = title_vectors(index, kb) if with_titles else None
    data = []
    for q in queries:
        dense = [(h.chunk_id, h.score) for h in index.search(q.query, POOL, mode="dense")]
        keyword = [(h.chunk_id, h.score) for h in index.search(q.query, POOL, mode="keyword")]
        cjk = retriever.is_cjk_query(q.query)
        extra = {}
        for m in (5, 10):
            terms = expansion(index, dense, q.query, m)
            extra[m] = index.manifest.keyword(terms, POOL, cjk=cjk) if terms else []
        data.append(
            {
                "dense": dense,
                "keyword": keyword,
                "extra": extra,
                "alpha": retriever.dense_share(q.query, index.embedder.id),
                "title": title_scores(index, titles, q.query) if titles else {},
                "relevant": set(q.relevant),
            }
        )
    return data


RULES = {
    "today": {},
    "file evidence lam=0.1": {"lam": 0.1},
    "file evidence lam=0.3": {"lam": 0.3},
    "PRF m=5 beta=0.3": {"m": 5, "beta": 0.3},
    "PRF m=5 beta=0.6": {"m": 5, "beta": 0.6},
    "PRF m=10 beta=0.3": {"m": 10, "beta": 0.3},
    "title vector gamma=0.1": {"gamma": 0.1},
    "title vector gamma=0.2": {"gamma": 0.2},
}


def score(data, rule: dict) -> dict:
    runs = []
    for q in data:
        extra = q["extra"].get(rule.get("m", 0))
        fused = fuse(q["dense"], q["keyword"], q["alpha"], extra, rule.get("beta", 0.0))
        ranked = files(fused, rule.get("lam", 0.0), q["title"], rule.get("gamma", 0.0))
        runs.append((ranked, q["relevant"]))
    return metrics(runs)


def open_built(kb: Path, index_dir: Path) -> Index:
    overrides = {"knowledge_dir": kb, "index_dir": index_dir}
    return Index(load_settings(environ={}, dotenv_path=None, overrides=overrides))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-root", type=Path, default=Path("/tmp/askmd-para-f"))
    parser.add_argument("--eval", nargs=3, metavar=("KNOWLEDGE", "QUERIES", "INDEX"))
    parser.add_argument("--sets", default="EN all,EN hard,ZH all")
    args = parser.parse_args()
    sets = []
    if args.eval:
        kb, queries, index_dir = map(Path, args.eval)
        sets.append((kb.name, open_built(kb, index_dir), evaluate.read_queries(queries), kb))
    else:
        for row in (r for r in ROWS if r.label in args.sets.split(",")):
            kb = DATA / row.folder.path
            index = open_built(kb, args.index_root / row.folder.name)
            sets.append((row.label, index, load_set(SETS_DIR / row.file, row.kinds), kb))
    print("| rule | set | questions | hit@1 | hit@5 | hit@10 | MRR@10 |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for label, index, queries, kb in sets:
        data = collect(index, queries, kb, with_titles=True)
        for name, rule in RULES.items():
            m = score(data, rule)
            print(
                f"| {name} | {label} | {len(queries)} | {m['hit@1']:.2f} | {m['hit@5']:.2f} | "
                f"{m['hit@10']:.2f} | {m['mrr@10']:.3f} |",
                flush=True,
            )
    print(json.dumps({"rules": list(RULES)}), file=sys.stderr)


if __name__ == "__main__":
    main()
