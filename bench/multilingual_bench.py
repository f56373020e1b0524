"""Route questions to MiniLM's or the multilingual vectors, and blend them: by measurement.

    python -m bench.multilingual_bench --index-dir /tmp/askmd-ml/tldr-zh \
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

from askmd.pipeline import Index
from askmd.settings import load_settings
from bench.common import (
    DATA,
    PARAPHRASE,
    POOL,
    files,
    fuse,
    load,
    score,
    tiny_data,
    tiny_sets,
)

SETS = (
    ("ZH all", "tldr-zh.jsonl", ("plain", "hard")),
    ("ZH hard", "tldr-zh.jsonl", ("hard",)),
    ("cross", "tldr-cross.jsonl", ("cross",)),
)


def spread(values: list[float]) -> tuple[float, float]:
    """Mean and standard deviation of a list's scores (1.0 when they are all equal, so a
    list of one candidate is shifted, not scaled to nothing)."""
    mean = statistics.fmean(values)
    deviation = statistics.pstdev(values) if len(values) > 1 else 0.0
    return mean, deviation or 1.0


def z_merge(main, side):
    """The side list standardised onto the main list's mean and spread (tried; the search
    merges by median shift, as median_merge does)."""
    if not main or not side:
        return main or side
    mean, scale = spread([v for _, v in main])
    o_mean, o_scale = spread([v for _, v in side])
    best = dict(main)
    for c, v in side:
        best[c] = max(best.get(c, -9.0), mean + (v - o_mean) / o_scale * scale)
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--from-index", type=Path, help="an index to copy and upgrade")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--sets", type=Path, default=PARAPHRASE, help="the folder of the sets")
    args = parser.parse_args(argv)
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
        for q in load(name, kinds, args.sets):
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


def smoke(tmp: Path) -> None:
    """The Chinese sets in small over the two tiny Chinese notes."""
    main(["--index-dir", str(tmp / "ix"), "--data", str(tiny_data(tmp / "data")),
          "--sets", str(tiny_sets(tmp / "sets"))])  # fmt: skip


if __name__ == "__main__":
    main()
