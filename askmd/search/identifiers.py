"""Exact identifiers in a query: error codes, flags, function names, ticket ids.

The dense side reads `LUM-E013` and `LUM-E014` as the same thing, and a made-up word as
its word pieces; keyword search tells them apart, but in the blend its voice is one of
two. So a query term shaped like an identifier that few chunks of the folder hold is
evidence of its own: the chunks holding it rank above those that don't
(retriever.search). Shaped like an identifier means letters and digits in one word
(`e013`, `quokka0marmalade`, `sha256`), inner `_ . / :` (`ERR_CONN`, `config.yaml`,
`src/app`), a hyphen beside a digit (`LUM-E013`), or camelCase (`onLayoutReady`).

Ordinary words stay out, however rare: compounds (`web-based`, `non-teaching`) and long
words a model splits into pieces (`mitochondria`) put SciFact's relevant abstracts below
others that merely repeat the word (MRR@10 0.832 -> 0.809 with them; BENCHMARKS.md).
"""

from __future__ import annotations

import re
import unicodedata

from askmd.terms import terms

_TOKEN = re.compile(r"[^\W_](?:[^\W_]|_|[-.:/](?=[^\W_]))*")
_CAMEL = re.compile(r"[a-z][A-Z]")
_JOINED = re.compile(r"[_.:/]")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
# Few chunks: at most this many, or this share of the folder's chunks, whichever is more.
RARE = 5
RARE_SHARE = 0.002


def identifiers(query: str) -> list[str]:
    """The query's identifier-shaped words, as the keyword index holds them whole."""
    plain = _CJK.sub(" ", unicodedata.normalize("NFKC", query))  # "LUM-E013是什么"
    found: list[str] = []
    for match in _TOKEN.finditer(plain):
        token = match.group()
        if not _shaped(token):
            continue
        whole = terms(token)[:1]  # the whole token comes first among its terms
        if whole and whole[0] not in found:
            found.append(whole[0])
    return found


def rare_limit(chunks: int) -> int:
    """How many chunks may hold a term for it to count as rare in this folder."""
    return max(RARE, int(chunks * RARE_SHARE))


def _shaped(token: str) -> bool:
    letters = any(c.isalpha() for c in token)
    digits = any(c.isdigit() for c in token)
    if not letters:
        return False
    if digits or _JOINED.search(token):
        return True
    return bool(_CAMEL.search(token))
