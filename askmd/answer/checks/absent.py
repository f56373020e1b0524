"""A person or a place the question names that the notes write, but none of the
passages found: "When is Jonas's birthday?" over a list of the others' birthdays.
Read in one script only: across languages a name is written otherwise."""

from __future__ import annotations

from askmd.answer import names
from askmd.answer.checks import Evidence, Simple
from askmd.answer.checks.unmentioned import RESTATES
from askmd.answer.reasons import Reason


def run(evidence: Evidence) -> Reason | None:
    if not evidence.same_script or evidence.unmentioned:
        return None
    elsewhere = names.absent(evidence.question.text, evidence.top)
    return Reason("absent", tuple(elsewhere)) if elsewhere else None


CHECK = Simple("absent", run, RESTATES)
