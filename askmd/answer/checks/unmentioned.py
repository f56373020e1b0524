"""A name the question asks about that the notes never write (names.py), in any of its
forms: "How do I connect to a MySQL server?" over notes that only know PostgreSQL."""

from __future__ import annotations

from askmd.answer import names
from askmd.answer.checks import Evidence, Simple
from askmd.answer.reasons import Reason

# A sentence this far above the reading's line restates the question and may name the
# thing otherwise ("Aβ" for "AlphaBeta"): BENCHMARKS.md, "Declining".
RESTATES = 0.3


def run(evidence: Evidence) -> Reason | None:
    missing = evidence.unmentioned
    return Reason("unmentioned", tuple(missing)) if missing else None


class Unmentioned(Simple):
    def blocks(self, reason: Reason, evidence: Evidence) -> bool:
        """A missing name offered as one choice of several ("Zoom or Google Meet?") is
        reported, not a reason to decline: the notes may answer with the other."""
        choices = names.alternatives(evidence.question.text, list(reason.items))
        blocking = [m for m in reason.items if m not in choices]
        return bool(blocking) and evidence.above < RESTATES


CHECK = Unmentioned("unmentioned", run, RESTATES)
