"""Keyword search latency at documentation-set size, by the document frequency of the terms.

Builds a keyword-only index of a folder (`rag.py index --keyword-only`: notes read,
chunked and recorded with their postings, nothing embedded: postings do not need
vectors), then times `Manifest.keyword` on queries of rare, mid-frequency and common
terms and on the real questions of SciFact and CMRC, with the retriever's candidate pool
(retriever.MIN_POOL). The index stays in --index-dir to be reused; `--no-change N` times
N no-change `index --keyword-only` runs. (The full-scan reference the packed scoring is
checked against is tests/keyword_reference.py.)

    python -m bench.bigfolder --mb 200
    nice -n 10 python -m bench.keyword_latency_bench --folder /tmp/askmd-big-200
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from askmd.index.manifest import MANIFEST, Manifest
from askmd.search.retriever import MIN_POOL, is_cjk_query
from askmd.terms import content_terms
from bench.common import DATA, RAG, keyword_index, tiny_folder

# Bands by the share of chunks holding a term: rare terms are in at most 0.05% of them
# (about 100 at 220k chunks), common ones in more than 2%.
RARE, COMMON = 0.0005, 0.02


def frequencies(manifest: Manifest, index_dir: Path) -> dict[str, int]:
    """Every term's document frequency (cached beside the manifest: a full scan)."""
    path = index_dir / "df.json"
    if path.exists() and path.stat().st_mtime >= (index_dir / MANIFEST).stat().st_mtime:
        return json.loads(path.read_text())
    df = dict(manifest.db.execute("SELECT term, COUNT(*) FROM postings GROUP BY term"))
    path.write_text(json.dumps(df))
    return df


def queries(
    df: dict[str, int], chunks: int, n: int, seed: int, data: Path = DATA
) -> dict[str, list[list[str]]]:
    """Search terms per band: three terms of that band, or those of the shared sets' real
    questions. Band terms are taken as indexed (already stemmed), not tokenised again."""
    rng = random.Random(seed)
    bands: dict[str, list[str]] = {"rare": [], "mid": [], "common": []}
    for term, count in df.items():
        share = count / chunks
        band = "rare" if share <= RARE else "common" if share > COMMON else "mid"
        if count > 1:  # a term of one chunk is a typo or a number, not a query
            bands[band].append(term)
    out: dict[str, list[list[str]]] = {}
    for band, words in bands.items():
        words.sort()
        out[band] = [rng.sample(words, 3) for _ in range(n)] if len(words) >= 3 else []
    out["rare+common"] = [
        [rng.choice(bands["rare"]), *rng.sample(bands["common"], 2), rng.choice(bands["mid"])]
        for _ in range(n)
        if bands["rare"] and len(bands["common"]) >= 2 and bands["mid"]
    ]
    for name, path in (("scifact", "scifact"), ("cmrc", "cmrc2018")):
        if not (data / path / "queries.jsonl").is_file():
            continue
        lines = (data / path / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        picked = rng.sample(lines, min(n, len(lines)))
        out[f"{name} questions"] = [content_terms(json.loads(line)["query"]) for line in picked]
    return out


def _cjk(terms: list[str]) -> bool:
    return is_cjk_query(" ".join(terms))


def time_queries(
    manifest: Manifest, texts: list[list[str]], limit: int
) -> tuple[float, float, float, float]:
    """p50, p95 and max wall ms of one query each (after a warm-up pass), and the p95 of
    the CPU ms this thread spent: on a shared machine the wall time mostly measures the
    other processes."""
    search = manifest.keyword
    for terms in texts[:3]:
        search(terms, limit, cjk=_cjk(terms))
    took, cpu = [], []
    for terms in texts:
        t, c = time.perf_counter(), time.thread_time()
        search(terms, limit, cjk=_cjk(terms))
        took.append((time.perf_counter() - t) * 1000)
        cpu.append((time.thread_time() - c) * 1000)
    return statistics.median(took), _p95(took), max(took), _p95(cpu)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def no_change(folder: Path, index_dir: Path, runs: int) -> list[float]:
    """Wall seconds of `rag.py index` with nothing changed, process start included."""
    took = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(
            [*RAG, "--knowledge", str(folder), "--index-dir", str(index_dir), "index",
             "--keyword-only"],
            check=True, capture_output=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )  # fmt: skip
        took.append(time.perf_counter() - t)
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--index-dir", type=Path, default=None)
    parser.add_argument("--rebuild", action="store_true", help="build the manifest again")
    parser.add_argument("--queries", type=int, default=60, help="queries per band")
    parser.add_argument("--limit", type=int, default=MIN_POOL)
    parser.add_argument("--no-change", type=int, default=0, help="runs of a no-change index")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--bands", default="", help="comma-separated bands to time (default all)")
    parser.add_argument("--data", type=Path, default=DATA, help="where the questions are")
    args = parser.parse_args(argv)
    index_dir = args.index_dir or Path(f"/tmp/askmd-kwbench-{args.folder.name}")
    if args.rebuild or not (index_dir / MANIFEST).exists():
        print(json.dumps({"build": keyword_index(args.folder, index_dir)}), flush=True)
    manifest = Manifest(index_dir / MANIFEST)
    chunks = manifest.db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
    df = frequencies(manifest, index_dir)
    sets = queries(df, chunks, args.queries, args.seed, args.data)
    print(f"chunks {chunks}, terms {len(df)}, limit {args.limit}")
    print(f"{'band':<18}{'max df':>8}  {'p50':>9}{'p95':>8}{'max':>8}{'cpu95':>7}")
    for band, texts in sets.items():
        if not texts:
            continue
        if args.bands and band not in args.bands.split(","):
            continue
        top = max(max((df.get(t, 0) for t in q), default=0) for q in texts)
        p50, p95, worst, cpu = time_queries(manifest, texts, args.limit)
        line = f"{band:<18}{top:>8}  {p50:>9.1f}{p95:>8.1f}{worst:>8.1f}{cpu:>7.1f}"
        print(line, flush=True)
    manifest.close()
    if args.no_change:
        took = no_change(args.folder, index_dir, args.no_change)
        print("no-change index (s):", " ".join(f"{t:.2f}" for t in took))
    return 0


def smoke(tmp: Path) -> None:
    """The tiny folder, three queries a band and one no-change run."""
    kb = tiny_folder(tmp / "kb")
    main(["--folder", str(kb), "--index-dir", str(tmp / "ix"), "--queries", "3",
          "--no-change", "1", "--data", str(tmp)])  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
