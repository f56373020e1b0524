"""Chunk every note under a folder (or one file) and time the chunking alone (reading
excluded). The chunker's invariants are checked by its tests (tests/invariants.py).

    python -m bench.chunk_bench ../shared/data/tldr
    python -m bench.chunk_bench --make-big /tmp/big.md knowledge   # a ~1 MB file from a folder
    python -m bench.chunk_bench /tmp/big.md --repeat 5
    python -m bench.chunk_bench ../shared/data/obsidian-dev-docs --read --repeat 15

`--read` times parsing each file's bytes too (front matter and note-app syntax, notes.parse)
and chunks with the searchable text (chunker.split_note), in CPU time: what an index pays
before embedding, measured so that other processes on the machine do not count.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from askmd.read import chunker, notes
from bench.common import tiny_folder


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("target", type=Path)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--overlap", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--make-big", type=Path, metavar="OUT")
    parser.add_argument("--read", action="store_true", help="time notes.parse too (CPU time)")
    args = parser.parse_args(argv)
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
    chars = sum(len(n.text) for n in loaded)
    count = sum(len(c) for c in chunks)
    modes = {m: sum(1 for c in chunks if c and c[0].mode == m) for m in ("heading", "separator")}
    print(
        f"{len(loaded)} files, {chars:,} characters -> {count:,} chunks "
        f"({modes['heading']} heading mode, {modes['separator']} separator mode)\n"
        f"chunking time: median {statistics.median(times):.3f} s, min {min(times):.3f} s "
        f"over {args.repeat} runs ({chars / statistics.median(times) / 1e6:.1f} M chars/s)"
    )


def smoke(tmp: Path) -> None:
    """The tiny folder, a 20,000-character file made of it, and the reading timer."""
    kb = tiny_folder(tmp / "kb")
    main(["--make-big", str(tmp / "big.md"), str(kb)])
    (tmp / "big.md").write_text((tmp / "big.md").read_text()[:20_000], encoding="utf-8")
    main([str(tmp / "big.md"), "--repeat", "1"])
    main([str(kb), "--read", "--repeat", "1"])


if __name__ == "__main__":
    main()
