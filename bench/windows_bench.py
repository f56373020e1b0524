"""Window vectors at search (SearchTuning.windows) on and off, on one index, in one process.

    python -m bench.windows_bench KB IX QUERIES [QUERIES ...] [--latency] [--margins 0.02,0.04]
        [--cjk [--shares 0.4,0.6]]

KB is a folder indexed into IX with the default settings by code that stores window
vectors (an index built before has none: both rows then match). QUERIES are JSONL files
of `rag.py eval` (query, relevant; an optional `kind` also gives a row per kind, e.g.
the paraphrase set's hard third; `--prefix en/` when KB holds the set's folder as en/).
Each set is searched in hybrid ranking as shipped
(`Index.search`, files by their best chunk, as `rag.py eval` ranks them) with windows on
and off (and with each `--margins` value as SearchTuning.window_margin: how much a window's
cosine must beat its chunk's), each setting first in turn question by question;
`--latency` adds the median search time of each. `--cjk` switches the multilingual
model's windows for CJK questions instead (SearchTuning.cjk_windows, cjk_window_margin);
with `--shares` each set is also searched, windows on, with each value as the CJK dense
share of the model that ranks CJK questions (the row's "windows" cell names it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace
from pathlib import Path

from askmd import evaluate
from askmd.pipeline import Index
from askmd.search import dense, retriever
from askmd.search.tuning import SHIPPED
from bench.common import open_index, tiny_data, tiny_sets

K = 10


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kb", type=Path)
    parser.add_argument("ix", type=Path)
    parser.add_argument("queries", type=Path, nargs="+")
    parser.add_argument("--latency", action="store_true", help="median ms per search too")
    parser.add_argument("--prefix", default="", help="KB's folder the sets' paths are in")
    parser.add_argument("--margins", default="", help="also these WINDOW_MARGIN values, e.g. 0.02")
    parser.add_argument("--cjk", action="store_true", help="CJK questions' windows instead")
    parser.add_argument("--shares", default="", help="with --cjk: CJK dense shares to try")
    args = parser.parse_args(argv)
    switch, margin_of = (
        ("cjk_windows", "cjk_window_margin") if args.cjk else ("windows", "window_margin")
    )
    shares = [float(v) for v in args.shares.split(",") if v] if args.cjk else []
    index = open_index(args.kb, args.ix)
    index.search("warm up", 5)
    print("| set | n | windows | hit@1 | hit@5 | hit@10 | MRR@10 | ms |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for path in args.queries:
        queries = evaluate.read_queries(path)
        lines = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
        kind = {str(item.get("id", n)): item.get("kind", "") for n, item in enumerate(lines, 1)}
        groups = [(path.stem, queries)] + [
            (f"{path.stem} {k}", [q for q in queries if kind.get(q.id) == k])
            for k in sorted(set(kind.values()) - {""})
        ]
        for label, group in groups:
            shipped = getattr(SHIPPED, margin_of)
            settings = [("off", False, 0.0), ("on", True, shipped)]
            settings += [(f"on, margin {m}", True, float(m)) for m in args.margins.split(",") if m]
            settings += [(f"on, CJK dense share {v}", True, shipped) for v in shares]
            ranked: dict[str, list] = {name: [] for name, _, _ in settings}
            took: dict[str, list[float]] = {name: [] for name, _, _ in settings}
            model = _cjk_model(index)
            alpha = retriever.ALPHA.get(model, retriever.ALPHA_UNMEASURED)
            for n, q in enumerate(group):
                turn = settings[n % len(settings) :] + settings[: n % len(settings)]
                for name, on, margin in turn:  # each setting first in turn
                    share = name.rpartition("share ")[2]
                    dense = (alpha[0], float(share)) if "share" in name else None
                    index.tuning = replace(
                        SHIPPED, **{switch: on, margin_of: margin}, dense_share=dense
                    )
                    began = time.perf_counter()
                    hits = index.search(q.query, K * evaluate.CHUNKS_PER_FILE)
                    took[name].append((time.perf_counter() - began) * 1000)
                    wanted = {args.prefix + r for r in q.relevant}
                    ranked[name].append((evaluate.rank_files(hits)[:K], wanted))
            index.tuning = SHIPPED
            for name, _, _ in settings:
                m = _metrics(ranked[name])
                ms = f"{statistics.median(took[name]):.0f}" if args.latency else ""
                print(
                    f"| {label} | {len(group)} | {name} | {m[0]:.3f} | {m[1]:.3f} | "
                    f"{m[2]:.3f} | {m[3]:.3f} | {ms} |"
                )


def _cjk_model(index: Index) -> str:
    """The model whose vectors rank a CJK question in this index (its dense share applies)."""
    side = dense.side_space(index.embedder, index.store)
    return side[0].id if side is not None else index.embedder.id


def _metrics(runs: list) -> tuple[float, float, float, float]:
    """hit@1, hit@5, hit@10 and MRR@10, files ranked by their best chunk."""
    firsts = [next((i for i, f in enumerate(files, 1) if f in want), 0) for files, want in runs]
    n = max(1, len(runs))
    hits = [sum(0 < r <= cut for r in firsts) / n for cut in (1, 5, 10)]
    return hits[0], hits[1], hits[2], sum(1 / r for r in firsts if r) / n


def smoke(tmp: Path) -> None:
    """The tiny mixed folder: its English set with a margin and timing, and its Chinese
    set with the CJK windows and a share."""
    kb, sets = tiny_data(tmp / "data") / "mixed", tiny_sets(tmp / "sets")
    main([str(kb), str(tmp / "ix"), str(sets / "obsidian-en.jsonl"), "--prefix", "en/",
          "--latency", "--margins", "0.04"])  # fmt: skip
    main([str(kb), str(tmp / "ix"), str(sets / "tldr-zh.jsonl"), "--prefix", "zh/", "--cjk",
          "--shares", "0.5"])  # fmt: skip


if __name__ == "__main__":
    main()
