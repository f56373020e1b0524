"""onnxruntime's thread spinning (embedder.SPINNING): cold-index speed and search time.

    python -m bench.spinning_bench index KB SPINNING
    python -m bench.spinning_bench latency KB IX SPINNING --lang zh|en

SPINNING is one of "always" (onnxruntime's default), "during runs" (askmd's) or "off".
`index` builds a fresh index of KB (in a temporary folder, removed after) and prints its
chunks/s; time it as a whole process, variants in turn, several runs each (the figures
in BENCHMARKS.md are medians of paired runs). `latency` opens (and syncs) the index IX of
KB and times the Chinese questions of the paraphrase sets (`--lang zh`) or the English
ones (`--lang en`) three times each, 0.3 s apart, as `bench.zh_search_bench
--latency` does. Run the variants one after the other on a quiet machine.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from askmd.index import embedder
from askmd.pipeline import Index
from askmd.search.retriever import is_cjk_query
from askmd.settings import load_settings
from bench.common import PARAPHRASE, load, open_mixed, time_searches, tiny_data, tiny_sets

VARIANTS = ("always", "during runs", "off")
QUESTIONS = {"en": ("obsidian-en.jsonl",), "zh": ("obsidian-zh.jsonl", "tldr-zh.jsonl")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("index", "latency"))
    parser.add_argument("kb", type=Path)
    parser.add_argument("rest", nargs="+", help="[IX] SPINNING")
    parser.add_argument("--lang", choices=tuple(QUESTIONS), default="zh")
    parser.add_argument("--sets", type=Path, default=PARAPHRASE, help="the folder of the sets")
    args = parser.parse_args(argv)
    spinning = args.rest[-1]
    if spinning not in VARIANTS:
        parser.error(f"SPINNING must be one of {', '.join(VARIANTS)}")
    shipped, embedder.SPINNING = embedder.SPINNING, spinning
    try:
        _run(args, spinning)
    finally:
        embedder.SPINNING = shipped


def _run(args: argparse.Namespace, spinning: str) -> None:
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
    asked = dict.fromkeys(
        q["query"] for name in QUESTIONS[args.lang] for q in load(name, kinds, args.sets)
    )
    print(f"{spinning}, {args.lang}: ", end="")
    time_searches(index, [q for q in asked if is_cjk_query(q) == (args.lang == "zh")], 0.3)


def smoke(tmp: Path) -> None:
    """Both measures on the tiny mixed folder, the shipped setting."""
    kb, sets = tiny_data(tmp / "data") / "mixed", tiny_sets(tmp / "sets")
    main(["index", str(kb), embedder.SPINNING])
    main(["latency", str(kb), str(tmp / "ix"), embedder.SPINNING, "--sets", str(sets)])


if __name__ == "__main__":
    main()
