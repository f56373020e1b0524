"""`related NOTE` measured on a real Obsidian vault (the Obsidian developer docs).

    python -m bench.related_bench                    # ../shared/data/obsidian-dev-docs/en
    python -m bench.related_bench --smoke            # a tiny folder it writes itself

The vault is copied into --work (and indexed there; a second run reuses that index).
(a) linked in top 5: of the notes with a link or a backlink to another note, the share
    whose top 5 related notes hold one of them.
(b) link prediction: from each of --notes notes one link is deleted (every occurrence of
    the link to that target in that note, its text too), the copy is synced, and the
    bench counts how often the removed target comes back among the note's first 5
    *unlinked* suggestions.
Each ranking is scored on the same evidence: pure vectors (meaning alone), and the fusion
(related.rank) with the default weights and variants, by two meaning methods (maxsim:
each chunk's nearest chunks; centroid: the note's mean vector).
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from askmd.pipeline import Index
from askmd.read import vault
from askmd.search import related
from askmd.settings import load_settings

VAULT = Path(__file__).resolve().parent.parent.parent / "shared/data/obsidian-dev-docs/en"
TOP = 5
DEPTH = 60  # ranked this deep, so 5 unlinked remain after the linked ones
METHODS = ("maxsim", "centroid")
VARIANTS = {  # name: weights of related.rank's lists
    "vectors only": {"similar": 1.0, "linked": 0.0, "shared": 0.0, "tags": 0.0},
    "fused (default)": dict(related.WEIGHTS),
    "fused, no shared links": {**related.WEIGHTS, "shared": 0.0},
    "fused, no tags": {**related.WEIGHTS, "tags": 0.0},
    "fused, shared 1.0": {**related.WEIGHTS, "shared": 1.0},
    "fused, similar 2.0": {**related.WEIGHTS, "similar": 2.0},
}
WIKILINK = re.compile(r"!?\[\[([^\[\]\n]+?)\]\]")
MDLINK = re.compile(r"!?\[[^\[\]\n]*\]\(\s*<?([^()<>\s]+)>?(?:\s+\"[^\"\n]*\")?\s*\)")

SMOKE = {
    "Garden/Tomatoes.md": "# Tomatoes\n\n#garden Grow tomatoes in sun; water as [[Watering]] "
    "says and feed with [[Compost]].\n",
    "Garden/Watering.md": "# Watering\n\nWater the beds deeply at the roots. See [[Peppers]].\n",
    "Garden/Peppers.md": "# Peppers\n\n#garden Grow peppers in sun like tomatoes; water as "
    "[[Watering]] says and stake them.\n",
    "Compost.md": "# Compost\n\nCompost feeds the vegetable beds: [[Tomatoes]], [[Peppers]].\n",
    "Taxes.md": "# Taxes\n\nFile the VAT return quarterly and keep receipts. [[Receipts]]\n",
    "Receipts.md": "# Receipts\n\nScan receipts for the tax return. #admin\n",
}


def open_index(kb: Path, ix: Path) -> Index:
    settings = load_settings({}, None, {"knowledge_dir": kb, "index_dir": ix, "watch": False})
    index = Index(settings)
    index.sync()
    return index


class Evidence:
    """Everything related.rank reads, gathered once per state of the folder."""

    def __init__(self, index: Index) -> None:
        self.notes = set(index.manifest.files())
        self.edges = [(k.source, k.to) for k in index.graph.link_graph() if k.to is not None]
        self.tags = index.manifest.tags_by_source()
        self.linked: dict[str, set[str]] = {}
        for a, b in self.edges:
            if a != b and a in self.notes and b in self.notes:
                self.linked.setdefault(a, set()).add(b)
                self.linked.setdefault(b, set()).add(a)
        self.index = index
        self.similar: dict[tuple[str, str], list[tuple[str, float]]] = {}
        self.seconds: list[float] = []

    def similar_to(self, note: str, method: str) -> list[tuple[str, float]]:
        if (note, method) not in self.similar:
            start = time.perf_counter()
            found, why = self.index.graph.similar_notes(note, method)
            self.seconds.append(time.perf_counter() - start)
            assert why == related.SIMILAR, f"{note}: its vectors are not stored"
            self.similar[note, method] = found
        return self.similar[note, method]

    def ranked(self, note: str, method: str, weights: dict) -> list[related.Related]:
        similar = self.similar_to(note, method)
        return related.rank(
            note, DEPTH, self.notes, self.edges, self.tags, similar, weights=weights
        )


def linked_in_top(evidence: Evidence, method: str, weights: dict) -> tuple[int, int]:
    """(a): notes with a linked note among their first TOP, of the notes with links."""
    having = sorted(n for n in evidence.notes if evidence.linked.get(n))
    hits = sum(any(r.linked for r in evidence.ranked(n, method, weights)[:TOP]) for n in having)
    return hits, len(having)


def pick_links(evidence: Evidence, count: int, seed: int) -> list[tuple[str, str]]:
    """(note, target) pairs to delete: a note linking to another note that does not link
    back (or the pair would stay linked), one pair per note, the note keeping another link."""
    out: dict[str, set[str]] = {}
    for a, b in evidence.edges:
        if a != b and a in evidence.notes and b in evidence.notes:
            out.setdefault(a, set()).add(b)
    pairs = []
    for note in sorted(out):
        targets = sorted(t for t in out[note] if note not in out.get(t, set()))
        if targets and len(evidence.linked[note]) >= 2:
            pairs.append((note, targets))
    rng = random.Random(seed)
    rng.shuffle(pairs)
    return [(note, rng.choice(targets)) for note, targets in pairs[: count * 2]]


def delete_link(kb: Path, notes: set[str], note: str, target: str) -> bool:
    """Delete every link to `target` written in `note` (its text too); False if none."""
    resolver = vault.Resolver(notes)
    path = kb / note
    text = path.read_text(encoding="utf-8")

    def gone(m: re.Match) -> str:
        written = m.group(1).split("|", 1)[0].split("#", 1)[0].strip()
        if m.re is MDLINK:
            from urllib.parse import unquote

            written = unquote(written)
        return "" if written and resolver.resolve(written, note) == target else m.group(0)

    edited = MDLINK.sub(gone, WIKILINK.sub(gone, text))
    path.write_text(edited, encoding="utf-8")
    return edited != text


def predict(evidence: Evidence, pairs, method: str, weights: dict) -> int:
    """(b): removed targets back among the first TOP unlinked suggestions."""
    found = 0
    for note, target in pairs:
        unlinked = [r.source for r in evidence.ranked(note, method, weights) if not r.linked]
        found += target in unlinked[:TOP]
    return found


def run(source: Path, work: Path, count: int, seed: int) -> None:
    kb, ix = work / "vault", work / "ix"
    if kb.exists():
        shutil.rmtree(kb)
    shutil.copytree(source, kb)
    start = time.perf_counter()
    index = open_index(kb, ix)
    files = len(index.manifest.files())
    print(f"{files} notes indexed in {time.perf_counter() - start:.0f} s ({work})")

    before = Evidence(index)
    print(f"\n(a) a linked note in the top {TOP} (notes with links)")
    for method in METHODS:
        for name, weights in VARIANTS.items():
            hits, total = linked_in_top(before, method, weights)
            print(f"  {method:8} {name:24} {hits}/{total} = {hits / max(total, 1):.1%}")
    took = sorted(before.seconds)
    print(f"  meaning per note: median {1000 * statistics.median(took):.0f} ms, "
          f"p95 {1000 * took[int(0.95 * (len(took) - 1))]:.0f} ms")  # fmt: skip

    candidates = pick_links(before, count, seed)
    deleted = [(n, t) for n, t in candidates if delete_link(kb, before.notes, n, t)]
    index.sync()
    after = Evidence(index)
    pairs = [(n, t) for n, t in deleted if t not in after.linked.get(n, set())][:count]
    print(f"\n(b) {len(pairs)} links deleted: the target in the top {TOP} unlinked suggestions")
    for method in METHODS:
        for name, weights in VARIANTS.items():
            found = predict(after, pairs, method, weights)
            print(f"  {method:8} {name:24} {found}/{len(pairs)} = {found / max(len(pairs), 1):.1%}")
    one = index.graph.related(pairs[0][0], 5) if pairs else None
    if one:
        print(f"\nexample, {one['note']} without its link to {pairs[0][1]}:")
        for r in one["related"]:
            print(f"  {r['score']:.4f} {r['source']} linked={r['linked']} {r['why']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "related-bench")
    parser.add_argument("--notes", type=int, default=50, help="links deleted for (b)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--smoke", action="store_true", help="a tiny folder, written here")
    args = parser.parse_args(argv)
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "notes"
            for name, text in SMOKE.items():
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                (folder / name).write_text(text, encoding="utf-8")
            run(folder, Path(tmp) / "work", 2, args.seed)
        return
    run(VAULT, args.work, args.notes, args.seed)


def smoke(tmp: Path) -> None:
    """The smallest case: a tiny folder of linked notes, written here."""
    main(["--smoke", "--work", str(tmp / "work")])


if __name__ == "__main__":
    main()
