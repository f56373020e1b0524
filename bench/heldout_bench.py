"""Answers on folders nobody tuned for: declined, cited and recalled, dev and test apart.

    python -m bench.heldout_bench                        # every set, dev and test
    python -m bench.heldout_bench --split dev --dump d.jsonl   # tune on dev only
    python -m bench.heldout_bench --without neighbour    # what one check earns
    python -m bench.heldout_bench --only personal-b      # the shared test vault

Each set is a folder of notes and its questions (bench/heldout/*/: notes/ and
queries.jsonl, see bench/heldout/README.md) or the shared personal-b vault, which is
test only. A question's half is fixed by its id (`half`), before any tuning: rules and
cut-offs are chosen on dev, and only test says whether they stay. Every question is
asked as `rag.py ask` asks it, without an LLM, with today set to its `today` when it
has one. Per set and half: unanswerable declined (all, and the neighbour traps),
answerable declined, answerable whose answer cites a relevant note, gold recall of the
answer and of the top chunk, hit@5 and MRR of the relevant notes, the p50 of a whole
ask (search, judgement and answer) and of the judgement alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import time
from pathlib import Path

from askmd import evaluate
from askmd.answer import checks
from askmd.answer.citations import CITATION
from bench.common import (
    DATA,
    ROOT,
    add_index_variants,
    half,
    open_index,
    rewrapped,
    set_constants,
    tuned,
)

HELDOUT = ROOT / "bench" / "heldout"
SHARED_TEST = ("personal-b",)  # shared sets that are test only: never tuned on


def sets(data: Path, heldout: Path = HELDOUT) -> list[tuple[str, Path, Path]]:
    """(name, notes folder, questions file) of every held-out set."""
    found = []
    for folder in sorted(p for p in heldout.iterdir() if (p / "queries.jsonl").is_file()):
        found.append((folder.name, folder / "notes", folder / "queries.jsonl"))
    for name in SHARED_TEST:
        if (data / name / "queries.jsonl").is_file():
            found.append((name, data / name / "notes", data / name / "queries.jsonl"))
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-root", type=Path, default=Path("/tmp/askmd-heldout"))
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    parser.add_argument("--sets", type=Path, default=HELDOUT, help="the folder of the sets")
    parser.add_argument("--only", help="the sets whose name contains this")
    parser.add_argument("--split", choices=("dev", "test"), help="one half only")
    parser.add_argument("--without", action="append", default=[], help="a check to leave out")
    parser.add_argument("--dump", type=Path, help="write each question's outcome here")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        help="CHECK=MARGIN: how far above the line a sentence overrides that check's "
        "reason (unmentioned=9: never)",
    )
    parser.add_argument(
        "--constant",
        action="append",
        default=[],
        help="MODULE.NAME=VALUE: a module's constant (a Python literal) for this run, to "
        "measure it (askmd.answer.checks.neighbour.COVERED=0.6, a word list =[])",
    )
    parser.add_argument(
        "--rewrap", type=int, default=0, help="ask over a copy hard-wrapped at this width"
    )
    parser.add_argument(
        "--fit", action="store_true", help="also fit the signals on dev and report test"
    )
    parser.add_argument(
        "--setting", action="append", default=[], help="NAME=VALUE, e.g. ASKMD_TOP_K=5"
    )
    add_index_variants(parser)
    args = parser.parse_args(argv)
    environ = dict(s.split("=", 1) for s in args.setting)
    set_constants(args.constant)
    run = [c for c in checks.CHECKS if c not in args.without]
    dumped = args.dump.open("w", encoding="utf-8") if args.dump else None
    print(
        "| set | half | questions | unanswerable declined | neighbour declined "
        "| answerable declined | relevant cited | gold recall | top chunk recall | hit@5 "
        "| MRR | ms p50 | judgement ms p50 |"
    )
    print("| --- | --- |" + " ---: |" * 11)
    totals: dict[str, list[dict]] = {"dev": [], "test": []}
    for name, notes, path in sets(args.data, args.sets):
        if args.only and args.only not in name:
            continue
        home = args.index_root / name
        if args.rewrap:
            notes = rewrapped(notes, args.rewrap, args.index_root / "notes" / name)
            home = args.index_root / f"{name}-wrapped-{args.rewrap}"
        if args.keyword_only:
            home = home.with_name(f"{home.name}-keyword-only")
        index = open_index(
            notes, home, environ, **({"vectors": False} if args.keyword_only else {})
        )
        index.tuning = tuned(args.tuning)
        made = index.answerer.grounding

        margins = {k: float(v) for k, v in (o.split("=", 1) for o in args.override)}

        def grounding(made=made, margins=margins):
            ground = made()
            ground.checks = [
                dataclasses.replace(c, overridden_above=margins[c.name]) if c.name in margins else c
                for c in checks.load(run)
            ]
            return ground

        index.answerer.grounding = grounding  # type: ignore[method-assign]
        queries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        rows: dict[str, list[dict]] = {"dev": [], "test": []}
        for q in queries:
            part = "test" if name in SHARED_TEST else half(q["id"])
            if args.split and part != args.split:
                continue
            row = _ask(index, q)
            row.update(set=name, half=part)
            rows[part].append(row)
            if dumped is not None:
                dumped.write(json.dumps(row, ensure_ascii=False) + "\n")
        for part in ("dev", "test"):
            if rows[part]:
                _print(name, part, rows[part])
                totals[part] += rows[part]
    for part in ("dev", "test"):
        if totals[part]:
            _print("all", part, totals[part])
    if dumped is not None:
        dumped.close()
    if args.fit:
        fit(totals["dev"] + totals["test"])


def _ask(index, q: dict) -> dict:
    if q.get("today"):
        os.environ["ASKMD_TODAY"] = q["today"]
    else:
        os.environ.pop("ASKMD_TODAY", None)
    started = time.perf_counter()
    result = index.ask(q["query"], [], index.settings.top_k)
    ms = (time.perf_counter() - started) * 1000
    began = time.perf_counter()  # the judgement alone, again over the same passages
    verdict = index.answerer.grounding().judge(result.query, result.hits) if result.hits else None
    judge_ms = (time.perf_counter() - began) * 1000
    relevant = set(q.get("relevant") or [])
    files = list(dict.fromkeys(hit.source for hit in result.hits))
    rank = next((i + 1 for i, f in enumerate(files) if f in relevant), None)
    answers = tuple(q.get("answers") or ())
    said = CITATION.sub("", result.text) if result.answered else ""
    return {
        "id": q["id"],
        "query": q["query"],
        "lang": q.get("lang", ""),
        "answerable": bool(q.get("answerable", not q.get("unanswerable"))),
        "trap": q.get("trap", ""),
        "answered": result.answered,
        "confidence": result.confidence,
        "reasons": [r.to_json() for r in result.reasons],
        "cited": [r.source for r in result.references],
        "relevant_cited": bool(relevant & {r.source for r in result.references}),
        "gold_recall": evaluate.recall(answers, said) if answers else None,
        "top_recall": evaluate.recall(answers, result.hits[0].text)
        if answers and result.hits
        else None,
        "rank": rank,
        "ms": ms,
        "judge_ms": judge_ms,
        "signals": _signals(verdict, result.hits),
        "text": result.text[:300],
    }


SIGNALS = ("confidence", "similarity", "coverage", "best sentence", "top score")


def _signals(verdict, hits) -> list[float]:
    """What the judgement reads, as numbers a fit can weigh: its scores, then one flag
    per check that gave a reason."""
    if verdict is None:
        return [0.0] * (len(SIGNALS) + len(checks.CHECKS))
    given = {r.kind for r in verdict.reasons}
    best = max(verdict.sentences.values(), default=0.0)
    scores = [verdict.confidence, verdict.similarity, verdict.coverage, best, hits[0].score]
    return [float(v) for v in scores] + [float(c in given) for c in checks.CHECKS]


def fit(rows: list[dict], steps: int = 20000) -> None:
    """A logistic fit of answerable over the signals, learned on dev; the threshold that
    declines as many answerable questions on dev as the rules do; then test at it, and
    each half's AUC (how well the signals could separate the two at any threshold)."""
    import numpy as np

    def arrays(part):
        kept = [r for r in rows if r["half"] == part]
        return np.array([r["signals"] for r in kept]), np.array([r["answerable"] for r in kept])

    (x_dev, y_dev), (x_test, y_test) = arrays("dev"), arrays("test")
    if len(set(y_dev.tolist())) < 2 or not len(x_test):
        print("fit: dev needs answerable and unanswerable questions, and test some")
        return
    mean, spread = x_dev.mean(0), x_dev.std(0) + 1e-9

    def design(x):
        return np.c_[(x - mean) / spread, np.ones(len(x))]

    a, weights = design(x_dev), np.zeros(x_dev.shape[1] + 1)
    for _ in range(steps):
        p = 1 / (1 + np.exp(-a @ weights))
        weights -= 0.05 * (a.T @ (p - y_dev) / len(y_dev) + 0.01 * weights)
    p_dev, p_test = (1 / (1 + np.exp(-design(x) @ weights)) for x in (x_dev, x_test))
    ruled = [r for r in rows if r["half"] == "dev" and r["answerable"]]
    allowed = sum(not r["answered"] for r in ruled) / max(1, len(ruled))
    line = float(np.quantile(p_dev[y_dev == 1], allowed)) if allowed else 0.0

    def auc(p, y):
        pos, neg = p[y == 1], p[y == 0]
        return float(np.mean([(a > b) + 0.5 * (a == b) for a in pos for b in neg]))

    for part, p, y in (("dev", p_dev, y_dev), ("test", p_test, y_test)):
        declined = p < line
        print(
            f"fit {part}: AUC {auc(p, y):.3f}, unanswerable declined "
            f"{declined[y == 0].mean():.3f}, answerable declined {declined[y == 1].mean():.3f}"
        )
    names = [*SIGNALS, *checks.CHECKS, "bias"]
    print("fit weights:", ", ".join(f"{n} {w:+.2f}" for n, w in zip(names, weights, strict=True)))


def _print(name: str, part: str, rows: list[dict]) -> None:
    def share(items: list[bool]) -> str:
        return f"{sum(items) / len(items):.3f} ({sum(items)}/{len(items)})" if items else "–"

    def mean(values: list[float]) -> str:
        return f"{statistics.mean(values):.3f}" if values else "–"

    unanswerable = [r for r in rows if not r["answerable"]]
    neighbours = [r for r in unanswerable if r["trap"] == "neighbour"]
    answerable = [r for r in rows if r["answerable"]]
    ranked = [r for r in answerable if r["gold_recall"] is not None]
    print(
        f"| {name} | {part} | {len(rows)} "
        f"| {share([not r['answered'] for r in unanswerable])} "
        f"| {share([not r['answered'] for r in neighbours])} "
        f"| {share([not r['answered'] for r in answerable])} "
        f"| {share([r['relevant_cited'] for r in answerable])} "
        f"| {mean([r['gold_recall'] for r in ranked])} "
        f"| {mean([r['top_recall'] for r in ranked if r['top_recall'] is not None])} "
        f"| {mean([1.0 if r['rank'] and r['rank'] <= 5 else 0.0 for r in answerable])} "
        f"| {mean([1 / r['rank'] if r['rank'] and r['rank'] <= 10 else 0.0 for r in answerable])} "
        f"| {statistics.median(r['ms'] for r in rows):.0f} "
        f"| {statistics.median(r['judge_ms'] for r in rows):.0f} |",
        flush=True,
    )


def smoke(tmp: Path) -> None:
    """One small set, with every check and without the neighbour check."""
    notes = tmp / "sets" / "tiny" / "notes"
    notes.mkdir(parents=True)
    (notes / "ports.md").write_text(
        "# Ports\n\n| Service | Port |\n|---|---|\n| Audiobookshelf | 13378 |\n\n"
        "Jellyfin moved to the mini PC.\n",
        encoding="utf-8",
    )
    questions = [
        {"id": "a1", "query": "What port is Audiobookshelf on?", "relevant": ["ports.md"],
         "answers": ["13378"], "answerable": True},
        {"id": "u1", "query": "What port is Jellyfin on?", "relevant": [],
         "answerable": False, "trap": "neighbour"},
    ]  # fmt: skip
    lines = "".join(json.dumps(q) + "\n" for q in questions)
    (tmp / "sets" / "tiny" / "queries.jsonl").write_text(lines, encoding="utf-8")
    common = ["--sets", str(tmp / "sets"), "--data", str(tmp / "no-data")]
    common += ["--index-root", str(tmp / "ix")]
    main([*common, "--dump", str(tmp / "rows.jsonl"), "--fit"])
    main([*common, "--without", "neighbour", "--split", "test", "--rewrap", "40"])


if __name__ == "__main__":
    main()
