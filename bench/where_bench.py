"""What `--where` adds to a search, on a folder of many notes with front matter.

    python -m bench.where_bench /tmp/where-bench --notes 26000

Writes NOTES short notes (type, project, status, rating, date and attendees in their
front matter; a few sentences of common words), builds their keyword-only index once,
then times the same keyword searches without a filter and with each kind of condition
(`=`, `>=` on a number, `<=` on a day, `~`, `!=`, two together), in one run, interleaved.
Prints the first search with each condition (which reads its notes' set), then p50 and
p95 of the searches after it, and what each adds over no filter.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from askmd import pipeline
from bench.common import open_index

TYPES = ("meeting", "idea", "journal", "reference", "task")
WORDS = (
    "backup server deploy budget garden travel invoice release review plan recipe "
    "doctor school car insurance router printer migration launch dinner"
).split()
VARIANTS = {
    "none": (),
    "type=meeting": ("type=meeting",),
    "rating>=4": ("rating>=4",),
    "date<=2025-06-30": ("date<=2025-06-30",),
    "attendees~ann": ("attendees~ann",),
    "status!=done": ("status!=done",),
    "type=meeting project=p7": ("type=meeting", "project=p7"),
}


def write_notes(folder: Path, count: int, seed: int = 7) -> Path:
    if (folder / "count").is_file() and (folder / "count").read_text() == str(count):
        return folder
    rng = random.Random(seed)
    for n in range(count):
        day = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        people = ", ".join(rng.sample(["Anna", "Ben", "Chen", "Dana", "Eli"], 2))
        body = " ".join(rng.choice(WORDS) for _ in range(40))
        note = (
            f"---\ntype: {rng.choice(TYPES)}\nproject: p{rng.randint(0, 49)}\n"
            f"status: {rng.choice(['done', 'open'])}\nrating: {rng.randint(1, 5)}\n"
            f"date: {day}\nattendees: [{people}]\n---\n# Note {n}\n\n{body}.\n"
        )
        path = folder / f"d{n // 1000:02d}" / f"note-{n:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note, encoding="utf-8")
    (folder / "count").write_text(str(count))
    return folder


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--notes", type=int, default=26000)
    parser.add_argument("--rounds", type=int, default=20, help="searches per query and variant")
    args = parser.parse_args(argv)
    kb = write_notes(args.work / "notes", args.notes)
    index = open_index(kb, args.work / "ix", vectors=False)
    queries = ["backup server", "garden dinner", "release review plan", "router printer"]
    took: dict[str, list[float]] = {name: [] for name in VARIANTS}
    found: dict[str, int] = {}
    filters = {name: pipeline.filters(None, None, where=w) for name, w in VARIANTS.items()}
    first: dict[str, float] = {}
    for name in VARIANTS:  # the first search of each condition reads its notes' set
        started = time.perf_counter()
        index.search(queries[0], 10, mode="keyword", filters=filters[name])
        first[name] = round(1000 * (time.perf_counter() - started), 2)
    for _ in range(args.rounds):
        for query in queries:
            for name in VARIANTS:
                started = time.perf_counter()
                hits = index.search(query, 10, mode="keyword", filters=filters[name])
                took[name].append(1000 * (time.perf_counter() - started))
                found[name] = len(hits)
    base = took["none"]
    for name, ms in took.items():
        p50, p95 = statistics.median(ms), statistics.quantiles(ms, n=20)[-1]
        row = {
            "variant": name,
            "notes": args.notes,
            "searches": len(ms),
            "first_ms": first[name],
            "results": found[name],
            "p50_ms": round(p50, 2),
            "p95_ms": round(p95, 2),
            "added_p50_ms": round(p50 - statistics.median(base), 2),
            "added_p95_ms": round(p95 - statistics.quantiles(base, n=20)[-1], 2),
        }
        print(json.dumps(row))


def smoke(tmp: Path) -> None:
    """Sixty notes, two rounds."""
    main([str(tmp), "--notes", "60", "--rounds", "2"])


if __name__ == "__main__":
    main()
