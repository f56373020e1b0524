"""Embeds (`![[Note]]`, `![[Note#Heading]]`) measured on a copy of the Obsidian docs.

    python bench/embed_bench.py                  # builds under /tmp/askmd-embed, then scores

The shared vault has almost no note embeds, so this makes some, the way Obsidian's note
composer does when a heading is extracted: for each English paraphrase question
(bench/paraphrase/obsidian-en.jsonl) its first relevant note A gives up the section that
holds its best chunk (the best hybrid hit of A in the unmodified index) to a new note N
named after the heading, and shows it again by an embed on the same spot. Alternately:
- whole-note embed: A keeps the heading, its body becomes `![[N]]`, N holds the body;
- section embed: heading and body become `![[N#Heading]]`, N holds both.
Each note gives up one section at most. Three ways of reading the result are scored:
- none: today's search over the vault with embeds, embeds ignored (`shown_in` dropped);
- expand (a): each embed's text expanded into the embedding note's searchable text, built
  as a vault: expanding every embed of the modified vault gives the unmodified A back, so
  (a) is the unmodified vault plus the new notes N;
- locate (b): the vault with embeds, hits listing the notes that show them (`shown_in`),
  which `rag.py eval` ranks right after the note the words are in.
Which note counts as the answer, three ways: `shown` (the note that shows the words: the
question's own labels), `written` (the note the words are in: N instead of A), `either`.
Rows: every question, and the moved ones (the questions whose section was moved).
The unmodified index (bench/paraphrase_bench.py builds it) seeds each new index's
embedding cache, so only the changed chunks are embedded; it is copied, never changed.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from paraphrase_bench import DATA, SETS_DIR, load_set  # noqa: E402

from askmd import evaluate  # noqa: E402
from askmd.pipeline import Index  # noqa: E402
from askmd.settings import load_settings  # noqa: E402

VAULT = DATA / "obsidian-dev-docs" / "en"
BASE = Path("/tmp/askmd-para-base/obsidian-en")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
UNSAFE = re.compile(r'[\[\]|#^\\/:*?"<>]')
K = 10


@dataclass(frozen=True)
class Move:
    query_id: str
    note: str  # A, relative path
    new: str  # N, relative path
    heading: str
    line: int  # 0-based line of the heading in A
    whole: bool  # whole-note embed (else section embed)


def open_index(vault: Path, index_dir: Path) -> Index:
    settings = load_settings(
        environ={}, dotenv_path=None, overrides={"knowledge_dir": vault, "index_dir": index_dir}
    )
    return Index(settings)


def seed(source: Path, target: Path) -> None:
    """A copy of an index to start from: its embedding cache and its unchanged notes."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    (target / "owner.json").unlink(missing_ok=True)


def sections(lines: list[str]) -> list[tuple[int, int, int, str]]:
    """(heading line, end line exclusive, level, text) of each heading of level 2 or more,
    fences skipped."""
    found, fence = [], False
    heads: list[tuple[int, int, str]] = []
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        m = None if fence else HEADING.match(line)
        if m:
            heads.append((i, len(m.group(1)), m.group(2).strip()))
    for n, (i, level, text) in enumerate(heads):
        end = next((j for j, lv, _ in heads[n + 1 :] if lv <= level), len(lines))
        if level >= 2:
            found.append((i, end, level, text))
    return found


def pick(index: Index, queries: list[evaluate.Query], vault: Path) -> list[Move]:
    """One section per question's first relevant note: the one its best chunk is in."""
    moves, taken, names = [], set(), {p.stem.lower() for p in vault.rglob("*.md")}
    for q in queries:
        note = q.relevant[0]
        if note in taken:
            continue
        hits = [h for h in index.search(q.query, 50, mode="hybrid") if h.source == note]
        lines = (vault / note).read_text(encoding="utf-8").split("\n")
        for h in hits[:1]:
            line = h.line_start - 1
            around = [s for s in sections(lines) if s[0] <= line < s[1]]
            if not around:
                continue
            start, end, _, text = around[-1]  # the innermost section holding the chunk
            body = "\n".join(lines[start + 1 : end]).strip()
            if UNSAFE.search(text) or not body or start == 0 and end == len(lines):
                continue
            name = text if text.lower() not in names else f"{text} ({Path(note).stem})"
            if name.lower() in names or UNSAFE.search(name):
                continue
            names.add(name.lower())
            taken.add(note)
            new = f"Extracted/{name}.md"
            moves.append(Move(q.id, note, new, text, start, len(moves) % 2 == 0))
    return moves


def make_vaults(moves: list[Move], work: Path) -> tuple[Path, Path]:
    """The vault with embeds, and the one with every embed expanded (see the docstring)."""
    embeds, expanded = work / "vault-embeds", work / "vault-expanded"
    for folder in (embeds, expanded):
        if folder.exists():
            shutil.rmtree(folder)
        shutil.copytree(VAULT, folder)
    for m in moves:
        lines = (VAULT / m.note).read_text(encoding="utf-8").split("\n")
        start, end, _, _ = next(s for s in sections(lines) if s[0] == m.line)
        body = lines[start + 1 : end]
        stem = Path(m.new).stem
        if m.whole:
            kept, moved = [lines[start], "", f"![[{stem}]]", ""], body
        else:
            kept, moved = [f"![[{stem}#{m.heading}]]", ""], lines[start:end]
        text = "\n".join(lines[:start] + kept + lines[end:])
        (embeds / m.note).write_text(text, encoding="utf-8")
        for folder in (embeds, expanded):
            (folder / m.new).parent.mkdir(parents=True, exist_ok=True)
            (folder / m.new).write_text("\n".join(moved).strip() + "\n", encoding="utf-8")
    return embeds, expanded


def labelled(queries: list[evaluate.Query], moves: list[Move], who: str) -> list[evaluate.Query]:
    """The questions with the answer note counted as `who` says (shown, written, either)."""
    new = {m.query_id: (m.note, m.new) for m in moves}
    out = []
    for q in queries:
        if q.id not in new or who == "shown":
            out.append(q)
            continue
        note, moved = new[q.id]
        if who == "written":
            relevant = tuple(moved if r == note else r for r in q.relevant)
        else:
            relevant = (*q.relevant, moved)
        out.append(replace(q, relevant=relevant))
    return out


def searcher(index: Index, mode: str, locate: bool, memo: dict):
    def search(text: str, n: int):
        key = (id(index), mode, locate, text, n)
        if key not in memo:
            hits = index.search(text, n, mode=mode)
            memo[key] = hits if locate else [replace(h, shown_in=()) for h in hits]
        return memo[key]

    return search


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/askmd-embed"))
    parser.add_argument("--base", type=Path, default=BASE, help="index of the unmodified vault")
    args = parser.parse_args()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    queries = load_set(SETS_DIR / "obsidian-en.jsonl", ("plain", "hard"))
    if not (work / "ix-pick").exists():  # kept between runs: it is the unmodified vault's
        seed(args.base, work / "ix-pick")
    base = open_index(VAULT, work / "ix-pick")
    # An index from older code is recorded again here (its vectors from the cache).
    print(f"# unmodified: {base.sync().to_json()}", file=sys.stderr)
    moves = pick(base, queries, VAULT)
    whole = sum(m.whole for m in moves)
    print(f"# {len(moves)} sections moved ({whole} whole-note embeds, {len(moves) - whole} "
          "section embeds)", file=sys.stderr)  # fmt: skip
    embeds_vault, expanded_vault = make_vaults(moves, work)
    started = time.time()
    seed(work / "ix-pick", work / "ix-embeds")
    with_embeds = open_index(embeds_vault, work / "ix-embeds")
    print(f"# with embeds: {with_embeds.sync().to_json()}", file=sys.stderr)
    seed(work / "ix-embeds", work / "ix-expanded")
    expanded = open_index(expanded_vault, work / "ix-expanded")
    print(f"# expanded: {expanded.sync().to_json()}", file=sys.stderr)
    print(f"# built in {time.time() - started:.0f} s", file=sys.stderr)
    variants = {
        "none": (with_embeds, False),
        "expand (a)": (expanded, False),
        "locate (b)": (with_embeds, True),
    }
    moved_ids = {m.query_id for m in moves}
    memo: dict = {}
    print("| questions | answer note | retriever | reading | hit@1 | hit@5 | MRR@10 |")
    print("| --- | --- | --- | --- | ---: | ---: | ---: |")
    for subset in ("moved", "all"):
        chosen = [q for q in queries if subset == "all" or q.id in moved_ids]
        for who in ("shown", "written", "either"):
            qs = labelled(chosen, moves, who)
            for mode in ("keyword", "dense", "hybrid"):
                for name, (index, locate) in variants.items():
                    r = evaluate.evaluate(qs, searcher(index, mode, locate, memo), k=K)
                    h = r.hit_at
                    print(
                        f"| {subset} ({len(qs)}) | {who} | {mode} | {name} | {h[1]:.2f} | "
                        f"{h[5]:.2f} | {r.mrr_at_10:.3f} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
