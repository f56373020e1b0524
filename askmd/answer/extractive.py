"""The answer without an LLM: the sentences of the passages found that best answer the
question, quoted verbatim and each cited."""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

from askmd.answer import answer_kinds, dated
from askmd.answer.citations import neutralise_citations
from askmd.answer.display import (
    balanced_emphasis,
    display_block,
    display_text,
    indent,
    introduced_block,
    introduces_nothing,
    labelled_row,
)
from askmd.answer.overlap import query_share, term_idf, term_weights
from askmd.answer.result import Reference
from askmd.answer.sentences import sentences, trim
from askmd.search.query_translation import english_terms
from askmd.terms import content_terms, has_cjk

if TYPE_CHECKING:
    from askmd.search.hits import Hit

ENABLE_GENERATION = (
    "No LLM is configured, so these are sentences quoted from your notes. For generated "
    "answers set OPENAI_API_KEY, or OPENAI_BASE_URL to a local server such as Ollama "
    "(http://localhost:11434/v1), or ASKMD_LOCAL_MODEL to a .gguf file."
)
NOTHING_FOUND = "Nothing in your notes matches this question."


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
    how-to question prefers a step to a definition (INSTRUCTION), and a question for a
    kind of value the sentence about it that gives one (VALUE). At most PER_PASSAGE
    sentences come from one passage, `max_sentences` in all, or a few more while they
    are short (SHORT_QUOTE); one whose words are mostly quoted already gives way to the
    next (REPEATS). When nothing is near (no shared term, no meaning
    given), the first sentence of the best passage stands in. A Chinese question's words
    count in English too (query_translation), so an English note can answer it. The
    sentences are shown by passage (PASSAGE_ORDER), each passage's reference quoting its
    best one.
    """
    candidates: list[tuple[int, str, float, dict[str, float]]] = []
    heading_of: list[set[str]] = []
    for n, hit in enumerate(hits, start=1):
        heading = dict.fromkeys(content_terms(hit.heading_chain), 1.0)
        for position, sentence in enumerate(sentences(hit.text)):
            # (passage number, sentence, bonus for coming early, terms with the heading's)
            bonus = EARLY / (position + 1) + RANKED / n
            candidates.append((n, sentence, bonus, {**heading, **term_weights(sentence)}))
            heading_of.append(set(heading) - set(term_weights(sentence)))
    if not candidates:
        return NOTHING_FOUND, []
    idf = term_idf([list(c[3]) for c in candidates])
    want = set(content_terms(query))
    if TRANSLATED_WORDS and has_cjk(query):
        want.update(english_terms(query))  # so an English note's sentences can answer it
    scores = []
    how_to = bool(_HOW_TO.search(query))
    kinds = answer_kinds.asked(query)
    echoed = answer_kinds.echoed_words(query)
    for _, sentence, bonus, weights in candidates:
        overlap = query_share(want, weights, idf)
        near = _meaning(meaning, sentence)
        # a question (a FAQ's) restates what was asked; it answers nothing
        relevant = (overlap > 0 or near > 0) and not _QUESTION.search(sentence)
        steps = INSTRUCTION if how_to and _INSTRUCTION.search(sentence) else 0.0
        gives = any(answer_kinds.gives(k, sentence, echoed, figure=True) for k in kinds)
        value = VALUE if gives and overlap > 0 else 0.0  # a value about what was asked
        scores.append(LEXICAL * overlap + near + bonus + steps + value if relevant else 0.0)
    # A question naming a day: the entries of other days are not quoted while one of
    # that day is ("- 2025-03-09: 24:58" for the run of 2025-03-16)
    period = dated.asked(query, hits)
    if period is not None:
        days = [dated.of_period(c[1], hits[c[0] - 1], period) for c in candidates]
        if any(days[i] and score > 0 for i, score in enumerate(scores)):
            scores = [0.0 if days[i] is False else score for i, score in enumerate(scores)]
    # A label whose list or code the passage does not hold ("要点：" before a heading) says
    # nothing alone: it gives way to any sentence that is quoted beside it.
    empty = [introduces_nothing(hits[c[0] - 1].text, c[1]) for c in candidates]
    enough = RELATIVE * max(scores)
    if any(score >= enough > 0 and not empty[i] for i, score in enumerate(scores)):
        scores = [0.0 if empty[i] else score for i, score in enumerate(scores)]
    ranked = sorted((i for i in range(len(candidates)) if scores[i] > 0), key=lambda i: -scores[i])
    chosen: list[int] = []
    per_hit: Counter[int] = Counter()
    for i in ranked:
        n, sentence = candidates[i][:2]
        if scores[i] < RELATIVE * scores[ranked[0]]:
            break
        if len(chosen) >= max_sentences:  # more only while the quote stays short
            quoted = sum(len(candidates[j][1]) for j in chosen) + len(sentence)
            if len(chosen) >= max_sentences + MORE_SENTENCES or quoted > SHORT_QUOTE:
                break
        if per_hit[n] < PER_PASSAGE and sentence not in {candidates[j][1] for j in chosen}:
            if chosen and _repeats(i, chosen, candidates, heading_of, hits):
                continue
            chosen.append(i)
            per_hit[n] += 1
    if not chosen:  # the first sentence that is not a question stands in
        asks = [bool(_QUESTION.search(c[1])) for c in candidates]
        chosen = [asks.index(False) if False in asks else 0]
    best: dict[int, str] = {}  # a passage's reference quotes its best-scored sentence
    for i in chosen:
        best.setdefault(candidates[i][0], candidates[i][1])
    if PASSAGE_ORDER:  # candidates are in (passage, position) order
        lead: dict[int, int] = {}  # each passage's place: where its best sentence ranked
        for i in chosen:
            lead.setdefault(candidates[i][0], len(lead))
        chosen.sort(key=lambda i: (lead[candidates[i][0]], i))
    lines, refs, seen, attached = [], [], set(), ""
    for i in chosen:
        n, sentence = candidates[i][:2]
        if sentence in attached:
            continue  # already shown as part of the steps an earlier sentence introduced
        quoted = trim(sentence)
        shown = balanced_emphasis(labelled_row(quoted, hits[n - 1].text))
        shown = display_text(neutralise_citations(shown))
        lines.append(f"- {shown}{'' if quoted == sentence else ' …'} [{n}]")
        block = introduced_block(hits[n - 1].text, sentence) if quoted == sentence else ""
        if block:
            attached += block
            lines.append(indent(display_block(block)))
        if n not in seen:
            seen.add(n)
            hit = hits[n - 1]
            refs.append(Reference.of(n, hit, trim(best[n])))
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
# Past `max_sentences`, up to MORE_SENTENCES more while all the quoted sentences stay
# within SHORT_QUOTE characters: short sentences say less each (a command reference's
# one-line descriptions, Chinese). Measured with `python -m bench.answers_bench`: gold
# recall tldr ZH 0.515 -> 0.574 (answer 0.33 -> 0.52 of the top chunk's length), the
# typed tldr set 0.793 -> 0.863; English, whose three sentences already pass 250
# characters, unchanged (BENCHMARKS.md, "Extractive answers"); 3 (was 2) with REPEATS
# below.
MORE_SENTENCES = 3
SHORT_QUOTE = 250
# Among sentences that say about as much, the earlier one in its passage (EARLY / its
# position) and the one of the better-ranked passage (RANKED / its rank) win: the search
# reads meaning and the whole passage, and its first passage is most often the one that
# answers, while a lower passage listing every variant shares as many words. The bonus
# also lets more of the first passage pass RELATIVE, which is where most of the gain is
# (cutting by the score without it lost it all). RANKED 0.05 -> 0.3 (python -m
# bench.answers_bench, gold recall): Obsidian EN 0.589 -> 0.593, typed Obsidian 0.703 ->
# 0.742, tldr ZH 0.585 -> 0.612, the others within 0.003; 0.5 took the first passage's
# weaker sentences (Obsidian EN 0.563).
EARLY = 0.1
RANKED = 0.3
# A sentence more than REPEATS of whose words (its heading's aside) the quoted sentences
# already hold says nothing new: a reference page's table row repeating the description
# above it. It gives way to the next one. Words count with the block a sentence
# introduces, or "强制删除未跟踪的文件：" would repeat "删除未跟踪的文件：" though its command
# differs. Measured with MORE_SENTENCES 3 (python -m bench.answers_bench, gold recall,
# answer / top chunk length): Obsidian EN 0.593 -> 0.611 (0.64 -> 0.65), tldr ZH 0.612
# -> 0.635 (0.51 -> 0.56), typed tldr 0.965 -> 0.967, CMRC 0.842 -> 0.845, the others
# within 0.002; REPEATS 0.6 / 0.8: Obsidian EN 0.600 / 0.594.
REPEATS = 0.7
RELATIVE = 0.6  # a sentence scoring under this share of the best one is not quoted


# A "how do I…" question is answered by a step, not by a definition: "To register a
# command, call addCommand() inside onload():" over "Commands are actions the user can
# invoke", which reads closer to the question. Such a sentence gets INSTRUCTION more.
INSTRUCTION = 0.25
# A question that asks for a kind of value (a date, a number, a key: answer_kinds.py) is
# answered by a sentence that gives one: for "How long is the save delayed?", "Debounced
# save in 2 seconds from now" over sentences that share more of its words. Such a sentence
# gets VALUE more; a number counts only in digits, as "at once" and "every" are words a
# number question is seldom answered by. Measured with `python -m bench.answers_bench`
# (gold recall): the typed tldr set 0.864 -> 0.965, the typed Obsidian set 0.696 -> 0.706,
# the others unchanged; 0.2 and more took sentences with the wrong value
# (docs/benchmarks/answers.md). Only a sentence that shares a word of the question gets
# it: every line of a reading list names an author, and the line about another book was
# quoted before the one asked about (the answer sets unchanged).
VALUE = 0.1
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


def _repeats(i: int, chosen: list[int], candidates: list, heading_of: list, hits: list) -> bool:
    """Whether more than REPEATS of candidate i's words (with the block it introduces: a
    tldr page's command) are already in the chosen sentences'."""

    def words(j: int) -> set[str]:
        n, sentence = candidates[j][:2]
        block = introduced_block(hits[n - 1].text, sentence)
        return set(candidates[j][3]) | set(content_terms(block))

    own = words(i) - heading_of[i]
    said = set().union(*(words(j) for j in chosen))
    return bool(own) and len(own & said) / len(own) > REPEATS


def _meaning(meaning: dict[str, float] | None, sentence: str) -> float:
    if not meaning or sentence not in meaning:
        return 0.0
    return MEANING * max(0.0, meaning[sentence] - MEANING_FLOOR)


# The chosen sentences are shown by passage, and within one passage as written, not by
# how many of the question's words each holds. The passage of the best-scored sentence
# comes first, then the others as their best sentences ranked: the search's first
# passage won the rank bonus already, and where a lower one holds the sentence that
# answers ("How much did the NAS cost?" over a budget table found first), the answer
# opens with it. Replayed over the answer sets' searches, the first passage shown
# changed for 31 of 248 answers, and their first line's gold recall rose on every set
# (Obsidian EN 0.23 -> 0.36 on average over its 17; BENCHMARKS.md, "Extractive").
PASSAGE_ORDER = True
TRANSLATED_WORDS = True
_QUESTION = re.compile(r"[?？]\s*(?:\*\*|__)?\s*$")
