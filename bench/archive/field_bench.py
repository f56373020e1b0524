"""Which BM25F field weights (title, aliases, headings)? Measured on the paraphrase sets.

    python bench/field_bench.py --index-root /tmp/askmd-para-f 0,0,0 2,2,1 1,1,0.5

Opens the paraphrase indexes (built by bench/paraphrase_bench.py with the same
--index-root, by code that stores field counts) and, for each weight triple, sets
manifest_keywords.FIELD_WEIGHTS and scores every set in hybrid and keyword mode. Only the query
side changes between triples, so nothing is re-indexed. One table row per set, mode and
triple; 0,0,0 is plain BM25 over the same index.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from paraphrase_bench import DATA, ROWS, SETS_DIR, load_set, run  # noqa: E402

from askmd.index import manifest_keywords  # noqa: E402
from askmd.pipeline import Index  # noqa: E402
from askmd.settings import load_settings  # noqa: E402


def open_built(folder, index_root: Path) -> Index:
    """The folder's index as paraphrase_bench.py left it (not synced again here)."""
    overrides = {"knowledge_dir": DATA / folder.path, "index_dir": index_root / folder.name}
    return Index(load_settings(environ={}, dotenv_path=None, overrides=overrides))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("weights", nargs="+", help="title,aliases,headings")
    parser.add_argument("--index-root", type=Path, default=Path("/tmp/askmd-para-f"))
    parser.add_argument("--modes", default="hybrid,keyword")
    parser.add_argument("--sets", default="EN all,EN hard,ZH all", help="row labels to score")
    parser.add_argument(
        "--eval",
        nargs=3,
        metavar=("KNOWLEDGE", "QUERIES", "INDEX"),
        help="score this folder's queries (e.g. SciFact, CMRC) instead of the paraphrase sets",
    )
    args = parser.parse_args()
    if args.eval:
        return score_folder(args.weights, *map(Path, args.eval), args.modes.split(","))
    rows = [r for r in ROWS if r.label in args.sets.split(",")]
    indexes = {}
    print("| weights | set | retriever | hit@1 | hit@5 | hit@10 | MRR@10 |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for triple in args.weights:
        manifest_keywords.FIELD_WEIGHTS = tuple(float(w) for w in triple.split(","))
        for row in rows:
            if row.folder.name not in indexes:
                indexes[row.folder.name] = open_built(row.folder, args.index_root)
            queries = load_set(SETS_DIR / row.file, row.kinds)
            for mode in args.modes.split(","):
                report, _ = run(indexes[row.folder.name], queries, mode)
                h = report.hit_at
                print(
                    f"| {triple} | {row.label} | {mode} | {h[1]:.2f} | {h[5]:.2f} | "
                    f"{h[10]:.2f} | {report.mrr_at_10:.2f} |",
                    flush=True,
                )


def score_folder(weights: list[str], kb: Path, queries: Path, index_dir: Path, modes) -> None:
    """Each weight triple over one already-indexed folder and its queries file."""
    from askmd import evaluate

    overrides = {"knowledge_dir": kb, "index_dir": index_dir}
    index = Index(load_settings(environ={}, dotenv_path=None, overrides=overrides))
    items = evaluate.read_queries(queries)
    for triple in weights:
        manifest_keywords.FIELD_WEIGHTS = tuple(float(w) for w in triple.split(","))
        for mode in modes:
            report = evaluate.evaluate(items, lambda q, n, m=mode: index.search(q, n, mode=m), k=10)
            h = report.hit_at
            print(
                f"| {triple} | {kb} | {mode} | {h[1]:.3f} | {h[5]:.3f} | {h[10]:.3f} | "
                f"{report.mrr_at_10:.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
