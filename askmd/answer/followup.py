"""Follow-up questions: whether a question leans on the one before, and the standalone
query searched for it (the model's rewrite, or without a model the better of the question
alone and the question read after the previous query)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from askmd.answer.limits import MAX_QUERY_CHARS
from askmd.answer.prompt import rewrite_messages
from askmd.terms import QUESTION_WORD_ZH, content_terms

if TYPE_CHECKING:
    from collections.abc import Callable

    from askmd.answer.chat import Chat
    from askmd.answer.result import Turn
    from askmd.search.hits import Hit

MAX_TURNS = 6  # earlier exchanges a follow-up rewrite may look back on
FOLLOW_UP_DEPTH = 1  # merged-search passages that may show a question is a follow-up

# Explicit signs that a question leans on the one before; without one, it stands alone
# ("what are properties?" after a Publish question is a new question, however short).
_CONNECTIVE = re.compile(
    r"^\s*(?:and|also|what about|how about|same for|as for)\b"
    r"|^\s*(?:那么|那(?![个些里儿])|还有|另外)",
    re.IGNORECASE,
)
# A pronoun stands for something said before...
_PRONOUN = re.compile(
    r"\b(?:it|its|they|them|their|theirs|he|him|his|she|her)\b|它|他们|她们|其中", re.I
)
# ...but not the "it" of "is it possible to…", which stands for what follows.
_DUMMY_IT = re.compile(
    r"\b(?:is|was|isn't|would|will)\s+it\s+(?:\w+\s+){1,2}?to\b|\bit(?:'s|\s+is|\s+was)\s+(?:\w+\s+){1,2}?to\b",
    re.IGNORECASE,
)
# A demonstrative points back when no noun of its own follows: "what does that mean?", not
# "how do I delete this note?" nor "the command that publishes notes".
_AFTER_DEMONSTRATIVE = (
    r"is|are|was|were|does|do|did|mean|means|meant|work|works|happen|happens|cost|take|"
    r"takes|need|needs|say|says|one|ones|for|in|on|with|about|too|also|again|true|right|"
    r"correct|normal|safe|enough|possible|necessary"
)
_DEMONSTRATIVE = re.compile(
    rf"\b(?:that|this|those|these)\b(?=\s*(?:[?？.!,，。]|$|(?:'s|{_AFTER_DEMONSTRATIVE})\b))"
    r"|\b(?<!\bis\s)(?<!\bare\s)(?<!\bwas\s)(?<!\bwere\s)there\b(?!'s|\s+(?:is|are|was|were|be)\b)"
    r"|\bones?\s*[?？.!]*\s*$"
    r"|(?:这个|那个|这些|那些|这)(?=\s*(?:[？?。，！!,]|$|呢|吗|是|怎么|要|能|可以|有|在|的|会|该))"
    r"|(?<!^)那(?=是)",  # a bare 那 at the start is "then" (`_CONNECTIVE`), not "that"
    re.IGNORECASE,
)
# "第一周呢？" is "what about the first week?"; "什么是属性呢？" asks on its own.
_ABOUT_PARTICLE = re.compile(r"呢\s*[？?]?\s*$")


def _points_back(question: str) -> bool:
    """A pronoun or a demonstrative that stands for something said before."""
    own = _DUMMY_IT.sub(" ", question)
    return bool(_PRONOUN.search(own) or _DEMONSTRATIVE.search(own))


def leans_on_context(question: str) -> bool:
    """Whether a question may lean on the previous one: it says so ("and…", "what about…",
    "那…呢"), points back ("how do I fix it?", "它"), or has no words of its own ("why?").
    Such a question is *ambiguous*, not a follow-up: `resolve` still searches it alone too.
    A short question with a subject of its own ("what are properties?") stands alone."""
    if _CONNECTIVE.search(question) or _points_back(question):
        return True
    if _ABOUT_PARTICLE.search(question) and not QUESTION_WORD_ZH.search(question):
        return True
    return not content_terms(question)


def merged_query(question: str, history: list[Turn]) -> str:
    """The question read after the previous query, cut to MAX_QUERY_CHARS (its end kept)."""
    room = MAX_QUERY_CHARS - len(question) - 1
    return f"{history[-1].query[:room]} {question}".strip() if room > 0 else question


def resolve(
    question: str,
    history: list[Turn],
    search: Callable[[str], list[Hit]],
    chat: Chat | None,
) -> tuple[str, list[Hit]]:
    """The query searched for `question` in this conversation, and what it found.

    A question that stands alone is searched alone, and the model is not asked to rewrite
    it. An ambiguous one is rewritten by the model when there is one; without a model it is
    searched both alone and after the previous query, and the search whose best passage
    better supports it wins (`_prefer_merged`). The chosen query is searched last, so a
    caller that shows each search's results ends on the one used.
    """
    if not history or not leans_on_context(question):
        return question, search(question)
    if chat is not None:
        rewritten = _clean_rewrite(chat.complete(rewrite_messages(question, history)))
        query = rewritten or merged_query(question, history)
        return query, search(query)
    merged = merged_query(question, history)
    own = set(content_terms(question))
    if not own or merged == question:
        return merged, search(merged)  # "why?", "那它呢？": nothing to search alone
    merged_hits = search(merged)
    alone_hits = search(question)
    before = set(content_terms(history[-1].query)) - own
    refers = _points_back(question)
    if _prefer_merged(own, before, alone_hits, merged_hits, refers):
        return merged, search(merged)
    return question, alone_hits


def _prefer_merged(
    own: set[str], before: set[str], alone: list[Hit], merged: list[Hit], refers: bool = False
) -> bool:
    """A follow-up's answer sits where the earlier topic and the new words meet.

    The merged search wins when its best passage holds words of both the question and the
    previous query, and as much of the question as the best passage found for the question
    alone. Only the best passage counts: it is what the answer will quote first (with the
    top 3, "and the metrics port?" after an upload question stayed merged because a table
    row further down names both, and the answer quoted the upload limit again; the pairs
    in bench/follow_up_pairs.jsonl: hit@1 0.818 with 3, 0.864 with 1).

    A question that points back ("how do I fix it?") needs only the earlier topic in that
    passage: its own words ("fix") are too few to find anything alone.
    """
    if not alone:
        return bool(merged)
    needed = _share(own, alone[0])
    return any(
        _share(before, h) > 0 and (refers or _share(own, h) >= needed)
        for h in merged[:FOLLOW_UP_DEPTH]
    )


def _share(wanted: set[str], hit: Hit) -> float:
    """The share of `wanted` terms found in a passage, its heading chain and file name."""
    if not wanted:
        return 0.0
    held = set(content_terms(f"{hit.source} {hit.heading_chain} {hit.text}"))
    return len(wanted & held) / len(wanted)


_REWRITE_LABEL = re.compile(r"^(?:rewritten question|question|query)\s*[:：]\s*", re.I)


def _clean_rewrite(reply: str) -> str:
    line = next((ln for ln in reply.strip().splitlines() if ln.strip()), "")
    line = _REWRITE_LABEL.sub("", line.strip())
    line = line.strip().strip("\"'“”「」")
    return line if 0 < len(line) <= MAX_QUERY_CHARS else ""
