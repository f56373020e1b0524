"""A dense share that depends on how well the keywords cover the question, scored offline.

    python bench/adaptive_share_bench.py EN_KB EN_IX SCI_KB SCI_IX SCI_QUERIES

EN_KB is obsidian-dev-docs/en (its index EN_IX, built with the default settings), asked
the English paraphrase set (bench/paraphrase/obsidian-en.jsonl); SCI_* the SciFact subset
of bench/subsets.py. For each question this takes the dense top 100 and the BM25 top 100
once, and its keyword coverage: the best chunk's BM25 over the sum of each query term's
best single-term BM25 (near 1: one chunk holds all the question's words; hard paraphrases
sit near 0.3). Rules set the blend's dense share from the coverage (more dense where
the keywords cover little) and are scored on the same lists, files by their best chunk.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gap_bench import POOL, files, fuse, metrics, open_built  # noqa: E402

from askmd.terms import content_terms  # noqa: E402


def collect(kb: Path, ix: Path, queries: list[dict]) -> list[dict]:
    index = open_built(kb, ix)
    index.sync()
    manifest = index.manifest
    out = []
    for q in queries:
        terms = content_terms(q["query"])
        keyword = manifest.keyword(terms, POOL, cjk=False)
        alone = [manifest.keyword([t], 1, cjk=False) for t in set(terms)]
        ceiling = sum(found[0][1] for found in alone if found)
        dense = [(h.chunk_id, h.score) for h in index.search(q["query"], POOL, mode="dense")]
        cover = keyword[0][1] / ceiling if keyword and ceiling else 0.0
        out.append(
            {
                "dense": dense,
                "keyword": keyword,
                "cover": cover,
                "relevant": set(q["relevant"]),
                "kind": q.get("kind", ""),
            }
        )
    return out


def rules() -> dict:
    found = {"today: 0.5": lambda q: 0.5}
    for low, high in ((0.3, 0.7), (0.4, 0.7), (0.5, 0.7), (0.3, 0.6), (0.4, 0.6)):
        for below in (0.5, 0.6, 0.7, 0.8):
            found[f"cover < {below}: {high}, else {low}"] = (
                lambda q, low=low, high=high, below=below: high if q["cover"] < below else low
            )
    for below in (0.3, 0.35, 0.4, 0.45):
        for high in (0.8, 0.9, 1.0):
            found[f"cover < {below}: {high}, else 0.5"] = lambda q, high=high, below=below: (
                high if q["cover"] < below else 0.5
            )
    for slope in (0.2, 0.3, 0.4):
        found[f"0.5 + {slope} x (0.7 - cover)"] = lambda q, slope=slope: min(
            0.9, max(0.1, 0.5 + slope * (0.7 - q["cover"]))
        )
    found["dense only"] = lambda q: 1.0
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("en_kb", "en_ix", "sci_kb", "sci_ix", "sci_queries"):
        parser.add_argument(name, type=Path)
    args = parser.parse_args()
    english = Path(__file__).resolve().parent / "paraphrase" / "obsidian-en.jsonl"
    en = collect(args.en_kb, args.en_ix, [json.loads(x) for x in english.open()])
    sci = collect(args.sci_kb, args.sci_ix, [json.loads(x) for x in args.sci_queries.open()])
    sets = {"EN all": en, "EN hard": [q for q in en if q["kind"] == "hard"], "SciFact": sci}
    for label, qs in (("EN plain", [q for q in en if q["kind"] == "plain"]), *sets.items()):
        cover = sorted(q["cover"] for q in qs)
        print(
            f"{label}: coverage median {statistics.median(cover):.2f}, "
            f"quartiles {cover[len(cover) // 4]:.2f} / {cover[3 * len(cover) // 4]:.2f}"
        )
    print("\n| dense share | " + " | ".join(sets) + " |")
    print("| --- |" + " ---: |" * len(sets))
    for name, rule in rules().items():
        cells = []
        for qs in sets.values():
            fused = [(files(fuse(q["dense"], q["keyword"], rule(q))), q["relevant"]) for q in qs]
            m = metrics(fused)
            cells.append(f"{m['hit@1']:.2f} / {m['hit@5']:.2f} / {m['mrr@10']:.3f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
