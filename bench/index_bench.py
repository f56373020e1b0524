"""Index benchmark on a copy of a notes folder: cold index vs raw embedding speed,
no-change sync, one file changed, warm search latency and peak memory.

    python -m bench.index_bench ../shared/data/tldr
    python -m bench.index_bench ../shared/data/scifact/corpus --sample 300

Every index run is a real `python rag.py index --json` process; search latency is
measured in-process after one warm-up query (process start excluded).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from askmd.index.embedder import LocalEmbedder
from askmd.pipeline import Index
from askmd.read import chunker, notes
from askmd.settings import Settings
from bench.common import RAG, tiny_folder


def run_index(kb: Path, ix: Path) -> tuple[dict, float, int]:
    """(report, wall seconds, peak RSS in MB of this child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run(
        [*RAG, "--knowledge", str(kb), "--index-dir", str(ix), "index", "--json"],
        capture_output=True, text=True, cwd=kb.parent, check=True,
    )  # fmt: skip
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return json.loads(done.stdout), wall, max(peak, before) // 1024


def embedding_texts(kb: Path) -> list[str]:
    found, _ = notes.find(kb, ("*.md", "*.markdown"))
    texts = []
    for source in found:
        try:
            note = notes.read(kb, source)
        except notes.Unreadable:
            continue
        for c in chunker.split(note.text, source=source, title=note.title):
            texts.append(c.embedding_text)
    return texts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("--sample", type=int, default=500, help="chunks for raw embedding speed")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument(
        "--work", type=Path, help="keep the copy and its index here (default: a temp folder)"
    )
    parser.add_argument("--runs", type=int, default=5, help="no-change syncs timed")
    args = parser.parse_args(argv)

    work = args.work or Path(tempfile.mkdtemp(prefix="askmd-bench-"))
    kb, ix = work / "kb", work / "ix"
    if kb.exists():
        shutil.rmtree(kb)
    shutil.copytree(args.folder, kb)
    shutil.rmtree(ix, ignore_errors=True)
    try:
        texts = embedding_texts(kb)
        sample = random.Random(0).sample(texts, min(args.sample, len(texts)))
        model = LocalEmbedder()
        model.embed(sample[:16])  # warm-up
        start = time.perf_counter()
        model.embed(sample)
        raw = len(sample) / (time.perf_counter() - start)
        del model
        print(f"raw embedding: {raw:.1f} chunks/s on {len(sample)} sampled chunks", flush=True)

        report, wall, peak = run_index(kb, ix)
        cold_rate = report["chunks_total"] / report["seconds"]
        print(
            f"cold index: {report['files_added']} files, {report['chunks_total']} chunks in "
            f"{report['seconds']:.1f} s (process {wall:.1f} s) = {cold_rate:.1f} chunks/s; "
            f"overhead vs raw embedding {raw / cold_rate - 1:+.1%}; peak RSS {peak} MB",
            flush=True,
        )

        walls = []
        for _ in range(args.runs):
            again, wall, _ = run_index(kb, ix)
            assert again["chunks_embedded"] == 0, again
            walls.append(wall)
        print(f"no-change sync, whole process: median {statistics.median(walls):.2f} s, "
              f"min {min(walls):.2f}, max {max(walls):.2f} ({args.runs} runs)")  # fmt: skip

        found, _ = notes.find(kb, ("*.md",))
        target = kb / found[len(found) // 2]
        with target.open("a", encoding="utf-8") as handle:
            handle.write("\nOne more line added for the benchmark.\n")
        changed, wall, _ = run_index(kb, ix)
        print(
            f"one file changed: {wall:.2f} s whole process ({changed['chunks_embedded']} chunks "
            f"embedded) = {wall / report['seconds']:.2%} of the cold index"
        )

        index = Index(Settings(knowledge_dir=kb, index_dir=ix))
        picked = random.Random(1).sample(found, min(args.queries, len(found)))
        queries = [Path(s).stem.replace("-", " ") for s in picked]
        index.search(queries[0], 5)
        times = []
        for q in queries:
            start = time.perf_counter()
            index.search(q, 5)
            times.append((time.perf_counter() - start) * 1000)
        times.sort()
        p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
        print(f"search, warm, k=5: p50 {statistics.median(times):.1f} ms, p95 {p95:.1f} ms "
              f"({len(times)} queries)")  # fmt: skip
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


def smoke(tmp: Path) -> None:
    """The tiny folder: a few sampled chunks, one no-change run, two queries."""
    kb = tiny_folder(tmp / "notes", english_only=True)
    main([str(kb), "--work", str(tmp / "work"), "--sample", "4", "--queries", "2", "--runs", "1"])


if __name__ == "__main__":
    main()
