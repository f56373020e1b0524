"""A big note saved into a watched folder: how long the notes saved after it wait, and Ctrl-C.

    python -m bench.big_note_bench [--checkout DIR] [--lines N] [--ctrl-c-after S]

Runs `rag.py watch --json` (from this checkout, or from DIR: another checkout, for the
code before a change) over a small folder indexed beforehand, then saves a note of N
distinct lines (default 16,000: about 1 MB, ~1,200 chunks), and one second later a small
note, while the watcher is at work on the big one. Prints one JSON object: seconds from
saving each note to the watcher's line for it (a small note's line comes once its vectors
are stored too), and from Ctrl-C to the watcher's exit, with its exit status
(`--ctrl-c-after S`: Ctrl-C S seconds after the small note's save, whatever was seen).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench.common import ROOT


def seen_at(stream, names: set[str], within: float) -> dict[str, float]:
    """When (time.monotonic()) the watcher's line naming each note among its added came."""
    seen: dict[str, float] = {}
    started = time.monotonic()
    while names - set(seen) and time.monotonic() - started < within:
        ready, _, _ = select.select([stream], [], [], 0.2)
        if ready:
            line = stream.readline()
            if not line:
                break
            for name in json.loads(line).get("added", []):
                seen.setdefault(name, time.monotonic())
    return seen


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT)
    parser.add_argument("--lines", type=int, default=16_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/askmd-big-note-bench"))
    parser.add_argument(
        "--ctrl-c-after", type=float, metavar="S", help="Ctrl-C S s after the small note's save"
    )
    args = parser.parse_args(argv)
    shutil.rmtree(args.work, ignore_errors=True)
    kb = args.work / "kb"
    kb.mkdir(parents=True)
    (kb / "a.md").write_text("# A\n\nThe courier depot opens at nine.\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASKMD_", "OPENAI_"))}
    rag = [sys.executable, str(args.checkout / "rag.py"), "--knowledge", str(kb)]
    rag += ["--index-dir", str(args.work / "ix")]
    subprocess.run([*rag, "index"], env=env, check=True, capture_output=True)
    watch = subprocess.Popen(
        [*rag, "watch", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    while "watching" not in (line := watch.stderr.readline()):
        if not line:
            raise SystemExit(f"the watcher stopped: exit status {watch.wait()}")
    big = "# Depot log\n\n" + "".join(
        f"Crate kx{i:06}q entered the depot at minute {i} of the day.\n\n"
        for i in range(args.lines)
    )
    big_saved = time.monotonic()
    (kb / "big.md").write_text(big, encoding="utf-8")
    time.sleep(1)  # the watcher is at work on it
    small_saved = time.monotonic()
    (kb / "small.md").write_text(
        "# Gate codes\n\nThe loading gate code is tulip-42.\n", encoding="utf-8"
    )
    if args.ctrl_c_after is None:
        seen = seen_at(watch.stdout, {"big.md", "small.md"}, 1800)
    else:  # while the big note is being embedded, whoever does it
        seen = seen_at(watch.stdout, {"big.md", "small.md"}, args.ctrl_c_after)
    interrupted = time.monotonic()
    watch.send_signal(signal.SIGINT)
    status = watch.wait(timeout=600)
    print(
        json.dumps(
            {
                "checkout": str(args.checkout),
                "big_note_lines": args.lines,
                "big_note_line_s": round(seen.get("big.md", float("nan")) - big_saved, 2),
                "small_note_line_s": round(seen.get("small.md", float("nan")) - small_saved, 2),
                "ctrl_c_exit_s": round(time.monotonic() - interrupted, 2),
                "exit_status": status,
                "stderr_tail": watch.stderr.read()[-200:],
            }
        )
    )


def smoke(tmp: Path) -> None:
    """A 50-line big note."""
    main(["--lines", "50", "--work", str(tmp / "work")])


if __name__ == "__main__":
    main()
