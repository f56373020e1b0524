"""Ways to give a chunk's sentences their own vectors, scored offline on the same top 100s.

    python bench/window_variants_bench.py EN_KB EN_IX SCI_KB SCI_IX SCI_QUERIES [--sizes 150,300]

The sets and indexes of bench/adaptive_share_bench.py (obsidian-dev-docs/en asked the
English paraphrase set; the SciFact subset). For each question the dense and BM25 top
100 are taken once; every candidate chunk is cut into windows of at most SIZE characters
(windows.spans) and each window gets a MiniLM vector two ways: "late", pooled from the
chunk's own run of the model (what askmd ships, windows.py), and "own run", the window's
text (after the chunk's title and heading chain) embedded by itself, which costs a second
pass of the model over every chunk. A chunk's window score is its best window's cosine.
Rules then set each candidate's dense score from its cosine d and window score s, and
the blend (dense share 0.5) is scored with files ranked by their best chunk:
  - "max": max(d, s), the rule shipped (with a margin: max(d, s - m));
  - "mix w": w d + (1 - w) s;
  - "rerank top K +b": today's blend, then its top K reordered by blend + b x scaled s.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adaptive_share_bench import collect  # noqa: E402
from gap_bench import files, fuse, metrics, scaled  # noqa: E402

import chunker  # noqa: E402
from askmd.index import windows  # noqa: E402
from askmd.index.embedder import make_embedder  # noqa: E402
from askmd.read import notes
from askmd.settings import Settings  # noqa: E402


def texts_of(kb: Path, data: list[dict]) -> dict[str, tuple[str, int]]:
    """Every candidate chunk's embedding text and where its own lines begin."""
    wanted = {c for q in data for c, _ in (*q["dense"], *q["keyword"])}
    found = {}
    defaults = Settings()
    for source in sorted({c.split("#", 1)[0] for c in wanted}):
        note = notes.read(kb, source)
        for c in chunker.split_note(note, defaults.chunk_size, defaults.chunk_overlap):
            if c.id in wanted:
                body = c.text if c.search_text is None else c.search_text
                found[c.id] = (c.embedding_text, len(c.embedding_text) - len(body))
    return found


def window_vectors(model, texts: dict[str, tuple[str, int]], late: bool) -> dict[str, np.ndarray]:
    ids = list(texts)
    if late:
        _, pooled = model.embed_windows([texts[i][0] for i in ids], [texts[i][1] for i in ids])
        return {i: p for i, p in zip(ids, pooled, strict=True) if len(p)}
    pieces, owners = [], []
    for i in ids:
        for piece in windows.own_run(*texts[i]):  # English text: windows of WINDOW_CHARS
            pieces.append(piece)
            owners.append(i)
    vectors = model.embed(pieces)
    grouped: dict[str, list] = {}
    for owner, vector in zip(owners, vectors, strict=True):
        grouped.setdefault(owner, []).append(vector)
    return {i: np.asarray(v) for i, v in grouped.items()}


def rules() -> dict:
    def scored(comb):
        def rule(q):
            d = dict(q["dense"])
            pool = set(d) | set(q["s"])
            out = {c: comb(d.get(c, 0.0), q["s"].get(c)) for c in pool}
            return fuse(sorted(out.items(), key=lambda x: -x[1])[:100], q["keyword"], 0.5)

        return rule

    found = {"today (chunk vectors only)": lambda q: fuse(q["dense"], q["keyword"], 0.5)}
    for m in (0.0, 0.02, 0.04):
        found[f"max, margin {m}"] = scored(lambda d, s, m=m: d if s is None else max(d, s - m))
    for w in (0.3, 0.5, 0.7):
        found[f"mix {w}"] = scored(lambda d, s, w=w: d if s is None else w * d + (1 - w) * s)
    for top in (10, 20):
        for beta in (0.2, 0.4):

            def rerank(q, top=top, beta=beta):
                blend = fuse(q["dense"], q["keyword"], 0.5)
                first = sorted(blend, key=lambda c: -blend[c])[:top]
                lift = scaled([(c, q["s"].get(c, 0.0)) for c in first])
                return {**blend, **{c: 10 + blend[c] + beta * lift[c] for c in first}}

            found[f"rerank top {top} +{beta}"] = rerank
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("en_kb", "en_ix", "sci_kb", "sci_ix", "sci_queries"):
        parser.add_argument(name, type=Path)
    parser.add_argument("--sizes", default="150,300", help="window sizes, characters")
    args = parser.parse_args()
    english = Path(__file__).resolve().parent / "paraphrase" / "obsidian-en.jsonl"
    en_queries = [json.loads(x) for x in english.open()]
    sci_queries = [json.loads(x) for x in args.sci_queries.open()]
    sets = {
        "EN": (args.en_kb, collect(args.en_kb, args.en_ix, en_queries), en_queries),
        "SCI": (args.sci_kb, collect(args.sci_kb, args.sci_ix, sci_queries), sci_queries),
    }
    model = make_embedder("local", None)
    for size in [int(s) for s in args.sizes.split(",") if s]:
        windows.WINDOW_CHARS = size
        for late in (True, False):
            table: dict[str, dict[str, str]] = {}
            for name, (kb, data, queries) in sets.items():
                vectors = window_vectors(model, texts_of(kb, data), late)
                asked = model.embed_queries([q["query"] for q in queries])
                for q, v in zip(data, asked, strict=True):
                    q["s"] = {c: float((m @ v).max()) for c, m in vectors.items()}
                groups = {"SciFact": data}
                if name == "EN":
                    groups = {"EN all": data, "EN hard": [q for q in data if q["kind"] == "hard"]}
                for label, qs in groups.items():
                    for rule_name, rule in rules().items():
                        m = metrics([(files(rule(q)), q["relevant"]) for q in qs])
                        table.setdefault(rule_name, {})[label] = (
                            f"{m['hit@1']:.2f} / {m['hit@5']:.2f} / {m['hit@10']:.2f} / "
                            f"{m['mrr@10']:.3f}"
                        )
            print(f"\nwindows of {size} characters, {'late' if late else 'own run'}")
            labels = list(next(iter(table.values())))
            print("| rule | " + " | ".join(labels) + " |")
            print("| --- |" + " ---: |" * len(labels))
            for rule_name, cells in table.items():
                print(f"| {rule_name} | " + " | ".join(cells[x] for x in labels) + " |")


if __name__ == "__main__":
    main()
