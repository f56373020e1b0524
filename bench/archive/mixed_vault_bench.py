"""Do English questions suffer when a folder is half Chinese? The merge of both vector spaces.

    python bench/mixed_vault_bench.py KB IX [--rebuild]

KB holds the Obsidian developer docs under en/ and the Chinese tldr pages under zh/
(copies of ../shared/data/obsidian-dev-docs/en and ../shared/data/tldr/pages.zh), so a
Latin-script question searches MiniLM's vectors of both halves and the multilingual
vectors of the Chinese half. Indexes KB into IX with the default settings (seed IX's
manifest with the two folders' embedding caches to skip embedding), then scores, on the
same top-100 lists, MiniLM's vectors alone against both spaces merged (retriever._merge),
for the English paraphrase set (EN all, EN hard) and the cross-language one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from multilingual_bench import POOL, files, fuse, load, median_merge, open_mixed, score  # noqa: E402

SETS = (
    ("EN all", "obsidian-en.jsonl", ("plain", "hard"), "en/"),
    ("EN hard", "obsidian-en.jsonl", ("hard",), "en/"),
    ("cross", "tldr-cross.jsonl", ("cross",), "zh/"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kb", type=Path)
    parser.add_argument("ix", type=Path)
    parser.add_argument("--rebuild", action="store_true", help="for a seeded manifest")
    args = parser.parse_args()
    index, side, companion = open_mixed(args.kb, args.ix, args.rebuild)
    rules: dict[tuple[str, str], list] = {}
    for label, name, kinds, prefix in SETS:
        for q in load(name, kinds):
            text, relevant = q["query"], {prefix + r for r in q["relevant"]}
            vector = index.embedder.embed_queries([text])[0]
            main = [
                (s.id, 1 - s.distance) for s in index.store.nearest(vector, POOL, content=False)
            ]
            vector = companion.embed_queries([text])[0]
            other = [(s.id, 1 - s.distance) for s in side.nearest(vector, POOL, content=False)]
            keyword = [(h.chunk_id, h.score) for h in index.search(text, POOL, mode="keyword")]
            for route, dense in (
                ("MiniLM only", main),
                ("both, median shift", median_merge(main, other)),
            ):
                rules.setdefault((label, route, "dense"), []).append(
                    (files([c for c, _ in dense]), relevant)
                )
                for alpha in (0.5, 0.6):
                    rules.setdefault((label, route, f"blend {alpha}"), []).append(
                        (files(fuse(dense, keyword, alpha)), relevant)
                    )
    print("| set | vectors searched | rule | hit@1 | hit@5 | hit@10 | MRR@10 |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for (label, route, rule), runs in rules.items():
        m = score(runs)
        print(
            f"| {label} | {route} | {rule} | {m['hit@1']:.2f} | {m['hit@5']:.2f} | "
            f"{m['hit@10']:.2f} | {m['mrr@10']:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
