"""Chinese questions about English notes: multilingual vectors for the CJK chunks or for all.

    python bench/zh_to_en_bench.py KB IX [--alphas 0.5,0.6] [--shipped]

KB holds the Obsidian developer docs under en/ and the Chinese tldr pages under zh/ (as
for bench/mixed_vault_bench.py). A CJK question searches the multilingual (USE) vectors
beside BM25. When only CJK chunks had them, an English note was reachable from a Chinese
question only through a shared Latin word (an API name); a folder with CJK notes now
gives every chunk one (side_model.widen_side). This indexes KB with the default settings
and scores, on the same keyword lists, USE over the CJK chunks alone (as before; the
side collection's `cjk` flag) against USE over every chunk, at each dense share, and the
real search as shipped, for Chinese questions about the English notes
(bench/paraphrase/obsidian-zh.jsonl) and about the Chinese pages (tldr-zh.jsonl); the
English and cross-language sets by the real search only. `--shipped` scores the real search
alone, so this file (with obsidian-zh.jsonl) can be copied into an older checkout to
measure that version on the same questions.

`--language-rule` also tries, for a CJK question, discounting the keyword scores of CJK
chunks when most of the dense top 5 are not CJK (the question seems to be about the
other language's notes), at a few thresholds and discounts; `--per-language` searches
USE's CJK and non-CJK vectors apart, each list scaled on its own before they are merged,
against its bias to the question's language (both tried and dropped: BENCHMARKS.md,
"Chinese questions about English notes").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from multilingual_bench import POOL, files, fuse, load, open_mixed, print_table, scaled  # noqa: E402

from askmd.terms import content_terms  # noqa: E402

SETS = (
    ("ZH->EN all", "obsidian-zh.jsonl", ("cross-zh", "cross-zh-hard"), "en/"),
    ("ZH->EN hard", "obsidian-zh.jsonl", ("cross-zh-hard",), "en/"),
    ("ZH all", "tldr-zh.jsonl", ("plain", "hard"), "zh/"),
    ("ZH hard", "tldr-zh.jsonl", ("hard",), "zh/"),
)
# Latin-script questions: only the real search is scored (the offline rules are for CJK ones).
SHIPPED_ONLY = (
    ("EN all", "obsidian-en.jsonl", ("plain", "hard"), "en/"),
    ("EN hard", "obsidian-en.jsonl", ("hard",), "en/"),
    ("cross", "tldr-cross.jsonl", ("cross",), "zh/"),
)
SHIPPED = "askmd search as shipped"

TODAY, EVERY = "today: USE over CJK chunks", "USE over every chunk"
RULES = [(least, discount) for least in (0.4, 0.6, 0.8, 1.0) for discount in (0.0, 0.3, 0.6)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kb", type=Path)
    parser.add_argument("ix", type=Path)
    parser.add_argument("--alphas", default="0.5,0.6", help="dense shares to try")
    parser.add_argument(
        "--shipped", action="store_true", help="score the real search only (any version)"
    )
    parser.add_argument(
        "--language-rule", action="store_true", help="try the dense-language keyword rule"
    )
    parser.add_argument(
        "--per-language", action="store_true", help="try USE searched per language, merged"
    )
    args = parser.parse_args()
    shares = [float(a) for a in args.alphas.split(",") if a]
    index, side, companion = open_mixed(args.kb, args.ix)
    rows: dict[tuple[str, str], list] = {}
    cjk_of = dict(index.manifest.db.execute("SELECT chunk, cjk FROM documents"))
    for label, name, kinds, prefix in SETS + SHIPPED_ONLY:
        for q in load(name, kinds):
            text, relevant = q["query"], {prefix + r for r in q["relevant"]}
            shipped = [h.source for h in index.search(text, 10)]
            rows.setdefault((label, SHIPPED), []).append((files(shipped), relevant))
            if args.shipped or (label, name, kinds, prefix) in SHIPPED_ONLY:
                continue
            keyword = index.manifest.keyword(content_terms(text), POOL, cjk=True)
            vector = companion.embed_queries([text])[0]
            cjk_only = side.nearest(vector, POOL, where={"cjk": True}, content=False)
            every = side.nearest(vector, POOL, content=False)
            for rule, found in ((TODAY, cjk_only), (EVERY, every)):
                dense = [(s.id, 1 - s.distance) for s in found]
                rows.setdefault((label, f"{rule}, dense"), []).append(
                    (files([c for c, _ in dense]), relevant)
                )
                for share in shares:
                    rows.setdefault((label, f"{rule}, hybrid {share}"), []).append(
                        (files(fuse(dense, keyword, share)), relevant)
                    )
            rows.setdefault((label, "keyword"), []).append(
                (files([c for c, _ in keyword]), relevant)
            )
            if args.per_language:
                apart = [side.nearest(vector, POOL // 2, where={"cjk": cjk}, content=False)
                         for cjk in (True, False)]  # fmt: skip
                merged: dict[str, float] = {}
                for found in apart:
                    for c, v in scaled([(s.id, 1 - s.distance) for s in found]).items():
                        merged[c] = max(merged.get(c, 0.0), v)
                dense = sorted(merged.items(), key=lambda x: -x[1])
                rows.setdefault((label, "USE per language, dense"), []).append(
                    (files([c for c, _ in dense]), relevant)
                )
                for share in (0.5, 0.6, 0.7):
                    rows.setdefault((label, f"USE per language, hybrid {share}"), []).append(
                        (files(fuse(dense, keyword, share)), relevant)
                    )
            if args.language_rule:
                dense = [(s.id, 1 - s.distance) for s in every]
                other = sum(1 for c, _ in dense[:5] if not cjk_of.get(c, 0)) / 5
                for least, discount in RULES:
                    kept = keyword
                    if other >= least:
                        kept = sorted(((c, v * (discount if cjk_of.get(c, 0) else 1.0))
                                       for c, v in keyword), key=lambda x: -x[1])  # fmt: skip
                    rows.setdefault((label, f"{EVERY}, CJK keyword x{discount} when "
                                     f">= {least:.0%} of dense top 5 not CJK"), []).append(
                        (files(fuse(dense, kept, 0.5)), relevant)
                    )  # fmt: skip
    print_table(rows)


if __name__ == "__main__":
    main()
