"""The HTTP API under load: concurrent searches on a 10,000-chunk index, and streamed asks.

    python -m bench.api_bench                      # 30 s, 4 clients, index in /tmp/askmd-api-bench
    python -m bench.api_bench --seconds 30 --clients 8 --workdir DIR

The knowledge folder is made of links to the shared data: SciFact and CMRC 2018 (9,221
chunks) plus the smaller tldr page folders (~800), so the index holds about 10,000 chunks
of English and Chinese. The first run indexes it (about 10 minutes here: the model embeds
~18 chunks/s); later runs reuse the index. Then `rag.py serve` runs as a real process and:

1. `--clients` threads POST /api/v1/search (top_k 5) for `--seconds`, with the shared
   sets' own queries (English and Chinese, shuffled): requests/s, latency p50/p95/p99,
   errors. One client alone first, for the ratio concurrency buys on this machine.
2. Streamed asks, no LLM (extractive): time to the `retrieved` event, to the first
   `token` and to `done`.
3. Streamed asks with an OpenAI-compatible server on 127.0.0.1 that streams a canned
   20-piece reply at once: everything but the model, up to the first token and to `done`.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import subprocess
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

import httpx

from bench.common import DATA, RAG, ROOT, InstantLLM, percentile, tiny_folder

TLDR = ("osx", "windows", "android", "dos", "cisco-ios", "freebsd", "sunos", "openbsd", "netbsd")
URL = re.compile(r"http://127\.0\.0\.1:\d+")


def knowledge_folder(workdir: Path) -> Path:
    kb = workdir / "kb"
    kb.mkdir(parents=True, exist_ok=True)
    links = {"scifact": DATA / "scifact/corpus", "cmrc": DATA / "cmrc2018/corpus"}
    links.update({f"tldr-{name}": DATA / "tldr/pages" / name for name in TLDR})
    for name, target in links.items():
        if not (kb / name).exists():
            (kb / name).symlink_to(target.resolve(), target_is_directory=True)
    return kb


def queries(files: list[Path]) -> list[str]:
    found = []
    for path in files:
        with open(path, encoding="utf-8") as lines:
            found += [json.loads(line)["query"] for line in lines if line.strip()]
    found = [q for q in found if q and q.strip()]
    random.Random(7).shuffle(found)
    return found


class Server:
    def __init__(self, kb: Path, ix: Path, **env: str):
        self.command = [*RAG, "--knowledge", str(kb), "--index-dir", str(ix), "serve",
                        "--port", "0"]  # fmt: skip
        self.env = {**{k: v for k, v in __import__("os").environ.items()}, **env}

    def __enter__(self) -> str:
        self.process = subprocess.Popen(
            self.command, env=self.env, stdout=subprocess.PIPE, text=True, cwd=ROOT.parent
        )
        for line in self.process.stdout:
            if found := URL.search(line):
                return found.group(0)
        raise SystemExit("the server did not start")

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def load(url: str, texts: list[str], clients: int, seconds: float) -> dict:
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.perf_counter() + seconds

    def client(offset: int) -> None:
        with httpx.Client(base_url=url, timeout=60) as http:
            i = offset
            while time.perf_counter() < stop_at:
                query = texts[i % len(texts)]
                i += clients
                started = time.perf_counter()
                reply = http.post("/api/v1/search", json={"query": query, "top_k": 5})
                took = (time.perf_counter() - started) * 1000
                with lock:
                    latencies.append(took)
                    if reply.status_code != 200:
                        errors.append(f"{reply.status_code} {reply.text[:100]}")

    began = time.perf_counter()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    row = {
        "measure": f"search, {clients} client{'s' if clients > 1 else ''}",
        "requests": len(latencies),
        "req_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(statistics.median(latencies), 1),
        "p95_ms": round(percentile(latencies, 0.95), 1),
        "p99_ms": round(percentile(latencies, 0.99), 1),
        "errors": len(errors),
    }
    print(json.dumps(row), flush=True)
    if errors:
        print("  first error:", errors[0], flush=True)
    return row


def streamed_asks(url: str, texts: list[str], label: str, n: int) -> dict:
    marks: dict[str, list[float]] = {"retrieved": [], "first token": [], "done": []}
    with httpx.Client(base_url=url, timeout=120) as http:
        for question in texts[:n]:
            started = time.perf_counter()
            seen: set[str] = set()
            body = {"question": question, "stream": True}
            with http.stream("POST", "/api/v1/ask", json=body) as reply:
                for line in reply.iter_lines():
                    if not line.startswith("event: "):
                        continue
                    event = line[7:]
                    name = "first token" if event == "token" else event
                    if name in marks and name not in seen:
                        seen.add(name)
                        marks[name].append((time.perf_counter() - started) * 1000)
                    if event == "error":
                        raise SystemExit(f"ask failed: {reply.read()}")
    row = {"measure": f"streamed ask, {label}", "n": n}
    for name, values in marks.items():
        row[f"{name} p50_ms"] = round(statistics.median(values), 1)
        row[f"{name} p95_ms"] = round(percentile(values, 0.95), 1)
    print(json.dumps(row, ensure_ascii=False), flush=True)
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/askmd-api-bench"))
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--asks", type=int, default=30)
    parser.add_argument("--warm-up", type=float, default=5, help="seconds, not reported")
    parser.add_argument("--knowledge", type=Path, help="this folder instead of the shared data")
    parser.add_argument("--queries", type=Path, action="append", help="JSON lines with a query")
    args = parser.parse_args(argv)
    kb, ix = args.knowledge or knowledge_folder(args.workdir), args.workdir / "ix"
    subprocess.run([*RAG, "--knowledge", str(kb), "--index-dir", str(ix), "index"], check=True)
    sets = args.queries or [DATA / name / "queries.jsonl" for name in ("scifact", "cmrc2018")]
    texts = queries(sets)
    with Server(kb, ix) as url:
        stats = httpx.get(url + "/api/v1/stats").json()
        print(json.dumps({"files": stats["files"], "chunks": stats["chunks"]}), flush=True)
        if args.warm_up:
            load(url, texts[:200], 1, args.warm_up)
        load(url, texts, 1, args.seconds)
        load(url, texts, args.clients, args.seconds)
        streamed_asks(url, texts, "extractive (no LLM)", args.asks)
    llm = ThreadingHTTPServer(("127.0.0.1", 0), InstantLLM)
    threading.Thread(target=llm.serve_forever, daemon=True).start()
    llm_url = f"http://127.0.0.1:{llm.server_address[1]}/v1"
    with Server(kb, ix, OPENAI_BASE_URL=llm_url, OPENAI_API_KEY="x", ASKMD_LLM_MODEL="m") as url:
        streamed_asks(url, texts, "instant LLM over HTTP", args.asks)
    llm.shutdown()


def smoke(tmp: Path) -> None:
    """The tiny folder, two queries, a fraction of a second of load, one ask of each kind."""
    lines = ['{"query": "how long are backups kept"}', '{"query": "API 监听哪个端口"}']
    (tmp / "queries.jsonl").write_text("\n".join(lines), encoding="utf-8")
    main(["--workdir", str(tmp), "--knowledge", str(tiny_folder(tmp / "kb", english_only=True)),
          "--queries", str(tmp / "queries.jsonl"), "--seconds", "0.3", "--clients", "2",
          "--asks", "1", "--warm-up", "0"])  # fmt: skip


if __name__ == "__main__":
    main()
