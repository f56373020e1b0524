"""Several folders answered as one: is the fused ranking as good as asking the right
folder alone, and what does reading three folders cost against one folder of the same
notes?

    python -m bench.shelf_bench                     # both halves, every fusion
    python -m bench.shelf_bench --split test        # the held-out half
    python -m bench.shelf_bench --speed-only

The folders are the held-out sets (bench/heldout/*/notes: English work docs, an English
personal vault, a Chinese family vault). Each answerable question names its relevant
notes in its own folder. For each question: the rank of its first relevant note (a
note of another folder never counts) when its own folder is searched alone, and when
all three are searched as one (shelf.py) with each way of fusing their lists:

- `evidence`: the blend of each hit's cosine (scaled over every folder's hits) and its
  BM25 score over its folder's idf of the question's words, each folder's own order
  kept (what ships);
- `sorted`: the same values, each folder's order not kept;
- `rank`: reciprocal rank only, 1 / (60 + rank), as if nothing else were comparable.

With `--answers`, the answer's judgement too: answerable and unanswerable declined when
asked of the shelf against the own folder. Speed: search p50 and p95 over the questions,
three folders against one folder holding all three as subfolders, in one run, alternated.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import time
from pathlib import Path

from askmd import shelf
from askmd.index import embedder
from askmd.settings import load_settings
from bench.common import ROOT, half, open_index, percentile

HELDOUT = ROOT / "bench" / "heldout"
HOW = ("evidence", "sorted", "rank")


def sets(heldout: Path) -> list[str]:
    return sorted(p.name for p in heldout.iterdir() if (p / "queries.jsonl").is_file())


def open_shelf(root: Path, heldout: Path = HELDOUT) -> shelf.Shelf:
    settings = load_settings(
        environ={}, dotenv_path=None,
        overrides={"knowledge_dir": tuple(f"{n}={heldout / n / 'notes'}" for n in sets(heldout)),
                   "index_dir": root / "shelf"},
    )  # fmt: skip
    opened = shelf.Shelf(settings)
    for f in opened.folders:
        f.index.sync()
    return opened


def fused(opened: shelf.Shelf, query: str, k: int, how: str) -> list:
    found = [(f, f.index.search(query, k)) for f in opened.folders]
    if how == "evidence":
        return shelf.fused(found, k, query)
    if how == "sorted":
        values = shelf._by_evidence(found, query)
        every = [(values[(s.label, h.chunk_id)], s.label, h) for s, r in found for h in r]
        return [
            dataclasses.replace(h, folder=label)
            for _, label, h in sorted(every, key=lambda x: -x[0])
        ][:k]
    every = [(1.0 / (60 + h.rank), -h.score, s.label, h) for s, r in found for h in r]
    return [
        dataclasses.replace(h, folder=label)
        for *_, label, h in sorted(every, key=lambda x: (-x[0], x[1]))
    ][:k]


def rank_of(hits: list, folder: str, relevant: set[str]) -> int | None:
    files = list(dict.fromkeys((h.folder or folder, h.source) for h in hits))
    return next((i + 1 for i, (f, s) in enumerate(files) if f == folder and s in relevant), None)


def together(root: Path, heldout: Path = HELDOUT):
    """One folder holding the three as subfolders, indexed: what several folders are
    measured against."""
    folder = root / "one-folder"
    if not folder.exists():
        for name in sets(heldout):
            shutil.copytree(heldout / name / "notes", folder / name)
    return open_index(folder, root / "one-index")


def quality(
    opened: shelf.Shelf, one, split: str | None, answers: bool, heldout: Path = HELDOUT
) -> None:
    alone = {f.label: f.index for f in opened.folders}
    rows: dict[str, list] = {"alone": [], "one folder": [], **{h: [] for h in HOW}}
    declined: dict[str, list] = {"alone": [], "one folder": [], "shelf": []}
    for name in sets(heldout):
        for line in (heldout / name / "queries.jsonl").read_text(encoding="utf-8").splitlines():
            q = json.loads(line)
            if split and half(q["id"]) != split:
                continue
            answerable = bool(q.get("answerable", True))
            relevant = set(q.get("relevant") or [])
            if answerable and relevant:
                rows["alone"].append(rank_of(alone[name].search(q["query"], 10), name, relevant))
                inside = {f"{name}/{r}" for r in relevant}
                rows["one folder"].append(rank_of(one.search(q["query"], 10), "", inside))
                for how in HOW:
                    rows[how].append(rank_of(fused(opened, q["query"], 10, how), name, relevant))
            if answers and not q.get("today"):
                for who, asked in (("alone", alone[name]), ("one folder", one), ("shelf", opened)):
                    result = asked.ask(q["query"], [], 5)
                    declined[who].append((answerable, not result.answered))
    for how, ranks in rows.items():
        if not ranks:
            continue
        hit5 = sum(1 for r in ranks if r and r <= 5) / len(ranks)
        mrr = sum(1 / r for r in ranks if r) / len(ranks)
        print(f"{split or 'all'}\t{how}\thit@5 {hit5:.3f}\tMRR {mrr:.3f}\t({len(ranks)} questions)")
    for who, pairs in declined.items():
        if not pairs:
            continue
        yes = [d for a, d in pairs if a]
        no = [d for a, d in pairs if not a]
        print(
            f"{split or 'all'}\t{who}\tanswerable declined {sum(yes)}/{len(yes)}\t"
            f"unanswerable declined {sum(no)}/{len(no)}"
        )


def speed(opened: shelf.Shelf, one, rounds: int, heldout: Path = HELDOUT) -> None:
    questions = [
        json.loads(line)["query"]
        for name in sets(heldout)
        for line in (heldout / name / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    one.search(questions[0], 5)
    opened.search(questions[0], 5)
    times: dict[str, list[float]] = {"one folder": [], "three folders": []}
    for _ in range(rounds):
        for q in questions:
            for name, search in (("one folder", one.search), ("three folders", opened.search)):
                embedder.forget_questions()  # each search embeds its question, as a new one
                started = time.perf_counter()
                search(q, 5)
                times[name].append((time.perf_counter() - started) * 1000)
    base = statistics.median(times["one folder"])
    for name, values in times.items():
        p50 = statistics.median(values)
        print(
            f"{name}\tp50 {p50:.1f} ms\tp95 {percentile(values, 0.95):.1f} ms\t"
            f"ratio {p50 / base:.2f}\t({len(values)} searches)"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-root", type=Path, default=Path("/tmp/askmd-shelf"))
    parser.add_argument("--split", choices=("dev", "test"))
    parser.add_argument("--answers", action="store_true", help="the judgement too")
    parser.add_argument("--speed-only", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--heldout", type=Path, default=HELDOUT, help="folders of notes/ and queries.jsonl"
    )
    args = parser.parse_args(argv)
    opened = open_shelf(args.index_root, args.heldout)
    one = together(args.index_root, args.heldout)
    if not args.speed_only:
        for split in [args.split] if args.split else ["dev", "test"]:
            quality(opened, one, split, args.answers, args.heldout)
    speed(opened, one, args.rounds, args.heldout)


def smoke(tmp: Path) -> None:
    """Three folders of two notes and a question each, every measure, one round."""
    notes = {
        "a": (
            "The office opens at 08:30.",
            "Deploys run on Tuesdays.",
            "When does the office open?",
        ),
        "b": (
            "The boiler was serviced in May.",
            "Bins go out on Monday.",
            "When are bins collected?",
        ),
        "c": ("宽带账号是 0512-8888。", "妈妈的生日是八月十六。", "宽带账号是多少？"),
    }
    for name, (first, second, question) in notes.items():
        folder = tmp / "heldout" / name
        write = {"notes/one.md": f"# One\n\n{first}\n", "notes/two.md": f"# Two\n\n{second}\n"}
        for path, text in write.items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(text, encoding="utf-8")
        row = {"id": f"{name}-1", "query": question, "relevant": ["one.md"], "answerable": True}
        (folder / "queries.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n")
    main(["--index-root", str(tmp / "ix"), "--heldout", str(tmp / "heldout"), "--rounds", "1",
          "--answers"])  # fmt: skip


if __name__ == "__main__":
    main()
