"""One question answered: rewrite, retrieve, (rerank), judge, generate or extract, check.

Every citation of the answer points at a real source: the model's reply is checked
([n] outside 1..k removed and reported, each cited sentence checked against its passage
when grounding is given), and when there is no model, or it fails, the answer quotes
the passages' own sentences. The model is called only through the `Chat` it is given;
nothing here prints.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from askmd.answer.citations import CITATION, check_citations, without_reference_list
from askmd.answer.extractive import NOTHING_FOUND, extractive
from askmd.answer.followup import resolve
from askmd.answer.prompt import build_messages
from askmd.answer.reasons import Reason, said
from askmd.answer.references import claims_by_source, references
from askmd.answer.result import Answer
from askmd.answer.sentences import SENTENCE
from askmd.errors import LLMFailed, first_line
from askmd.terms import has_cjk

if TYPE_CHECKING:
    from askmd.answer.chat import Chat
    from askmd.answer.grounding import Grounding
    from askmd.answer.result import Turn
    from askmd.search.hits import Hit

# Said instead of an answer when the passages found do not answer the question
# (grounding.judge), in the question's language; the nearest passages follow as pointers,
# and the first reason found (reasons.py) says why.
DECLINED = "Your notes don't seem to answer this."
DECLINED_ZH = "你的笔记里似乎没有这个问题的答案。"
NEAREST = 3  # passages shown as pointers under a declined answer


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
    (grounding.judge). Without a model its word is final: when they do not answer, the
    answer says so and points at the nearest passages. With a model it advises: the
    model reads the passages and says itself when they do not answer (its reply is read
    for that), unless no passage shares anything with the question (`unrelated`): a
    model shown unrelated passages tends to make an answer of them, and the user would
    wait for it. The judge's view stays as `confidence`, and its reasons as warnings over
    an answer given all the same. It also picks the extractive answer's sentences by
    meaning and checks that each sentence of a model's answer is supported by the
    passage it cites.

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
        result.reasons = list(verdict.reasons)
    if not hits:
        # a name the notes never write is why, said as a decline always says it (while
        # the vectors are stored only words are matched, and found nothing here)
        missing = ground.never_mentioned(query) if ground is not None else []
        result.text, result.answered = NOTHING_FOUND, False
        if missing:
            result.reasons = [Reason("unmentioned", tuple(missing))]
            decline(result, result.reasons)
    elif verdict is not None and not verdict.answered and (chat is None or unrelated(verdict)):
        decline(result, verdict.reasons)
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


def unrelated(verdict) -> bool:
    """Whether the evidence against the passages is overwhelming: the judge declines and
    none of them holds any of the question's words."""
    return not verdict.answered and verdict.coverage == 0


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
    checked = check_citations(without_reference_list(raw.strip()), len(result.hits))
    result.text = checked.text
    result.citations, result.invalid_citations = checked.cited, checked.invalid
    result.references = references(checked.text, checked.cited, result.hits)


def decline(result: Answer, reasons: Sequence[Reason] = (), keep_text: bool = False) -> None:
    """The notes do not answer: say so (or keep the model's own words saying it), cite
    nothing, and point at the nearest passages instead. The first of the reasons, in
    reasons.ORDER, says why: a name the notes never mention (the user may know it by
    another name the notes use), things no passage weighs together, a person or place
    no passage found names, a date no calendar has, other days' entries, a neighbour's
    value, a kind of value the closest passages do not give ("…give no price")."""
    if not keep_text:
        cjk = has_cjk(result.question)
        result.text = DECLINED_ZH if cjk else DECLINED
        why = said(reasons, cjk)
        if why:
            result.text += why if cjk else f" {why}"
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
    first = next(iter(SENTENCE.findall(CITATION.sub(" ", reply).strip())), "")
    return bool(_UNANSWERED.search(first))


UNSUPPORTED = (
    "*Unsupported: none of the passages this answer cites says what it says. Check it "
    "against them before relying on it.*"
)
UNSUPPORTED_ZH = "*未经证实：这个回答引用的段落都没有这样说。使用前请对照原文核实。*"


def check_support(result: Answer, ground: Grounding) -> None:
    """Each sentence of the answer that cites [n], checked against passage n: a citation
    the passage does not support is listed in `unsupported_citations` and its reference
    says so. The sentence itself stays: the reader decides, told what was checked."""
    claims = {n: said for n, said in claims_by_source(result.text, result.citations).items()}
    failed = ground.unsupported_claims(claims, result.hits)
    unsupported = sorted({n for n, _ in failed}, key=lambda n: list(claims).index(n))
    result.unsupported_citations = unsupported
    result.references = [replace(r, supported=r.n not in unsupported) for r in result.references]
    made = {(n, c) for n, said in claims.items() for c in said}
    if made and made <= set(failed):  # not one claim holds
        # said in the answer itself, wherever it is read (JSON, a saved file, the page)
        result.text = f"{UNSUPPORTED_ZH if has_cjk(result.question) else UNSUPPORTED}\n\n" + (
            result.text
        )


def _recorded(pieces: Iterable[str], into: list[str]) -> Generator[str, None, None]:
    """The pieces, each kept in `into` as it passes, so a Ctrl-C does not lose them."""
    for piece in pieces:
        into.append(piece)
        yield piece
