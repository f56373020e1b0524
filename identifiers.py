"""Exact identifiers in a query: error codes, flags, function names, ticket ids.

The dense side reads `LUM-E013` and `LUM-E014` as the same thing, and a made-up word as
its word pieces; keyword search tells them apart, but in the blend its voice is one of
two. So a query term shaped like an identifier that few chunks of the folder hold is
evidence of its own: the chunks holding it rank above those that don't
(retriever.search). Shaped like an identifier means digits inside a word (`e013`,
`quokka0marmalade`), inner joiners (`docker-compose`, `ERR_CONN`, `config.yaml`,
`src/app`), camelCase (`onLayoutReady`), or a word the embedding model's vocabulary
splits into many pieces (a name it never saw).
"""

from __future__ import annotations

import functools
import re
import unicodedata

from terms import terms

_TOKEN = re.compile(r"[^\W_](?:[^\W_]|_|[-.:/](?=[^\W_]))*")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
_JOINED = re.compile(r"[-_.:/]")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
PIECES = 4  # a plain word split into this many word pieces or more reads as a name
LONG = 8  # ... when it is at least this long (short words split for other reasons)
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
    if letters and digits:
        return True
    if letters and _JOINED.search(token):
        return True
    if _CAMEL.search(token):
        return True
    return token.isalpha() and len(token) >= LONG and _pieces(token.lower()) >= PIECES


@functools.lru_cache(maxsize=4096)
def _pieces(word: str) -> int:
    """How many word pieces MiniLM's vocabulary splits the word into (0: unknown)."""
    tokenizer = _tokenizer()
    if tokenizer is None:
        return 0
    return len(tokenizer.encode(word, add_special_tokens=False).tokens)


@functools.cache
def _tokenizer():
    """The vendored MiniLM tokenizer, without padding or truncation; None if absent."""
    from embedder import tokenizer_path

    try:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(tokenizer_path()))
    except Exception:  # a missing or broken file: the other shapes still count
        return None
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer
