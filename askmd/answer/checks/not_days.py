"""A date no calendar has ("2026-02-30"): whatever days were found are no answer,
unless a passage writes that very date (notes on validating dates quote such days).
Named in a decline either way."""

from __future__ import annotations

from askmd.answer.checks import Evidence
from askmd.answer.reasons import Reason


class NotDays:
    name = "not_days"
    overridden_above = None

    def __call__(self, evidence: Evidence) -> Reason | None:
        unreal = evidence.original.not_days
        return Reason("not_days", tuple(unreal)) if unreal else None

    def blocks(self, reason: Reason, evidence: Evidence) -> bool:
        return any(not any(day in hit.text for hit in evidence.top) for day in reason.items)


CHECK = NotDays()
