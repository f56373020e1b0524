"""Split text into search terms that work for English and Chinese alike.

Latin words are lower-cased; identifiers such as `docker-compose`, `ERR_CONN_42` or
`config.yaml` are kept whole *and* as their parts, so an exact term and a loose one both
match; runs of CJK characters, which have no spaces, become overlapping character
bigrams (a lone character stays a unigram). English words get a light suffix strip;
there is no language detection: the same function must give the same terms for a note
and for a question. Text is NFKC-normalised first, so full-width letters and composed
or decomposed accents meet.
"""

from __future__ import annotations

import functools
import re
import unicodedata

VERSION = "2"  # bump when terms, or the keyword fields stored, change: older indexes rebuild

# A CJK ideograph, kana or hangul: the one definition, for other modules' patterns too.
CJK_CLASS = r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af\uff66-\uff9f]"
# One token: a run of CJK ideographs/kana/hangul, or a Latin/digit word that may carry
# inner joiners (-, _, ., /, :) as identifiers, paths and versions do.
_WORD_CHAR = rf"(?:(?!{CJK_CLASS})[^\W_])"  # a letter or digit of a spaced script
_TOKEN = re.compile(rf"{CJK_CLASS}+|{_WORD_CHAR}(?:{_WORD_CHAR}|_|[-.:/](?={_WORD_CHAR}))*")
_CJK = re.compile(CJK_CLASS)
_NOT_ALNUM = re.compile(r"[\W_]+")  # \w is str.isalnum() and the underscore
_PARTS = re.compile(r"[-_.:/]+")

# Words too common to say anything about relevance on their own (questions are full of them).
STOPWORDS = frozenset(
    """a about above after again all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers him his how i if in into is it its
    itself just me more most my no nor not now of off on once only or other our ours out
    over own same she should so some such than that the their theirs them then there these
    they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours s t d ll re ve m""".split()
)

# What marks a Chinese question as asking (a word that holds one asks, and names nothing).
QUESTION_WORD_ZH = re.compile(r"什么|怎么|怎样|如何|哪|谁|几|多少|为什么|为何|是否|吗")


def stem(word: str) -> str:
    """A light English suffix strip, so that "listens", "listening" and "listen" meet.

    Deliberately crude (no dictionary): it only has to map a note's word and a question's
    word to the same key, and it leaves short words, identifiers and non-Latin text alone.
    """
    if len(word) <= 3 or not word.isalpha() or not word.isascii():
        return word
    for suffix, replacement, shortest in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= shortest:
            return word[: len(word) - len(suffix)] + replacement
    return word


# (suffix, replacement, shortest stem left): first match wins.
_SUFFIXES = (
    ("sses", "ss", 2),
    ("ies", "y", 2),
    ("ss", "ss", 0),
    ("us", "us", 0),
    ("is", "is", 0),
    ("s", "", 3),
    ("ing", "", 3),
    ("ed", "", 3),
)


def terms(text: str, *, drop_stopwords: bool = False) -> list[str]:
    """Search terms of `text`, in order, repeats kept (counts matter for ranking).

    >>> terms("Run docker-compose up; 配置文件")
    ['run', 'docker-compose', 'docker', 'compose', 'up', '配置', '置文', '文件']
    """
    out: list[str] = []
    plain = text if text.isascii() else unicodedata.normalize("NFKC", text)  # ASCII: as is
    for match in _TOKEN.finditer(plain):
        token = match.group()
        if _CJK.match(token):
            if len(token) == 1:
                out.append(token)
            else:
                out.extend(token[i : i + 2] for i in range(len(token) - 1))
            continue
        out.extend(_word_terms(token, drop_stopwords))
    return out


@functools.lru_cache(maxsize=1 << 17)
def _word_terms(token: str, drop_stopwords: bool) -> tuple[str, ...]:
    """The terms of one Latin-script token. Cached: words repeat, and indexing a big
    folder spends most of its keyword time here otherwise."""
    token = token.lower()
    parts = [p for p in _PARTS.split(token) if p]
    if len(parts) > 1:
        kept = (stem(p) for p in parts if not (drop_stopwords and p in STOPWORDS))
        return (token, *kept)
    if drop_stopwords and token in STOPWORDS:
        return ()
    return (stem(token),)


def content_terms(text: str) -> list[str]:
    """`terms` without stop words: what a question is actually about."""
    return terms(text, drop_stopwords=True)


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


def is_cjk_term(term: str) -> bool:
    """A search term of CJK script (a bigram or single character), by its first letter."""
    return bool(term) and _CJK.match(term) is not None


CJK_TEXT = 0.3  # the share of CJK letters that makes a text Chinese or Japanese


def is_cjk(text: str) -> bool:
    """Whether a question or a passage is Chinese or Japanese: a third of its letters or so
    are CJK (an English word or two inside a Chinese sentence leaves it Chinese)."""
    return cjk_share(text) >= CJK_TEXT


def cjk_share(text: str) -> float:
    """The share of a text's letters and digits that are CJK: 0.0 for English, 1.0 for
    Chinese. Counted by regular expressions, not letter by letter in Python: a search asks
    it of every keyword candidate, and the loop was a third of a warm search."""
    letters = _NOT_ALNUM.sub("", text)
    return len(_CJK.findall(letters)) / len(letters) if letters else 0.0
