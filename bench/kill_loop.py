"""Kill `rag.py index` at random moments and check that the next run repairs the index.

    python -m bench.kill_loop [--runs 50] [--copies 19] [--cold] [--seed N] [--source DIR]

The folder is knowledge/ (or `--source`) copied `--copies` times (19 copies: ~3,100
chunks). A clean index of it gives the expected chunk count and, with its files
forgotten, an embedding cache that every trial starts from (a folder holding only the
cache, as after a rebuild); `--cold` starts from nothing instead. Each trial runs `index`
on a fresh index folder, SIGKILLs it at a uniformly random moment within the clean run's
duration, runs `index` again and checks: exit 0, `stats --json` counts the clean index's
chunks, and `search` answers. Prints one line per trial and `recovered N/M` at the end
(exit 1 if any failed).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from askmd.index.manifest import Manifest
from bench.common import RAG, ROOT, tiny_folder

QUERY = "what is the maximum upload size?"


def rag(kb: Path, ix: Path, *args: str) -> list[str]:
    return [*RAG, "--knowledge", str(kb), "--index-dir", str(ix), *args]


def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ASKMD_", "OPENAI_"))}
    return {**clean, "TERM": "dumb"}


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env(), capture_output=True, text=True, timeout=1800)


def make_folder(work: Path, copies: int, source: Path) -> Path:
    kb = work / "kb"
    for n in range(copies):
        shutil.copytree(source, kb / f"copy{n:02d}")
    return kb


def trial(kb: Path, work: Path, seed_index: Path | None, kill_at: float, expected: int) -> dict:
    ix = work / "ix"
    shutil.rmtree(ix, ignore_errors=True)
    if seed_index is not None:
        ix.mkdir()
        shutil.copy(seed_index / "manifest.sqlite3", ix / "manifest.sqlite3")
    victim = subprocess.Popen(
        rag(kb, ix, "index"), cwd=work, env=env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    time.sleep(kill_at)
    finished_first = victim.poll() is not None
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    again = run(rag(kb, ix, "index", "--json"), work)
    result = {"kill_at": round(kill_at, 2), "finished_before_kill": finished_first,
              "index_exit": again.returncode, "warnings": [], "chunks": None,
              "search_ok": False}  # fmt: skip
    if again.returncode == 0:
        result["warnings"] = json.loads(again.stdout)["warnings"]
    else:
        result["error"] = again.stderr.strip().splitlines()[-1:] or [""]
    stats = run(rag(kb, ix, "stats", "--json"), work)
    if stats.returncode == 0:
        result["chunks"] = json.loads(stats.stdout)["chunks"]
    found = run(rag(kb, ix, "search", QUERY, "--json"), work)
    result["search_ok"] = found.returncode == 0 and bool(json.loads(found.stdout)["results"])
    result["ok"] = again.returncode == 0 and result["chunks"] == expected and result["search_ok"]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--copies", type=int, default=19)
    parser.add_argument("--cold", action="store_true", help="start each trial with no cache")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: tmp)")
    parser.add_argument("--source", type=Path, default=ROOT / "knowledge", help="folder to copy")
    args = parser.parse_args(argv)
    random.seed(args.seed)
    work = args.work or Path(tempfile.mkdtemp(prefix="askmd-kill-"))
    work.mkdir(parents=True, exist_ok=True)
    kb = make_folder(work, args.copies, args.source)

    clean = work / "clean"
    started = time.perf_counter()
    first = run(rag(kb, clean, "index", "--json"), work)
    cold_seconds = time.perf_counter() - started
    if first.returncode != 0:
        print(first.stderr, file=sys.stderr)
        return 1
    expected = json.loads(first.stdout)["chunks_total"]
    seed_index = None
    duration = cold_seconds
    if not args.cold:
        seed_index = work / "cache-only"
        seed_index.mkdir()
        shutil.copy(clean / "manifest.sqlite3", seed_index / "manifest.sqlite3")
        manifest = Manifest(seed_index / "manifest.sqlite3")
        manifest.forget_all()  # the files go, the embedding cache stays
        manifest.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        manifest.close()
        probe = work / "probe"
        shutil.copytree(seed_index, probe)
        started = time.perf_counter()
        run(rag(kb, probe, "index"), work)
        duration = time.perf_counter() - started
        shutil.rmtree(probe)
    mode = "cold" if args.cold else "embedding cache pre-filled"
    print(f"{expected} chunks; clean run {duration:.1f} s ({mode}); cold {cold_seconds:.1f} s",
          flush=True)  # fmt: skip

    recovered = damaged = 0
    for n in range(1, args.runs + 1):
        result = trial(kb, work, seed_index, random.uniform(0.2, duration), expected)
        recovered += result["ok"]
        damaged += any("vector index could not be read" in w for w in result["warnings"])
        print(f"{n:3d} {'ok  ' if result['ok'] else 'FAIL'} {json.dumps(result)}", flush=True)
    print(f"recovered {recovered}/{args.runs} (Chroma folder rebuilt after damage: {damaged})")
    return 0 if recovered == args.runs else 1


def smoke(tmp: Path) -> None:
    """One cold trial on one copy of the tiny folder."""
    source = tiny_folder(tmp / "notes", english_only=True)
    args = ["--runs", "1", "--copies", "1", "--cold", "--source", str(source)]
    assert main([*args, "--work", str(tmp / "work")]) == 0


if __name__ == "__main__":
    sys.exit(main())
