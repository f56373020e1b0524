"""A question that names a day or a period ranks the chunks of that date first; dates
given by hand (`--since`, `--until`) keep only the chunks dated within them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from askmd.index.manifest import Manifest
    from askmd.search.dates_in_query import Period
    from askmd.search.tuning import SearchTuning


def ranked(
    ranked: list[tuple[str, float]],
    manifest: Manifest,
    asked: Period | None,
    named: Period | None,
    t: SearchTuning,
) -> list[tuple[str, float]]:
    """The ranking limited to the chunks dated within the period `asked` for by hand
    (undated ones too are left out), and ranked for the period the question `named`
    (`t.dated`: a chunk with no date is never dropped for it). The chunks of either period
    that no retriever found join the end, by date, so a day's note is found even when
    its words do not match the question's."""
    if asked is None and named is None:
        return ranked
    present = {c for c, _ in ranked}
    for period in (asked, named):
        if period is not None:
            extra = manifest.dated_between(period.since, period.until, t.dated_candidates)
            ranked = ranked + [(c, 0.0) for c in extra if c not in present]
            present.update(extra)
    days = manifest.dates([c for c, _ in ranked])
    if asked is not None:
        ranked = [(c, v) for c, v in ranked if c in days and asked.holds(days[c])]
    if named is None:
        return ranked
    within = {c for c, _ in ranked if c in days and named.holds(days[c])}
    if not within:
        return ranked  # the notes have nothing of that date: rank as if it were not named
    if t.dated == "filter":
        ranked = [(c, v) for c, v in ranked if c not in days or c in within]
    if not t.date_boost:
        return ranked
    top = 1.0 + t.date_boost  # scores stay on 0..1
    boost = t.date_boost
    boosted = [((c, (v + boost) / top) if c in within else (c, v / top)) for c, v in ranked]
    return sorted(boosted, key=lambda item: -item[1])
