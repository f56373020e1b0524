"""How fast PDF, Word, HTML and text files are converted, next to the time to embed them.

Takes N Markdown pages of a folder (tldr by default), renders them as one document per
format (PDF printed by headless Chromium, one page per source page and an outline; DOCX
by python-docx; HTML; TXT), then times readers.convert on each (best of R) and chunks the
result. The share of conversion in a cold index is estimated against an embedding speed
(chunks/s) measured elsewhere (BENCHMARKS.md: 18.5 chunks/s, local MiniLM, this machine).

    python bench/readers_bench.py ../shared/data/tldr/pages --pages 300
"""

from __future__ import annotations

import argparse
import html
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import chunker  # noqa: E402
from askmd.read import notes, readers  # noqa: E402


def pick(folder: Path, n: int, seed: int) -> list[tuple[str, str]]:
    files = sorted(folder.rglob("*.md"))
    random.Random(seed).shuffle(files)
    return [(f.stem, f.read_text(encoding="utf-8")) for f in files[:n]]


def to_html(docs: list[tuple[str, str]], breaks: bool) -> str:
    """Headings, paragraphs and code lines of each Markdown page; one printed page each."""
    style = "<style>h1{break-before:page} h1:first-of-type{break-before:auto}</style>"
    parts = [f'<html><head><meta charset="utf-8"><title>pages</title>{style if breaks else ""}']
    parts.append("</head><body>")
    for _, text in docs:
        for line in text.splitlines():
            heading = re.match(r"^(#{1,4}) (.*)", line)
            if heading:
                level = len(heading.group(1))
                parts.append(f"<h{level}>{html.escape(heading.group(2))}</h{level}>")
            elif line.startswith("`") and line.endswith("`"):
                parts.append(f"<pre>{html.escape(line.strip('`'))}</pre>")
            elif line.strip():
                parts.append(f"<p>{html.escape(line.lstrip('>- ').strip())}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def to_docx(docs: list[tuple[str, str]], target: Path) -> None:
    import docx

    document = docx.Document()
    for _, text in docs:
        for line in text.splitlines():
            heading = re.match(r"^(#{1,4}) (.*)", line)
            if heading:
                document.add_heading(heading.group(2), level=len(heading.group(1)))
            elif line.startswith("- "):
                document.add_paragraph(line[2:], style="List Bullet")
            elif line.strip():
                document.add_paragraph(line.lstrip("> ").strip("`"))
    document.save(str(target))


def print_pdf(page: Path, target: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
         "--generate-pdf-document-outline", f"--print-to-pdf={target}", page.as_uri()],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip


def measure(path: Path, repeats: int) -> tuple[float, notes.Note]:
    best, note = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        note = notes.read(path.parent, path.name, None)
        best = min(best, time.perf_counter() - start)
    return best, note


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--embed-rate", type=float, default=18.5, help="chunks/s of embedding")
    args = parser.parse_args()
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


if __name__ == "__main__":
    sys.exit(main())
