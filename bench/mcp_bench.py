"""The MCP server as a client sees it: start to first tool answer, and search round trips.

    python -m bench.mcp_bench knowledge
    python -m bench.mcp_bench ../shared/data/tldr --sample 1000

The folder (or a random sample of its notes, with --sample) is copied to WORK (default
/tmp/askmd-mcp-bench/<name>; the source is never written) and indexed once, untimed. Then,
`--starts` times, the SDK's stdio client starts `python rag.py mcp` on it (a no-change
start) and the time to the first `search_notes` answer is taken, handshake included. In the
last session `--calls` searches (a different query each: a line from a note) are timed one
after another: the round trip over stdio, p50 and p95.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

from bench.common import RAG, percentile, tiny_folder


def copy(source: Path, work: Path, sample: int | None) -> Path:
    kb = work / "kb"
    if kb.exists():
        return kb
    files = sorted(p for p in source.rglob("*.md") if p.is_file())
    if sample:
        files = sorted(random.Random(7).sample(files, min(sample, len(files))))
    for path in files:
        target = kb / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return kb


def queries(kb: Path, count: int) -> list[str]:
    """A line of prose from `count` random notes: what an assistant might search for."""
    lines = []
    for path in sorted(kb.rglob("*.md")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            words = line.strip("#>-*` ").split()
            if len(words) >= 4:
                lines.append(" ".join(words[:8]))
                break
    random.Random(11).shuffle(lines)
    return [lines[i % len(lines)] for i in range(count)]  # a small folder repeats its lines


async def session(params: StdioServerParameters, asked: list[str]) -> tuple[float, list[float]]:
    started = time.perf_counter()
    async with Client(params, read_timeout_seconds=300) as client:
        first = await client.call_tool("search_notes", {"query": asked[0], "k": 5})
        assert not first.is_error, first.content
        to_first = time.perf_counter() - started
        trips = []
        for query in asked[1:]:
            began = time.perf_counter()
            result = await client.call_tool("search_notes", {"query": query, "k": 5})
            trips.append((time.perf_counter() - began) * 1000)
            assert not result.is_error, result.content
    return to_first, trips


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("--sample", type=int, help="copy this many random notes only")
    parser.add_argument("--work", type=Path)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args(argv)
    work = args.work or Path("/tmp/askmd-mcp-bench") / (
        args.folder.resolve().name + (f"-{args.sample}" if args.sample else "")
    )
    kb = copy(args.folder.resolve(), work, args.sample)
    ix = work / "ix"
    where = ["--knowledge", str(kb), "--index-dir", str(ix)]
    subprocess.run([*RAG, *where, "index"], check=True)
    params = StdioServerParameters(command=RAG[0], args=[*RAG[1:], *where, "mcp"], cwd=str(work))
    asked = queries(kb, args.calls + 1)
    firsts, trips = [], []
    for _ in range(args.starts):
        to_first, trips = asyncio.run(session(params, asked))
        firsts.append(to_first)
    files = sum(1 for _ in kb.rglob("*.md"))
    print(
        f"{files} notes; start to first search_notes answer: "
        f"{', '.join(f'{s:.2f}' for s in firsts)} s (median {statistics.median(firsts):.2f} s)"
    )
    p50, p95 = statistics.median(trips), percentile(trips, 0.95)
    print(
        f"search_notes round trip over stdio, {len(trips)} calls: "
        f"p50 {p50:.1f} ms, p95 {p95:.1f} ms"
    )


def smoke(tmp: Path) -> None:
    """The tiny folder, one start, two searches after the first."""
    kb = tiny_folder(tmp / "notes", english_only=True)
    main([str(kb), "--work", str(tmp / "work"), "--starts", "1", "--calls", "2"])


if __name__ == "__main__":
    main()
