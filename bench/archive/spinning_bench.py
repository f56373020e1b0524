"""onnxruntime's thread spinning (embedder.SPINNING): cold-index speed and search time.

    python bench/spinning_bench.py index KB SPINNING
    python bench/spinning_bench.py latency KB IX SPINNING --lang zh|en

SPINNING is one of "always" (onnxruntime's default), "during runs" (askmd's) or "off".
`index` builds a fresh index of KB (in a temporary folder, removed after) and prints its
chunks/s; time it as a whole process, variants in turn, several runs each (the figures
in BENCHMARKS.md are medians of paired runs). `latency` opens (and syncs) the index IX of
KB and times the Chinese questions of the paraphrase sets (`--lang zh`) or the English
ones (`--lang en`) three times each, 0.3 s apart, as `bench/zh_search_bench.py
--latency` does. Run the variants one after the other on a quiet machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from multilingual_bench import load, open_mixed  # noqa: E402
from zh_search_bench import _time  # noqa: E402

from askmd.index import embedder  # noqa: E402
from askmd.pipeline import Index  # noqa: E402
from askmd.search.retriever import is_cjk_query  # noqa: E402
from askmd.settings import load_settings  # noqa: E402

VARIANTS = ("always", "during runs", "off")
QUESTIONS = {"en": ("obsidian-en.jsonl",), "zh": ("obsidian-zh.jsonl", "tldr-zh.jsonl")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("index", "latency"))
    parser.add_argument("kb", type=Path)
    parser.add_argument("rest", nargs="+", help="[IX] SPINNING")
    parser.add_argument("--lang", choices=tuple(QUESTIONS), default="zh")
    args = parser.parse_args()
    spinning = args.rest[-1]
    if spinning not in VARIANTS:
        parser.error(f"SPINNING must be one of {', '.join(VARIANTS)}")
    embedder.SPINNING = spinning
    if args.what == "index":
        with tempfile.TemporaryDirectory() as ix:
            settings = load_settings(
                environ={},
                dotenv_path=None,
                overrides={"knowledge_dir": args.kb, "index_dir": Path(ix)},
            )
            report = Index(settings).sync()
            rate = report.chunks_total / report.seconds
            print(
                f"{spinning}: {report.chunks_total} chunks in {report.seconds:.1f} s, {rate:.1f}/s"
            )
        return
    index, _, _ = open_mixed(args.kb, Path(args.rest[0]))
    kinds = ("plain", "hard", "cross-zh", "cross-zh-hard")
    asked = dict.fromkeys(q["query"] for name in QUESTIONS[args.lang] for q in load(name, kinds))
    print(f"{spinning}, {args.lang}: ", end="")
    _time(index, [q for q in asked if is_cjk_query(q) == (args.lang == "zh")], 0.3)


if __name__ == "__main__":
    main()
