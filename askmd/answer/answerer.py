"""Answering from one index: the LLM built from Settings (or none), the searches of one
question with its filters and dates (`Lookup`), and the judge that reads the passages
(grounding.py), handed to the exchange (exchange.py) that puts them together."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING

from askmd.answer.result import Answer, Turn
from askmd.search import rerank, retriever
from askmd.search.hits import SAVED_ANSWER
from askmd.search.searcher import check_question

if TYPE_CHECKING:
    from askmd.answer import grounding
    from askmd.index.access import IndexAccess
    from askmd.search.searcher import Searcher

# How a caller shows what the core does, passed in: the core itself never prints.
Show = Callable[[Iterator[str], int], str]  # an answer's pieces and its source count -> text
Searched = Callable[[str, list[retriever.Hit]], None]  # each search of an answer, as it ends


class Lookup:
    """The searches of one question, each with its filters and the day it names; the last
    one's hits, what ranked them and the period it read are kept (`hits`, `retriever`,
    `dates`): the exchange answers from the last search."""

    def __init__(
        self,
        searcher: Searcher,
        filters: retriever.Filters | None,
        depth: int,
        restate: Callable[[str], str] | None = None,
        searched: Searched | None = None,
    ) -> None:
        self.searcher, self.filters, self.depth = searcher, filters, depth
        self.restate, self.searched = restate, searched
        self.hits: list[retriever.Hit] = []
        self.retriever = "hybrid"
        self.asked = filters.dates() if filters else None  # the period the filters give
        self.dates: dict | None = self.asked

    def __call__(self, query: str) -> list[retriever.Hit]:
        named = self.searcher.dates_in(query)
        self.dates = named.to_json() if named else self.asked
        asked_for = self.restate(query) if self.restate else query
        hits = self.searcher.search(asked_for, self.depth, filters=self.filters)
        if _saved_answers_in(hits, self.filters):  # again without them: see Filters
            without = replace(self.filters or retriever.Filters(), saved_answers=False)
            hits = self.searcher.search(asked_for, self.depth, filters=without)
        self.retriever = getattr(hits, "retriever", "hybrid")
        if named is not None:  # the day asked about: which passages are its entries
            from askmd.answer.dated import entries

            hits = entries(hits, self.searcher.root)
        self.hits = list(hits)
        if self.searched is not None:
            self.searched(query, list(self.hits))
        return list(self.hits)

    def reranked(self, reranker: Callable, k: int) -> Callable[[str, list], list]:
        """The rerank step: the passages the reranker keeps become the ones answered from."""

        def rerank_hits(query: str, hits: list[retriever.Hit]) -> list[retriever.Hit]:
            self.hits = reranker(query, hits)[:k]
            return list(self.hits)

        return rerank_hits


def _saved_answers_in(hits: list[retriever.Hit], filters: retriever.Filters | None) -> bool:
    """Whether answers askmd saved among the notes were found, and not asked for."""
    wanted = filters is not None and SAVED_ANSWER in filters.tags
    return not wanted and any(SAVED_ANSWER in hit.tags for hit in hits)


class Answerer:
    def __init__(
        self, access: IndexAccess, searcher: Searcher, indexes: list[IndexAccess] | None = None
    ) -> None:
        self.access = access  # its settings, its loading and the models it embeds with
        self.searcher = searcher
        self.indexes = indexes or [access]  # whose notes the judge reads
        self.settings = access.settings
        self.local_server = None  # a local model's llama.cpp server, once started

    @cached_property
    def chat(self):
        """The LLM that answers, or None for extractive answers. A local model loads here."""
        s = self.settings
        if not s.llm_configured:
            return None
        from askmd.answer.chat import Chat

        url, key, model = s.openai_base_url, s.openai_api_key, s.llm_model
        max_tokens, extra_body = s.llm_max_tokens, None
        if s.local_model is not None:
            from askmd.answer import local_llm

            with self.access.loading(f"loading {s.local_model.name} with llama.cpp"):
                self.local_server = local_llm.start(
                    s.local_model, threads=s.local_threads, context=s.local_context
                )
            max_tokens, extra_body = local_llm.sampling(s.local_model, max_tokens, s.local_context)
            url, key, model = (
                self.local_server.url,
                self.local_server.api_key,
                self.local_server.model,
            )
        return Chat(
            url or None,
            key or None,
            model,
            temperature=s.llm_temperature,
            max_tokens=max_tokens,
            timeout=s.llm_timeout,
            budget=s.llm_budget,
            extra_body=extra_body,
        )

    def ask(
        self,
        question: str,
        history: list[Turn],
        k: int,
        filters: retriever.Filters | None = None,
        show: Show | None = None,
        searched: Searched | None = None,
    ) -> Answer:
        """Answer one question from the notes. `show`, when given, displays the model's
        reply as it streams (its pieces, and how many passages it may cite) and returns
        the text; `searched` hears of each search with what it found. The citations are
        checked against the passages of the last search (the one answered from)."""
        check_question(question)
        reranker = rerank.from_settings(self.settings, self.chat)
        depth = max(k, rerank.DEPTH) if reranker else k  # a reranker reads more, keeps k
        restate = rerank.search_rewrite(self.settings, self.chat)
        lookup = Lookup(self.searcher, filters, depth, restate, searched)

        from askmd.answer import exchange  # the answer stage loads with the first question

        result = exchange.ask(
            question,
            history,
            lookup,
            self.chat,
            show=(lambda pieces: show(pieces, len(lookup.hits))) if show else None,
            rerank=lookup.reranked(reranker, k) if reranker else None,
            ground=self.grounding(),
        )
        result.retriever = lookup.retriever
        result.dates = lookup.dates
        return result

    def grounding(self) -> grounding.Grounding:
        """What judges whether passages answer a question, over this index (or, several
        folders answered as one, over all of theirs: a term is rare when it is rare in
        them together, and mentioned when any of them mentions it)."""
        from askmd.answer import grounding
        from askmd.index.manifest_keywords import bm25_idf

        every = self.indexes

        def held() -> list:
            return [a for a in every if a.has_index()]  # a folder with no notes has none

        def idf(terms: list[str], cjk: bool | None) -> dict[str, float]:
            counts, total = dict.fromkeys(terms, 0), 0
            for a in held():
                with a.lock.reading():
                    found, count = a.manifest.frequencies(terms, cjk)
                total += count
                for term, n in found.items():
                    counts[term] = counts.get(term, 0) + n
            return {t: bm25_idf(n, max(total, 1)) for t, n in counts.items()}

        def mentioned(terms: list[str]) -> set[str]:
            found: set[str] = set()
            for a in held():
                with a.lock.reading():
                    found |= a.manifest.mentioned(terms)
            return found

        def together(terms: list[str]) -> bool:
            for a in held():
                with a.lock.reading():
                    if a.manifest.together(terms):
                        return True
            return False

        def chinese_notes() -> bool:
            for a in held():
                with a.lock.reading():
                    if a.manifest.non_cjk_share() < 1.0:
                        return True
            return False

        english, multilingual = grounding.local_models(self.access.embedder)
        return grounding.Grounding(
            english,
            multilingual,
            idf,
            self.settings.min_confidence,
            mentioned=mentioned,
            together=together,
            chinese_notes=chinese_notes,
        )
