"""Throughput of the openai embedding backend against a server that is the limit.

The scripted server (tests/openai_server.py, in its own process) takes a fixed 50 ms per
request and serves at most N at once (429 beyond). For N in 1, 4 and 8 it compares, in
texts per second over the same texts, batch size and N requests in flight:

- raw: N plain threads calling the openai client, each taking the next batch;
- askmd: OpenAIEmbedder with ASKMD_EMBED_CONCURRENCY=N, called with `slice_size` texts
  at a time, as the indexer calls it (vectors parsed, checked, put in order, normalised);
- before: OpenAIEmbedder one batch at a time, as askmd embedded before it sent batches
  concurrently.

    python -m bench.embed_server_bench [--texts 4096] [--latency 0.05] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from askmd.index.embedder import OpenAIEmbedder
from bench.common import ROOT

BATCH = 64
DIMENSION = 64


def start_server(latency: float, limit: int) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, "-m", "tests.openai_server", "--dimension", str(DIMENSION)]
    command += ["--latency", str(latency), "--max-concurrent", str(limit)]
    server = subprocess.Popen(
        command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def stop_server(server: subprocess.Popen) -> str:
    _, err = server.communicate(timeout=10)  # closing stdin stops it; it says its peak
    return err.strip()


def raw(url: str, concurrency: int) -> Callable[[list[str]], int]:
    """N threads with the openai client, nothing else: the server's pace."""
    import openai

    client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0)

    def run(texts: list[str]) -> int:
        batches = iter([texts[i : i + BATCH] for i in range(0, len(texts), BATCH)])
        lock = threading.Lock()
        got: list[int] = []

        def work() -> None:
            while True:
                with lock:
                    batch = next(batches, None)
                if batch is None:
                    return
                reply = client.embeddings.create(model="m", input=batch, encoding_format="float")
                got.append(len(reply.data))

        threads = [threading.Thread(target=work) for _ in range(concurrency)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return sum(got)

    return run


def askmd(url: str, concurrency: int) -> Callable[[list[str]], int]:
    embedder = OpenAIEmbedder(url, None, "m", batch_size=BATCH, concurrency=concurrency)
    step = embedder.slice_size

    def run(texts: list[str]) -> int:
        return sum(len(embedder.embed(texts[i : i + step])) for i in range(0, len(texts), step))

    return run


def paired(
    first: Callable[[list[str]], int], second: Callable[[list[str]], int], texts, runs: int
) -> tuple[float, float, float]:
    """Texts/s of each (medians) and the median of second/first over runs taken in turns,
    so that a busy moment of a shared machine falls on both alike."""
    for run in (first, second):
        run(texts[:BATCH])  # connect, learn the dimension
    speeds: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        for run, kept in zip((first, second), speeds, strict=True):
            started = time.perf_counter()
            assert run(texts) == len(texts)
            kept.append(len(texts) / (time.perf_counter() - started))
    ratios = [b / a for a, b in zip(*speeds, strict=True)]
    return statistics.median(speeds[0]), statistics.median(speeds[1]), statistics.median(ratios)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=4096)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--limits", default="1,4,8", help="requests the server serves at once")
    args = parser.parse_args(argv)
    # ~200 characters each, distinct: well under the token cap, so every batch has BATCH.
    texts = [
        f"passage {i}: " + "the backup runs nightly and keeps copies " * 5
        for i in range(args.texts)
    ]
    print(f"{args.texts} texts, batch {BATCH}, {args.latency * 1000:g} ms a request, "
          f"median of {args.runs} runs taken in turns")  # fmt: skip
    print("| N in flight (server limit) | raw client texts/s | askmd texts/s | askmd / raw "
          "| before (1 in flight) texts/s | server peak, 429s |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- |")
    for limit in (int(n) for n in args.limits.split(",")):
        server, url = start_server(args.latency, limit)
        try:
            speed_raw, speed_askmd, ratio = paired(
                raw(url, limit), askmd(url, limit), texts, args.runs
            )
            _, speed_before, _ = paired(raw(url, 1), askmd(url, 1), texts[: BATCH * 8], 1)
        finally:
            said = stop_server(server)
        print(
            f"| {limit} | {speed_raw:,.0f} | {speed_askmd:,.0f} | {ratio:.2f} "
            f"| {speed_before:,.0f} | {said} |"
        )


def smoke(tmp: Path) -> None:
    """Two batches' worth of texts, one run, two requests at once, no server delay."""
    main(["--texts", str(BATCH * 2), "--runs", "1", "--latency", "0", "--limits", "2"])


if __name__ == "__main__":
    main()
