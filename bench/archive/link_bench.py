"""Link-aware ranking, scored offline on fixed candidates (as bench/gap_bench.py does).

    python bench/link_bench.py --index-root /tmp/askmd-links

For every English paraphrase question this takes the top 100 of each retriever once and
scores rules on the same candidates, files ranked as `rag.py eval` ranks them:
- today: the blend, ties to keyword evidence, files by their best chunk;
- boost: a file gains `beta` times the score of the best of the top `t` files it is linked
  with (`out`: linked from that file, `in`: linking to it, `both`);
- extra source: the best candidate file linked with the first file is moved up to rank 5
  (the answer's last source), unless it is in the top 4 already.
Two link graphs: the wikilinks the index stores (`links` table), and those plus the
Markdown links `[text](path)` to notes, read here from the files (the Obsidian docs link
mostly that way), to see whether recording those too would pay.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from gap_bench import files, fuse, metrics, open_built  # noqa: E402
from paraphrase_bench import DATA, OBSIDIAN, ROWS, SETS_DIR, load_set  # noqa: E402

from askmd.read import vault  # noqa: E402
from askmd.search import retriever  # noqa: E402

POOL = 100
MD_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def graphs(index, kb: Path) -> dict[str, dict[str, set[str]]]:
    """{graph name: {note: notes it links to}} for the stored wikilinks and with Markdown
    links added."""
    indexed = set(index.manifest.files())
    wiki: dict[str, set[str]] = {}
    for k in index.link_graph():
        if k.to in indexed and k.to != k.source:
            wiki.setdefault(k.source, set()).add(k.to)
    resolver = vault.Resolver(indexed)
    both = {s: set(t) for s, t in wiki.items()}
    for source in indexed:
        text = (kb / source).read_text(encoding="utf-8", errors="replace")
        for m in MD_LINK.finditer(text):
            target = unquote(m.group(1).split("#", 1)[0])
            if not target or "://" in target or target.startswith("mailto:"):
                continue
            to = resolver.resolve(target, source)
            if to in indexed and to != source:
                both.setdefault(source, set()).add(to)
    return {"wikilinks": wiki, "wikilinks+markdown": both}


def reverse(out: dict[str, set[str]]) -> dict[str, set[str]]:
    back: dict[str, set[str]] = {}
    for s, targets in out.items():
        for t in targets:
            back.setdefault(t, set()).add(s)
    return back


def collect(index, queries):
    data = []
    for q in queries:
        dense = [(h.chunk_id, h.score) for h in index.search(q.query, POOL, mode="dense")]
        keyword = [(h.chunk_id, h.score) for h in index.search(q.query, POOL, mode="keyword")]
        alpha = retriever.dense_share(q.query, index.embedder.id)
        data.append({"fused": fuse(dense, keyword, alpha), "relevant": set(q.relevant)})
    return data


def file_scores(fused: dict[str, float]) -> dict[str, float]:
    best: dict[str, float] = {}
    for c, v in fused.items():
        f = c.split("#", 1)[0]
        best[f] = max(best.get(f, 0.0), v)
    return best


def boosted(fused, neighbours, beta: float, top: int) -> list[str]:
    score = file_scores(fused)
    ranked = sorted(score, key=lambda f: -score[f])
    leaders = ranked[:top]
    total = dict(score)
    for f in score:
        linked = [score[t] for t in leaders if t != f and f in neighbours.get(t, ())]
        total[f] += beta * max(linked, default=0.0)
    return sorted(total, key=lambda f: -total[f])


def extra_source(fused, neighbours) -> list[str]:
    ranked = files(fused)
    if not ranked:
        return ranked
    score = file_scores(fused)
    linked = [f for f in ranked[4:] if f in neighbours.get(ranked[0], ())]
    if not linked:
        return ranked
    best = max(linked, key=lambda f: score[f])
    rest = [f for f in ranked if f != best]
    return rest[:4] + [best] + rest[4:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-root", type=Path, default=Path("/tmp/askmd-links"))
    args = parser.parse_args()
    kb = DATA / OBSIDIAN.path
    index = open_built(kb, args.index_root / OBSIDIAN.name)
    all_graphs = graphs(index, kb)
    for name, out in all_graphs.items():
        edges = sum(len(t) for t in out.values())
        print(f"# {name}: {edges} links between notes, from {len(out)} notes", file=sys.stderr)
    rows = [r for r in ROWS if r.folder == OBSIDIAN]
    sets = {r.label: collect(index, load_set(SETS_DIR / r.file, r.kinds)) for r in rows}
    print("| graph | rule | set | hit@1 | hit@5 | MRR@10 |")
    print("| --- | --- | --- | ---: | ---: | ---: |")

    def show(graph: str, rule: str, rank) -> None:
        for label, data in sets.items():
            m = metrics([(rank(q["fused"]), q["relevant"]) for q in data])
            print(f"| {graph} | {rule} | {label} | {m['hit@1']:.2f} | {m['hit@5']:.2f} | "
                  f"{m['mrr@10']:.3f} |", flush=True)  # fmt: skip

    show("-", "today", files)
    for graph, out in all_graphs.items():
        back = reverse(out)
        union = {f: out.get(f, set()) | back.get(f, set()) for f in {*out, *back}}
        for direction, nb in (("out", out), ("in", back), ("both", union)):
            for top in (1, 3):
                for beta in (0.05, 0.1, 0.2):
                    rule = f"boost {direction} top={top} beta={beta}"
                    show(graph, rule, lambda f, nb=nb, b=beta, t=top: boosted(f, nb, b, t))
        show(graph, "extra source (both)", lambda f, nb=union: extra_source(f, nb))


if __name__ == "__main__":
    main()
