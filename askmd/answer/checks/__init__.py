"""The checks of the judgement: each reads the evidence and returns a reason, or None.

Search always finds passages, and the closer they come in meaning the more an answer
made of them looks right. Each check looks for one way such passages fail to answer
(a name they never write, a neighbour's value, another day's entry) and says why as a
`Reason` (reasons.py). A reason lowers the confidence below the line (grounding.py)
unless a sentence comes `overridden_above` above the reading's line: it restates the
question and may say the thing another way. Adding a check is adding a file here and
its name to CHECKS; the benchmarks run without any one of them to measure what it earns
(bench/heldout_bench.py --without).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from askmd.answer.question import Question
    from askmd.answer.reasons import Reason
    from askmd.search.dates_in_query import Period
    from askmd.search.hits import Hit

# In the order they run, each named as the reason it gives; the decline names the first
# reason in reasons.ORDER.
# How close to the best sentence the others must come to count as close: a check reads
# only them for what the question asks (lacking.py). Measured on the answer sets and
# CMRC (BENCHMARKS.md, "Declining"): closer, it declined answerable how-to questions
# whose answering sentence ranked a little lower ("how many times does each line
# occur?": `uniq -c`); farther, fewer near-topic ones.
CLOSE = 0.15
CHECKS = (
    "unmentioned",
    "uncompared",
    "absent",
    "not_days",
    "other_days",
    "lacking",
    "unknown",
    "neighbour",
)


@dataclass
class Evidence:
    """What the judgement read: the question, the top passages, their sentences with
    each one's cosine, the closest of them, and the folder's keyword statistics."""

    question: Question  # as judged: without its dates when the top passage is of them
    original: Question  # as asked
    top: Sequence[Hit]
    sentences: dict[str, float]  # each sentence of the top passages: cosine with the question
    close: list[str]  # the sentences within CLOSE of the best one
    owner: dict[str, Hit]  # each sentence's passage
    after: dict[str, str]  # each sentence's next one in its passage
    similarity: float  # the best cosine
    above: float  # how far the best cosine is above the reading's line
    same_script: bool  # question and passages read in one script
    period: Period | None  # the day, week or month the question names (dated.asked)
    mentioned: Callable[[list[str]], set[str]] | None = None
    together: Callable[[list[str]], bool] | None = None
    idf: Callable[[list[str], bool | None], dict[str, float]] | None = None
    # whether the folder holds Chinese or Japanese notes (names are then looked for in
    # that script too)
    chinese_notes: Callable[[], bool] | None = None
    # what the checks already found (a check may defer to another's reason)
    found: list[Reason] = field(default_factory=list)

    @cached_property
    def unmentioned(self) -> list[str]:
        from askmd.answer import names

        if self.mentioned is None:
            return []
        across = self.chinese_notes() if self.chinese_notes is not None else True
        return names.unmentioned(self.question.text, self.mentioned, self.together, across)


class Check(Protocol):
    name: str
    # a sentence this far above the reading's line overrides the reason; None: never
    overridden_above: float | None

    def __call__(self, evidence: Evidence) -> Reason | None: ...

    def blocks(self, reason: Reason, evidence: Evidence) -> bool: ...


def load(names: Sequence[str] = CHECKS) -> list[Check]:
    """The checks of these names, each module's `CHECK`."""
    return list(_loaded(tuple(names)))


@functools.cache
def _loaded(names: tuple[str, ...]) -> tuple[Check, ...]:
    return tuple(importlib.import_module(f"{__name__}.{name}").CHECK for name in names)


@dataclass(frozen=True)
class Simple:
    """A check made of one function; it blocks unless a sentence restates the question
    `overridden_above` above the line. A reason of a kind it `advises` on never blocks:
    it is said beside the answer (a warning, `reasons` in JSON), not as a decline."""

    name: str
    run: Callable[[Evidence], Reason | None]
    overridden_above: float | None = None
    advises: tuple[str, ...] = ()

    def __call__(self, evidence: Evidence) -> Reason | None:
        return self.run(evidence)

    def blocks(self, reason: Reason, evidence: Evidence) -> bool:
        if reason.kind in self.advises:
            return False
        return self.overridden_above is None or evidence.above < self.overridden_above
