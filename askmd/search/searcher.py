"""Searching one open index: the store and manifest followed to other processes' commits,
the day or period a question names, then the retriever (retriever.py)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import TYPE_CHECKING

from askmd.answer.limits import MAX_QUESTION_CHARS
from askmd.errors import AskmdError, BadRequest
from askmd.search import retriever

if TYPE_CHECKING:
    from askmd.index.access import IndexAccess
    from askmd.search import dates_in_query


class Searcher:
    def __init__(self, access: IndexAccess) -> None:
        self.access = access

    def search(
        self,
        query: str,
        k: int,
        mode: str = "hybrid",
        filters: retriever.Filters | None = None,
    ) -> list[retriever.Hit]:
        """The `k` chunks that best match `query` (hybrid, keyword or dense `mode`), best
        first; the list's `retriever` says what ranked them (keyword while vectors wait)."""
        check_question(query, "the query")
        if filters is not None and filters.folders:  # a lone folder's own label (shelf.py)
            filters = dataclasses.replace(filters, folders=())
            filters = None if filters == retriever.Filters() else filters
        a = self.access
        if not a.has_index():
            return []  # no notes yet: nothing to find, and no index to make for it
        a.follow()
        try:
            return self._search(query, k, mode, filters)
        except AskmdError:
            if not a.reopened_replaced():
                raise
            return self._search(query, k, mode, filters)

    def _search(
        self, query: str, k: int, mode: str, filters: retriever.Filters | None
    ) -> list[retriever.Hit]:
        a = self.access
        period = self.dates_in(query)
        with a.reading() as store:
            return retriever.search(
                query, a.embedder, store, a.manifest, k,
                mode=mode, filters=filters, period=period, tuning=a.tuning,
            )  # fmt: skip

    def root(self, hit: retriever.Hit) -> Path:
        """The folder a hit's note is in."""
        return self.access.settings.knowledge_dir

    def dates_in(self, query: str) -> dates_in_query.Period | None:
        """The day or period a question names, against today (or ASKMD_TODAY); a day
        without its year is the latest such day a note or entry is of."""
        from askmd.search import dates_in_query  # loaded by the first search, not by a sync

        def held(since: str, until: str) -> bool:
            return bool(self.access.manifest.dated_between(since, until, 1))

        return dates_in_query.understand(query, dates_in_query.today(), held)


def check_question(text: str, what: str = "the question") -> None:
    """Refuse, in one line, a question or query no interface can take: longer than any
    accepts, or holding bytes that are not UTF-8 text (the command line hands those on
    as lone surrogates, which no tokenizer reads)."""
    if len(text) > MAX_QUESTION_CHARS:
        raise BadRequest(
            f"{what} is {len(text):,} characters long; the most is {MAX_QUESTION_CHARS:,}"
        )
    if bad := _NOT_TEXT.search(text):
        raise BadRequest(
            f"{what} holds bytes that are not UTF-8 text (at character {bad.start() + 1}): "
            "type it again, or set the terminal to UTF-8"
        )


_NOT_TEXT = re.compile("[\ud800-\udfff]")
