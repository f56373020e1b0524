"""The LLM rerank (ASKMD_RERANK=llm) measured: the search's top 20, reordered by a chat model.

For each question: `Index.search(question, 20)` as shipped, then `rerank.LLMRerank` with
the chat model the settings give (ASKMD_LOCAL_MODEL=FILE.gguf, or OPENAI_BASE_URL and a
model), exactly the call `ask` makes. Files ranked by their best chunk, before and after;
the call's time and the replies that kept the order are reported.

    python bench/rerank_bench.py KB IX QUERIES.jsonl[:PREFIX] ... [--kinds hard] [--limit N]

`--rewrite` measures the search rewrite (ASKMD_SEARCH_REWRITE=1) instead: the model
restates the question and the search reads both, as `ask` does.

KB/IX as for `rag.py --knowledge KB --index-dir IX`; PREFIX goes before the relevant file
names (the mixed folder's vault questions: bench/paraphrase/obsidian-en.jsonl:en/).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from multilingual_bench import files, print_table  # noqa: E402

from askmd.pipeline import Index  # noqa: E402
from askmd.search import rerank  # noqa: E402
from askmd.settings import load_settings  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kb", type=Path)
    parser.add_argument("ix", type=Path)
    parser.add_argument("queries", nargs="+")
    parser.add_argument("--kinds", default="", help="only these kinds (comma-separated)")
    parser.add_argument("--limit", type=int, default=0, help="at most this many a file")
    parser.add_argument("--rewrite", action="store_true", help="measure the search rewrite")
    args = parser.parse_args()
    settings = load_settings(
        environ=dict(os.environ),
        dotenv_path=None,
        overrides={"knowledge_dir": args.kb, "index_dir": args.ix},
    )
    index = Index(settings)
    index.sync()
    reranker = rerank.SearchRewrite(index.chat) if args.rewrite else rerank.LLMRerank(index.chat)
    changed = (
        "search of the question and its rewrite" if args.rewrite else "LLM rerank of its top 20"
    )
    kinds = {k for k in args.kinds.split(",") if k}
    rows: dict[tuple[str, str], list] = {}
    times: list[float] = []
    kept = 0
    for spec in args.queries:
        path, _, prefix = spec.partition(":")
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        questions = [json.loads(line) for line in lines if line.strip()]
        questions = [q for q in questions if not kinds or q.get("kind") in kinds]
        for q in questions[: args.limit or None]:
            relevant = {prefix + r for r in q["relevant"]}
            hits = index.search(q["query"], rerank.DEPTH)
            if args.rewrite:
                restated = reranker(q["query"])
                after = index.search(restated, rerank.DEPTH)
            else:
                after = reranker(q["query"], hits)
            times.append(reranker.last_ms or 0.0)
            kept += reranker.error is not None
            label = Path(path).stem
            before_files = files([h.source for h in hits])
            after_files = files([h.source for h in after])
            rows.setdefault((label, "search as shipped"), []).append((before_files, relevant))
            rows.setdefault((label, changed), []).append((after_files, relevant))
            print(
                json.dumps(
                    {
                        "query": q["query"],
                        "before": before_files[:3],
                        "after": after_files[:3],
                        "relevant": sorted(relevant),
                        "ms": round(reranker.last_ms or 0),
                        "error": reranker.error,
                        "rewrite": restated if args.rewrite else None,
                    },
                    ensure_ascii=False,
                ),
                file=sys.stderr,
            )
    print_table(rows)
    if times:
        print(
            f"\nmodel calls: {len(times)}, median {statistics.median(times) / 1000:.1f} s, "
            f"max {max(times) / 1000:.1f} s; order kept (reply unusable or failed): {kept}"
        )


if __name__ == "__main__":
    main()
