"""Which model should embed CJK chunks: USE-multilingual or multilingual-e5-small, on
the Chinese paraphrase sets, by real searches over one subset of the tldr pages.

    python bench/cjk_model_bench.py --root /tmp/cjkmodel [--distractors 440] [--seed 16]
    python bench/cjk_model_bench.py --root /tmp/cjkmodel --full   # every page: slow

e5 embeds about 1.5 chunks a second on this machine, so the whole folder (1,534 pages)
takes over 20 minutes; the subset is every page a ZH or cross question names plus
`--distractors` other pages drawn at random (`--seed`), copied into ROOT/pages. Two
indexes of exactly that folder: the default settings (MiniLM for every chunk, USE for
the CJK ones, a CJK question searching USE's vectors) and ASKMD_EMBEDDING_MODEL=
multilingual-e5-small (e5 for every chunk and question; one thread, ASKMD_EMBED_THREADS=1).
The keyword side is the same in both. Prints one row per set, model and retriever, then
hybrid rows with the CJK dense share varied (same indexes, only the blend changes), and
each index's embedding rate.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from askmd import evaluate  # noqa: E402
from askmd.pipeline import Index  # noqa: E402
from askmd.search import retriever  # noqa: E402
from askmd.settings import load_settings  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "tldr" / "pages.zh"
SETS = (
    ("ZH all", "tldr-zh.jsonl", ("plain", "hard")),
    ("ZH hard", "tldr-zh.jsonl", ("hard",)),
    ("cross", "tldr-cross.jsonl", ("cross",)),
)
MODELS = {
    "use (default)": {"ASKMD_EMBED_THREADS": "1"},
    "e5": {"ASKMD_EMBEDDING_MODEL": "multilingual-e5-small", "ASKMD_EMBED_THREADS": "1"},
}


def questions(name: str, kinds: tuple[str, ...]) -> list[evaluate.Query]:
    path = ROOT / "bench" / "paraphrase" / name
    kind = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            kind[item["id"]] = item["kind"]
    return [q for q in evaluate.read_queries(path) if kind[q.id] in kinds]


def subset(target: Path, distractors: int, seed: int) -> list[str]:
    """Copy the pages the questions need and `distractors` random others; their paths."""
    asked = [q for _, name, kinds in SETS for q in questions(name, kinds)]
    needed = sorted({r for q in asked for r in q.relevant})
    others = sorted(
        str(p.relative_to(DATA))
        for p in DATA.rglob("*.md")
        if str(p.relative_to(DATA)) not in needed and not p.name.startswith(".")
    )
    chosen = needed + random.Random(seed).sample(others, distractors)
    if not target.exists():
        for rel in chosen:
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(DATA / rel, target / rel)
    return chosen


def open_index(folder: Path, index_dir: Path, environ: dict[str, str]) -> Index:
    settings = load_settings(
        environ=environ,
        dotenv_path=None,
        overrides={"knowledge_dir": folder, "index_dir": index_dir},
    )
    index = Index(settings)
    began = time.perf_counter()
    report = index.sync()
    took = time.perf_counter() - began
    rate = report.chunks_embedded / report.embed_seconds if report.embed_seconds else 0.0
    print(
        f"# {index_dir.name}: {report.chunks_embedded} chunks embedded in "
        f"{report.embed_seconds:.0f} s ({rate:.2f} chunks/s), sync {took:.0f} s",
        file=sys.stderr,
        flush=True,
    )
    return index


def score(index: Index, queries: list[evaluate.Query], mode: str) -> evaluate.Report:
    return evaluate.evaluate(queries, lambda text, n: index.search(text, n, mode=mode), k=10)


def row(label: str, model: str, mode: str, n: int, report: evaluate.Report) -> str:
    h = report.hit_at
    return (
        f"| {label} | {n} | {model} | {mode} | {h[1]:.2f} | {h[5]:.2f} | {h[10]:.2f} | "
        f"{report.mrr_at_10:.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--distractors", type=int, default=440)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--alphas", default="0.3,0.4,0.5,0.6,0.7")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--full", action="store_true", help="the whole folder, no subset")
    args = parser.parse_args()
    folder, suffix = DATA, "-full"
    if not args.full:
        folder, suffix = args.root / "pages", ""
        chosen = subset(folder, args.distractors, args.seed)
        print(f"# subset: {len(chosen)} pages (seed {args.seed})", file=sys.stderr)
    indexes = {
        name: open_index(folder, args.root / (name.split()[0] + suffix), MODELS[name])
        for name in args.models.split(",")
    }
    print("| set | questions | model | retriever | hit@1 | hit@5 | hit@10 | MRR@10 |")
    print("| --- | ---: | --- | --- | ---: | ---: | ---: | ---: |")
    for label, name, kinds in SETS:
        qs = questions(name, kinds)
        for model, index in indexes.items():
            for mode in retriever.MODES:
                print(row(label, model, mode, len(qs), score(index, qs, mode)), flush=True)
    print("\nCJK dense share (hybrid, CJK questions):")
    saved = dict(retriever.ALPHA)
    for alpha in (float(a) for a in args.alphas.split(",")):
        retriever.ALPHA.update({k: (v[0], alpha) for k, v in saved.items()})
        for label, name, kinds in SETS[:2]:
            qs = questions(name, kinds)
            for model, index in indexes.items():
                print(row(label, model, f"hybrid {alpha}", len(qs), score(index, qs, "hybrid")))
    retriever.ALPHA.update(saved)


if __name__ == "__main__":
    main()
