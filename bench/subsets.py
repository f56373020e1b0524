"""Subsets of SciFact and CMRC small enough to index on a busy 2-core machine in minutes.

Each subset keeps the first N questions, every document they name, and a fixed random
draw of other documents as distractors (seed 16), copied to OUT/corpus (askmd skips links
that leave the folder), and writes OUT/queries.jsonl:

    python -m bench.subsets scifact /tmp/ev/scisub --questions 300 --others 900
    python -m bench.subsets cmrc2018 /tmp/ev/cmrcsub --questions 400 --others 250
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path

from bench.common import DATA, TINY_NOTES


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("set", choices=["scifact", "cmrc2018"])
    parser.add_argument("out", type=Path)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--others", type=int, default=900)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args(argv)
    source = args.data / args.set
    lines = (source / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()][: args.questions]
    named = {name for row in rows for name in row["relevant"]}
    rest = sorted(p.name for p in (source / "corpus").iterdir() if p.name not in named)
    drawn = random.Random(16).sample(rest, min(args.others, len(rest)))
    corpus = args.out / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    for name in sorted(named) + drawn:
        target = corpus / name
        if target.is_symlink() or not target.exists():
            target.unlink(missing_ok=True)
            shutil.copyfile(source / "corpus" / name, target)
    with (args.out / "queries.jsonl").open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(rows)} questions, {len(named)} named + {len(drawn)} other documents in {corpus}")


def smoke(tmp: Path) -> None:
    """A five-document SciFact of the tiny notes: one question, two distractors."""
    source = tmp / "data" / "scifact"
    (source / "corpus").mkdir(parents=True)
    for n, text in enumerate(TINY_NOTES.values()):
        (source / "corpus" / f"{n}.md").write_text(text, encoding="utf-8")
    rows = [{"id": str(n), "query": f"question {n}", "relevant": [f"{n}.md"]} for n in (0, 1)]
    lines = "\n".join(json.dumps(row) for row in rows)
    (source / "queries.jsonl").write_text(lines, encoding="utf-8")
    args = ["scifact", str(tmp / "out"), "--questions", "1", "--others", "2"]
    main([*args, "--data", str(tmp / "data")])
    assert len(list((tmp / "out" / "corpus").iterdir())) == 3


if __name__ == "__main__":
    main()
