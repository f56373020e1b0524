"""How fast PDF, Word, HTML and text files are converted, next to the time to embed them.

Takes N Markdown pages of a folder (tldr by default), renders them as one document per
format (PDF printed by headless Chromium, one page per source page and an outline; DOCX
by python-docx; HTML; TXT), then times readers.convert on each (best of R) and chunks the
result. The share of conversion in a cold index is estimated against an embedding speed
(chunks/s) measured elsewhere (BENCHMARKS.md: 18.5 chunks/s, local MiniLM, this machine).

    python -m bench.readers_bench ../shared/data/tldr/pages --pages 300
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from askmd.read import chunker, notes, readers
from bench.common import print_pdf, tiny_folder, to_docx, to_html


def pick(folder: Path, n: int, seed: int) -> list[tuple[str, str]]:
    files = sorted(folder.rglob("*.md"))
    random.Random(seed).shuffle(files)
    return [(f.stem, f.read_text(encoding="utf-8")) for f in files[:n]]


def measure(path: Path, repeats: int) -> tuple[float, notes.Note]:
    best, note = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        note = notes.read(path.parent, path.name, None)
        best = min(best, time.perf_counter() - start)
    return best, note


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--embed-rate", type=float, default=18.5, help="chunks/s of embedding")
    args = parser.parse_args(argv)
    docs = pick(args.folder, args.pages, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        (out / "all.html").write_text(to_html(docs, breaks=False), encoding="utf-8")
        (out / "print.html").write_text(to_html(docs, breaks=True), encoding="utf-8")
        print_pdf(out / "print.html", out / "all.pdf")
        to_docx(docs, out / "all.docx")
        (out / "all.txt").write_text("\n\n".join(t for _, t in docs), encoding="utf-8")
        (out / "print.html").unlink()
        print(f"{len(docs)} source pages from {args.folder}")
        print("| format | file MB | pages | text chars | best s | MB/s | pages/s | chunks "
              "| embed s (est.) | conversion share |")  # fmt: skip
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name in ("all.pdf", "all.docx", "all.html", "all.txt"):
            path = out / name
            seconds, note = measure(path, args.repeats)
            chunks = chunker.split_note(note)
            embed = len(chunks) / args.embed_rate
            mb = path.stat().st_size / 1048576
            pages = len(note.pages) or len(docs)
            print(
                f"| {readers.kind(name)} | {mb:.2f} | {pages} | {len(note.text):,} | "
                f"{seconds:.3f} | {mb / seconds:.1f} | {pages / seconds:,.0f} | {len(chunks)} | "
                f"{embed:.0f} | {seconds / (seconds + embed):.2%} |"
            )
    return 0


def smoke(tmp: Path) -> None:
    """The five tiny notes, each format read once."""
    assert main([str(tiny_folder(tmp / "kb")), "--pages", "5", "--repeats", "1"]) == 0


if __name__ == "__main__":
    sys.exit(main())
