"""The keyword side of the manifest: every chunk's search terms as BM25F postings, the
bulk load of a cold build's postings, the packing of common terms, and the scoring of a
question's terms against them (packed_postings does the arithmetic)."""

from __future__ import annotations

import contextlib
import functools
import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from askmd.index import packed_postings
from askmd.index.manifest_db import ManifestDB
from askmd.terms import content_terms

BM25_K1 = 1.2  # term-frequency saturation
BM25_B = 0.75  # length normalisation
# BM25F: a query term in the note's title, its front matter aliases or the chunk's heading
# chain counts this many extra times on top of the chunk's text, unnormalised by length
# since these fields are short. The text already holds title and chain once, and more
# weight on them lost first places; a small count on aliases, names the text may never
# use, makes such a name findable (docs/benchmarks/retrieval-english.md, "Fields").
FIELD_WEIGHTS = (0.0, 0.25, 0.0)  # (title, aliases, headings)
FIELDS = ("title_tf", "alias_tf", "heading_tf")  # their postings columns, in that order
KEPT_FILTERS = 8  # `--where` note sets kept ready at once (a server's clients' filters)
TOGETHER_FORMS = 50  # forms of one term read by `together` (`python3`, `python-dotenv`, ...)
_LOAD = "postings_load"  # a cold build's postings before they are sorted in (begin_load)


# A search term is CJK when its first character is (the ranges of terms.CJK_CLASS).
_CJK_TERM = (
    "(unicode(term) BETWEEN 12352 AND 12543 OR unicode(term) BETWEEN 13312 AND 19903 "
    "OR unicode(term) BETWEEN 19968 AND 40959 OR unicode(term) BETWEEN 44032 AND 55215 "
    "OR unicode(term) BETWEEN 63744 AND 64255 OR unicode(term) BETWEEN 65382 AND 65439)"
)


@dataclass(frozen=True)
class ChunkRow:
    id: str
    text_hash: str
    terms: list[str]  # search terms of the chunk's embedded text (title and chain included)
    # Search terms of the fields ranked on their own (FIELD_WEIGHTS): title, aliases, headings.
    fields: tuple[list[str], list[str], list[str]] = ([], [], [])
    text: str = ""  # the chunk's text as stored and quoted (verbatim from the file)
    meta: str = ""  # its metadata (store.chunk_metadata) as JSON
    date: str = ""  # the ISO day it is about (read/dates.py), "" when it has none


def chunk_row(
    chunk_id: str, text_hash: str, text: str, *, title: str, aliases: Iterable[str],
    chain: Iterable[str], stored: str = "", meta: dict | None = None,
    date: str | None = None,
) -> ChunkRow:  # fmt: skip
    """A chunk's keyword record: the terms of its searchable `text`, and those of its
    note's title and aliases and of its heading chain (the title left out of it when it
    heads the chain), with the `stored` text and `meta` that a search returns."""
    headings = [h for h in chain if h != title]
    return ChunkRow(
        chunk_id,
        text_hash,
        content_terms(text),
        (
            list(_field_terms(title)),
            list(_field_terms(" ; ".join(aliases))),
            list(_field_terms(" ; ".join(headings))),
        ),
        stored,
        json.dumps(meta, ensure_ascii=False) if meta else "",
        date or "",
    )


@functools.lru_cache(maxsize=4096)
def _field_terms(text: str) -> tuple[str, ...]:
    """A short field's terms, cached: a note's title, aliases and headings repeat in
    every chunk of it."""
    return tuple(content_terms(text))


def _postings(doc: int, row: ChunkRow) -> list[tuple[str, int, int, int, int, int]]:
    """(term, doc, tf, title_tf, alias_tf, heading_tf) for every term of the chunk."""
    text = Counter(row.terms)
    title, alias, heading = (Counter(f) for f in row.fields)
    if not (title or alias or heading):  # most chunks: one tuple per term, no lookups
        return [(t, doc, n, 0, 0, 0) for t, n in text.items()]
    keys = dict.fromkeys([*text, *title, *alias, *heading])
    return [(t, doc, text[t], title[t], alias[t], heading[t]) for t in keys]


class KeywordPostings(ManifestDB):
    """Postings, their bulk load and packing, and BM25F over them."""

    # A cold build's postings (tens of millions for a big folder) are not inserted into the
    # keyed table group by group: each group's terms land all over a B-tree that ends far
    # bigger than the page cache, and the build waits on the disk. They are appended to
    # an unkeyed table instead and moved in one sorted pass when the keyword phase ends
    # (or, after a kill, when the next sync starts): SQLite then fills pages in key order.

    def begin_load(self) -> bool:
        """Start a bulk load if the keyed postings are empty (a first or rebuilt index);
        whether one is on."""
        if self.loading():
            return True
        with self._transaction():
            if self.db.execute("SELECT 1 FROM postings LIMIT 1").fetchone():
                return False
            self.db.execute(f"CREATE TABLE {_LOAD} AS SELECT * FROM postings WHERE 0")
            self.db.execute("DROP INDEX IF EXISTS postings_by_doc")  # built once, at the end
        return True

    def loading(self) -> bool:
        """Whether postings wait in the load table (searches do not see them yet)."""
        return bool(
            self.db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (_LOAD,)
            ).fetchone()
        )

    def finish_load(self) -> None:
        """Move the loaded postings into the keyed table in key order, in one commit: a
        kill meanwhile leaves the load table whole for the next sync to finish."""
        if self.read_only or not self.loading():
            return
        with self._transaction():
            self.db.execute("DROP INDEX IF EXISTS postings_by_doc")
            self.db.execute(f"INSERT INTO postings SELECT * FROM {_LOAD} ORDER BY term, doc")
            self.db.execute(f"DROP TABLE {_LOAD}")
            self.db.execute("CREATE INDEX postings_by_doc ON postings (doc)")
            self._bump()

    def keyword(
        self,
        terms: list[str],
        limit: int,
        cjk: bool | None = None,
        weights: tuple[float, float, float] | None = None,
        sources: frozenset[str] | None = None,
    ) -> list[tuple[str, float]]:
        """BM25F (BM25_K1, BM25_B, FIELD_WEIGHTS) of every indexed chunk for these terms:
        (chunk id, score), best first (equal scores in indexing order). Exact: every
        posting of every term is scored, common terms from their packed arrays
        (packed_postings), so a long question on a 250k-chunk folder takes milliseconds.

        With `cjk` (the question's script) the collection statistics, the number of
        chunks and their average length, are those of the chunks in that script, when
        there are any: a folder of Chinese notes scores a Chinese question the same
        whether or not 5,000 English notes sit beside it. Every chunk is still scored,
        unless `sources` names the only files whose chunks may be returned (`--where`):
        then only theirs are, so a filter that keeps a few notes of many still finds them."""
        unique = sorted(set(terms))
        if not unique or limit <= 0:
            return []
        with self._snapshot():
            count, average = self._collection(self._keyword_cache(), cjk)
            if not count:
                return []
            found = packed_postings.postings(self.db, unique, self._field_columns())
            idfs = {t: self._idf(len(array), count) for t, array in found.items()}
            if sources is not None:
                found = packed_postings.only(found, self._docs_of(sources))
            weights = weights or FIELD_WEIGHTS
            top = packed_postings.bm25f(
                found, idfs, max(average, 1.0), weights, BM25_K1, BM25_B, limit
            )
            if not top:
                return []
            docs = [doc for doc, _ in top]
            marks = ",".join("?" * len(docs))
            chunk_of = dict(
                self.db.execute(f"SELECT doc, chunk FROM documents WHERE doc IN ({marks})", docs)
            )
            return [(chunk_of[doc], score) for doc, score in top]

    def _docs_of(self, sources: frozenset[str]):
        """Which keyword documents (chunks) belong to these files, as a mask by document
        number, kept while the index's generation stays the same: a REPL's /where or a
        client's filter asks for the same set again."""
        import numpy as np

        memo = self._keyword_cache().setdefault("docs", {})
        if sources not in memo:
            sql = "SELECT doc FROM documents WHERE source IN (SELECT value FROM json_each(?))"
            names = json.dumps(sorted(sources))
            while len(memo) >= KEPT_FILTERS:
                del memo[next(iter(memo))]  # the oldest
            docs = np.fromiter((d for (d,) in self.db.execute(sql, (names,))), dtype=np.int64)
            last = self.db.execute("SELECT COALESCE(MAX(doc), 0) FROM documents").fetchone()[0]
            kept = np.zeros(max(int(last), packed_postings.upto(self.db) or 0) + 2, dtype=bool)
            kept[docs] = True
            memo[sources] = kept
        return memo[sources]

    def frequencies(self, terms: list[str], cjk: bool | None = None) -> tuple[dict[str, int], int]:
        """How many chunks hold each term, and how many chunks there are (of the question's
        script, as `keyword` counts them): what makes a term rare, and its idf."""
        unique = sorted(set(terms))
        with self._snapshot():
            count, _ = self._collection(self._keyword_cache(), cjk)
            if not unique or not count:
                return dict.fromkeys(unique, 0), count
            found = packed_postings.postings(self.db, unique, self._field_columns())
            return {t: len(found[t]) if t in found else 0 for t in unique}, count

    def mentioned(self, terms: list[str]) -> set[str]:
        """The terms some chunk holds, whole or continued by a digit or a joiner
        (`python` of `python3` and `python-dotenv`), not by letters (`consul` is not in
        `consult`): whether the notes name a thing at all."""
        found: set[str] = set()
        tables = ["postings", "packed"] if packed_postings.has_tables(self.db) else ["postings"]
        with self._snapshot():
            for term in sorted(set(terms)):
                if any(
                    self.db.execute(
                        f"SELECT 1 FROM {table} WHERE term >= ? AND term < ? LIMIT 1", span
                    ).fetchone()
                    for table in tables
                    for span in _forms(term)
                ):
                    found.add(term)
        return found

    def together(self, terms: list[str]) -> bool:
        """Whether one chunk holds all these terms, each read as `mentioned` reads it
        (whole or continued by a digit or a joiner): whether the notes name a thing of
        several words ("Google Drive") or only its words apart."""
        if not terms:
            return True
        tables = ["postings", "packed"] if packed_postings.has_tables(self.db) else ["postings"]
        chunks: set[int] | None = None
        with self._snapshot():
            for term in sorted(set(terms)):
                forms = {
                    found
                    for table in tables
                    for span in _forms(term)
                    for (found,) in self.db.execute(
                        f"SELECT DISTINCT term FROM {table} WHERE term >= ? AND term < ? "
                        f"LIMIT {TOGETHER_FORMS}",
                        span,
                    )
                }
                postings = packed_postings.postings(self.db, sorted(forms), self._field_columns())
                held = {int(d) for array in postings.values() for d in array["doc"]}
                chunks = held if chunks is None else chunks & held
                if not chunks:
                    return False
        return True

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[None]:
        """One consistent view of the postings for a read, however long it takes (inside a
        writer's transaction, that transaction's view)."""
        if self.db.in_transaction:
            yield
            return
        self.db.execute("BEGIN")
        try:
            yield
        finally:
            self.db.execute("COMMIT")

    def idf(self, terms: list[str], cjk: bool | None = None) -> dict[str, float]:
        """BM25's idf of each term over the indexed chunks (a term no chunk holds: the most)."""
        counts, count = self.frequencies(terms, cjk)
        return {t: self._idf(n, max(count, 1)) for t, n in counts.items()}

    def packing_due(self) -> bool:
        """Whether the common terms' postings should be packed (again): see packed_postings."""
        return not self.read_only and packed_postings.due(self.db)

    def pack(self) -> int:
        """Pack the common terms' postings; how many terms (packed_postings)."""
        with self._transaction():
            return packed_postings.pack(self.db, self._field_columns())

    def _field_columns(self) -> list[str]:
        return list(FIELDS) if self._has_fields() else ["0"] * len(FIELDS)

    @staticmethod
    def _idf(n: int, count: int) -> float:
        return bm25_idf(n, count)

    def _keyword_cache(self) -> dict:
        """Collection statistics, kept while the index's generation stays the same (every
        change to the postings bumps it): counting a big index's chunks takes milliseconds."""
        generation = self.generation()
        cache = getattr(self, "_keyword_memo", None)
        if cache is None or cache["generation"] != generation:
            cache = {"generation": generation, "collection": {}}
            self._keyword_memo = cache
        return cache

    def non_cjk_share(self) -> float:
        """The share of chunks whose terms are not mostly CJK (0.0 with no chunks)."""
        cache = self._keyword_cache()
        if "non_cjk" not in cache:
            total, cjk = self.db.execute(
                "SELECT COUNT(*), COALESCE(SUM(cjk), 0) FROM documents"
            ).fetchone()
            cache["non_cjk"] = (total - cjk) / total if total else 0.0
        return cache["non_cjk"]

    def _collection(self, cache: dict, cjk: bool | None) -> tuple[int, float]:
        """(number of chunks, their average length) of the chunks in that script, or of
        all when there are none (or no script is given)."""
        if cjk not in cache["collection"]:
            count, average = 0, 0.0
            if cjk is not None:
                count, average = self.db.execute(
                    "SELECT COUNT(*), COALESCE(AVG(length), 0) FROM documents WHERE cjk = ?",
                    (int(cjk),),
                ).fetchone()
            if not count:
                count, average = self.db.execute(
                    "SELECT COUNT(*), COALESCE(AVG(length), 0) FROM documents"
                ).fetchone()
            cache["collection"][cjk] = (count, average)
        return cache["collection"][cjk]

    def _has_fields(self) -> bool:
        """Whether the postings hold field counts (a read-only index from older code may not)."""
        if self._fields is None:
            columns = {row[1] for row in self.db.execute("PRAGMA table_info(postings)")}
            self._fields = set(FIELDS) <= columns
        return self._fields

    def cjk_share(self) -> float:
        """The share of the indexed search terms that are CJK (0.0: none, 1.0: all)."""
        total, cjk = self.db.execute(
            f"SELECT COALESCE(SUM(tf), 0), COALESCE(SUM(CASE WHEN {_CJK_TERM} "
            "THEN tf ELSE 0 END), 0) FROM postings"
        ).fetchone()
        return cjk / total if total else 0.0

    def has_cjk_chunks(self) -> bool:
        """Whether any chunk's terms are mostly CJK (index `documents_cjk`)."""
        return (
            self.db.execute("SELECT 1 FROM documents WHERE cjk = 1 LIMIT 1").fetchone() is not None
        )

    def cjk_chunks(self, ids: list[str]) -> set[str]:
        """Those of these chunks whose terms are mostly CJK."""
        if not ids:
            return set()
        marks = ",".join("?" * len(ids))
        rows = self.db.execute(
            f"SELECT chunk FROM documents WHERE cjk = 1 AND chunk IN ({marks})", ids
        )
        return {chunk for (chunk,) in rows}


def _forms(term: str) -> list[tuple[str, str]]:
    """The ranges of stored terms that are `term` whole or continued by a digit or a joiner
    (`python3`, `python-dotenv`, `python_version`), not by letters (`consult` of `consul`):
    "-./0-9:" are one run of code points, from "-" to ":"; "_" stands apart."""
    return [(term, term + "\0"), (term + "-", term + ";"), (term + "_", term + "`")]


def bm25_idf(n: int, count: int) -> float:
    """BM25's inverse document frequency of a term in `n` of `count` chunks."""
    n = min(n, count)
    return math.log(1 + (count - n + 0.5) / (n + 0.5))
