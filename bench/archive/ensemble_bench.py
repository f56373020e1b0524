"""Two dense models for English questions: MiniLM's vectors and USE-multilingual's, blended.

USE already embeds every chunk of a folder with CJK notes, and it embeds English text
about 10x faster than MiniLM here, so giving every folder USE vectors would cost little
indexing time. Would its reading of paraphrases add to MiniLM's? This scores, offline on
the same candidate lists (each retriever's top POOL, exact cosine over every chunk for
USE, whose vectors are computed here from the manifest's chunk texts and cached in
IX/use-vectors.npy), files ranked by their best chunk:

- today: `alpha * minilm + (1 - alpha) * bm25` (each min-max scaled over its list),
- the two dense lists blended first (`w * minilm + (1 - w) * use`), then with BM25.

    python bench/ensemble_bench.py KB IX QUERIES.jsonl[:PREFIX] ...

KB/IX an indexed folder (IX built by `rag.py --knowledge KB --index-dir IX index`), each
QUERIES file in `rag.py eval` format; PREFIX is put before its relevant file names (the
mixed folder's vault questions: bench/paraphrase/obsidian-en.jsonl:en/).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from multilingual_bench import files, print_table, scaled  # noqa: E402

from askmd.index.embedder import MultilingualEmbedder  # noqa: E402
from askmd.pipeline import Index  # noqa: E402
from askmd.search.retriever import MIN_POOL as POOL  # noqa: E402
from askmd.settings import load_settings  # noqa: E402
from askmd.terms import content_terms  # noqa: E402

WEIGHTS = (1.0, 0.8, 0.67, 0.5)  # MiniLM's share of the dense blend (1.0: today)
ALPHAS = (0.5, 0.6)


def use_vectors(index: Index, ix: Path) -> tuple[list[str], np.ndarray]:
    ids = [
        row[0] for row in index.manifest.db.execute("SELECT chunk FROM documents ORDER BY chunk")
    ]
    cache = ix / "use-vectors.npy"
    if cache.exists() and (ix / "use-ids.json").exists():
        if json.loads((ix / "use-ids.json").read_text()) == ids:
            return ids, np.load(cache)
    texts = index.manifest.stored(ids)
    vectors = MultilingualEmbedder().embed([texts[i][0] for i in ids])
    vectors = np.asarray(vectors, dtype=np.float32)
    np.save(cache, vectors)
    (ix / "use-ids.json").write_text(json.dumps(ids))
    return ids, vectors


def blend(
    a: list[tuple[str, float]], b: list[tuple[str, float]], w: float
) -> list[tuple[str, float]]:
    sa, sb = scaled(a), scaled(b)
    mixed = {c: w * sa.get(c, 0.0) + (1 - w) * sb.get(c, 0.0) for c in {*sa, *sb}}
    return sorted(mixed.items(), key=lambda x: -x[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kb", type=Path)
    parser.add_argument("ix", type=Path)
    parser.add_argument("queries", nargs="+")
    args = parser.parse_args()
    settings = load_settings(
        environ={}, dotenv_path=None, overrides={"knowledge_dir": args.kb, "index_dir": args.ix}
    )
    index = Index(settings)
    index.sync()
    index.search("warm up", 1)
    ids, use = use_vectors(index, args.ix)
    use_model = MultilingualEmbedder()
    rows: dict[tuple[str, str], list] = {}
    for spec in args.queries:
        path, _, prefix = spec.partition(":")
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            q = json.loads(line)
            label = f"{Path(path).stem} {q.get('kind', '')}".strip()
            relevant = {prefix + r for r in q["relevant"]}
            text = q["query"]
            found = index.store.nearest(
                index.embedder.embed_queries([text])[0], POOL, content=False
            )
            minilm = [(s.id, 1 - s.distance) for s in found]
            v = np.asarray(use_model.embed_queries([text])[0], dtype=np.float32)
            cos = use @ (v / np.linalg.norm(v))
            top = np.argsort(-cos)[:POOL]
            by_use = [(ids[i], float(cos[i])) for i in top]
            keyword = index.manifest.keyword(content_terms(text), POOL, cjk=False)
            for group in (label, Path(path).stem + " all"):
                rows.setdefault((group, "USE dense"), []).append(
                    (files([c for c, _ in by_use]), relevant)
                )
                for w in WEIGHTS:
                    dense = blend(minilm, by_use, w) if w < 1 else minilm
                    for alpha in ALPHAS:
                        fused = [c for c, _ in blend(dense, keyword, alpha)]
                        rows.setdefault((group, f"minilm {w} + use, hybrid {alpha}"), []).append(
                            (files(fused), relevant)
                        )
    print_table(dict(sorted(rows.items())))


if __name__ == "__main__":
    main()
