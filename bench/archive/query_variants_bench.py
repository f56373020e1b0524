"""Chinese questions searched by a blend of their own vector and a variant's (tried, dropped).

    python bench/query_variants_bench.py KB IX [--weights 0.5,1,3] [--english]

KB and IX are the mixed folder and index of zh_to_en_bench.py (the vault under en/, the
Chinese tldr pages under zh/). A CJK question's multilingual vector becomes
unit(q + w * unit(mean of the variants' vectors)), for two kinds of variant made without
an LLM: "strip", the question without its question words (怎么, 如何, 能不能, 吗...) and
punctuation; "clauses", its clauses cut at punctuation and spaces (questions of one
clause are left as they are). `--english` does the same to the English questions' MiniLM
vectors (question words: "how do I", "is there a way to", "can I"...; clauses cut at
commas and semicolons) and scores the English sets. Everything else is the search as
shipped (`Index.search`, files by their best chunk, hybrid).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from multilingual_bench import load, open_mixed, print_table  # noqa: E402
from zh_search_bench import _hybrid  # noqa: E402
from zh_to_en_bench import SETS, SHIPPED_ONLY  # noqa: E402

from askmd.index import embedder  # noqa: E402

ASKING = re.compile(
    r"(请问|我想要|我想|想要|想|怎么办|怎么样|怎么|怎样|如何|能不能|能否|可不可以|可以|有没有"
    r"|是否|什么|哪些|哪个|为什么|吗|呢|吧|啊|[？?！!。，,、：:；;])"
)
CLAUSE = re.compile(r"[？?！!。，,、：:；;\s]+")
ASKING_EN = re.compile(
    r"^(how (do|can|would|should|to) (i|we|you)?|is there a way to|what('s| is) the (best )?way"
    r" to|can i|i want to|i need to|where do i|what do i do|why does|why do|what)\b|\?",
    re.I,
)
CLAUSE_EN = re.compile(r"\s*[,;?]+\s*")


def _unit(v: np.ndarray) -> np.ndarray:
    return v / (np.linalg.norm(v) + 1e-9)


def _variants(kind: str, question: str, english: bool) -> list[str]:
    if kind == "strip":
        stripped = (ASKING_EN if english else ASKING).sub(" ", question).strip()
        return [stripped] if stripped and stripped != question else []
    clauses = [c for c in (CLAUSE_EN if english else CLAUSE).split(question) if len(c) >= 2]
    return clauses if len(clauses) > 1 else []


def blended(shipped: Callable, kind: str, weight: float, english: bool) -> Callable:
    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        out = []
        for text in texts:
            own = shipped(self, [text])[0]
            variants = _variants(kind, text, english)
            if not variants:
                out.append(own)
                continue
            other = _unit(np.mean([_unit(v) for v in shipped(self, variants)], axis=0))
            out.append(_unit(_unit(own) + weight * other).astype(own.dtype))
        return np.stack(out)

    return embed_queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kb", type=Path)
    parser.add_argument("ix", type=Path)
    parser.add_argument("--weights", default="0.5,1,3")
    parser.add_argument("--english", action="store_true", help="the English questions instead")
    args = parser.parse_args()
    index, _, _ = open_mixed(args.kb, args.ix)
    chosen = SHIPPED_ONLY[:2] if args.english else SETS
    sets = [(label, load(name, kinds), prefix) for label, name, kinds, prefix in chosen]
    model = embedder.LocalEmbedder if args.english else embedder.MultilingualEmbedder
    shipped = model.embed_queries
    rows: dict[tuple[str, str], list] = {}
    _hybrid(index, sets, rows, "as shipped")
    for kind in ("strip", "clauses"):
        for weight in (float(w) for w in args.weights.split(",")):
            model.embed_queries = blended(shipped, kind, weight, args.english)
            _hybrid(index, sets, rows, f"{kind}, weight {weight:g}")
    model.embed_queries = shipped
    print_table(rows)


if __name__ == "__main__":
    main()
