"""The citation check: how many wrong citations it flags, and how many right ones.

    python bench/citations_bench.py

For each answerable question of bench/answers with a gold answer, over its folder's index:
the top 5 passages are retrieved as `ask` retrieves them; the passage holding the gold
answer word for word is the right one to cite. The gold sentence cited to it is a right
citation; cited to another of the top 5 passages (one that does not hold it: the mistake
a model makes, citing the neighbour on the same topic) it is a wrong one. Prints, per
set, the share of wrong citations flagged and of right ones flagged with
grounding.SUPPORT_MARGIN (then with a few other margins), and the check's time per claim.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import evaluate  # noqa: E402
import grounding  # noqa: E402
from bench.answers_bench import SETS, SETS_DIR, open_index  # noqa: E402

MARGINS = (0.0, 0.05, 0.1, 0.15, 0.2)


def pairs(index, queries):
    """(claim, right hit, wrong hits) for each question whose gold a top passage holds."""
    for q in queries:
        if q.unanswerable or not q.answers:
            continue
        hits = index.search(q.query, 5)
        gold = q.answers[0].strip()
        holding = [h for h in hits if gold[:60] in h.text]
        if not holding:
            continue
        right = holding[0]
        wrong = [h for h in hits if gold[:60] not in h.text and h.source != right.source]
        yield gold, right, wrong[:2]


def main() -> None:
    print("| set | right | wrong | wrong flagged | right flagged | ms per claim |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, folder in SETS:
        path = SETS_DIR / name
        if "unanswerable" in name or not path.is_file():
            continue
        index = open_index(folder, Path("/tmp/askmd-bench"), {})
        ground = index.grounding()
        cases = list(pairs(index, evaluate.read_queries(path, answers=True)))
        if not cases:
            continue
        chosen = grounding.SUPPORT_MARGIN
        for margin in (chosen, *(m for m in MARGINS if m != chosen)):
            grounding.SUPPORT_MARGIN = margin
            right_scores, wrong_scores, took = [], [], []
            for claim, right, wrong in cases:
                began = time.perf_counter()
                right_scores.append(ground.supported(claim, right))
                took.append(time.perf_counter() - began)
                wrong_scores += [ground.supported(claim, w) for w in wrong]
            label = name if margin == chosen else f"  margin {margin}"
            line = grounding.SUPPORTED
            print(
                f"| {label} | {len(right_scores)} | {len(wrong_scores)} "
                f"| {_below(wrong_scores, line):.3f} | {_below(right_scores, line):.3f} "
                f"| {1000 * sum(took) / len(took):.0f} |",
                flush=True,
            )
        grounding.SUPPORT_MARGIN = chosen


def _below(scores: list[float], line: float) -> float:
    return sum(s < line for s in scores) / len(scores) if scores else 0.0


if __name__ == "__main__":
    main()
