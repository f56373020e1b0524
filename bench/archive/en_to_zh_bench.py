"""English questions about Chinese pages: the question's words looked up in CC-CEDICT
backwards (tried and dropped).

The mirror of query_translation: each English content term of the question is looked up
among the glosses (a headword of 2-4 characters whose first or second gloss is that one
word, "to " stripped), the `limit` first such headwords give CJK terms, BM25 searches
them with the CJK chunks' statistics, and the list joins the question's keyword list at
`w` times the share of CJK chunks among its dense top 10. Scored offline on the mixed
folder (see zh_to_en_bench.py) for the cross set and, as a guard, the English sets:

    python bench/en_to_zh_bench.py KB IX
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from multilingual_bench import POOL, files, load, open_mixed, print_table, scaled  # noqa: E402

from askmd.search import query_translation as qt  # noqa: E402
from askmd.terms import content_terms, terms  # noqa: E402

SETS = (
    ("cross", "tldr-cross.jsonl", ("cross",), "zh/"),
    ("EN all", "obsidian-en.jsonl", ("plain", "hard"), "en/"),
    ("EN hard", "obsidian-en.jsonl", ("hard",), "en/"),
)


def reverse() -> dict[str, list[tuple[int, str]]]:
    """English term -> (gloss rank, headword) of the headwords it is the whole gloss of."""
    words = qt._dictionary()
    rev = {}
    for head, glosses in words.items():
        if len(head) < 2 or len(head) > 4:
            continue
        for rank, g in enumerate(glosses[:2]):
            g = qt._NOT_MEANING.sub(" ", g).strip().lower()
            if g.startswith("to "):
                g = g[3:]
            t = content_terms(g)
            if len(t) == 1:
                rev.setdefault(t[0], []).append((rank, head))
    return rev


def zh_terms(query: str, limit: int, rev: dict) -> list[str]:
    out = []
    for t in content_terms(query):
        heads = sorted(rev.get(t, []))[:limit]
        for _, h in heads:
            out.extend(terms(h))
    return out


def main() -> None:
    rev = reverse()
    index, side, comp = open_mixed(Path(sys.argv[1]), Path(sys.argv[2]))
    cjk_of = dict(index.manifest.db.execute("SELECT chunk, cjk FROM documents"))
    rows = {}
    for label, name, kinds, prefix in SETS:
        for n, q in enumerate(load(name, kinds)):
            text, rel = q["query"], {prefix + r for r in q["relevant"]}
            shipped = [h.source for h in index.search(text, 10)]
            rows.setdefault((label, "shipped"), []).append((files(shipped), rel))
            hits = index.search(text, 100, mode="dense")
            dense = [(h.chunk_id, h.score) for h in hits]
            top = [c for c, _ in dense[:10]]
            share = sum(1 for c in top if cjk_of.get(c, 0)) / max(1, len(top))
            kw = index.manifest.keyword(content_terms(text), POOL, cjk=False)
            kwd = dict(scaled(kw))
            # other-script discount as shipped
            kwd = {c: v * (0.5 if cjk_of.get(c, 0) else 1.0) for c, v in kwd.items()}
            for limit in (1, 3):
                zt = zh_terms(text, limit, rev)
                if n < 2 and label == "cross":
                    print(text, "->", zt[:20], file=sys.stderr)
                zk = dict(scaled(index.manifest.keyword(zt, POOL, cjk=True))) if zt else {}
                for w in (0.0, 0.5, 1.0):
                    t = w * share
                    both = {c: max(kwd.get(c, 0), t * zk.get(c, 0)) for c in {*kwd, *zk}}
                    d = dict(scaled(dense))
                    fused = {c: 0.5 * d.get(c, 0) + 0.5 * both.get(c, 0) for c in {*d, *both}}
                    ranked = sorted(fused, key=lambda c: (-fused[c], -both.get(c, 0)))
                    rows.setdefault((label, f"limit {limit}, w {w} x CJK share"), []).append(
                        (files(ranked), rel)
                    )
    print_table(dict(sorted(rows.items())))


if __name__ == "__main__":
    main()
