"""Exact identifiers: is the one chunk holding a looked-up identifier ranked first?

    python -m bench.identifiers_bench            # made-up and real identifiers
    python -m bench.identifiers_bench --off      # the same with SearchTuning.exact_identifiers off

Two sets over a copy of ../shared/data/obsidian-dev-docs/en (the copy is made once under
--work and reused):
- made-up: `quokka{i}marmalade` appended, in one sentence, to each of the 30 longest
  notes, so 30 chunks hold look-alike sentences; the query is "quokka{i}marmalade rule".
- real: 30 identifier-shaped words of the vault (identifiers.py) that one to three chunks
  hold, chosen evenly through the sorted list; the query is the word as written plus
  "usage".
A lookup counts when the first hit holds the identifier (word for word, any case, in
its text, heading or title, as the keyword index reads it);
printed per set: first, in the top 3, and the misses.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from askmd.pipeline import Index
from askmd.search import identifiers
from askmd.search.tuning import SHIPPED
from bench.common import DATA, open_index, tiny_folder

VAULT = DATA / "obsidian-dev-docs" / "en"
MADE_UP = 30
REAL = 30


def prepare(work: Path, vault: Path, made_up: int) -> Path:
    folder = work / "vault"
    if folder.is_dir():
        return folder
    shutil.copytree(vault, folder)
    notes = sorted(folder.rglob("*.md"), key=lambda p: (-p.stat().st_size, str(p)))[:made_up]
    for i, note in enumerate(notes):
        with note.open("a", encoding="utf-8") as f:
            f.write(f"\n\nThe quokka{i}marmalade rule applies to everything in this note.\n")
    return folder


def real_identifiers(index: Index, wanted: int) -> list[tuple[str, str]]:
    """(word as written, its term) for identifier-shaped words one to three chunks hold."""
    seen: dict[str, str] = {}
    rows = index.manifest.db.execute("SELECT text FROM chunks").fetchall()
    for (text,) in rows:
        for match in re.finditer(r"[A-Za-z][\w.\-/]*[\w]", text):
            word = match.group()
            found = identifiers.identifiers(word)
            if len(found) == 1 and found[0] not in seen.values() and word.isascii():
                seen.setdefault(word, found[0])
    counts, _ = index.manifest.frequencies(list(seen.values()))
    rare = sorted((w, t) for w, t in seen.items() if 1 <= counts.get(t, 0) <= 3)
    step = max(1, len(rare) // wanted)
    return rare[::step][:wanted]


def score(index: Index, lookups: list[tuple[str, str]], label: str) -> None:
    first = top3 = 0
    misses = []
    for query, term in lookups:
        hits = index.search(query, 5)
        holders = {c for c, _ in index.manifest.keyword([term], 50)}  # text, heading, title
        held = [h.chunk_id in holders for h in hits]
        first += bool(held and held[0])
        top3 += any(held[:3])
        if not (held and held[0]):
            misses.append(f"{query!r} -> {hits[0].source if hits else 'nothing'}")
    n = max(1, len(lookups))
    print(f"| {label} | {n} | {first / n:.3f} | {top3 / n:.3f} |", flush=True)
    for miss in misses:
        print(f"  miss: {miss}", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/askmd-identifiers"))
    parser.add_argument("--off", action="store_true", help="without identifiers first")
    parser.add_argument("--vault", type=Path, default=VAULT, help="the folder to copy")
    parser.add_argument("--made-up", type=int, default=MADE_UP, help="notes given a made-up word")
    parser.add_argument("--real", type=int, default=REAL, help="real identifiers looked up")
    args = parser.parse_args(argv)
    folder = prepare(args.work, args.vault, args.made_up)
    index = open_index(folder, args.work / "index")
    index.tuning = replace(SHIPPED, exact_identifiers=not args.off)
    made_up = [(f"quokka{i}marmalade rule", f"quokka{i}marmalade") for i in range(args.made_up)]
    real = [(f"{word} usage", term) for word, term in real_identifiers(index, args.real)]
    print("| set | lookups | holding chunk first | in the top 3 |")
    print("| --- | ---: | ---: | ---: |")
    score(index, made_up, "made-up (quokka{i}marmalade)")
    score(index, real, "real (the vault's rare identifiers)")


def smoke(tmp: Path) -> None:
    """Two made-up words and two real identifiers in the tiny English notes."""
    vault = tiny_folder(tmp / "kb") / "en"
    main(["--work", str(tmp / "work"), "--vault", str(vault), "--made-up", "2", "--real", "2"])


if __name__ == "__main__":
    main()
