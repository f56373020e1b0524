"""The citation check: how many wrong citations it flags, and how many right ones.

    python -m bench.citations_bench [--data DIR] [--index-root DIR]

For each answerable question of bench/answers with a gold answer, over its folder's index:
the top 5 passages are retrieved as `ask` retrieves them; the passage holding the gold
answer word for word is the right one to cite. The gold sentence cited to it is a right
citation; cited to another of the top 5 passages (one that does not hold it: the mistake
a model makes, citing the neighbour on the same topic) it is a wrong one. Prints, per
set, the share of wrong citations flagged and of right ones flagged by the check
(grounding.unsupported), by its two rules alone, and its time per answer.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from askmd import evaluate
from askmd.answer import grounding
from bench.common import ANSWER_SETS, ANSWERS, DATA, open_index, tiny_data, tiny_sets


def cases(index, queries):
    """(claim, hits, right number, wrong numbers) for each question whose gold answer a
    top passage holds word for word."""
    for q in queries:
        if q.unanswerable or not q.answers:
            continue
        hits = index.search(q.query, 5)
        gold = q.answers[0].strip()
        holding = [i for i, h in enumerate(hits, start=1) if gold[:60] in h.text]
        if not holding:
            continue
        right = holding[0]
        source = hits[right - 1].source
        wrong = [
            i for i, h in enumerate(hits, start=1) if gold[:60] not in h.text and h.source != source
        ]
        yield gold, hits, right, wrong[:2]


RULES = (  # (label, SUPPORT_MARGIN, ANOTHER_SAYS_IT)
    ("default", None, None),
    ("line only", None, 9.0),
    ("another passage only", -9.0, None),
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    parser.add_argument("--sets", type=Path, default=ANSWERS, help="the folder of the sets")
    parser.add_argument("--index-root", type=Path, default=Path("/tmp/askmd-bench"))
    parser.add_argument("--only", help="run the sets whose file name contains this")
    args = parser.parse_args(argv)
    print("| set | rule | right | wrong | wrong flagged | right flagged | ms per answer |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    chosen = (grounding.SUPPORT_MARGIN, grounding.ANOTHER_SAYS_IT)
    for name, folder in ANSWER_SETS:
        path = args.sets / name
        if "unanswerable" in name or not path.is_file() or (args.only and args.only not in name):
            continue
        index = open_index(args.data / folder, args.index_root / folder.replace("/", "-"))
        ground = index.answerer.grounding()
        found = list(cases(index, evaluate.read_queries(path, answers=True)))
        if not found:
            continue
        for label, margin, another in RULES:
            grounding.SUPPORT_MARGIN = chosen[0] if margin is None else margin
            grounding.ANOTHER_SAYS_IT = chosen[1] if another is None else another
            right_flagged, wrong_flagged, took = [], [], []
            for claim, hits, right, wrong in found:
                began = time.perf_counter()
                right_flagged.append(right in ground.unsupported({right: [claim]}, hits))
                took.append(time.perf_counter() - began)
                wrong_flagged += [w in ground.unsupported({w: [claim]}, hits) for w in wrong]
            print(
                f"| {name} | {label} | {len(right_flagged)} | {len(wrong_flagged)} "
                f"| {_share(wrong_flagged):.3f} | {_share(right_flagged):.3f} "
                f"| {1000 * sum(took) / len(took):.0f} |",
                flush=True,
            )
        grounding.SUPPORT_MARGIN, grounding.ANOTHER_SAYS_IT = chosen
        changed(name, ground, found)


_SWAP = {"minutes": "hours", "minute": "hour", "hours": "days", "hour": "day", "days": "weeks",
         "day": "week", "weeks": "months", "week": "month", "months": "years",
         "month": "year", "years": "decades", "year": "decade", "seconds": "minutes",
         "second": "minute", "MB": "GB", "GB": "TB", "KB": "MB", "daily": "weekly",
         "weekly": "monthly", "monthly": "yearly", "分钟": "小时", "小时": "天", "天": "周",
         "周": "月", "月": "年"}  # fmt: skip
_NEGATE = [(" is ", " is not "), (" are ", " are not "), (" can ", " cannot "),
           (" will ", " will not "), (" does ", " does not "), (" must ", " must not "),
           ("是", "不是"), ("会", "不会"), ("能", "不能"), ("可以", "不可以")]  # fmt: skip


def mutants(sentence: str) -> list[tuple[str, str]]:
    """(kind, the sentence with one thing changed): its first number, unit or period,
    or a negation added."""
    import re

    out = []
    number = re.search(r"(?<![\w.])\d+", sentence)
    if number:
        bumped = str(int(number.group()) + 1)
        out.append(("number", sentence[: number.start()] + bumped + sentence[number.end() :]))
    for unit, other in _SWAP.items():
        at = re.search(rf"(?<![A-Za-z]){re.escape(unit)}(?![A-Za-z])", sentence)
        if at:
            out.append(("unit", sentence[: at.start()] + other + sentence[at.end() :]))
            break
    for said, negated in _NEGATE:
        if said in sentence:
            out.append(("negation", sentence.replace(said, negated, 1)))
            break
    return out


def changed(name: str, ground, found) -> None:
    """Claims that copy the passage's sentence with one thing changed, cited to it: the
    share flagged, by kind; and the copy itself, unchanged (a right claim)."""
    from askmd.answer.sentences import sentences

    flagged: dict[str, list[bool]] = {"number": [], "unit": [], "negation": [], "copy": []}
    for gold, hits, right, _ in found:
        said = next((x for x in sentences(hits[right - 1].text) if gold[:40] in x), None)
        if said is None:
            continue
        flagged["copy"].append(right in ground.unsupported({right: [said]}, hits))
        for kind, claim in mutants(said):
            flagged[kind].append(right in ground.unsupported({right: [claim]}, hits))
    row = " | ".join(f"{k} {_share(v):.3f} ({len(v)})" for k, v in flagged.items())
    print(f"| {name} | one thing changed, flagged: {row} | | | | |", flush=True)


def _share(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


def smoke(tmp: Path) -> None:
    """The English set in small over the tiny notes (answers_bench covers the others)."""
    main(["--data", str(tiny_data(tmp / "data")), "--sets", str(tiny_sets(tmp / "sets")),
          "--index-root", str(tmp / "ix"), "--only", "obsidian-en"])  # fmt: skip


if __name__ == "__main__":
    main()
