"""Warm search p50 of this code against another checkout of askmd, run in turn.

    python -m bench.search_bench knowledge --against ../askmd-before --rounds 8

Each run is a fresh process that imports askmd from one checkout, syncs the folder into
that checkout's own index folder, warms up, then times `Index.search` over the questions
(English and Chinese) for several rounds: its p50 and p95. The two checkouts run one
after the other, `--rounds` times, so a busy machine slows both alike. Reported: each
run's figures, the medians of the runs, and the ratio of medians (this code / the other)
with the pairs' range. `--profile` also counts the function calls of one run each under
cProfile, after each run's timing: work done, not time taken, so it is the same on a
quiet or a busy machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = [
    "How do I roll back a deployment?",
    "what does LUM-E014 mean",
    "数据库备份保留多久？",
    "who is on call this week",
    "how do I rotate the S3 keys",
    "what port does the API use",
    "upload size limit",
    "incident response steps",
    "新人第一周要读什么",
    "share link expiry",
]

# One run, in a process of its own: askmd imported from the checkout on its PYTHONPATH.
_RUN = """
import cProfile, json, pstats, statistics, sys, time
from pathlib import Path
folder, index_dir, rounds, profile = sys.argv[1:5]
questions = json.loads(sys.argv[5])
import askmd
from askmd.pipeline import Index
from askmd.settings import load_settings
overrides = {"knowledge_dir": Path(folder), "index_dir": Path(index_dir)}
index = Index(load_settings(environ={}, dotenv_path=None, overrides=overrides))
index.sync()
for q in questions:
    index.search(q, 5)
times = []
for _ in range(int(rounds)):
    for q in questions:
        started = time.perf_counter()
        index.search(q, 5)
        times.append((time.perf_counter() - started) * 1000)
times.sort()
p95 = times[int(0.95 * (len(times) - 1))]
found = {"p50": statistics.median(times), "p95": p95, "from": askmd.__file__}
if profile == "1":  # after the timing, which it would slow
    profiler = cProfile.Profile()
    profiler.enable()
    for q in questions:
        index.search(q, 5)
    profiler.disable()
    found["calls"] = pstats.Stats(profiler).total_calls
print(json.dumps(found))
"""


def run(tree: Path, folder: Path, work: Path, rounds: int, questions: list[str], profile: bool):
    # named after the checkout's path, the same in every run (hash() is not, per process)
    index_dir = work / f"ix-{hashlib.sha1(str(tree.resolve()).encode()).hexdigest()[:12]}"
    argv = [str(folder), str(index_dir), str(rounds), "1" if profile else "0"]
    done = subprocess.run(
        [sys.executable, "-c", _RUN, *argv, json.dumps(questions, ensure_ascii=False)],
        capture_output=True, text=True, check=True, cwd=work,
        env={**os.environ, "PYTHONPATH": str(tree)},
    )  # fmt: skip
    found = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(found["from"]).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"askmd came from {found['from']}, not from {tree}")
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the notes to search")
    parser.add_argument("--against", type=Path, required=True, help="the other checkout")
    parser.add_argument("--rounds", type=int, default=8, help="runs of each checkout")
    parser.add_argument("--searches", type=int, default=15, help="rounds of the questions")
    parser.add_argument("--work", type=Path, help="where the indexes go (default: a temp dir)")
    parser.add_argument("--questions", type=Path, help="a JSONL of {query} (default: built in)")
    parser.add_argument("--profile", action="store_true", help="also count function calls")
    args = parser.parse_args(argv)
    questions = QUESTIONS
    if args.questions:
        lines = args.questions.read_text(encoding="utf-8").splitlines()
        questions = [json.loads(line)["query"] for line in lines if line.strip()]
    work = args.work or Path(tempfile.mkdtemp(prefix="askmd-search-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    folder = args.folder.resolve()
    trees = {"this": ROOT, "other": args.against.resolve()}
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for i in range(args.rounds):
        for name, tree in trees.items():
            found = run(tree, folder, work, args.searches, questions, args.profile)
            runs[name].append(found)
            print(f"round {i + 1} {name}: p50 {found['p50']:.1f} ms, p95 {found['p95']:.1f} ms")
    medians = {n: statistics.median(r["p50"] for r in rs) for n, rs in runs.items()}
    p95s = {n: statistics.median(r["p95"] for r in rs) for n, rs in runs.items()}
    pairs = [a["p50"] / b["p50"] for a, b in zip(runs["this"], runs["other"], strict=True)]
    print(
        f"p50: this {medians['this']:.1f} ms, other {medians['other']:.1f} ms, "
        f"ratio {medians['this'] / medians['other']:.2f} "
        f"(pairs {min(pairs):.2f}–{max(pairs):.2f}); "
        f"p95: this {p95s['this']:.1f} ms, other {p95s['other']:.1f} ms"
    )
    if args.profile:
        calls = {n: statistics.median(r["calls"] for r in rs) for n, rs in runs.items()}
        print(
            f"function calls for {len(questions)} searches: this {calls['this']:,.0f}, "
            f"other {calls['other']:,.0f} (ratio {calls['this'] / calls['other']:.2f})"
        )


def smoke(tmp: Path) -> None:
    """The tiny folder, this code against itself: one round of each, one search round."""
    from bench.common import tiny_folder

    kb = tiny_folder(tmp / "notes", english_only=True)
    main([str(kb), "--against", str(ROOT), "--rounds", "1", "--searches", "1",
          "--work", str(tmp / "work"), "--profile"])  # fmt: skip


if __name__ == "__main__":
    main()
