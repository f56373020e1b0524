"""Dated questions over journals: is the note or entry of the day asked about first?

    python -m bench.dates_bench            # both journal sets, every way of ranking by date
    python -m bench.dates_bench --smoke    # 5 notes, a few questions: the bench still runs

The sets are bench/dates/{en,zh} (written by bench/dates/make_journals.py): 45 daily notes,
two monthly logs of `## date` entries and five undated guides each, the days written
alike, and bench/dates/questions.jsonl: 78 dated questions (absolute days in every
spelling, yesterday, the day before yesterday, last week, last month, a named month;
English and Chinese), each with the "today" it is asked on (ASKMD_TODAY), and 26
undated ones (where an object was bought, what a guide says).

A question counts when the first hit is its note, and for a monthly log its entry (the
hit's date); "others" is the share of a dated question's top 5 dated outside the period it
names (passages an answer would read about other days). Printed per way of ranking:
"none" (dates in questions ignored, as before), "filter" (chunks dated otherwise
dropped), "boost +x" (x added to the blended score of the chunks of that date) and
"filter +x" (both), by kind of question; and the search latency of the undated
questions with dates read (understanding, per-hit date look-up) against without, as the
ratio of medians over interleaved rounds in the same run, and the two steps dates add
to such a search timed alone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from askmd.answer import dated, grounding
from askmd.pipeline import Index
from askmd.search import dates_in_query, retriever
from askmd.search.dates_in_query import Period
from askmd.search.tuning import SHIPPED
from askmd.settings import load_settings

HERE = Path(__file__).resolve().parent / "dates"
WAYS = [("none", "boost", 0.0), ("filter", "filter", 0.0)]
WAYS += [(f"boost +{b}", "boost", b) for b in (0.1, 0.25, 0.5, 1.0)]
WAYS += [(f"filter +{b}", "filter", b) for b in (0.25, 1.0)]
SMOKE = ["daily/2026-01-01.md", "daily/20260102.md", "daily/2026_01_04.md",
         "log/2025-12.md", "guides/soup.md"]  # fmt: skip


def load(smoke: bool) -> list[dict]:
    rows = [json.loads(line) for line in (HERE / "questions.jsonl").open(encoding="utf-8")]
    if smoke:
        rows = [r for r in rows if r["lang"] == "en" and r["gold_source"] in SMOKE]
    return rows


def folder(lang: str, work: Path, smoke: bool) -> Path:
    target = work / lang
    shutil.rmtree(target, ignore_errors=True)
    if not smoke:
        shutil.copytree(HERE / lang, target)
        return target
    for name in SMOKE:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(HERE / lang / name, target / name)
    return target


def judged(index: Index, row: dict, period: Period | None) -> tuple[bool, float]:
    """Whether the first hit is the question's note (and entry), and the share of the
    top 5 dated another day than the gold's period (for undated questions, 0)."""
    hits = index.search(row["q"], 5)
    if not hits:
        return False, 0.0
    top = hits[0]
    right = top.source == row["gold_source"] and (
        row["gold_date"] is None or top.date == row["gold_date"]
    )
    if row["kind"] == "undated" or period is None:
        return right, 0.0
    return right, sum(h.date is not None and not period.holds(h.date) for h in hits) / len(hits)


def rank(index: Index, rows: list[dict], way: str, dated: str, boost: float) -> dict[str, list]:
    """Per kind of question: whether each first hit is right, and its top 5's share of
    other days (under the key "kind others"), ranked this way."""
    understood = index.searcher.dates_in
    if way == "none":
        index.searcher.dates_in = lambda query: None  # as before dates were read
    index.tuning = replace(SHIPPED, dated=dated, date_boost=boost)
    found: dict[str, list] = defaultdict(list)
    try:
        for row in rows:
            os.environ["ASKMD_TODAY"] = row["today"]
            right, others = judged(index, row, understood(row["q"]))
            kind = row["kind"]
            found[kind].append(right)
            if kind != "undated":
                found["dated"].append(right)
                found["others"].append(others)
    finally:
        vars(index.searcher).pop("dates_in", None)
        index.tuning = SHIPPED
    return found


def latency(index: Index, rows: list[dict], rounds: int) -> tuple[float, float]:
    """Median search time (ms) of the undated questions with dates read and without,
    each question timed both ways in turn, so both see the same machine."""
    undated = [r["q"] for r in rows if r["kind"] == "undated"]
    dated = retriever._with_dates
    times: dict[bool, list[float]] = {True: [], False: []}
    for q in undated:  # warm: the model, the caches
        index.search(q, 5)
    for n in range(rounds):
        for q in undated:
            for on in (True, False) if n % 2 else (False, True):
                if not on:  # as before: no reading of the question, no dates looked up
                    index.searcher.dates_in = lambda query: None
                    retriever._with_dates = lambda hits, manifest: hits
                try:
                    started = time.perf_counter()
                    index.search(q, 5)
                    times[on].append((time.perf_counter() - started) * 1000)
                finally:
                    vars(index.searcher).pop("dates_in", None)
                    retriever._with_dates = dated
    return statistics.median(times[True]), statistics.median(times[False])


def read(index: Index, question: str) -> list:
    """The top 5 passages as `ask` reads them: dated only when they are entries."""
    return dated.entries(index.search(question, 5), index.settings.knowledge_dir)


def answered(index: Index, rows: list[dict]) -> tuple[float, float, float]:
    """The share of dated questions the grounding judge finds answered by their top
    passages, judging the question without its date words when the best passage is of
    that day (as askmd does) and with them; and the share of the absolute ones asked of
    a day two years earlier, which no note is of (the year changed in the question's
    own spelling), that it declines."""
    judge = index.answerer.grounding()
    other_days = []
    for row in rows:
        if row["kind"] == "absolute":
            os.environ["ASKMD_TODAY"] = row["today"]
            question = re.sub(r"20(2[5-6])", lambda m: f"20{int(m.group(1)) - 2}", row["q"])
            other_days.append(not judge.judge(question, read(index, question)).answered)
    shares = []
    plain = grounding._undated
    for undated in (True, False):
        if not undated:
            grounding._undated = lambda question, top: (question, None)
        try:
            said = []
            for row in rows:
                if row["kind"] == "undated":
                    continue
                os.environ["ASKMD_TODAY"] = row["today"]
                said.append(judge.judge(row["q"], read(index, row["q"])).answered)
            shares.append(sum(said) / len(said))
        finally:
            grounding._undated = plain
    return shares[0], shares[1], sum(other_days) / max(len(other_days), 1)


def added_cost(index: Index, rows: list[dict], repeat: int = 200) -> tuple[float, float]:
    """Microseconds per search of the two steps dates add to a no-date question: reading
    the question for dates, and looking up the dates of its 5 hits."""
    undated = [r["q"] for r in rows if r["kind"] == "undated"]
    ids = {q: [h.chunk_id for h in index.search(q, 5)] for q in undated}
    today = dates_in_query.today()
    started = time.perf_counter()
    for _ in range(repeat):
        for q in undated:
            dates_in_query.understand(q, today)
    reading = (time.perf_counter() - started) / (repeat * len(undated)) * 1e6
    started = time.perf_counter()
    for _ in range(repeat):
        for q in undated:
            index.manifest.dates(ids[q])
    looking = (time.perf_counter() - started) / (repeat * len(undated)) * 1e6
    return reading, looking


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="5 notes, a few questions")
    parser.add_argument("--rounds", type=int, default=15, help="latency rounds")
    args = parser.parse_args(argv)
    rows = load(args.smoke)
    langs = ["en"] if args.smoke else ["en", "zh"]
    results: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    judged_as: dict[str, tuple[float, float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for lang in langs:
            kb = folder(lang, work, args.smoke)
            overrides = {"knowledge_dir": kb, "index_dir": work / f"ix-{lang}"}
            index = Index(load_settings(environ={}, dotenv_path=None, overrides=overrides))
            index.sync()
            mine = [r for r in rows if r["lang"] == lang]
            judged_as[lang] = answered(index, mine)
            for way, dated, boost in WAYS:
                for kind, values in rank(index, mine, way, dated, boost).items():
                    results[way][kind].extend(values)
                    if kind in ("dated", "undated", "others"):
                        results[way][f"{kind} {lang}"].extend(values)
            if lang == "en":
                with_dates, without = latency(index, mine, 2 if args.smoke else args.rounds)
                reading, looking = added_cost(index, mine, 20 if args.smoke else 200)
    order = ["dated", "undated", "others"]
    kinds = sorted(
        results["none"], key=lambda k: (k.split()[0] in order, k.split()[0] == "undated", k)
    )
    print(f"{'questions':<22}{'n':>4}" + "".join(f"{w:>13}" for w, _, _ in WAYS))
    for kind in kinds:
        n = len(results["none"][kind])
        cells = "".join(f"{sum(results[w][kind]) / n:>13.3f}" for w, _, _ in WAYS)
        print(f"{kind:<22}{n:>4}{cells}")
    print(
        f"\nsearch p50 of undated questions (en): {with_dates:.1f} ms with dates read, "
        f"{without:.1f} ms without; ratio {with_dates / without:.3f}"
    )
    for lang, (without_words, with_words, other_days) in judged_as.items():
        print(
            f"dated questions judged answered ({lang}): {without_words:.3f} judged without "
            f"their date words, {with_words:.3f} with them; asked of a day no note is "
            f"of, declined {other_days:.3f}"
        )
    print(
        f"added per search: {reading:.0f} us reading the question for dates, "
        f"{looking:.0f} us looking up the 5 hits' dates"
    )


def smoke(tmp: Path) -> None:
    """The smallest case: five notes, a few questions (the folder is written in a
    temporary directory of its own)."""
    main(["--smoke", "--rounds", "1"])


if __name__ == "__main__":
    main()
