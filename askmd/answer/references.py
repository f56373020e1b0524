"""The passages an answer cites, each with the fragment its claims rest on: the sentence
of the passage that shares most with the sentences citing it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from askmd.answer.citations import CITATION, cited_numbers
from askmd.answer.overlap import query_share, term_idf, term_weights
from askmd.answer.result import Reference
from askmd.answer.sentences import LIST_MARK, SENTENCE, sentences, trim
from askmd.terms import content_terms

if TYPE_CHECKING:
    from askmd.search.hits import Hit


def _best_fragment(hit: Hit, about: str) -> str:
    """The sentence of the passage that shares most with `about`, else its first one."""
    found = sentences(hit.text)
    if not found:
        return trim(hit.text.strip())
    pool = [content_terms(s) for s in found]
    idf = term_idf(pool)
    want = set(content_terms(about))
    best = max(
        range(len(found)), key=lambda i: (query_share(want, term_weights(found[i]), idf), -i)
    )
    return trim(found[best])


def claims_by_source(text: str, cited: list[int]) -> dict[int, list[str]]:
    """For each cited number, the sentences of the answer that cite it, without their
    citations: a citation after a sentence of no words of its own ("Backups run at 2am.
    [1]") is the previous sentence's."""
    claims: dict[int, list[str]] = {n: [] for n in cited}
    said = ""
    for sentence in SENTENCE.findall(text):
        words = CITATION.sub(" ", sentence)
        if content_terms(words):
            said = " ".join(LIST_MARK.sub("", words).split())
        for n in cited_numbers(sentence):
            if n in claims and said:
                claims[n].append(said)
    return claims


def references(text: str, cited: list[int], hits: list[Hit]) -> list[Reference]:
    """The cited passages in citation order, each with the fragment its claims rest on."""
    claims = claims_by_source(text, cited)
    out = []
    for n in cited:
        hit = hits[n - 1]
        fragment = _best_fragment(hit, " ".join(claims[n]))
        out.append(Reference.of(n, hit, fragment))
    return out
