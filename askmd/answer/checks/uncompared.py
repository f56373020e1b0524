"""Things the question weighs against each other that no passage names together
(answer/compared.py): declined however close, as a passage that compared them would
name them all."""

from __future__ import annotations

from askmd.answer import compared
from askmd.answer.checks import Evidence, Simple
from askmd.answer.reasons import Reason


def run(evidence: Evidence) -> Reason | None:
    apart = compared.apart(evidence.question.text, evidence.top)
    return Reason("uncompared", tuple(apart)) if apart else None


CHECK = Simple("uncompared", run, None)
