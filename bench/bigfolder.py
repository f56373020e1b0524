"""Build a big Markdown folder from the shared data, for benchmarks at documentation-set size.

The real thing this stands in for (the AWS documentation in Markdown) is 26,600 files and
200 MB, about 220,000 chunks. The shared sets (SciFact abstracts, CMRC passages, tldr
pages: 14 MB) are replicated until the target size is reached: each copy has distinct
file names, its sections' titles carry the copy number and a few words per paragraph
are swapped or dropped, so copies are near duplicates, not identical texts (an index of
identical copies would have unrealistically flat term statistics). Documents are grouped
into files of about 7.5 KB, the real set's average, so the file count scales with the
size as it does there. Deterministic: the same --mb and --seed give the same bytes.

    python -m bench.bigfolder --mb 200 --out /tmp/askmd-big-200
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
import time
from pathlib import Path

from bench.common import DATA, tiny_data

SETS = (  # (name, corpus folder under the data folder)
    ("scifact", "scifact/corpus"),
    ("cmrc", "cmrc2018/corpus"),
    ("tldr", "tldr/pages"),
    ("tldr-zh", "tldr/pages.zh"),
)
# The documentation set averages 7.5 KB a file; the last document a file takes overshoots
# this by half a document on average.
FILE_BYTES = 6_900
PERTURB = 0.02  # share of words (characters in CJK text) swapped or dropped per copy
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def base_documents(data: Path) -> list[tuple[str, str, str]]:
    """(set, title, body) of every shared document, in a fixed order."""
    docs = []
    for name, folder in SETS:
        for path in sorted((data / folder).rglob("*.md")):
            text = path.read_text(encoding="utf-8")
            title, body = _split_title(text, path.stem)
            docs.append((name, title, body))
    return docs


def _split_title(text: str, fallback: str) -> tuple[str, str]:
    lines = text.strip("\n").split("\n")
    if lines and lines[0].startswith("# "):
        return lines[0][2:].strip(), "\n".join(lines[1:]).strip("\n")
    return fallback, text.strip("\n")


def perturb(text: str, rng: random.Random) -> str:
    """Swap or drop a few words (CJK: characters) per line; headings of the body demoted
    one level so they stay under the section title."""
    out = []
    for line in text.split("\n"):
        if line.startswith("#"):
            out.append("#" + line)
        elif _CJK.search(line):
            chars = list(line)
            for i in range(len(chars) - 1):
                if rng.random() < PERTURB / 2:
                    chars[i], chars[i + 1] = chars[i + 1], chars[i]
            out.append("".join(chars))
        elif line.startswith(("-", "`", ">", "|")) or not line.strip():
            out.append(line)  # code, lists, tables: kept so commands stay commands
        else:
            words = line.split(" ")
            kept = []
            for w in words:
                r = rng.random()
                if r < PERTURB / 2 and kept:
                    kept[-1], w = w, kept[-1]
                elif r < PERTURB * 2 / 3:
                    continue
                kept.append(w)
            out.append(" ".join(kept))
    return "\n".join(out)


def build(out: Path, mb: float, seed: int, data: Path = DATA) -> tuple[int, int]:
    """Write the folder; return (files, bytes)."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    docs = base_documents(data)
    target = int(mb * 1_000_000)
    written = files = 0
    copy = 0
    while written < target:
        rng = random.Random(f"{seed}:{copy}")
        order = list(range(len(docs)))
        rng.shuffle(order)  # each copy groups different documents into a file
        by_set: dict[str, list[int]] = {}
        for i in order:
            by_set.setdefault(docs[i][0], []).append(i)
        for name, indexes in by_set.items():
            folder = out / f"copy{copy:02d}" / name
            folder.mkdir(parents=True, exist_ok=True)
            parts: list[str] = []
            size = 0
            for i in indexes:
                _, title, body = docs[i]
                text = body if copy == 0 else perturb(body, rng)
                section = f"## {title} (copy {copy})\n\n{text}\n"
                parts.append(section)
                size += len(section.encode())
                if size >= FILE_BYTES or i == indexes[-1]:
                    first = parts[0].split("\n", 1)[0][3:]
                    data = f"# {first}\n\n" + "\n".join(parts)
                    (folder / f"{name}-{copy:02d}-{files:06d}.md").write_text(data, "utf-8")
                    written += len(data.encode())
                    files += 1
                    parts, size = [], 0
                    if written >= target:
                        return files, written
        copy += 1
    return files, written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=200.0, help="target size in MB")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--out", type=Path, default=None, help="default /tmp/askmd-big-<mb>")
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    args = parser.parse_args(argv)
    out = args.out or Path(f"/tmp/askmd-big-{args.mb:g}")
    if not str(out.resolve()).startswith("/tmp/"):
        print("the folder goes under /tmp, never in the repository", file=sys.stderr)
        return 2
    started = time.perf_counter()
    files, size = build(out, args.mb, args.seed, args.data)
    took = time.perf_counter() - started
    print(f"{out}: {files} files, {size / 1e6:.1f} MB in {took:.1f} s")
    return 0


def smoke(tmp: Path) -> None:
    """10 KB made from the tiny notes."""
    data = tiny_data(tmp / "data")
    assert main(["--mb", "0.01", "--out", str(tmp / "big"), "--data", str(data)]) == 0


if __name__ == "__main__":
    sys.exit(main())
