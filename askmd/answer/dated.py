"""Whether a passage is of the day a question names.

"What was my parkrun time on 2025-03-02?" over a log of runs finds the log: search
ranks the entries of that day first when there is one, but when there is none the
nearest passages are the other runs, and another day's time is no answer. A sentence
is of the days it spells out ("- 2025-03-09: 24:58 at Bushy Park"), else of its
entry's (`entries`). Undated notes decide nothing: only a sentence that is dated, and
dated otherwise, is of another day.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from askmd.search.dates_in_query import Period
    from askmd.search.hits import Hit

# A question naming a longer period (a year, "2024年") asks about a topic in it more
# than about an entry of it, and a plan written in 2024 may be what it wants: only a day,
# a week or a month is checked.
LONGEST_DAYS = 31


def named(question: str, hits: Sequence[Hit]) -> Period | None:
    """The period the question names, read against today; a day without its year is the
    latest such day the passages are of ("April 6" asked in December of last year's
    entry), as search read it against the whole index."""
    from askmd.search import dates_in_query

    @functools.cache
    def days() -> frozenset[str]:  # read only for a day asked without its year
        found = {hit.date for hit in hits if hit.date}
        for hit in hits:  # a day spelled out: "4月6日" may name a line of a log
            year = int(hit.date[:4]) if hit.date else None
            found.update(dates_in_query.days_written(hit.text, year))
        return frozenset(found)

    def held(since: str, until: str) -> bool:
        return any(since <= day <= until for day in days())

    return dates_in_query.understand(question, dates_in_query.today(), held)


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


FRONT_MATTER_BYTES = 65536  # read of a note to find its front matter's `date:`


def entries(hits: Sequence[Hit], root: Callable[[Hit], Path]) -> list[Hit]:
    """The passages an answer reads, each dated only when it is an entry of that day: a
    dated heading above it, a daily note's name, or front matter `date:` (the day the note
    is about). A date from `created:` or `updated:` only, stamped on every note of many
    vaults, says when the note was written, not what its sentences are of: it is taken
    off, so a question naming another day is not declined for it."""
    from askmd.read import dates as note_dates

    kept = []
    for hit in hits:
        headings = hit.heading_chain.split(" > ") if hit.heading_chain else []
        entry = hit.date is None or note_dates.from_name(hit.source) == hit.date
        if not entry and not any(note_dates.leading(h) == hit.date for h in headings):
            if _about(root(hit) / hit.source, hit.date) != hit.date:
                hit = dataclasses.replace(hit, date=None)
        kept.append(hit)
    return kept


def _about(path: Path, indexed: str) -> str | None:
    """The day a note's front matter `date:` says it is about (None without one), read
    as the index reads it (a byte-order mark, another encoding); `indexed` when the note
    cannot be read now (gone or changed since): its date stays as indexed."""
    from askmd.read import dates as note_dates
    from askmd.read import notes
    from askmd.read.unreadable import Unreadable

    try:
        with path.open("rb") as note:
            head = note.read(FRONT_MATTER_BYTES)
        if len(head) == FRONT_MATTER_BYTES:  # no character cut in two
            head = head[: head.rfind(b"\n") + 1]
        meta = notes.split_front_matter(notes.decode(head))[0]
    except (OSError, Unreadable):
        return indexed
    return note_dates.from_front_matter({"date": meta.get("date")})


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


def speaks_of(asked: str, hit: Hit) -> bool:
    """Whether an entry holds every word a question asks of its day, its dates taken
    out ("What did I do at work?" of "## Work / At work I interviewed a candidate.";
    "工作上做了什么？" of "工作上面试了一位候选人。"): the day picked the entry, and in a
    journal such words ("work", "晚上") are in every entry, so they weigh little in the
    folder and the sentence that answers is far in meaning from so vague a question.
    Question words name nothing ("什么", "哪天"), nor do words that ask what the day held
    (`OF_A_DAY`): "What did I do?" and "What happened?" are answered by the day's entry."""
    from askmd.search.query_translation import segment
    from askmd.terms import QUESTION_WORD_ZH, content_terms

    said = f"{hit.heading_chain}\n{hit.text}"
    held = set(content_terms(said)) | OF_A_DAY
    latin = [t for t in content_terms(asked) if t.isascii()]
    chinese = [w for w in segment(asked) if len(w) > 1 and not QUESTION_WORD_ZH.search(w)]
    return all(t in held for t in latin) and all(w in said or w in OF_A_DAY for w in chinese)


# Words that ask what a day held, which any entry of it answers ("What happened on…?",
# "How was my day…", "那天发生了什么？"): English as `content_terms` gives them.
OF_A_DAY = frozenset({"happen", "day", "发生", "那天", "当天", "这天", "一天", "经历"})


def shown(period: Period) -> str:
    """The period as the decline names it: one day, or its first and last."""
    return period.since if period.since == period.until else f"{period.since} – {period.until}"
