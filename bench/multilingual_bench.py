"""Route questions to MiniLM's or the multilingual vectors, and blend them: by measurement.

    python bench/multilingual_bench.py --index-dir /tmp/askmd-ml/tldr-zh \
        [--from-index /tmp/askmd-para-base/tldr-zh]

Indexes ../shared/data/tldr/pages.zh with the default settings (MiniLM for every chunk,
the multilingual model for the CJK chunks, in a second collection). With --from-index,
a copy of an index built before the second model existed is upgraded instead, and the
upgrade's cost is printed: only the CJK chunks are embedded, by the multilingual model.
Then, for the ZH, ZH hard and cross (English question, Chinese note) paraphrase sets,
takes each question's top 100 of MiniLM's vectors, of the multilingual ones and of BM25
once, and scores routing and blending rules offline on exactly those lists: which
vectors a question searches, how two dense lists merge, and the dense share. Files are
ranked by their best chunk, as `rag.py eval` ranks them. One table row per rule and set.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from askmd.pipeline import Index  # noqa: E402
from askmd.search import retriever  # noqa: E402
from askmd.settings import load_settings  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
SETS = (
    ("ZH all", "tldr-zh.jsonl", ("plain", "hard")),
    ("ZH hard", "tldr-zh.jsonl", ("hard",)),
    ("cross", "tldr-cross.jsonl", ("cross",)),
)
POOL = 100


def open_mixed(kb: Path, ix: Path, rebuild: bool = False):
    """The index of folder `kb` in `ix`, synced with the default settings and warmed up,
    with its multilingual side collection and model: (index, side store, side model)."""
    settings = load_settings(
        environ={}, dotenv_path=None, overrides={"knowledge_dir": kb, "index_dir": ix}
    )
    index = Index(settings)
    report = index.sync(rebuild=rebuild)
    print(f"sync {report.seconds:.0f} s, {report.chunks_total} chunks", file=sys.stderr)
    index.search("warm up", 1)
    side = index.store.side(index.embedder.companion_id)
    side.open_existing()
    return index, side, index.embedder.companion()


def load(name: str, kinds: tuple[str, ...]) -> list[dict]:
    path = ROOT / "bench" / "paraphrase" / name
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [r for r in rows if r["kind"] in kinds]


def scaled(pairs: list[tuple[str, float]]) -> dict[str, float]:
    if not pairs:
        return {}
    values = [v for _, v in pairs]
    low, high = min(values), max(values)
    return {c: (v - low) / (high - low) if high > low else 1.0 for c, v in pairs}


def z_merge(main, side):
    """retriever._merge: the side list standardised onto the main list's mean and spread."""
    if not main or not side:
        return main or side
    mean, spread = retriever._spread([v for _, v in main])
    o_mean, o_spread = retriever._spread([v for _, v in side])
    best = dict(main)
    for c, v in side:
        best[c] = max(best.get(c, -9.0), mean + (v - o_mean) / o_spread * spread)
    return sorted(best.items(), key=lambda item: -item[1])


def median_merge(main, side):
    """The side list shifted so its median candidate meets the main list's median."""
    if not main or not side:
        return main or side
    shift = statistics.median(v for _, v in main) - statistics.median(v for _, v in side)
    return max_merge(main, [(c, v + shift) for c, v in side])


def max_merge(main, side):
    """Raw cosines compared as they are, each chunk keeping its better one."""
    best = dict(main)
    for c, v in side:
        best[c] = max(best.get(c, -9.0), v)
    return sorted(best.items(), key=lambda item: -item[1])


def fuse(dense, keyword, alpha: float) -> list[str]:
    d, kw = scaled(dense), scaled(keyword)
    score = {c: alpha * d.get(c, 0.0) + (1 - alpha) * kw.get(c, 0.0) for c in {*d, *kw}}
    return sorted(score, key=lambda c: (-score[c], -kw.get(c, 0.0)))


def files(chunks: list[str]) -> list[str]:
    return list(dict.fromkeys(c.split("#", 1)[0] for c in chunks))


def score(runs: list[tuple[list[str], set[str]]]) -> dict[str, float]:
    out = {"hit@1": 0.0, "hit@5": 0.0, "hit@10": 0.0, "mrr@10": 0.0}
    for ranked, relevant in runs:
        ranks = [i for i, f in enumerate(ranked[:10], start=1) if f in relevant]
        first = ranks[0] if ranks else 99
        out["hit@1"] += first <= 1
        out["hit@5"] += first <= 5
        out["hit@10"] += first <= 10
        out["mrr@10"] += 1 / first if ranks else 0.0
    return {k: round(v / max(1, len(runs)), 2) for k, v in out.items()}


def print_table(rows: dict[tuple[str, str], list]) -> None:
    """One Markdown row per (set, ranking): hit@1, hit@5, hit@10 and MRR@10 of its runs."""
    print("| set | ranking | n | hit@1 | hit@5 | hit@10 | MRR@10 |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for (label, rule), runs in rows.items():
        s = score(runs)
        print(
            f"| {label} | {rule} | {len(runs)} | {s['hit@1']:.2f} | {s['hit@5']:.2f} | "
            f"{s['hit@10']:.2f} | {s['mrr@10']:.2f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--from-index", type=Path, help="an index to copy and upgrade")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    if args.from_index and not args.index_dir.exists():
        shutil.copytree(args.from_index, args.index_dir)
    settings = load_settings(
        environ={},
        dotenv_path=None,
        overrides={"knowledge_dir": args.data / "tldr" / "pages.zh", "index_dir": args.index_dir},
    )
    index = Index(settings)
    report = index.sync()
    side_id = index.embedder.companion_id
    cached = index.manifest.cache_size(side_id)
    print(f"# sync: {json.dumps(report.to_json())}", file=sys.stderr)
    print(
        f"sync {report.seconds:.1f} s, {report.chunks_embedded} chunks embedded by MiniLM, "
        f"{cached} CJK chunks cached by {side_id}, {report.chunks_total} chunks in all"
    )
    index.search("warm up", 1)  # opens the store
    side = index.store.side(side_id)
    side.open_existing()
    companion = index.embedder.companion()
    rules = {}
    for label, name, kinds in SETS:
        for q in load(name, kinds):
            text, relevant = q["query"], set(q["relevant"])
            main = [(s.id, 1 - s.distance) for s in index.store.nearest(
                index.embedder.embed_queries([text])[0], POOL, content=False)]  # fmt: skip
            other = [(s.id, 1 - s.distance) for s in side.nearest(
                companion.embed_queries([text])[0], POOL, content=False)]  # fmt: skip
            keyword = [(h.chunk_id, h.score) for h in index.search(text, POOL, mode="keyword")]
            dense_lists = {
                "MiniLM only": main,
                "multilingual only": other,
                "both, z-merge": z_merge(main, other),
                "both, raw max": max_merge(main, other),
                "both, median shift": median_merge(main, other),
            }
            for route, dense in dense_lists.items():
                rules.setdefault((label, route, "dense"), []).append(
                    (files([c for c, _ in dense]), relevant)
                )
                for alpha in (0.3, 0.4, 0.5, 0.6, 0.7):
                    rules.setdefault((label, route, f"blend {alpha}"), []).append(
                        (files(fuse(dense, keyword, alpha)), relevant)
                    )
            rules.setdefault((label, "-", "keyword"), []).append(
                (files([c for c, _ in keyword]), relevant)
            )
    print("| set | vectors searched | rule | hit@1 | hit@5 | hit@10 | MRR@10 |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for (label, route, rule), runs in rules.items():
        m = score(runs)
        print(f"| {label} | {route} | {rule} | {m['hit@1']:.2f} | {m['hit@5']:.2f} | "
              f"{m['hit@10']:.2f} | {m['mrr@10']:.2f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
