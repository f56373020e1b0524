"""Whether passages say what a question asks, or what an answer claims.

Search always finds *something*: the nearest passages to "What is the capital of
Australia?" in a folder of plugin docs are still five passages. This module reads them
again with absolute measures, not ranks: how close the question comes, in meaning, to a
sentence or passage (cosine in the model that reads the question's language), and how
much of the question's rarer words the passages hold. From these it decides whether the
notes answer the question (`judge`), scores sentences for the extractive answer by
meaning, and checks that a sentence citing [n] is supported by passage n (`supported`).

It only reads: the embedder and the keyword statistics it is given. It never prints.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from askmd.answer import checks, dated, names
from askmd.answer.checks import Evidence
from askmd.answer.contradiction import contradicts
from askmd.answer.question import Question
from askmd.answer.reasons import Reason, ReasonViews
from askmd.index import embedding_models as models
from askmd.search.query_translation import english_terms
from askmd.terms import content_terms, has_cjk, is_cjk

if TYPE_CHECKING:
    import numpy as np

    from askmd.index.embedder import Embedder
    from askmd.search.dates_in_query import Period
    from askmd.search.hits import Hit

PASSAGES = 5  # the top passages read for the decision and the extractive answer
MAX_SENTENCES = 80  # sentences embedded per question, best-ranked passages first
SENTENCE_CHARS = 400  # a sentence is embedded from its start up to this many characters


@dataclass(frozen=True)
class Calibration:
    """Where cosines say "this answers" for one way of reading: `line` is the similarity
    at which an answer is as likely as not (confidence 0.5), `spread` how fast confidence
    moves away from it."""

    line: float
    spread: float = 0.05


# How a question is read: its script and its passages' (same: both Latin or both CJK;
# cross: one of each). The lines were measured on the answer sets (bench/answers,
# BENCHMARKS.md "Declining"): each declines about 3% of the answerable questions.
# Cosines across languages run lower, hence their lower lines. The Chinese line was
# 0.375 until CMRC's 400 answerable questions were read too: short questions about an
# entity ("班杰是什么职业呀？") come at 0.25-0.36 to their right passage, and 6% of them
# were declined; at 0.33, 2.5%, the tldr set's answerable none, one unrelated Chinese
# question of 45 more answered (docs/benchmarks/answers.md, "The Chinese line").
ENGLISH = Calibration(0.40)  # MiniLM, a Latin-script question and passages
CJK = Calibration(0.33)  # the multilingual model, a CJK question and CJK passages
CJK_OF_ENGLISH = Calibration(0.21)  # ..., a CJK question about English passages
# English questions about Chinese notes (bench/answers/tldr-en-of-zh.jsonl) come at
# 0.28-0.70 to their answer; at 0.36 they lost 5 of 43 (0.12), at 0.31 2 (0.05), while the
# unrelated English questions over the same notes stay below 0.29 and are all declined.
ENGLISH_OF_CJK = Calibration(0.31)  # ..., a Latin-script question about CJK passages
SAME_SCRIPT = (ENGLISH, CJK)
MIN_CONFIDENCE = 0.5
# What is left of the confidence when the question names something the notes never
# mention (names.py), or weighs things no passage names together (compared.py): below
# the default line whatever the cosines say. Passages on the same topic come close to
# such a question ("a MySQL server" against the notes' PostgreSQL) without answering it,
# and an answer made of them would be confidently wrong; a decline names the missing
# thing and still points at those passages. A user who sets ASKMD_MIN_CONFIDENCE to this
# or lower lets such questions through.
UNMENTIONED = 0.4
# The confidence given by the entry of the day a question names when it holds every word
# the question asks of that day (dated.speaks_of), however far the sentences are in
# meaning from so vague a question: journal questions ("2026年1月5日工作上做了什么？")
# came at 0.22-0.43 to "工作上面试了一位候选人。" in the multilingual model, and 10 of 39
# Chinese ones were declined with their entry first (bench/dates_bench.py). Above the
# default line, so a missing name or kind of value (a time the entry does not give)
# still declines it; a user who sets ASKMD_MIN_CONFIDENCE above it declines them.
ENTRY_OF_THE_DAY = 0.7
# How much the coverage of the question's rarer words lifts a confidence below 1: an
# identifier or name the model reads poorly, found word for word.
COVERAGE_WEIGHT = 0.3


def local_models(embedder: Embedder) -> tuple[Callable[[], Embedder], Callable[[], Embedder]]:
    """The English and the multilingual reader for an index embedded by `embedder`: its
    own instances where it runs those models, else local ones loaded when first read."""
    primary = getattr(embedder, "primary", embedder)
    companion = getattr(embedder, "companion_id", None)

    def english() -> Embedder:
        return primary if primary.id == models.MINILM.id else _local(models.MINILM.name)

    def multilingual() -> Embedder:
        if primary.id == models.USE.id:
            return primary
        if companion == models.USE.id:
            return embedder.companion()  # type: ignore[attr-defined]
        return _local(models.USE.name)

    return english, multilingual


@functools.cache
def _local(name: str) -> Embedder:
    from askmd.index.embedder import make_embedder

    return make_embedder("local", name)


@dataclass
class Verdict(ReasonViews):
    """Whether the passages answer the question, and what that rests on."""

    answered: bool
    confidence: float  # 0..1; answered when >= the threshold
    similarity: float  # the best cosine of the question with a sentence or a passage
    coverage: float  # idf-weighted share of the question's words the best passage holds
    model: str  # the embedder whose cosines were read
    # each sentence of the top passages and its cosine with the question, for the
    # extractive answer (which then needs no second look)
    sentences: dict[str, float] = field(default_factory=dict)
    # why the notes do not answer, as the checks found it (checks/, reasons.py); a
    # question answered all the same may have some (a choice of names, an overriding
    # sentence)
    reasons: list[Reason] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "answered": self.answered,
            "confidence": round(self.confidence, 3),
            "similarity": round(self.similarity, 3),
            "coverage": round(self.coverage, 3),
            "model": self.model,
            "unmentioned": self.unmentioned,
            "lacking": self.lacking,
            "uncompared": self.uncompared,
            "absent": self.absent,
            "other_days": self.other_days,
            "not_days": self.not_days,
            "reasons": [r.to_json() for r in self.reasons],
        }


class Grounding:
    """The measures above over one index: the models that read English and CJK text, and
    the index's keyword statistics (`idf(terms, cjk)`, `mentioned(terms)`: the terms
    some chunk holds, and `together(terms)`: whether one chunk holds them all).

    The models are always the local ones the calibration was measured with (MiniLM for
    English, the multilingual USE for Chinese and Japanese), whatever embeds the index:
    a server's model has cosines on a scale of its own, so a threshold measured on ours
    would mean nothing there. Where the index embeds with them, the same instances serve.
    """

    def __init__(
        self,
        english: Callable[[], Embedder],
        multilingual: Callable[[], Embedder] | None,
        idf: Callable[[list[str], bool | None], dict[str, float]],
        min_confidence: float = MIN_CONFIDENCE,
        sentences: Callable[[str], list[str]] | None = None,
        mentioned: Callable[[list[str]], set[str]] | None = None,
        together: Callable[[list[str]], bool] | None = None,
        checks_run: Sequence[str] = checks.CHECKS,
        chinese_notes: Callable[[], bool] | None = None,
    ) -> None:
        self.chinese_notes = chinese_notes
        self.checks = checks.load(checks_run)
        self.english = english
        self.multilingual = multilingual
        self.idf = idf
        self.mentioned = mentioned
        self.together = together
        self.min_confidence = min_confidence
        if sentences is None:
            from askmd.answer.sentences import sentences
        self.split = sentences

    # --- reading in the right model ---------------------------------------------------

    def reader(self, question: str, texts: Sequence[str] = ()) -> tuple[Embedder, Calibration]:
        """The model that reads this question with these texts, and its calibration: the
        multilingual one when either is mostly CJK (an English-only model's vectors of
        Chinese text are noise)."""
        asks_cjk = is_cjk(question)
        says_cjk = bool(texts) and sum(is_cjk(t) for t in texts) * 2 > len(texts)
        if (asks_cjk or says_cjk) and self.multilingual is not None:
            if asks_cjk:
                return self.multilingual(), CJK if says_cjk else CJK_OF_ENGLISH
            return self.multilingual(), ENGLISH_OF_CJK
        return self.english(), ENGLISH

    def read(
        self, question: str, texts: Sequence[str], top: Sequence[Hit]
    ) -> tuple[Embedder, Calibration, np.ndarray]:
        """The cosine of the question with each text, and the reading (model, calibration)
        they are on. In a folder of English and Chinese notes one question's passages may
        be of both: when the majority chose MiniLM for all, its cosines with the Chinese
        sentences were noise. An English question's texts are each read by the model for
        their script, then put on the scale of the reading of the text furthest above
        its own line (moved by the difference of the two lines)."""
        import numpy as np

        model, calibration = self.reader(question, [hit.text for hit in top])
        # a Chinese question is read by the multilingual model whatever the passages'
        # script: read apart, English sentences at their own lower line let near-topic
        # questions through (a mixed folder: the Obsidian unanswerable set declined
        # 0.80 -> 0.73)
        asks_cjk = is_cjk(question)
        readings = [] if asks_cjk else [self.reader(question, [text]) for text in texts]
        if all(r[1] == calibration for r in readings):
            return model, calibration, self.cosines(question, texts, model)
        lifted = np.zeros(len(texts), dtype=np.float32)  # each text's cosine above its line
        for other, line in dict.fromkeys(readings):
            picked = [i for i, r in enumerate(readings) if r == (other, line)]
            said = self.cosines(question, [texts[i] for i in picked], other)
            lifted[picked] = said - line.line
        best = readings[int(lifted.argmax())]
        return best[0], best[1], lifted + best[1].line

    def cosines(self, question: str, texts: Sequence[str], model: Embedder) -> np.ndarray:
        """The cosine of the question with each text (vectors are unit length)."""
        import numpy as np

        if not texts:
            return np.zeros(0, dtype=np.float32)
        asked = model.embed_queries([question])[0]
        return model.embed([t[:SENTENCE_CHARS] for t in texts]) @ asked

    # --- does it answer? --------------------------------------------------------------

    def judge(self, question: str, hits: Sequence[Hit]) -> Verdict:
        """Read the top passages against the question; see `confidence`."""
        top = list(hits[:PASSAGES])
        if not top:
            return Verdict(False, 0.0, 0.0, 0.0, "")
        original = Question(question)
        asked, period = _undated(question, top)
        # an entry of the day asked about, speaking of what is asked of it ("What did I do
        # at work on 2026-01-05?"; a day alone asks what it held): the day is what the
        # question is about. In a note of sections, another section may come first.
        of_the_day = period is not None and any(
            hit.date and period.holds(hit.date) and dated.speaks_of(asked, hit) for hit in top
        )
        judged = Question(asked) if asked and asked != question else original
        question = judged.text
        found: list[str] = []
        after: dict[str, str] = {}  # each sentence's next one in its passage
        owner: dict[str, Hit] = {}  # each sentence's passage (its first)
        for hit in top:
            said = self.split(hit.text)
            for sentence, following in itertools.zip_longest(said, said[1:]):
                if sentence not in found:
                    found.append(sentence)
                    owner[sentence] = hit
                    if following:
                        after[sentence] = following
        found = found[:MAX_SENTENCES]
        model, calibration, scores = self.read(question, found, top)
        by_sentence = {s: float(v) for s, v in zip(found, scores, strict=False)}
        similarity = float(scores.max()) if len(scores) else 0.0
        coverage = max(self.coverage(question, hit) for hit in top)
        confidence = combined(similarity, coverage, calibration)
        if of_the_day:
            confidence = max(confidence, ENTRY_OF_THE_DAY)
        evidence = Evidence(
            question=judged,
            original=original,
            top=top,
            sentences=by_sentence,
            close=[s for s, v in by_sentence.items() if v >= similarity - checks.CLOSE],
            owner=owner,
            after=after,
            similarity=similarity,
            above=similarity - calibration.line,
            same_script=calibration in SAME_SCRIPT,
            period=dated.asked(question, top),
            mentioned=self.mentioned,
            together=self.together,
            idf=self.idf,
            chinese_notes=self.chinese_notes,
        )
        reasons: list[Reason] = []
        blocked = False
        for check in self.checks:
            reason = check(evidence)
            if reason is None:
                continue
            reasons.append(reason)
            evidence.found.append(reason)
            blocked = blocked or check.blocks(reason, evidence)
        if blocked:
            confidence *= UNMENTIONED
        return Verdict(
            confidence >= self.min_confidence,
            confidence,
            similarity,
            coverage,
            model.id,
            by_sentence,
            reasons,
        )

    def coverage(self, question: str, hit: Hit) -> float:
        """The idf-weighted share of the question's content words that a passage (with
        its heading chain and file name) holds; a Chinese question's words count in
        English too, for an English note."""
        held = set(content_terms(f"{hit.source} {hit.heading_chain} {hit.text}"))
        wanted = content_terms(question)
        best = _share(wanted, held, self.idf(wanted, has_cjk(question) or None))
        if has_cjk(question) and not has_cjk(hit.text):
            english = english_terms(question)
            best = max(best, _share(english, held, self.idf(english, False)))
        return best

    # --- is a claim supported? --------------------------------------------------------

    def never_mentioned(self, question: str) -> list[str]:
        """The question's names that no note writes, in any of their forms."""
        if self.mentioned is None:
            return []
        chinese = self.chinese_notes() if self.chinese_notes is not None else True
        return names.unmentioned(question, self.mentioned, self.together, chinese)

    def supports(self, claim: str, hit: Hit) -> bool:
        """Whether passage `hit` says what the claim says (`supported` >= SUPPORTED)."""
        return self.supported(claim, hit) >= SUPPORTED

    def unsupported(self, claims: dict[int, list[str]], hits: Sequence[Hit]) -> list[int]:
        """The numbers n (1-based into `hits`) cited for a claim that passage n does not
        support (`unsupported_claims`)."""
        failed = [n for n, _ in self.unsupported_claims(claims, hits)]
        return sorted(set(failed), key=lambda n: list(claims).index(n))

    def unsupported_claims(
        self, claims: dict[int, list[str]], hits: Sequence[Hit]
    ) -> list[tuple[int, str]]:
        """(n, claim) for each claim that passage n (1-based into `hits`) does not support:
        below the line on its own (`supported`), said far better by another of the
        passages (its best sentence ANOTHER_SAYS_IT more similar to the claim: the usual
        mistake of a model that read several passages on one topic, the right fact with
        the neighbour's number), or copied from it with one thing changed (a number, a
        unit, a negation: contradiction.py). Each passage's sentences are embedded once
        for all the claims."""
        asked = [(n, c) for n, said in claims.items() for c in dict.fromkeys(said)]
        if not asked or not hits:
            return []
        model, calibration = self.reader(asked[0][1], [h.text for h in hits])
        line = Calibration(calibration.line + SUPPORT_MARGIN, calibration.spread)
        owner: list[int] = []
        texts: list[str] = []
        for i, hit in enumerate(hits):
            for sentence in [*self.split(hit.text)[:MAX_SENTENCES], _headed(hit)]:
                owner.append(i)
                texts.append(sentence[:SENTENCE_CHARS])
        import numpy as np

        vectors = model.embed(texts)
        claimed = model.embed_queries([c for _, c in asked])
        cosines = claimed @ vectors.T  # (claims, sentences)
        found: list[tuple[int, str]] = []
        for row, (n, claim) in enumerate(asked):
            best = np.full(len(hits), -1.0)
            for column, i in enumerate(owner):
                best[i] = max(best[i], cosines[row, column])
            own = float(best[n - 1])
            others = max((float(v) for i, v in enumerate(best) if i != n - 1), default=-1.0)
            alone = combined(own, self.coverage(claim, hits[n - 1]), line) < SUPPORTED
            mine = [column for column, i in enumerate(owner) if i == n - 1]
            closest = texts[max(mine, key=lambda column: cosines[row, column])]
            changed = contradicts(claim, _headed(hits[n - 1]), closest)
            if alone or others - own > ANOTHER_SAYS_IT or changed:
                found.append((n, claim))
        return found

    def supported(self, claim: str, hit: Hit) -> float:
        """How well passage `hit` supports one sentence of an answer, 0..1: its best
        sentence's cosine with the claim, read against the model's calibration, together
        with the share of the claim's words the passage holds (`combined`)."""
        found = self.split(hit.text)[:MAX_SENTENCES] or [hit.text]
        texts = [*found, _headed(hit)]
        model, calibration = self.reader(claim, [hit.text])
        similarity = float(self.cosines(claim, texts, model).max())
        line = Calibration(calibration.line + SUPPORT_MARGIN, calibration.spread)
        return combined(similarity, self.coverage(claim, hit), line)


# A claim is a statement, not a question: its cosine with the sentence it restates runs
# higher than a question's with its answer, so its line is this much above the
# question's. Measured on right and wrong citations built from the answer sets
# (bench/citations_bench.py, BENCHMARKS.md "Citation check").
SUPPORT_MARGIN = 0.1
SUPPORTED = 0.5
# A cited passage whose best sentence is this much less similar to the claim than another
# passage's does not support it: that other passage says it (bench/citations_bench.py).
ANOTHER_SAYS_IT = 0.15


def combined(similarity: float, coverage: float, calibration: Calibration) -> float:
    """One confidence, 0..1: the similarity placed on the reading's calibrated scale (a
    logistic curve, 0.5 at its line), raised by COVERAGE_WEIGHT of the question's rarer
    words the passages hold, for the share of the way to 1 that meaning left."""
    meaning = 1 / (1 + math.exp(-(similarity - calibration.line) / calibration.spread))
    return max(0.0, min(1.0, meaning + coverage * (1 - meaning) * COVERAGE_WEIGHT))


def _share(wanted: list[str], held: set[str], idf: dict[str, float]) -> float:
    unique = set(wanted)
    total = sum(idf.get(t, 0.0) for t in unique)
    return sum(idf.get(t, 0.0) for t in unique if t in held) / total if total else 0.0


def _headed(hit: Hit) -> str:
    """A passage as its chunk was embedded: the heading chain, then the text."""
    return f"{hit.heading_chain}\n{hit.text}" if hit.heading_chain else hit.text


def _undated(question: str, hits: Sequence[Hit]) -> tuple[str, Period | None]:
    """The question without its date words, and the period it names, when the best
    passage is of that period (else the question as asked, and None): "what did I cook
    on February 10, 2026?" asks "what did I cook" of the February 10 entry, whose
    sentences never spell its date (its heading or file name does), so the date words
    would only make the passage look off-topic. A day alone ("2026-01-05") leaves "": it
    asks what the day held."""
    top = hits[0]
    if top.date is None:
        return question, None
    from askmd.search import dates_in_query  # its patterns load when a question is judged

    period = dated.named(question, hits)
    if period is None or not period.holds(top.date):
        return question, None
    return dates_in_query.without_dates(question, dates_in_query.today()), period
