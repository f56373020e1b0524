"""Dense search depth (Chroma's HNSW `ef_search`): recall, run-to-run stability, latency.

Chroma searches its HNSW graph with `ef_search` candidates (default 100). The retriever
asks for a pool of 100 and min-max scales it, so the pool's last score moves every
blended score: when the approximate search returns a different tail in another process,
near-tie first places flip. For each ef_search setting, each run in a fresh process (a
collection loads its graph once per process), settings alternating:

- recall@100 against the exact top 100 (numpy over every vector),
- how many questions get the same top 100 in every one of `--runs` processes,
- query latency p50/p95 (ms) for a pool of 100.

`real`: an index's own collection (a copy of it is changed) and the paraphrase set's
questions embedded by its model (MiniLM for the main collection, USE for the side one).
`build` + `measure`: a collection of N vectors for latency at size (the index's vectors
repeated with Gaussian jitter until there are N). Its recall figures are not those of
text: near-identical copies make the top 100 a crowd of near ties.

    python bench/ef_search_bench.py real --from-index IX --collection askmd \
        --questions-file bench/paraphrase/obsidian-en.jsonl
    python bench/ef_search_bench.py --from-index IX --collection askmd --n 250000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

POOL = 100


def _client(path: Path):
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


def build(args) -> None:
    """The bench collection and its questions (vectors of the source collection's own
    chunks, jittered: a question lies near some chunks, not on one)."""
    source = _client(Path(args.from_index) / "chroma").get_collection(args.collection)
    got = source.get(include=["embeddings"])
    base = np.asarray(got["embeddings"], dtype=np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    rng = np.random.default_rng(7)
    copies = -(-args.n // len(base))
    vectors = np.concatenate(
        [base]
        + [
            base + rng.normal(0, args.jitter, base.shape).astype(np.float32)
            for _ in range(copies - 1)
        ]
    )[: args.n]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    picks = rng.choice(len(base), args.questions, replace=False)
    questions = base[picks] + rng.normal(0, 2 * args.jitter, (args.questions, base.shape[1]))
    questions = (questions / np.linalg.norm(questions, axis=1, keepdims=True)).astype(np.float32)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    np.save(work / "vectors.npy", vectors)
    np.save(work / "questions.npy", questions)
    client = _client(work / "chroma")
    coll = client.get_or_create_collection("bench", configuration={"hnsw": {"space": "cosine"}})
    started = time.perf_counter()
    step = 5000
    for start in range(0, len(vectors), step):
        end = min(start + step, len(vectors))
        coll.add(ids=[str(i) for i in range(start, end)], embeddings=vectors[start:end])
    print(f"built {len(vectors)} vectors in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def real(args) -> None:
    """The index's collection, copied into the work folder, and its questions' vectors."""
    import shutil

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from askmd.index.embedder import LocalEmbedder, MultilingualEmbedder

    work = Path(args.work)
    shutil.rmtree(work / "chroma", ignore_errors=True)
    shutil.copytree(Path(args.from_index) / "chroma", work / "chroma")
    model = LocalEmbedder() if args.collection == "askmd" else MultilingualEmbedder()
    lines = Path(args.questions_file).read_text(encoding="utf-8").splitlines()
    questions = model.embed_queries([json.loads(line)["query"] for line in lines if line.strip()])
    np.save(work / "questions.npy", np.asarray(questions, dtype=np.float32))
    got = _client(work / "chroma").get_collection(args.collection).get(include=["embeddings"])
    np.save(work / "vectors.npy", np.asarray(got["embeddings"], dtype=np.float32))
    (work / "ids.json").write_text(json.dumps(got["ids"]))
    (work / "name").write_text(args.collection)


def probe(args) -> None:
    """One process: set ef_search, load, answer every question; print the lists and times."""
    work = Path(args.work)
    name = (work / "name").read_text() if (work / "name").exists() else "bench"
    coll = _client(work / "chroma").get_collection(name)
    coll.modify(configuration={"hnsw": {"ef_search": args.ef}})
    coll = _client(work / "chroma").get_collection(name)
    questions = np.load(work / "questions.npy")
    coll.query(query_embeddings=[questions[0]], n_results=POOL, include=["distances"])  # load
    lists, times = [], []
    for q in questions:
        started = time.perf_counter()
        found = coll.query(query_embeddings=[q], n_results=POOL, include=["distances"])
        times.append((time.perf_counter() - started) * 1000)
        lists.append(found["ids"][0])
    print(json.dumps({"lists": lists, "ms": times}))


def _exact(work: Path) -> list[set[str]]:
    vectors = np.load(work / "vectors.npy")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    questions = np.load(work / "questions.npy")
    questions /= np.linalg.norm(questions, axis=1, keepdims=True)
    names = json.loads((work / "ids.json").read_text()) if (work / "ids.json").exists() else None
    tops = []
    for q in questions:
        top = np.argpartition(1 - vectors @ q, POOL)[:POOL]
        tops.append({names[i] if names else str(i) for i in top})
    return tops


def measure(args) -> None:
    work = Path(args.work)
    exact = _exact(work)
    results: dict[int, list[dict]] = {ef: [] for ef in args.ef}
    for _ in range(args.runs):  # settings alternate, so load drift hits each alike
        for ef in args.ef:
            out = subprocess.run(
                [sys.executable, __file__, "probe", "--work", str(work), "--ef", str(ef)],
                capture_output=True,
                text=True,
                check=True,
            )
            results[ef].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print("| ef_search | recall@100 | same top 100 in every run | p50 ms | p95 ms |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for ef, runs in results.items():
        recall = statistics.mean(
            len(set(found) & truth) / POOL
            for run in runs
            for found, truth in zip(run["lists"], exact, strict=True)
        )
        n = len(exact)
        stable = sum(
            len({hashlib.md5(",".join(run["lists"][i]).encode()).digest() for run in runs}) == 1
            for i in range(n)
        )
        times = sorted(t for run in runs for t in run["ms"])
        p95 = times[int(0.95 * (len(times) - 1))]
        print(
            f"| {ef} | {recall:.3f} | {stable}/{n} | {statistics.median(times):.1f} | {p95:.1f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "action", nargs="?", default="all", choices=["all", "build", "measure", "probe", "real"]
    )
    parser.add_argument("--from-index", help="an index folder whose collection gives the vectors")
    parser.add_argument("--collection", help="that collection's name")
    parser.add_argument("--n", type=int, default=250_000)
    parser.add_argument("--jitter", type=float, default=0.02)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--questions-file", help="for `real`: questions in `rag.py eval` format")
    parser.add_argument("--ef", type=int, nargs="+", default=[100, 200, 400])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", default="/tmp/efbench")
    args = parser.parse_args()
    if args.action == "probe":
        args.ef = args.ef[0]
        probe(args)
        return
    if args.action == "real":
        real(args)
    if args.action in ("all", "build"):
        build(args)
    if args.action in ("all", "measure", "real"):
        measure(args)


if __name__ == "__main__":
    main()
