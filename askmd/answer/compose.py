"""Turn retrieved passages into an answer whose every citation points at a real source.

Builds the [n]-numbered prompt, checks the citations in what the model wrote (numbers
outside 1..k are removed and reported), picks the quoted fragment for each reference, and
without an LLM composes an *extractive* answer from the passages' own sentences. Follow-up
questions are rewritten into standalone queries first. It calls the model only through
the `Chat` it is given and never prints.
"""

from __future__ import annotations

import math
import re
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from askmd.errors import LLMFailed, first_line
from askmd.search.query_translation import english_terms
from askmd.terms import content_terms, has_cjk
from chunker import pages_label

if TYPE_CHECKING:
    from askmd.answer.chat import Chat
    from askmd.answer.grounding import Grounding
    from askmd.search.retriever import Hit

SYSTEM_PROMPT = """\
You answer questions about the user's notes. Use only the numbered sources given with \
the question, never outside knowledge.
- Cite every claim with the number of its source in square brackets, like [1] or [1][3], \
right after the sentence it supports.
- If the sources do not contain the answer, say plainly that the notes do not say, and \
do not guess.
- Answer in the language of the question, even when the sources are in another language.
- Be brief: a few sentences or a short list.

Example. Sources: [1] garden.md › Tomatoes: "The tomatoes were planted on 12 April in the \
south bed." [2] travel.md: "The train to Lyon leaves at 9:10." Question: When were the \
tomatoes planted? Answer: On 12 April, in the south bed [1]."""

REWRITE_PROMPT = """\
Rewrite the user's last question so that it can be understood without the conversation: \
replace words like "it", "that" or "they" with what they refer to. Keep the language of \
the question. Reply with the rewritten question only, on one line. If it already stands \
alone, repeat it unchanged."""

ENABLE_GENERATION = (
    "No LLM is configured, so these are sentences quoted from your notes. For generated "
    "answers set OPENAI_API_KEY, or OPENAI_BASE_URL to a local server such as Ollama "
    "(http://localhost:11434/v1), or ASKMD_LOCAL_MODEL to a .gguf file."
)
NOTHING_FOUND = "Nothing in your notes matches this question."
# Said instead of an answer when the passages found do not answer the question
# (grounding.judge), in the question's language; the nearest passages follow as pointers.
DECLINED = "Your notes don't seem to answer this."
DECLINED_ZH = "你的笔记里似乎没有这个问题的答案。"
NEAREST = 3  # passages shown as pointers under a declined answer
MAX_TURNS = 6  # earlier exchanges a follow-up rewrite may look back on
FRAGMENT_CHARS = 240
# The longest question or query any interface accepts (the API refuses a longer one), and
# the longest query askmd itself makes of one: a follow-up read after the previous query,
# or a model's rewrite of it.
MAX_QUESTION_CHARS = 4000
MAX_QUERY_CHARS = 400
FOLLOW_UP_DEPTH = 1  # merged-search passages that may show a question is a follow-up


@dataclass(frozen=True)
class Turn:
    """One exchange of a conversation, kept to understand the next question."""

    question: str
    query: str
    answer: str


@dataclass(frozen=True)
class Reference:
    n: int
    source: str
    heading_chain: str
    line_start: int
    line_end: int
    text: str  # the quoted fragment: a verbatim piece of the passage
    page_start: int | None = None  # 1-based, for paged formats (PDF); else None
    page_end: int | None = None
    # False: the answer cites this passage for a sentence it does not say (checked after
    # an LLM's reply); None: not checked (an extractive answer quotes the passage itself)
    supported: bool | None = None

    def to_json(self) -> dict:
        return {
            "n": self.n,
            "source": self.source,
            "heading_chain": self.heading_chain,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "page_start": self.page_start,
            "page_end": self.page_end,
            "text": self.text,
            "supported": self.supported,
        }


def pointer(hit: Hit) -> dict:
    """Where a passage is, without quoting it: what a declined answer points to."""
    return {
        "source": hit.source,
        "heading_chain": hit.heading_chain,
        "line_start": hit.line_start,
        "line_end": hit.line_end,
    }


@dataclass
class Answer:
    question: str
    query: str  # what was searched: the question, or its standalone rewrite
    mode: str  # "llm" or "extractive"
    text: str = ""
    citations: list[int] = field(default_factory=list)
    invalid_citations: list[int] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)
    retrieval_ms: float = 0.0
    generation_ms: float = 0.0
    rerank_ms: float | None = None  # the second look at the passages; None: none was taken
    llm_error: str | None = None  # why the LLM gave no answer, when it failed: then extractive
    retriever: str = "hybrid"  # what ranked the passages: "keyword" while vectors are stored
    cancelled: bool = False  # Ctrl-C while it streamed: `text` is what had come, checked
    # Whether the notes answer the question (grounding.judge, or the LLM saying they do
    # not). When False, `text` says so, nothing is cited, and `nearest` points at the
    # closest passages.
    answered: bool = True
    confidence: float | None = None  # the judgement's confidence, 0..1; None: not judged
    nearest: list[Hit] = field(default_factory=list)
    unsupported_citations: list[int] = field(default_factory=list)  # cited, not supported
    # The days searched: the period the question names, else the --since/--until given
    # ({"since", "until"}, ISO); None when neither limited the search.
    dates: dict | None = None

    def to_json(self) -> dict:
        return {
            "question": self.question,
            "answer": self.text,
            "mode": self.mode,
            "citations": self.citations,
            "invalid_citations": self.invalid_citations,
            "references": [r.to_json() for r in self.references],
            "retrieval_ms": round(self.retrieval_ms, 1),
            "generation_ms": round(self.generation_ms, 1),
            "rerank_ms": None if self.rerank_ms is None else round(self.rerank_ms, 1),
            "query": self.query,
            "llm_error": self.llm_error,
            "retriever": self.retriever,
            "answered": self.answered,
            "confidence": None if self.confidence is None else round(self.confidence, 3),
            "nearest": [pointer(h) for h in self.nearest],
            "unsupported_citations": self.unsupported_citations,
            "dates": self.dates,
        }


# --- the whole exchange ----------------------------------------------------------------


def ask(
    question: str,
    history: list[Turn],
    search: Callable[[str], list[Hit]],
    chat: Chat | None,
    show: Callable[[Generator[str, None, None]], str] | None = None,
    rerank: Callable[[str, list[Hit]], list[Hit]] | None = None,
    ground: Grounding | None = None,
) -> Answer:
    """Rewrite, retrieve, (rerank), judge, generate (or extract), check. `show` displays
    the stream.

    `ground`, when given, first judges whether the passages answer the question at all
    (grounding.judge): when they do not, the answer says so and points at the nearest
    passages, and the model is not asked (a model shown unrelated passages tends to make
    an answer of them, and the user would wait for it). It also picks the extractive
    answer's sentences by meaning and checks that each sentence of a model's answer is
    supported by the passage it cites.

    `rerank`, when given, reorders the passages found for the query searched and keeps
    the ones to answer from; its time is rerank_ms, apart from retrieval and generation.

    When the model fails (a dead server, a refused key) the answer falls back to the
    extractive one over the same passages, and `llm_error` says why in one line.

    retrieval_ms is the search alone; generation_ms is all time spent in the LLM (the
    rewrite and the answer) or composing the extractive answer.
    """
    started = time.perf_counter()
    searched_ms: list[float] = []

    def timed_search(query: str) -> list[Hit]:
        began = time.perf_counter()
        try:
            return search(query)
        finally:
            searched_ms.append((time.perf_counter() - began) * 1000)

    llm_error = None
    try:
        query, hits = resolve(question, history, timed_search, chat)
    except LLMFailed as exc:  # the rewrite failed: search without the model
        llm_error, chat = first_line(exc), None
        query, hits = resolve(question, history, timed_search, None)
    reranked_ms = None
    if rerank is not None and hits:
        began = time.perf_counter()
        hits = rerank(query, hits)
        reranked_ms = (time.perf_counter() - began) * 1000
    result = Answer(question, query, "llm" if chat else "extractive", hits=hits)
    result.retrieval_ms = sum(searched_ms)
    result.rerank_ms = reranked_ms
    verdict = ground.judge(query, hits) if ground is not None and hits else None
    if verdict is not None:
        result.confidence = verdict.confidence
    if not hits:
        result.text, result.answered = NOTHING_FOUND, False
    elif verdict is not None and not verdict.answered:
        decline(result)
    elif chat is not None:
        try:
            _generate(result, chat, show)
        except LLMFailed as exc:  # keep what was retrieved: the notes' own sentences
            llm_error, result.mode = first_line(exc), "extractive"
        else:
            if says_unanswered(result.text):
                decline(result, keep_text=True)
            elif ground is not None and not result.cancelled:
                check_support(result, ground)
    if hits and result.answered and result.mode == "extractive":
        meaning = verdict.sentences if verdict is not None else None
        result.text, result.references = extractive(query, hits, meaning=meaning)
        result.citations = [r.n for r in result.references]
        result.invalid_citations = []
    result.llm_error = llm_error
    result.generation_ms = (
        (time.perf_counter() - started) * 1000 - result.retrieval_ms - (reranked_ms or 0.0)
    )
    return result


def _generate(result: Answer, chat: Chat, show: Callable | None) -> None:
    """The model's answer to `result`'s question, streamed through `show`, then checked."""
    pieces = chat.stream(build_messages(result.question, result.hits, result.query))
    received: list[str] = []
    try:
        raw = show(_recorded(pieces, received)) if show else "".join(pieces)
    except KeyboardInterrupt:
        if show is None:
            raise
        raw, result.cancelled = "".join(received), True  # what was shown stays, checked
    finally:
        pieces.close()  # on Ctrl-C too: ends the request, so the server stops generating
    if not raw.strip() and not result.cancelled:
        # A reply with no text (a reasoning model that spent its tokens thinking, a server
        # that puts the reply elsewhere) is a failure, not an answer: quote the notes.
        raise LLMFailed(
            "the LLM replied with no text (a reasoning model may need a higher "
            "ASKMD_LLM_MAX_TOKENS, or choose another model)."
        )
    checked = check_citations(raw.strip(), len(result.hits))
    result.text = checked.text
    result.citations, result.invalid_citations = checked.cited, checked.invalid
    result.references = references(checked.text, checked.cited, result.hits)


def decline(result: Answer, keep_text: bool = False) -> None:
    """The notes do not answer: say so (or keep the model's own words saying it), cite
    nothing, and point at the nearest passages instead."""
    if not keep_text:
        result.text = DECLINED_ZH if has_cjk(result.question) else DECLINED
    result.answered = False
    result.citations, result.references, result.unsupported_citations = [], [], []
    result.nearest = result.hits[:NEAREST]


# A model's reply that says the sources do not hold the answer, in its first sentence
# ("The notes don't mention…", "I couldn't find…", "笔记中没有提到…").
_UNANSWERED = re.compile(
    r"\b(?:notes?|sources?|passages?|context|documents?|texts?|information provided)\b"
    r"[^.!?\n]{0,80}?\b(?:do(?:es)?\s+not|don[’']t|doesn[’']t|never|fails? to)\s+"
    r"(?:\w+\s+){0,2}?(?:say|mention|contain|include|cover|provide|specify|answer|address|"
    r"discuss|state|describe|give|explain|tell)"
    r"|\bno\s+(?:information|mention|details?|answer)\b"
    r"|\b(?:cannot|can[’']t|could\s+not|couldn[’']t|unable\s+to)\s+(?:find|answer|determine|tell)"
    r"|\bnot\s+(?:mentioned|covered|specified|found|stated|included|described)\s+in\b"
    r"|(?:没有|并未|未|不曾)(?:提到|提及|说明|涉及|包含|给出|记录|相关|找到|回答)"
    r"|无法(?:回答|确定|找到|得知)|不包含",
    re.IGNORECASE,
)


def says_unanswered(reply: str) -> bool:
    """Whether a model's reply is the notes-do-not-say answer: its first sentence says
    so. A reply that answers and only adds what the notes leave out says it later."""
    first = next(iter(_SENTENCE.findall(_CITATION.sub(" ", reply).strip())), "")
    return bool(_UNANSWERED.search(first))


def check_support(result: Answer, ground: Grounding) -> None:
    """Each sentence of the answer that cites [n], checked against passage n: a citation
    the passage does not support is listed in `unsupported_citations` and its reference
    says so. The sentence itself stays: the reader decides, told what was checked."""
    claims = {n: said for n, said in claims_by_source(result.text, result.citations).items()}
    unsupported = ground.unsupported(claims, result.hits)
    result.unsupported_citations = unsupported
    result.references = [replace(r, supported=r.n not in unsupported) for r in result.references]


def _recorded(pieces: Iterable[str], into: list[str]) -> Generator[str, None, None]:
    """The pieces, each kept in `into` as it passes, so a Ctrl-C does not lose them."""
    for piece in pieces:
        into.append(piece)
        yield piece


# --- prompts ---------------------------------------------------------------------------


def build_messages(question: str, hits: list[Hit], query: str = "") -> list[dict]:
    """System rules, then the sources numbered [1]..[k] with file and heading chain."""
    sources = "\n\n".join(
        f"[{n}] {_label(hit)}\n{neutralise_citations(hit.text.strip())}"
        for n, hit in enumerate(hits, start=1)
    )
    asked = f"Question: {question}"
    if query and query != question:
        asked += f"\n(In this conversation that means: {query})"
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"Sources:\n\n{sources}\n\n{asked}"},
    ]


def _label(hit: Hit) -> str:
    chain = f" › {hit.heading_chain}" if hit.heading_chain else ""
    pages = pages_label(hit.page_start, hit.page_end)
    if pages:
        return f"{hit.source} {pages}{chain}"
    return f"{hit.source}{chain} (lines {hit.line_start}–{hit.line_end})"


# --- follow-up questions ---------------------------------------------------------------

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
_QUESTION_WORD = re.compile(r"什么|怎么|怎样|如何|哪|谁|几|多少|为什么|为何|是否|吗")


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
    if _ABOUT_PARTICLE.search(question) and not _QUESTION_WORD.search(question):
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
        rewritten = _clean_rewrite(chat.complete(_rewrite_messages(question, history)))
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


def _rewrite_messages(question: str, history: list[Turn]) -> list[dict]:
    lines = []
    for turn in history[-3:]:
        said = " ".join(re.sub(rf"[ \t]*(?:{_ONE})", "", turn.answer, flags=re.I).split())
        lines += [f"User: {turn.question}", f"Assistant: {said[:400]}"]
    conversation = "\n".join(lines)
    return [
        {"role": "system", "content": REWRITE_PROMPT},
        {
            "role": "user",
            "content": f"Conversation:\n{conversation}\n\nLast question: {question}\n\n"
            "Rewritten question:",
        },
    ]


_REWRITE_LABEL = re.compile(r"^(?:rewritten question|question|query)\s*[:：]\s*", re.I)


def _clean_rewrite(reply: str) -> str:
    line = next((ln for ln in reply.strip().splitlines() if ln.strip()), "")
    line = re.sub(
        r"^(?:rewritten question|question|query)\s*[:：]\s*", "", line.strip(), flags=re.I
    )
    line = line.strip().strip("\"'“”「」")
    return line if 0 < len(line) <= MAX_QUERY_CHARS else ""


# --- citations -------------------------------------------------------------------------

# [1] [1][2] [1, 2] [1-3] [^1] [Source 2] 【1】 ［1，2］ — numbers joined by , ; 、 - – ~ "and".
_NUMBERS = (  # any count of digits: [99999] is an invalid citation, not plain text
    r"\s*(?:\^|sources?\s*|来源\s*)?(\d+(?:\s*(?:[,，、;；\-–—~～]|and|to)\s*\d+)*)\s*"
)
_ONE = rf"\[{_NUMBERS}\]|【{_NUMBERS}】|［{_NUMBERS}］"
_CITATION = re.compile(_ONE, re.IGNORECASE)
_CITATION_RUN = re.compile(rf"(?:{_ONE})(?:[ \t]*(?:{_ONE}))*", re.IGNORECASE)
_CODE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?(?:^ {0,3}\1[ \t]*$|\Z)|`[^`\n]+`", re.M | re.S)
MAX_RANGE = 50


@dataclass(frozen=True)
class CitationCheck:
    text: str  # with the invalid numbers removed and each citation written [n][m]
    cited: list[int]  # valid numbers, in order of first appearance
    invalid: list[int]  # numbers outside 1..k, in order of first appearance


def check_citations(text: str, k: int) -> CitationCheck:
    """Keep citations of sources 1..k, drop the rest; code spans are left alone.

    >>> check_citations("Port 8420 [1, 7]. Redis 【2】.", 2).text
    'Port 8420 [1]. Redis [2].'
    """
    text = _visible_brackets(text)
    code: list[tuple[int, int]] = []
    cited: list[int] = []
    invalid: list[int] = []

    def replace(match: re.Match) -> str:
        if any(start <= match.start() < end for start, end in code):
            return match.group()
        numbers = _numbers(match.group())
        keep = []
        for n in numbers:
            bucket = keep if 1 <= n <= k else invalid
            if n not in bucket:
                bucket.append(n)
        for n in keep:
            if n not in cited:
                cited.append(n)
        return "".join(f"[{n}]" for n in keep) or "\0"  # \0: removed, tidy the space below

    replaced, previous = text, None
    while replaced != previous:  # removing "[7]" from "[1 [7]]" makes a new citation
        previous = replaced
        code[:] = [m.span() for m in _CODE.finditer(replaced)]
        replaced = re.sub(r"[ \t]*\0", "", _CITATION_RUN.sub(replace, replaced))
    return CitationCheck(replaced, cited, list(dict.fromkeys(invalid)))


def _numbers(run: str) -> list[int]:
    """Every number a run of adjacent citations names, ranges expanded, in order."""
    return [
        n
        for m in _CITATION.finditer(run)
        for n in _expand(next(g for g in m.groups() if g is not None))
    ]


def _expand(group: str) -> list[int]:
    numbers: list[int] = []
    for part in re.split(r"\s*(?:[,，、;；]|and)\s*", group, flags=re.I):
        ends = [int(x) for x in re.split(r"\s*(?:[\-–—~～]|to)\s*", part, flags=re.I) if x]
        if len(ends) == 2 and 0 <= abs(ends[1] - ends[0]) <= MAX_RANGE:
            low, high = sorted(ends)
            numbers.extend(range(low, high + 1))
        else:
            numbers.extend(ends)
    return numbers


_BRACKETED = re.compile(r"[\[【［][^\]】］\n]{0,60}[\]】］]")


def _visible_brackets(text: str) -> str:
    """Brackets without the invisible format characters inside them: "[\u200b9]" is a
    citation of 9 to a reader, so it must be one to the checker too."""
    return _BRACKETED.sub(
        lambda m: "".join(c for c in m.group() if unicodedata.category(c) != "Cf"), text
    )


_PLAIN_NUMBER = {"[": "(", "]": ")", "【": "（", "】": "）", "［": "（", "］": "）"}


def neutralise_citations(text: str) -> str:
    """Note text with its own bracketed numbers written in parentheses, outside code.

    A note saying "30 days [2]" means its own footnote, not source 2 of an answer: quoted
    in an answer or shown to the model as a source, it must not read as a citation.
    "(2)" reads naturally and no citation pattern matches it.
    """
    text = _visible_brackets(text)
    code = [m.span() for m in _CODE.finditer(text)]

    def plain(match: re.Match) -> str:
        if any(start <= match.start() < end for start, end in code):
            return match.group()
        return "".join(_PLAIN_NUMBER.get(c, c) for c in match.group())

    return _CITATION.sub(plain, text)


# --- references and fragments ----------------------------------------------------------

_SENTENCE = re.compile(r"[^\n]+?(?:[.!?](?=\s)|[。！？；]+|$)", re.M)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SKIP_LINE = re.compile(r"^\s*(?:#{1,6}\s|\|?\s*:?-{3,}|[-*_]{3,}\s*$|<!--)")
# A table's delimiter row: GitHub's needs one hyphen a cell ("|:-|-:|"); without a pipe,
# three (a bare "--" is not one).
_TABLE_RULE = re.compile(r"^(?=.*(?:\||-{3}))\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+|^\s*>\s?")


# A line that only shows a picture or another note (`![[diagram.png]]`, `![alt](a.png)`):
# nothing to quote as an answer.
_EMBED_ONLY = re.compile(r"^(?:!\[\[[^\]]*\]\]|!\[[^\]]*\]\([^)]*\)|\s)+$")


# A line shaped like askmd's own reference line ("[1] notes/a.md › Heading (lines 3–5)",
# or "(1) …", as a note's own brackets are shown), and the quoted fragment under it: a
# note holding them mimics an answer; quoting them would pass its words off as cited.
_REFERENCE_LINE = re.compile(
    r"^\s*[\[(（［【]\s*\d+\s*[\])）］】]\s+\S.*?(?:›|\((?:lines?|p\.)\s*\d+[^)]*\))"
)
_FRAGMENT_LINE = re.compile(r'^\s*["“「『].*["”」』]\s*$')


def sentences(text: str) -> list[str]:
    """The prose sentences of a passage, verbatim; headings, code and lines shaped like
    askmd's own reference list are left out."""
    out: list[str] = []
    fence = ""  # the open fence's marker; a closer is the same character, at least as long
    lines = text.splitlines()
    after_reference = False
    for i, line in enumerate(lines):
        marker = _FENCE.match(line)
        if marker and not fence:
            fence = marker.group(1)
            continue
        if fence:
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence):
                if not line.strip().strip(fence[0]):
                    fence = ""
            continue
        if not line.strip() or _SKIP_LINE.match(line):
            continue
        if _REFERENCE_LINE.match(line) or (after_reference and _FRAGMENT_LINE.match(line)):
            after_reference = True
            continue
        after_reference = False
        if i + 1 < len(lines) and _TABLE_RULE.match(lines[i + 1]):
            continue  # a table's header row says nothing by itself
        mark = _LIST_MARK.match(line)
        for m in _SENTENCE.finditer(line, mark.end() if mark else 0):
            sentence = m.group().strip()
            if content_terms(sentence) and not _EMBED_ONLY.match(sentence):
                out.append(sentence)
    return out


def _trim(sentence: str, limit: int = FRAGMENT_CHARS) -> str:
    """Cut at a word boundary (or anywhere in CJK), keeping a verbatim prefix."""
    if len(sentence) <= limit:
        return sentence
    cut = sentence[:limit]
    if not has_cjk(cut) and " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:")


def _idf(pool: Iterable[list[str]]) -> Callable[[str], float]:
    docs = [set(t) for t in pool]
    counts = Counter(t for d in docs for t in d)
    n = max(1, len(docs))
    return lambda term: math.log(1 + (n + 1) / (counts.get(term, 0) + 0.5))


_INLINE_CODE = re.compile(r"`[^`\n]+`")


def _weights(sentence: str) -> dict[str, float]:
    """A sentence's terms; those only inside `code` count half: a path or identifier
    merely mentioned ("see `backup/restore.md`") says less than prose about it."""
    weights = dict.fromkeys(content_terms(sentence), 0.5)
    weights.update(dict.fromkeys(content_terms(_INLINE_CODE.sub(" ", sentence)), 1.0))
    return weights


def _overlap(query: set[str], sentence: dict[str, float], idf: Callable[[str], float]) -> float:
    """The idf-weighted share of the query's terms that the sentence holds."""
    total = sum(idf(t) for t in query)
    return sum(idf(t) * sentence[t] for t in query if t in sentence) / total if total else 0.0


def _best_fragment(hit: Hit, about: str) -> str:
    """The sentence of the passage that shares most with `about`, else its first one."""
    found = sentences(hit.text)
    if not found:
        return _trim(hit.text.strip())
    pool = [content_terms(s) for s in found]
    idf = _idf(pool)
    want = set(content_terms(about))
    best = max(range(len(found)), key=lambda i: (_overlap(want, _weights(found[i]), idf), -i))
    return _trim(found[best])


def claims_by_source(text: str, cited: list[int]) -> dict[int, list[str]]:
    """For each cited number, the sentences of the answer that cite it, without their
    citations: a citation after a sentence of no words of its own ("Backups run at 2am.
    [1]") is the previous sentence's."""
    claims: dict[int, list[str]] = {n: [] for n in cited}
    said = ""
    for sentence in _SENTENCE.findall(text):
        words = _CITATION.sub(" ", sentence)
        if content_terms(words):
            said = " ".join(_LIST_MARK.sub("", words).split())
        for n in _numbers(sentence):
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
        out.append(
            Reference(
                n,
                hit.source,
                hit.heading_chain,
                hit.line_start,
                hit.line_end,
                fragment,
                hit.page_start,
                hit.page_end,
            )  # fmt: skip
        )
    return out


# --- the extractive answer -------------------------------------------------------------


def extractive(
    query: str,
    hits: list[Hit],
    max_sentences: int = 3,
    meaning: dict[str, float] | None = None,
) -> tuple[str, list[Reference]]:
    """The sentences of the top passages that best answer the query, each cited.

    A sentence is scored by its closeness in meaning to the query (`meaning`: cosines
    from grounding, when given) and by how much of the query's (idf-weighted) terms it
    holds, read together with its passage's heading chain: in notes a heading often asks
    the question its first sentences answer ("## Maximum upload size?" / "50 MB per
    photo."), so among equals the earlier sentence and the better-ranked passage win. A
    how-to question prefers a step to a definition (INSTRUCTION). At most PER_PASSAGE
    sentences come from one passage. When nothing is near (no shared term, no meaning
    given), the first sentence of the best passage stands in. A Chinese question's words
    count in English too (query_translation), so an English note can answer it. The
    sentences are shown by passage (PASSAGE_ORDER), each passage's reference quoting its
    best one.
    """
    candidates: list[tuple[int, str, float, dict[str, float]]] = []
    for n, hit in enumerate(hits, start=1):
        heading = dict.fromkeys(content_terms(hit.heading_chain), 1.0)
        for position, sentence in enumerate(sentences(hit.text)):
            # (passage number, sentence, bonus for coming early, terms with the heading's)
            bonus = 0.1 / (position + 1) + 0.05 / n
            candidates.append((n, sentence, bonus, {**heading, **_weights(sentence)}))
    if not candidates:
        return NOTHING_FOUND, []
    idf = _idf([list(c[3]) for c in candidates])
    want = set(content_terms(query))
    if TRANSLATED_WORDS and has_cjk(query):
        want.update(english_terms(query))  # so an English note's sentences can answer it
    scores = []
    how_to = bool(_HOW_TO.search(query))
    for _, sentence, bonus, weights in candidates:
        overlap = _overlap(want, weights, idf)
        near = _meaning(meaning, sentence)
        # a question (a FAQ's) restates what was asked; it answers nothing
        relevant = (overlap > 0 or near > 0) and not _QUESTION.search(sentence)
        steps = INSTRUCTION if how_to and _INSTRUCTION.search(sentence) else 0.0
        scores.append(LEXICAL * overlap + near + bonus + steps if relevant else 0.0)
    ranked = sorted((i for i in range(len(candidates)) if scores[i] > 0), key=lambda i: -scores[i])
    chosen: list[int] = []
    per_hit: Counter[int] = Counter()
    for i in ranked:
        n, sentence = candidates[i][:2]
        if len(chosen) == max_sentences or scores[i] < RELATIVE * scores[ranked[0]]:
            break
        if per_hit[n] < PER_PASSAGE and sentence not in {candidates[j][1] for j in chosen}:
            chosen.append(i)
            per_hit[n] += 1
    if not chosen:  # the first sentence that is not a question stands in
        asks = [bool(_QUESTION.search(c[1])) for c in candidates]
        chosen = [asks.index(False) if False in asks else 0]
    best: dict[int, str] = {}  # a passage's reference quotes its best-scored sentence
    for i in chosen:
        best.setdefault(candidates[i][0], candidates[i][1])
    if PASSAGE_ORDER:
        chosen.sort()  # candidates are in (passage, position) order
    lines, refs, seen, attached = [], [], set(), ""
    for i in chosen:
        n, sentence = candidates[i][:2]
        if sentence in attached:
            continue  # already shown as part of the steps an earlier sentence introduced
        quoted = _trim(sentence)
        shown = display_text(neutralise_citations(_cells(quoted, hits[n - 1].text)))
        lines.append(f"- {shown}{'' if quoted == sentence else ' …'} [{n}]")
        block = _introduced_block(hits[n - 1].text, sentence) if quoted == sentence else ""
        if block:
            attached += block
            lines.append(_indent(_display_block(block)))
        if n not in seen:
            seen.add(n)
            hit = hits[n - 1]
            refs.append(
                Reference(
                    n,
                    hit.source,
                    hit.heading_chain,
                    hit.line_start,
                    hit.line_end,
                    _trim(best[n]),
                    hit.page_start,
                    hit.page_end,
                )  # fmt: skip
            )
    return "\n".join(lines), refs


# A sentence's score: LEXICAL x its idf-weighted share of the question's words, plus how
# far its cosine with the question (grounding: the model that reads the question's
# language) passes MEANING_FLOOR, times MEANING. Paraphrased questions share few words
# with the sentence that answers them; measured with eval --answers (BENCHMARKS.md,
# "Extractive answers by meaning").
# Over the answer sets (gold recall, answer / top chunk length; before: lexical only,
# two a passage): Obsidian EN 0.448 -> 0.548 (0.58 -> 0.65), Chinese questions of English
# notes 0.312 -> 0.390 (0.62 -> 0.72), tldr ZH 0.376 -> 0.526 (0.21 -> 0.33).
LEXICAL = 0.5
MEANING = 1.0
MEANING_FLOOR = 0.1
PER_PASSAGE = 3  # sentences quoted from one passage, at most
RELATIVE = 0.6  # a sentence scoring under this share of the best one is not quoted


# A "how do I…" question is answered by a step, not by a definition: "To register a
# command, call addCommand() inside onload():" over "Commands are actions the user can
# invoke", which reads closer to the question. Such a sentence gets INSTRUCTION more.
INSTRUCTION = 0.25
_HOW_TO = re.compile(
    r"^\s*(?:how\b|where\b|what\s+(?:command|option|setting|method)|can\s+i\b)|"
    r"(?:如何|怎么|怎样|咋|如何才能|用什么)",
    re.IGNORECASE,
)
_INSTRUCTION = re.compile(
    r"^(?:to\s+\w+|use|call|run|click|select|open|go\s+to|press|choose|set|add|create|"
    r"enable|type|install|pass|return|register)\b|[:：]\s*$|\b(?:use|call|run)\s+`"
    r"|^(?:使用|运行|执行|调用|点击|打开|选择|设置|输入|安装|创建|添加|用)",
    re.IGNORECASE,
)


def _meaning(meaning: dict[str, float] | None, sentence: str) -> float:
    if not meaning or sentence not in meaning:
        return 0.0
    return MEANING * max(0.0, meaning[sentence] - MEANING_FLOOR)


# The chosen sentences are shown in the order of their passages (the search's ranking,
# which reads meaning) and within one passage as written, not by how many of the
# question's words each holds.
PASSAGE_ORDER = True
TRANSLATED_WORDS = True
_QUESTION = re.compile(r"[?？]\s*(?:\*\*|__)?\s*$")
_INTRODUCES = re.compile(r"[:：]\s*(?:\*\*|__)?\s*$")
BLOCK_LINES = 12  # an introduced list or code block is shown up to this many lines
BLOCK_CHARS = 800


def _introduced_block(text: str, sentence: str) -> str:
    """The list, steps, code block or paragraph that a sentence ending in a colon
    introduces (none when a heading follows it).

    "To embed a note:" says nothing alone; the answer is what follows it. The block is
    taken verbatim, up to BLOCK_LINES lines and BLOCK_CHARS characters (a cut code block
    is closed again, so what follows it is not shown as code).
    """
    if not _INTRODUCES.search(sentence):
        return ""
    at = text.find(sentence)
    end = text.find("\n", at + len(sentence)) if at >= 0 else -1
    if at < 0 or end < 0 or text[at + len(sentence) : end].strip():
        return ""  # not the end of its line: something else follows on it
    lines = text[end + 1 :].splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return ""
    fence = _FENCE.match(lines[0])
    if fence:
        marker = fence.group(1)
        block = [lines[0]]
        for line in lines[1:]:
            block.append(line)
            if line.strip().startswith(marker) and not line.strip().strip(marker[0]):
                break
        return _capped(block, marker)
    if _SKIP_LINE.match(lines[0]):
        return ""  # a heading or a rule: the section ends at the colon
    steps = bool(_STEP.match(lines[0]))
    block = []
    for line in lines:
        if not line.strip() or _SKIP_LINE.match(line) and not _TABLE_RULE.match(line):
            break
        if steps and not (_STEP.match(line) or line[:1].isspace()):
            break  # the list ended
        block.append(line)
    return _capped(block, "")


_STEP = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+")
_CELL_BORDER = re.compile(r"(?<!\\)\|")


def _cells(sentence: str, passage: str = "") -> str:
    """A table row quoted as an answer, each cell under its column's name when the
    passage holds the header: "| staging | 2 |" -> "env: staging — replicas: 2" (the row
    alone says nothing of what 2 counts); without one, the cells: "`a` — b"."""
    if not sentence.startswith("|") or sentence.count("|") < 2:
        return sentence
    cells = _row(sentence)
    names = _header_of(passage, sentence)
    shown = [
        f"{names[i]}: {c}" if i < len(names) and names[i] else c for i, c in enumerate(cells) if c
    ]
    return " — ".join(shown) or sentence


def _row(line: str) -> list[str]:
    return [c.strip() for c in _CELL_BORDER.split(line.strip().strip("|"))]


def _header_of(passage: str, sentence: str) -> list[str]:
    """The column names of the table a row quoted from `passage` belongs to, if the
    passage holds its header row (a long table's rows can be chunked without it)."""
    lines = passage.splitlines()
    at = next((i for i, line in enumerate(lines) if sentence in line), None)
    if at is None:
        return []
    for i in range(at - 1, 0, -1):
        if _TABLE_RULE.match(lines[i]):
            return _row(lines[i - 1]) if lines[i - 1].lstrip().startswith("|") else []
        if not lines[i].lstrip().startswith("|"):
            return []
    return []


def _capped(block: list[str], fence: str) -> str:
    kept: list[str] = []
    size = 0
    for line in block:
        if len(kept) == BLOCK_LINES or size + len(line) > BLOCK_CHARS:
            kept.append("…")
            if fence:
                kept.append(fence)
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept)


def _indent(block: str) -> str:
    """A block shown under its bullet: indented to belong to it."""
    return "\n".join(f"  {line}" if line.strip() else "" for line in block.splitlines())


def _display_block(block: str) -> str:
    """A list's link syntax becomes its display text; a code block stays exactly as written."""
    if _FENCE.match(block):
        return block
    return display_text(neutralise_citations(block))


_WIKI = re.compile(r"(!?)\[\[([^\]|\n]+?)(?:\|([^\]\n]+))?\]\]")
_MD_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\s]+(?:\s+\"[^\"]*\")?\)")


def display_text(text: str) -> str:
    """Link syntax as a reader sees it, outside code: `[[Daily notes]]` → Daily notes,
    `[[Internal links#Link to a heading|headings]]` → headings, `[[Page#Part]]` →
    Page › Part, `[text](url)` → text. References keep quoting the file verbatim."""
    code = [m.span() for m in _CODE.finditer(text)]

    def outside(match: re.Match) -> bool:
        return not any(start <= match.start() < end for start, end in code)

    def wiki(match: re.Match) -> str:
        if not outside(match):
            return match.group()
        target, alias = match.group(2), match.group(3)
        if alias:
            return alias.strip()
        page, _, part = target.partition("#")
        part = part.lstrip("^")
        return (
            f"{page.strip()} › {part.strip()}" if page.strip() and part else (page or part).strip()
        )

    def markdown(match: re.Match) -> str:
        return match.group(1) if outside(match) else match.group()

    text = _WIKI.sub(wiki, text)
    code = [m.span() for m in _CODE.finditer(text)]
    return _MD_LINK.sub(markdown, text)
