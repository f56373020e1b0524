"""How much of a question a sentence holds, weighted by how rare each term is among the
sentences it competes with: what picks a reference's fragment and an extractive answer's
sentences."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable

from askmd.terms import content_terms


def term_idf(pool: Iterable[list[str]]) -> Callable[[str], float]:
    docs = [set(t) for t in pool]
    counts = Counter(t for d in docs for t in d)
    n = max(1, len(docs))
    return lambda term: math.log(1 + (n + 1) / (counts.get(term, 0) + 0.5))


_INLINE_CODE = re.compile(r"`[^`\n]+`")


def term_weights(sentence: str) -> dict[str, float]:
    """A sentence's terms; those only inside `code` count half: a path or identifier
    merely mentioned ("see `backup/restore.md`") says less than prose about it."""
    weights = dict.fromkeys(content_terms(sentence), 0.5)
    weights.update(dict.fromkeys(content_terms(_INLINE_CODE.sub(" ", sentence)), 1.0))
    return weights


def query_share(query: set[str], sentence: dict[str, float], idf: Callable[[str], float]) -> float:
    """The idf-weighted share of the query's terms that the sentence holds."""
    total = sum(idf(t) for t in query)
    return sum(idf(t) * sentence[t] for t in query if t in sentence) / total if total else 0.0
