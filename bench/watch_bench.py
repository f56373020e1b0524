"""Watch mode on a large folder: save-to-searchable latency, a rename, a burst, idle cost.

    python -m bench.watch_bench ../shared/data/tldr            # copied to /tmp first
    python -m bench.watch_bench ../shared/data/tldr --saves 40 --idle 60

The folder is copied to WORK (default /tmp/askmd-watch-bench/kb; the source is never
written) and indexed once into WORK/../ix (reused by later runs). Then a watcher runs in
a child process, as `python rag.py watch --json` would, printing one JSON object per
applied change, and this process:

1. saves a random note with a new, unique word appended, `--saves` times, one at a time,
   and times save -> the child's line for that change (the change is committed, so it
   is searchable); after each one a search for the word must rank that note first;
2. renames a note and moves another across folders: chunks embedded must be 0;
3. rewrites 500 notes at once (a `git checkout`): how many changes, how long;
4. leaves the folder alone for `--idle` seconds and reads the child's CPU time
   (utime + stime from /proc/PID/stat) before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from askmd.pipeline import Index
from askmd.settings import Settings
from bench.common import ROOT, TINY_NOTES, percentile

CHILD = """
import json
from pathlib import Path
from askmd.pipeline import Index
from askmd.settings import Settings
from askmd.interfaces.watcher import Watcher
index = Index(Settings(knowledge_dir=Path({kb!r}), index_dir=Path({ix!r}), watch_poll={poll}))
def show(change):
    print(json.dumps(change.to_json()), flush=True)
def ready():  # once the notifications are on: a save before then would go unseen
    print(json.dumps({{"ready": True}}), flush=True)
def notice(line):
    print(json.dumps({{"notice": line}}), flush=True)
Watcher(index, show, notice, on_ready=ready).run()
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc (fields 14 and 15, in ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Child:
    """The watching process; its JSON lines arrive on a queue-like list with times."""

    def __init__(self, kb: Path, ix: Path, poll: float):
        code = CHILD.format(kb=str(kb), ix=str(ix), poll=poll)
        self.proc = subprocess.Popen(  # from the repository, where `askmd` is imported from
            [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, bufsize=1, cwd=ROOT
        )
        self.lines: list[tuple[float, dict]] = []
        self.arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            with self.arrived:
                self.lines.append((time.perf_counter(), json.loads(line)))
                self.arrived.notify_all()

    def wait_for(self, test, after: int, timeout: float = 120.0) -> tuple[float, dict]:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while True:
                for when, obj in self.lines[after:]:
                    if test(obj):
                        return when, obj
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no such line after {timeout} s: {self.lines[after:]}")
                self.arrived.wait(left)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def prepare(source: Path, work: Path) -> tuple[Path, Path]:
    kb, ix = work / "kb", work / "ix"
    if not kb.exists():
        shutil.copytree(source, kb)
    started = time.perf_counter()
    report = Index(Settings(knowledge_dir=kb, index_dir=ix)).sync()
    print(
        f"index: {report.files_scanned} files, {report.chunks_total} chunks "
        f"({report.chunks_embedded} embedded now, {time.perf_counter() - started:.1f} s)",
        flush=True,
    )
    return kb, ix


def saves(child: Child, kb: Path, index: Index, count: int, rng: random.Random) -> list[float]:
    notes = sorted(p for p in kb.rglob("*.md") if "/pages/" in p.as_posix())
    times = []
    for i in range(count):
        note = rng.choice(notes)
        source = note.relative_to(kb).as_posix()
        word = f"zqxwatch{i}marker{rng.randrange(10**6)}"
        mark = len(child.lines)
        started = time.perf_counter()
        with open(note, "a", encoding="utf-8") as f:
            f.write(f"\n{word}\n")
        when, _ = child.wait_for(lambda o, s=source: s in o.get("changed", []), mark)
        times.append(when - started)
        hits = index.search(word, 3, mode="keyword")
        assert hits and hits[0].source == source, (word, source, hits[:1])
        time.sleep(0.3)
    return times


def moves(child: Child, kb: Path) -> list[dict]:
    pages = kb / "pages"
    first = sorted((pages / "common").glob("*.md"))[0]
    other = sorted((pages / "linux").glob("*.md"))[0]
    out = []
    for src, dst in (
        (first, first.with_name("renamed-" + first.name)),
        (other, pages / "common" / ("moved-" + other.name)),
    ):
        mark = len(child.lines)
        started = time.perf_counter()
        os.rename(src, dst)
        when, obj = child.wait_for(lambda o: o.get("deleted"), mark)
        out.append({**obj, "wall": when - started})
    return out


def burst(child: Child, kb: Path, size: int) -> tuple[float, list[dict]]:
    notes = sorted((kb / "pages" / "linux").glob("*.md"))[:size]
    mark = len(child.lines)
    started = time.perf_counter()
    for note in notes:
        with open(note, "a", encoding="utf-8") as f:
            f.write("\nbranch switched\n")
    child.wait_for(lambda o: len(o.get("changed", [])) >= 1, mark, timeout=600)
    time.sleep(3.0)  # any later batch of the same burst would have arrived by now
    changes = [obj for _, obj in child.lines[mark:] if "changed" in obj]
    done = max(when for when, obj in child.lines[mark:] if "changed" in obj)
    return done - started, changes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--work", type=Path, default=Path("/tmp/askmd-watch-bench"))
    parser.add_argument("--saves", type=int, default=40)
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--burst", type=int, default=500)
    parser.add_argument("--poll", type=float, default=0.0, help="ASKMD_WATCH_POLL for the child")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    kb, ix = prepare(args.folder, args.work)
    files = sum(1 for _ in kb.rglob("*.md"))
    child = Child(kb, ix, args.poll)
    try:
        child.wait_for(lambda o: o.get("ready"), 0, timeout=600)
        notices = [o["notice"] for _, o in child.lines if "notice" in o]
        print(f"watching {files} notes{' (' + '; '.join(notices) + ')' if notices else ''}")
        index = Index(Settings(knowledge_dir=kb, index_dir=ix))
        times = saves(child, kb, index, args.saves, random.Random(args.seed))
        print(
            f"save -> searchable, {len(times)} saves: p50 {statistics.median(times):.3f} s, "
            f"p95 {percentile(times, 0.95):.3f} s, max {max(times):.3f} s"
        )
        for obj in moves(child, kb):
            print(
                f"move: added {obj['added']} deleted {obj['deleted']}: "
                f"{obj['chunks_embedded']} chunks embedded, {obj['wall']:.3f} s"
            )
        seconds, changes = burst(child, kb, args.burst)
        print(
            f"burst of {args.burst} rewritten notes: {len(changes)} change(s), "
            f"{sum(len(c['changed']) for c in changes)} notes changed, "
            f"{sum(c['chunks_embedded'] for c in changes)} chunks embedded, "
            f"{seconds:.2f} s to the last"
        )
        time.sleep(2.0)
        before = cpu_seconds(child.proc.pid)
        time.sleep(args.idle)
        used = cpu_seconds(child.proc.pid) - before
        print(f"idle {args.idle:.0f} s: {used:.3f} s CPU in the watching process")
    finally:
        child.stop()


def smoke(tmp: Path) -> None:
    """Two saves, the moves, a burst of two and half a second idle, on the tiny English
    notes laid out as the tldr pages are (pages/common, pages/linux)."""
    english = [text for name, text in TINY_NOTES.items() if name.startswith("en/")]
    for n, text in enumerate(english * 2):  # English only: the child never loads a second model
        note = tmp / "tldr" / "pages" / ("common", "linux")[n % 2] / f"note{n}.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(text, encoding="utf-8")
    main([str(tmp / "tldr"), "--work", str(tmp / "work"), "--saves", "2", "--burst", "2",
          "--idle", "0.5"])  # fmt: skip


if __name__ == "__main__":
    main()
