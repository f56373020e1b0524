"""Retrieval on PDF and Word copies of Markdown pages against the Markdown originals.

Takes the pages a question set names as relevant plus random other pages of the same
folder (distractors), and writes three knowledge folders: the Markdown pages, a PDF of
each (one printed document by headless Chromium with a page break per source page, then
split at its outline into one PDF per page) and a DOCX of each (python-docx). Each folder
is indexed and scored on the same questions as `rag.py eval` scores them (paths renamed
to .pdf/.docx), in this process. For the PDF folder it also checks that every search
hit's page_start is a page whose text holds the start of the passage.

    python -m bench.readers_parity_bench ../shared/data/tldr/pages.zh \
        bench/paraphrase/tldr-zh.jsonl bench/paraphrase/tldr-cross.jsonl --distractors 250
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import tempfile
from pathlib import Path

from askmd import evaluate
from askmd.pipeline import Index
from bench.common import open_index, print_pdf, tiny_data, tiny_sets, to_docx, to_html


def load(sets: list[Path]) -> list[dict]:
    return [json.loads(line) for s in sets for line in s.read_text().splitlines() if line.strip()]


def split_pdf(printed: Path, names: list[str], out: Path) -> None:
    """One PDF per source page: the printed pages from its h1 bookmark to the next."""
    from pypdf import PdfReader, PdfWriter

    reader = PdfReader(printed)
    starts = [
        reader.get_destination_page_number(o) for o in reader.outline if not isinstance(o, list)
    ]
    if len(starts) != len(names):
        raise SystemExit(f"{len(starts)} bookmarks for {len(names)} pages")
    ends = [*starts[1:], len(reader.pages)]
    for name, first, end in zip(names, starts, ends, strict=True):
        writer = PdfWriter()
        for number in range(first, max(end, first + 1)):
            writer.add_page(reader.pages[number])
        target = out / Path(name).with_suffix(".pdf")
        target.parent.mkdir(parents=True, exist_ok=True)
        writer.write(target)


def page_check(folder: Path, index: Index, queries: list[dict]) -> tuple[int, int]:
    """(hits whose page_start holds the start of their text, hits looked at)."""
    from askmd.read.formats import pdf

    good = total = 0
    for q in queries:
        for hit in index.search(q["query"], 5):
            converted = pdf.read_pdf(folder / hit.source)
            lines = converted.text.split("\n")
            pages = [*converted.pages, len(lines) + 1]
            start = hit.page_start - 1
            page_text = "\n".join(lines[pages[start] - 1 : pages[start + 1] - 1])
            first = next((ln for ln in hit.text.split("\n") if ln.strip()), "")
            total += 1
            good += first.lstrip("#").strip() in page_text
    return good, total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("sets", type=Path, nargs="+")
    parser.add_argument("--distractors", type=int, default=250)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--keep", type=Path, help="build the folders here and keep them")
    args = parser.parse_args(argv)
    queries = load(args.sets)
    relevant = sorted({r for q in queries for r in q["relevant"]})
    others = sorted(
        p.relative_to(args.folder).as_posix()
        for p in args.folder.rglob("*.md")
        if p.relative_to(args.folder).as_posix() not in relevant
    )
    random.Random(args.seed).shuffle(others)
    names = sorted(relevant + others[: args.distractors])
    work = args.keep or Path(tempfile.mkdtemp(prefix="askmd-parity-"))
    docs = [(n, (args.folder / n).read_text(encoding="utf-8")) for n in names]
    for kind in ("md", "pdf", "docx"):
        (work / kind).mkdir(parents=True, exist_ok=True)
    for name, text in docs:
        (work / "md" / name).parent.mkdir(parents=True, exist_ok=True)
        (work / "md" / name).write_text(text, encoding="utf-8")
        target = (work / "docx" / name).with_suffix(".docx")
        target.parent.mkdir(parents=True, exist_ok=True)
        to_docx([(name, text)], target)
    (work / "print.html").write_text(to_html(docs, breaks=True), encoding="utf-8")
    print_pdf(work / "print.html", work / "printed.pdf")
    split_pdf(work / "printed.pdf", names, work / "pdf")
    print(f"{len(names)} pages ({len(relevant)} relevant), {len(queries)} questions")
    print("| copy | hit@1 | hit@5 | MRR@10 | chunks |")
    print("| --- | ---: | ---: | ---: | ---: |")
    indexes = {}
    for kind in ("md", "pdf", "docx"):
        renamed = work / f"queries-{kind}.jsonl"
        with renamed.open("w", encoding="utf-8") as out:
            for q in queries:
                moved = [re.sub(r"\.md$", f".{kind}", r) for r in q["relevant"]]
                out.write(json.dumps({**q, "relevant": moved}, ensure_ascii=False) + "\n")
        index = indexes[kind] = open_index(work / kind, work / f"ix-{kind}")
        asked = evaluate.read_queries(renamed)
        m = evaluate.evaluate(asked, lambda q, n, index=index: index.search(q, n)).to_json()
        print(
            f"| {kind} | {m['hit@1']:.3f} | {m['hit@5']:.3f} | {m['mrr@10']:.3f} | "
            f"{index.manifest.total_chunks()} |"
        )
    good, total = page_check(work / "pdf", indexes["pdf"], queries)
    print(f"PDF hits whose page_start holds the passage: {good} of {total}")
    for index in indexes.values():
        index.manifest.close()
    if not args.keep:
        shutil.rmtree(work)
    return 0


def smoke(tmp: Path) -> None:
    """The tiny Chinese notes and their two questions, no distractors."""
    data, sets = tiny_data(tmp / "data"), tiny_sets(tmp / "sets")
    folder = data / "tldr" / "pages.zh"
    args = [str(folder), str(sets / "tldr-zh.jsonl"), "--distractors", "0"]
    assert main([*args, "--keep", str(tmp / "work")]) == 0


if __name__ == "__main__":
    sys.exit(main())
