"""The answer without an LLM: do its sentences come from the note that answers?

    python bench/extractive_bench.py KB IX

KB and IX are the mixed folder and index of zh_to_en_bench.py (the vault under en/, the
Chinese tldr pages under zh/). Each paraphrase question is searched once as shipped (top
5, the REPL's default); its extractive answer (extractive.extractive) is then built with each
combination of the answer's switches: sentences shown by score or by passage
(extractive.PASSAGE_ORDER), a Chinese question's words counted in English too or not
(extractive.TRANSLATED_WORDS). Reported per set: how often the first bullet cites a note that
answers the question, how often any bullet does, and the bullets shown.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from multilingual_bench import load, open_mixed  # noqa: E402

from askmd.answer import extractive  # noqa: E402

SETS = (
    ("EN (76)", "obsidian-en.jsonl", ("plain", "hard"), "en/"),
    ("ZH (43)", "tldr-zh.jsonl", ("plain", "hard"), "zh/"),
    ("ZH->EN (36)", "obsidian-zh.jsonl", ("cross-zh", "cross-zh-hard"), "en/"),
)
SWITCHES = (  # (PASSAGE_ORDER, TRANSLATED_WORDS)
    (False, False),
    (True, False),
    (False, True),
    (True, True),
)
_CITED = re.compile(r"\[(\d+)\]\s*$", re.M)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kb", type=Path)
    parser.add_argument("ix", type=Path)
    args = parser.parse_args()
    index, _, _ = open_mixed(args.kb, args.ix)
    shipped = (extractive.PASSAGE_ORDER, extractive.TRANSLATED_WORDS)
    print("| set | shown by | Chinese words in English | first bullet answers | any bullet "
          "answers | bullets |\n| --- | --- | --- | ---: | ---: | ---: |")  # fmt: skip
    for label, name, kinds, prefix in SETS:
        searched = [(q, index.search(q["query"], 5)) for q in load(name, kinds)]
        for order, translated in SWITCHES:
            extractive.PASSAGE_ORDER, extractive.TRANSLATED_WORDS = order, translated
            first = anywhere = bullets = 0
            for q, hits in searched:
                text, _ = extractive.extractive(q["query"], hits)
                want = {prefix + r for r in q["relevant"]}
                cited = [hits[int(n) - 1].source in want for n in _CITED.findall(text)]
                bullets += len(cited)
                first += bool(cited and cited[0])
                anywhere += any(cited)
            n = len(searched)
            print(
                f"| {label} | {'passage' if order else 'score'} | {'yes' if translated else 'no'}"
                f" | {first}/{n} | {anywhere}/{n} | {bullets} |"
            )
    extractive.PASSAGE_ORDER, extractive.TRANSLATED_WORDS = shipped


if __name__ == "__main__":
    main()
