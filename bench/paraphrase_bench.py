"""Score retrieval on the paraphrase sets: questions in a user's own words, EN and ZH.

    python -m bench.paraphrase_bench                      # default settings
    python -m bench.paraphrase_bench --setting ASKMD_EMBEDDING_MODEL=use-multilingual

Indexes each knowledge folder once into an index directory under --index-root (reused
by later runs: only changed notes are re-embedded), then runs every set through
`evaluate.evaluate` in each retriever mode (hybrid, keyword, dense) and prints one table
row per set and mode: hit@1, hit@5, hit@10 and MRR@10, files ranked by their best chunk
as `rag.py eval` ranks them. Then the worst hybrid misses (query, expected note, what
ranked first), the cases to look at next. The sets are described in
bench/paraphrase/README.md; the data lives in ../shared/data and is never copied.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from askmd import evaluate
from askmd.pipeline import Index
from askmd.search import retriever
from bench import common
from bench.common import DATA, PARAPHRASE, load_set, tiny_data, tiny_sets

K = 10


@dataclass(frozen=True)
class Folder:
    name: str  # index directory name
    path: str  # relative to the data folder


@dataclass(frozen=True)
class Row:
    label: str
    file: str  # queries file in bench/paraphrase/
    folder: Folder
    kinds: tuple[str, ...]  # which `kind` values the row keeps


OBSIDIAN = Folder("obsidian-en", "obsidian-dev-docs/en")
TLDR_ZH = Folder("tldr-zh", "tldr/pages.zh")
ROWS = (
    Row("EN all", "obsidian-en.jsonl", OBSIDIAN, ("plain", "hard")),
    Row("EN hard", "obsidian-en.jsonl", OBSIDIAN, ("hard",)),
    Row("ZH all", "tldr-zh.jsonl", TLDR_ZH, ("plain", "hard")),
    Row("ZH hard", "tldr-zh.jsonl", TLDR_ZH, ("hard",)),
    Row("cross (EN question, ZH note)", "tldr-cross.jsonl", TLDR_ZH, ("cross",)),
)


def check_paths(data: Path, sets: Path = PARAPHRASE) -> list[str]:
    """Every relevant path of every set, missing from its folder (should be none)."""
    missing = []
    for row in ROWS:
        for q in load_set(sets / row.file, row.kinds):
            missing += [
                f"{row.file} {q.id}: {r}"
                for r in q.relevant
                if not (data / row.folder.path / r).is_file()
            ]
    return sorted(set(missing))


def open_index(folder: Folder, data: Path, index_root: Path, environ: dict[str, str]) -> Index:
    """The folder's index, brought up to date; non-default settings get their own directory."""
    suffix = ""
    if environ:
        key = json.dumps(sorted(environ.items())).encode()
        suffix = "-" + hashlib.sha1(key).hexdigest()[:8]
    return common.open_index(data / folder.path, index_root / (folder.name + suffix), environ)


def run(index: Index, queries: list[evaluate.Query], mode: str):
    """The Report, plus each query's ranked files (for listing misses)."""
    ranked: dict[str, list[str]] = {}

    def search(text: str, n: int):
        hits = index.search(text, n, mode=mode)
        ranked[text] = evaluate.rank_files(hits)[:K]
        return hits

    return evaluate.evaluate(queries, search, k=K), ranked


def worst(queries: list[evaluate.Query], ranked: dict[str, list[str]], label: str) -> list[dict]:
    """Queries whose first relevant file ranks lowest (absent from the top 10 = rank 11)."""
    rows = []
    for q in queries:
        files = ranked[q.query]
        ranks = [i for i, f in enumerate(files, start=1) if f in q.relevant]
        first = ranks[0] if ranks else K + 1
        if first > 1:
            top = files[0] if files else ""
            rows.append(
                {
                    "set": label,
                    "id": q.id,
                    "rank": first,
                    "query": q.query,
                    "expected": list(q.relevant),
                    "first": top,
                }
            )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    parser.add_argument("--index-root", type=Path, default=Path("/tmp/askmd-para"))
    parser.add_argument("--modes", default=",".join(retriever.MODES), help="hybrid,keyword,dense")
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="ASKMD_X=VALUE",
        help="a setting for this run (default settings otherwise)",
    )
    parser.add_argument("--misses", type=int, default=10, help="worst hybrid misses to list")
    parser.add_argument("--check", action="store_true", help="only check the relevant paths")
    parser.add_argument("--sets", type=Path, default=PARAPHRASE, help="the folder of the sets")
    args = parser.parse_args(argv)
    missing = check_paths(args.data, args.sets)
    if missing or args.check:
        print("\n".join(missing) or "every relevant path exists")
        sys.exit(1 if missing else 0)
    environ = dict(s.split("=", 1) for s in args.setting)
    modes = [m for m in args.modes.split(",") if m]
    indexes: dict[str, Index] = {}
    print("| set | questions | retriever | hit@1 | hit@5 | hit@10 | MRR@10 |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
    misses: list[dict] = []
    for row in ROWS:
        if row.folder.name not in indexes:
            indexes[row.folder.name] = open_index(row.folder, args.data, args.index_root, environ)
        queries = load_set(args.sets / row.file, row.kinds)
        for mode in modes:
            report, ranked = run(indexes[row.folder.name], queries, mode)
            h = report.hit_at
            print(
                f"| {row.label} | {len(queries)} | {mode} | {h[1]:.2f} | {h[5]:.2f} | "
                f"{h[10]:.2f} | {report.mrr_at_10:.2f} |",
                flush=True,
            )
            if mode == "hybrid" and "hard" not in row.label:
                misses += worst(queries, ranked, row.label)
    misses.sort(key=lambda m: -m["rank"])
    print(f"\nworst {args.misses} hybrid results (rank 11 = not in the top 10):")
    for m in misses[: args.misses]:
        print(json.dumps(m, ensure_ascii=False))


def smoke(tmp: Path) -> None:
    """Every set in small over the tiny notes, hybrid only."""
    main(["--data", str(tiny_data(tmp / "data")), "--sets", str(tiny_sets(tmp / "sets")),
          "--index-root", str(tmp / "ix"), "--modes", "hybrid"])  # fmt: skip


if __name__ == "__main__":
    main()
