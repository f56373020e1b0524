"""Score answers, not only retrieval: declined questions and gold recall, EN and ZH.

    python -m bench.answers_bench                       # every set of bench/answers
    python -m bench.answers_bench --dump features.jsonl # and each question's measures
    python -m bench.answers_bench --mixed               # all sets over one mixed folder

Indexes each knowledge folder once under --index-root (reused by later runs), asks every
question of the sets in bench/answers (see its README) as `rag.py ask` does, without an
LLM, and prints one row per set: the share of unanswerable questions declined, of
answerable ones declined, the answer's gold recall beside the top chunk's, and their
lengths (`rag.py eval --answers` gives the same figures for one file), and the gold
recall of the answer's first line alone (whether it opens with the answer). --dump writes the
judgement's inputs per question (similarity, coverage, model), to calibrate grounding.py.
--mixed asks every set over one folder holding both the English and the Chinese notes
(copied under --index-root), as a user who keeps both in one vault has them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from askmd import evaluate
from askmd.answer import checks
from askmd.answer.citations import CITATION
from askmd.pipeline import Index
from bench.common import (
    ANSWER_SETS,
    ANSWERS,
    DATA,
    add_index_variants,
    half,
    open_index,
    rewrapped,
    set_constants,
    tiny_data,
    tiny_sets,
    tuned,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-root", type=Path, default=Path("/tmp/askmd-bench"))
    parser.add_argument("--dump", type=Path, help="write each question's measures here")
    parser.add_argument("--only", help="run the sets whose file name contains this")
    parser.add_argument(
        "--setting", action="append", default=[], help="NAME=VALUE, e.g. ASKMD_TOP_K=5"
    )
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    parser.add_argument("--sets", type=Path, default=ANSWERS, help="the folder of the sets")
    parser.add_argument("--mixed", action="store_true", help="one folder of both languages")
    parser.add_argument("--split", choices=("dev", "test"), help="one half only (by id)")
    parser.add_argument(
        "--rewrap", type=int, default=0, help="ask over a copy hard-wrapped at this width"
    )
    parser.add_argument(
        "--constant", action="append", default=[], help="MODULE.NAME=VALUE for this run"
    )
    parser.add_argument("--without", action="append", default=[], help="a check to leave out")
    parser.add_argument(
        "--override", action="append", default=[],
        help="CHECK=MARGIN: how far above the line a sentence overrides that check's reason",
    )  # fmt: skip
    add_index_variants(parser)
    args = parser.parse_args(argv)
    set_constants(args.constant)
    environ = dict(s.split("=", 1) for s in args.setting)
    indexes: dict[str, Index] = {}
    dumped = args.dump.open("w", encoding="utf-8") if args.dump else None
    everything = evaluate.AnswerReport()
    kinds: dict[str, str] = {}
    first: dict[tuple[str, str], str] = {}  # each answer's first line
    leads: dict[str, float] = {}  # its gold recall: does the answer open with it?
    print("| set | questions | declined unanswerable | declined answerable | gold recall "
          "| top chunk recall | answer chars | top chunk chars | ms p50 "
          "| first line recall |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, folder in ANSWER_SETS:
        if args.only and args.only not in name:
            continue
        path = args.sets / name
        if not path.is_file():
            continue
        if args.mixed:
            folder = "mixed"
        if folder not in indexes:
            ix = args.index_root / folder.replace("/", "-")
            kb = _mixed(args.data, args.index_root) if args.mixed else args.data / folder
            if args.rewrap:
                kb = rewrapped(kb, args.rewrap, args.index_root / "notes")
                ix = ix.with_name(f"{ix.name}-wrapped-{args.rewrap}")
            if args.keyword_only:
                ix = ix.with_name(f"{ix.name}-keyword-only")
            sync = {"vectors": False} if args.keyword_only else {}
            indexes[folder] = open_index(kb, ix, environ, **sync)
            indexes[folder].tuning = tuned(args.tuning)
            _select_checks(indexes[folder], args.without, args.override)
        index = indexes[folder]
        queries = evaluate.read_queries(path, answers=True)
        if args.split:
            queries = [q for q in queries if half(q.id) == args.split]
        ground = index.answerer.grounding()
        k = index.settings.top_k

        def ask(question: str, index: Index = index, ground=ground, k: int = k, name: str = name):
            result = index.ask(question, [], k)
            said = result.text.split("\n")[0] if result.answered else ""
            first[name, question] = CITATION.sub("", said)
            if dumped is not None:
                verdict = ground.judge(result.query, result.hits)
                dumped.write(json.dumps({"set": name, "query": question, **verdict.to_json(),
                                         "top": result.hits[0].source if result.hits else ""},
                                        ensure_ascii=False) + "\n")  # fmt: skip
            return result

        report = evaluate.evaluate_answers(queries, ask)
        for asked, q in zip(report.asked, queries, strict=True):
            asked.id = f"{name}:{q.id}"
            if asked.gold_recall is not None:
                leads[asked.id] = evaluate.recall(q.answers, first[name, q.query])
        everything.asked += report.asked
        _row(name, report.summary(), leads, report.asked)
        for lang in sorted({a.lang for a in report.asked if a.lang}):
            rows = [a for a in report.asked if a.lang == lang]
            _row(f"{name} ({lang})", report.summary(rows), leads, rows)
        kinds.update(_kinds(path, name))
    for lang in sorted({a.lang for a in everything.asked if a.lang}):
        rows = [a for a in everything.asked if a.lang == lang]
        _row(f"all ({lang})", everything.summary(rows), leads, rows)
    for kind in UNANSWERABLE_KINDS:  # near the notes' topic, or unrelated to it
        of_kind = [a for a in everything.asked if kinds.get(a.id) == kind]
        _row(f"all unanswerable ({kind})", everything.summary(of_kind))
    if dumped is not None:
        dumped.close()


UNANSWERABLE_KINDS = ("near", "unrelated")


def _mixed(data: Path, root: Path) -> Path:
    """Every set's notes in one folder: en/ and zh/ beside each other (copied once)."""
    import shutil

    kb = root / "mixed-notes"
    for part in {folder for _, folder in ANSWER_SETS}:
        there = kb / ("zh" if part.endswith(".zh") else "en")
        if not there.is_dir():
            shutil.copytree(data / part, there)
    return kb


def _kinds(path: Path, name: str) -> dict[str, str]:
    """{set:id: kind} of the set's unanswerable questions (the README's `kind` field)."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return {f"{name}:{q['id']}": q["kind"] for q in lines if q.get("unanswerable") and "kind" in q}


def _row(label: str, s: dict, leads: dict[str, float] | None = None, rows=()) -> None:
    def f(value, form="{:.3f}"):
        return "–" if value is None else form.format(value)

    lead = [leads[a.id] for a in rows if leads and a.id in leads]
    s = {**s, "first_line_recall": sum(lead) / len(lead) if lead else None}

    print(
        f"| {label} | {s['questions']} | {f(s['declined_unanswerable'])} "
        f"| {f(s['declined_answerable'])} | {f(s['gold_recall'])} | {f(s['top_chunk_recall'])} "
        f"| {f(s['answer_chars'], '{:.0f}')} | {f(s['top_chunk_chars'], '{:.0f}')} "
        f"| {f(s['ms_p50'], '{:.0f}')} | {f(s['first_line_recall'])} |",
        flush=True,
    )


def _select_checks(index: Index, without: list[str], override: list[str]) -> None:
    """Every answer of this index judged by the checks not left out (`--without`), each
    overridden at the margin given (`--override CHECK=MARGIN`)."""
    margins = {k: float(v) for k, v in (o.split("=", 1) for o in override)}
    run = [
        dataclasses.replace(c, overridden_above=margins[c.name]) if c.name in margins else c
        for c in checks.load([c for c in checks.CHECKS if c not in without])
    ]
    made = index.answerer.grounding

    def grounding():
        ground = made()
        ground.checks = run
        return ground

    index.answerer.grounding = grounding  # type: ignore[method-assign]


def smoke(tmp: Path) -> None:
    """Every set in small (two questions, one unanswerable) over the tiny notes, apart and
    in one mixed folder."""
    data, sets = tiny_data(tmp / "data"), tiny_sets(tmp / "sets")
    main(["--data", str(data), "--sets", str(sets),
          "--index-root", str(tmp / "ix"), "--dump", str(tmp / "features.jsonl")])  # fmt: skip
    main(["--data", str(data), "--sets", str(sets), "--index-root", str(tmp / "ix"), "--mixed"])
    main(["--data", str(data), "--sets", str(sets), "--index-root", str(tmp / "ix"),
          "--rewrap", "40", "--split", "test", "--keyword-only",
          "--without", "neighbour"])  # fmt: skip


if __name__ == "__main__":
    main()
