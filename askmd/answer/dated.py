"""Whether a passage is of the day a question names.

"What was my parkrun time on 2025-03-02?" over a log of runs finds the log: search
ranks the entries of that day first when there is one, but when there is none the
nearest passages are the other runs, and another day's time is no answer. A sentence
is of the days it spells out ("- 2025-03-09: 24:58 at Bushy Park"), else of its
passage's date (a dated heading, a daily note's name or front matter). Undated notes
decide nothing: only a note that is dated, and dated otherwise, is of another day.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from askmd.search.dates_in_query import Period
    from askmd.search.retriever import Hit

# A question naming a longer period (a year, "2024年") asks about a topic in it more
# than about an entry of it, and a plan written in 2024 may be what it wants: only a day,
# a week or a month is checked.
LONGEST_DAYS = 31


def named(question: str, hits: Sequence[Hit]) -> Period | None:
    """The period the question names, read against today; a day without its year is the
    latest such day the passages are of ("April 6" asked in December of last year's
    entry), as search read it against the whole index."""
    from askmd.search import dates_in_query

    days = {day for hit in hits for sentence in (hit.text,) for day in days_of(sentence, hit)}
    return dates_in_query.understand(
        question,
        dates_in_query.today(),
        lambda since, until: any(since <= d <= until for d in days),
    )


def asked(question: str, hits: Sequence[Hit]) -> Period | None:
    """The day, week or month the question names (`named`)."""
    period = named(question, hits)
    if period is None:
        return None
    span = date.fromisoformat(period.until) - date.fromisoformat(period.since)
    return period if span.days < LONGEST_DAYS else None


def days_of(sentence: str, hit: Hit) -> list[str]:
    """The days a sentence of this passage is of: those it spells out (a day without its
    year takes the passage's), else the passage's date, else none."""
    from askmd.search import dates_in_query

    year = int(hit.date[:4]) if hit.date else None
    return dates_in_query.days_written(sentence, year) or ([hit.date] if hit.date else [])


def of_period(sentence: str, hit: Hit, period: Period) -> bool | None:
    """True when the sentence is of a day in the period, False when it is only of
    other days, None when nothing dates it."""
    days = days_of(sentence, hit)
    if not days:
        return None
    return any(period.holds(day) for day in days)


def missing(
    period: Period, close: Sequence[tuple[str, Hit]], said: Sequence[tuple[str, Hit]]
) -> bool:
    """Whether the sentences closest to the question (each with its passage) are all of
    other days than the period, and no sentence of the passages is of it. A close
    sentence nothing dates may be the answer: then nothing is decided."""
    if any(of_period(sentence, hit, period) for sentence, hit in said):
        return False
    return bool(close) and all(of_period(s, hit, period) is False for s, hit in close)


def shown(period: Period) -> str:
    """The period as the decline names it: one day, or its first and last."""
    return period.since if period.since == period.until else f"{period.since} – {period.until}"
