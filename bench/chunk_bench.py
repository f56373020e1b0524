"""Chunk every note under a folder (or one file), check the chunker's invariants on each,
and time the chunking alone (reading and checking excluded).

    python bench/chunk_bench.py ../shared/data/tldr
    python bench/chunk_bench.py --make-big /tmp/big.md knowledge   # a ~1 MB file from a folder
    python bench/chunk_bench.py /tmp/big.md --repeat 5
    python bench/chunk_bench.py ../shared/data/obsidian-dev-docs --read --repeat 15

`--read` times parsing each file's bytes too (front matter and note-app syntax, notes.parse)
and chunks with the searchable text (chunker.split_note), in CPU time: what an index pays
before embedding, measured so that other processes on the machine do not count.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path[:0] = [
    str(Path(__file__).resolve().parent.parent),
    str(Path(__file__).resolve().parent.parent / "tests"),
]

import chunker  # noqa: E402
from askmd.read import notes  # noqa: E402
from tests import invariants  # noqa: E402


def load(target: Path) -> list[notes.Note]:
    if target.is_file():
        return [notes.read(target.parent, target.name)]
    found, _ = notes.find(target, ("*.md", "*.markdown"))
    return [notes.read(target, s) for s in found]


def make_big(out: Path, folder: Path, size: int = 1_000_000) -> None:
    """Concatenate the notes of `folder` (front matter dropped) until `size` characters."""
    bodies = [n.text for n in load(folder)]
    parts, total = [], 0
    while total < size:
        for body in bodies:
            parts.append(body)
            total += len(body) + 2
            if total >= size:
                break
    out.write_text("\n\n".join(parts), encoding="utf-8")
    print(f"wrote {out}: {out.stat().st_size:,} bytes")


def time_reading(target: Path, size: int, overlap: int, repeat: int) -> None:
    """Parse (from bytes already read) and chunk every note, `repeat` times, in CPU time."""
    found = [target.name] if target.is_file() else notes.find(target, ("*.md", "*.markdown"))[0]
    root = target.parent if target.is_file() else target
    data = [(s, (root / s).read_bytes()) for s in found]
    times, count = [], 0
    for _ in range(repeat):
        start = time.process_time()
        count = sum(len(chunker.split_note(notes.parse(b, s), size, overlap)) for s, b in data)
        times.append(time.process_time() - start)
    median = statistics.median(times)
    print(
        f"{len(data)} files -> {count:,} chunks; reading and chunking CPU time: median "
        f"{median:.3f} s, min {min(times):.3f} s over {repeat} runs "
        f"({count / median:,.0f} chunks/s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("target", type=Path)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--overlap", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--make-big", type=Path, metavar="OUT")
    parser.add_argument("--read", action="store_true", help="time notes.parse too (CPU time)")
    args = parser.parse_args()
    if args.make_big:
        make_big(args.make_big, args.target)
        return
    if args.read:
        time_reading(args.target, args.size, args.overlap, args.repeat)
        return
    loaded = load(args.target)
    times, chunks = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        chunks = [
            chunker.split(
                n.text,
                source=n.source,
                title=n.title,
                first_line=n.first_line,
                size=args.size,
                overlap=args.overlap,
            )
            for n in loaded
        ]
        times.append(time.perf_counter() - start)
    for note, note_chunks in zip(loaded, chunks, strict=False):
        try:
            padded = "\n" * (note.first_line - 1) + note.text  # line numbers are the file's
            invariants.check(padded, note_chunks, args.size)
        except AssertionError as exc:
            sys.exit(f"{note.source}: {exc}")
    chars = sum(len(n.text) for n in loaded)
    count = sum(len(c) for c in chunks)
    modes = {m: sum(1 for c in chunks if c and c[0].mode == m) for m in ("heading", "separator")}
    print(
        f"{len(loaded)} files, {chars:,} characters -> {count:,} chunks "
        f"({modes['heading']} heading mode, {modes['separator']} separator mode); invariants hold\n"
        f"chunking time: median {statistics.median(times):.3f} s, min {min(times):.3f} s "
        f"over {args.repeat} runs ({chars / statistics.median(times) / 1e6:.1f} M chars/s)"
    )


if __name__ == "__main__":
    main()
