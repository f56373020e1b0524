"""The day, week or month the question names, when the closest sentences are all
entries of other days (answer/dated.py): another day's run time is no answer."""

from __future__ import annotations

from askmd.answer import dated
from askmd.answer.checks import Evidence, Simple
from askmd.answer.reasons import Reason


def run(evidence: Evidence) -> Reason | None:
    period = evidence.period
    if period is None:
        return None
    close = [(s, evidence.owner[s]) for s in evidence.close]
    if dated.missing(period, close, list(evidence.owner.items())):
        return Reason("other_days", (dated.shown(period),))
    return None


CHECK = Simple("other_days", run, None)
