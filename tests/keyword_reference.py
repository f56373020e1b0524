"""The keyword search's reference: BM25F in one SQL query over the posting rows alone,
nothing packed or cached, which the packed scoring (index/packed_postings.py) must match."""

from __future__ import annotations

from askmd.index.manifest import Manifest
from askmd.index.manifest_keywords import BM25_B, BM25_K1, FIELD_WEIGHTS


def keyword_exact(
    manifest: Manifest,
    terms: list[str],
    limit: int,
    cjk: bool | None = None,
    weights: tuple[float, float, float] | None = None,
) -> list[tuple[str, float]]:
    """`Manifest.keyword` in SQL over the posting rows alone, nothing packed or cached:
    the reference the packed scoring is tested against."""
    unique = sorted(set(terms))
    if not unique or limit <= 0:
        return []
    count, average = manifest._collection({"collection": {}}, cjk)
    if not count:
        return []
    marks = ",".join("?" * len(unique))
    frequency = manifest.db.execute(
        f"SELECT term, COUNT(*) FROM postings WHERE term IN ({marks}) GROUP BY term", unique
    )
    idfs = {t: manifest._idf(n, count) for t, n in frequency}
    if not idfs:
        return []
    values = ",".join("(?, ?)" for _ in idfs)
    # BM25F with one saturation: x is the term's length-normalised count in the text
    # plus its weighted counts in the short fields; with no field weight this is BM25.
    fields = " ".join(f"+ ? * {f}" for f in manifest._field_columns())
    rows = manifest.db.execute(
        f"WITH q(term, idf) AS (VALUES {values}), "
        "s(doc, idf, x) AS (SELECT p.doc, q.idf, "
        f"p.tf / (1 - ? + ? * d.length / ?) {fields} "
        "FROM q JOIN postings p ON p.term = q.term JOIN documents d ON d.doc = p.doc) "
        "SELECT d.chunk, SUM(s.idf * s.x * (? + 1) / (s.x + ?)) AS score "
        "FROM s JOIN documents d ON d.doc = s.doc "
        "GROUP BY s.doc HAVING score > 0 ORDER BY ROUND(score, 9) DESC, s.doc LIMIT ?",
        [x for pair in idfs.items() for x in pair]
        + [BM25_B, BM25_B, max(average, 1.0), *(weights or FIELD_WEIGHTS)]
        + [BM25_K1, BM25_K1, limit],
    )
    return [(chunk, float(score)) for chunk, score in rows]
