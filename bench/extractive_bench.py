"""The answer without an LLM: do its sentences come from the note that answers?

    python -m bench.extractive_bench KB IX

KB and IX are the mixed folder and its index (the vault under en/, the Chinese tldr pages
under zh/: bench/README.md). Each paraphrase question is searched once as shipped (top
5, the REPL's default) and its sentences read by meaning as the shipped answer reads them
(grounding.judge); its extractive answer (extractive.extractive) is then built with each
combination of the answer's switches: sentences shown by score or by passage
(extractive.PASSAGE_ORDER), a Chinese question's words counted in English too or not
(extractive.TRANSLATED_WORDS). Reported per set: how often the first bullet cites a note that
answers the question, how often any bullet does, and the bullets shown.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from askmd.answer import extractive
from bench.common import PARAPHRASE, load, open_mixed, tiny_data, tiny_sets

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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kb", type=Path)
    parser.add_argument("ix", type=Path)
    parser.add_argument("--sets", type=Path, default=PARAPHRASE, help="the folder of the sets")
    args = parser.parse_args(argv)
    index, _, _ = open_mixed(args.kb, args.ix)
    ground = index.answerer.grounding()
    shipped = (extractive.PASSAGE_ORDER, extractive.TRANSLATED_WORDS)
    print("| set | shown by | Chinese words in English | first bullet answers | any bullet "
          "answers | bullets |\n| --- | --- | --- | ---: | ---: | ---: |")  # fmt: skip
    for label, name, kinds, prefix in SETS:
        searched = [(q, index.search(q["query"], 5)) for q in load(name, kinds, args.sets)]
        # each sentence's cosine with the question, as the shipped answer reads them
        meant = [ground.judge(q["query"], hits).sentences for q, hits in searched]
        for order, translated in SWITCHES:
            extractive.PASSAGE_ORDER, extractive.TRANSLATED_WORDS = order, translated
            first = anywhere = bullets = 0
            for (q, hits), meaning in zip(searched, meant, strict=True):
                text, _ = extractive.extractive(q["query"], hits, meaning=meaning)
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


def smoke(tmp: Path) -> None:
    """The sets in small over the tiny mixed folder."""
    kb, sets = tiny_data(tmp / "data") / "mixed", tiny_sets(tmp / "sets")
    main([str(kb), str(tmp / "ix"), "--sets", str(sets)])


if __name__ == "__main__":
    main()
