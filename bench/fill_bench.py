"""How hybrid search should rank while the vector store is still being filled.

    python -m bench.fill_bench /tmp/ev/scisub/corpus /tmp/ev/scisub/queries.jsonl \
        --index-dir /tmp/ev/scifact

Indexes the folder whole (or reuses the index), then pretends the filling stopped part
way: the manifest marks only the first 0/25/50/75/100% of the chunks as having vectors,
in the order the filling stores them (files in the order they were recorded), and every
rule of retriever.PARTIAL_RULES ranks every query. Dense search never returns a chunk
marked without a vector, exactly as during a real filling. Files are ranked by their
best chunk, as `rag.py eval` does. One JSON line per (fill, rule). The marks are put
back at the end.
"""

from __future__ import annotations

import json
from pathlib import Path

from askmd import evaluate
from askmd.search import retriever
from bench.common import labelled_set, tiny_labelled_set

FILLS = (0, 25, 50, 75, 100)


def mark_filled(db, percent: int) -> int:
    """Mark the first `percent` of the chunks (in filling order) as having vectors."""
    total = db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    keep = total * percent // 100
    db.execute("BEGIN IMMEDIATE")
    db.execute("UPDATE chunks SET vector = 0")
    db.execute(
        "UPDATE chunks SET vector = 1 WHERE rowid IN "
        "(SELECT rowid FROM chunks ORDER BY rowid LIMIT ?)",
        (keep,),
    )
    db.execute("COMMIT")
    return keep


def main(argv: list[str] | None = None) -> None:
    index, queries = labelled_set(__doc__, argv)
    db = index.manifest.db
    chosen = retriever.PARTIAL
    try:
        for percent in FILLS:
            mark_filled(db, percent)
            for rule in retriever.PARTIAL_RULES:
                retriever.PARTIAL = rule
                result = evaluate.evaluate(queries, lambda q, n: index.search(q, n), k=10)
                row = {"filled": percent, "rule": rule, **result.to_json()}
                print(json.dumps(row), flush=True)
                if percent in (0, 100):
                    break  # every rule is the same there: keyword alone / the full blend
    finally:
        mark_filled(db, 100)
        retriever.PARTIAL = chosen


def smoke(tmp: Path) -> None:
    """The tiny English notes and their two questions."""
    main(tiny_labelled_set(tmp))


if __name__ == "__main__":
    main()
