"""Chinese questions about English notes, by the multilingual model alone: USE against
multilingual-e5-small on the same chunks.

    python bench/zh_to_en_model_bench.py IX [--others 600] [--seed 16]

IX is an index of the mixed folder (bench/zh_to_en_bench.py: the Obsidian developer docs
under en/, the Chinese tldr pages under zh/). e5 embeds about two chunks a second here, so
the whole English side (3,875 chunks) would take over half an hour: the pool is every
chunk of the notes the questions name plus `--others` other English chunks drawn at
random, the same for both models, each chunk embedded as its note's name and its text.
Scores the dense ranking of notes for bench/paraphrase/obsidian-zh.jsonl (all and hard)
and prints each model's embedding rate.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from multilingual_bench import files, load, score  # noqa: E402

from askmd.index.embedder import E5_MODEL, MULTILINGUAL_MODEL, make_embedder  # noqa: E402
from askmd.index.manifest import MANIFEST, Manifest  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ix", type=Path)
    parser.add_argument("--others", type=int, default=600)
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args()
    questions = {
        "ZH->EN all": load("obsidian-zh.jsonl", ("cross-zh", "cross-zh-hard")),
        "ZH->EN hard": load("obsidian-zh.jsonl", ("cross-zh-hard",)),
    }
    named = {"en/" + r for q in questions["ZH->EN all"] for r in q["relevant"]}
    manifest = Manifest(args.ix / MANIFEST, read_only=True)
    rows = manifest.db.execute("SELECT id, source, text FROM chunks WHERE source LIKE 'en/%'")
    chunks = sorted(rows.fetchall())
    pool = [c for c in chunks if c[1] in named]
    rest = [c for c in chunks if c[1] not in named]
    pool += random.Random(args.seed).sample(rest, min(args.others, len(rest)))
    texts = [f"{Path(source).stem}\n{text}" for _, source, text in pool]
    print(f"{len(pool)} chunks ({len(pool) - min(args.others, len(rest))} of the named notes)")
    print("| set | model | n | hit@1 | hit@5 | hit@10 | MRR@10 |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for model in (MULTILINGUAL_MODEL, E5_MODEL):
        embedder = make_embedder("local", model)
        started = time.perf_counter()
        vectors = np.vstack([embedder.embed(texts[i : i + 16]) for i in range(0, len(texts), 16)])
        rate = len(texts) / (time.perf_counter() - started)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for label, qs in questions.items():
            asked = embedder.embed_queries([q["query"] for q in qs])
            runs = []
            for q, vector in zip(qs, asked, strict=True):
                order = np.argsort(-(vectors @ vector))
                ranked = files([pool[i][1] for i in order[:200]])
                runs.append((ranked, {"en/" + r for r in q["relevant"]}))
            s = score(runs)
            print(f"| {label} | {model} dense | {len(runs)} | {s['hit@1']:.2f} | "
                  f"{s['hit@5']:.2f} | {s['hit@10']:.2f} | {s['mrr@10']:.2f} |")  # fmt: skip
        print(f"{model}: {rate:.1f} chunks/s", file=sys.stderr)


if __name__ == "__main__":
    main()
