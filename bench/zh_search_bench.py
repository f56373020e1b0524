"""The real search on the Chinese question sets: by ranking mode, by CJK dense share, timed.

    python -m bench.zh_search_bench KB IX [--english-only] [--shares 0.3,0.5] [--latency 0.3]
        [--without-translated-share] [--without-windows]

KB is the mixed folder (the vault under en/, the Chinese tldr pages
under zh/), or with `--english-only` the vault alone (then only the Chinese questions
about it are asked). Each set is searched as shipped (`Index.search`, files by their best
chunk) in hybrid and keyword-only ranking. `--shares` also runs hybrid with the dense
share for CJK questions of the model that ranks them (SearchTuning.dense_share) set to each value.
`--latency PAUSE` first times every Chinese question three times with PAUSE seconds
between searches (median and 95th percentile, ms), after one search timed apart: the
process's first Chinese question, which reads the dictionary. `--without-translated-share`
also runs hybrid with SearchTuning.translated_share off (an English-only model's CJK
share kept for Chinese questions it reads through their translation). `--without-windows`
also runs hybrid with SearchTuning.windows off (no window vectors, windows.py).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from askmd.search import dense, retriever
from askmd.search.retriever import is_cjk_query
from askmd.search.tuning import SHIPPED
from bench.common import (
    PARAPHRASE,
    ZH_SETS,
    files,
    load,
    open_mixed,
    print_table,
    time_searches,
    tiny_data,
    tiny_sets,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kb", type=Path)
    parser.add_argument("ix", type=Path)
    parser.add_argument("--english-only", action="store_true", help="KB is the vault alone")
    parser.add_argument("--shares", default="", help="CJK dense shares to try, e.g. 0.3,0.5")
    parser.add_argument("--latency", type=float, default=None, help="seconds between searches")
    parser.add_argument("--without-translated-share", action="store_true")
    parser.add_argument("--without-windows", action="store_true")
    parser.add_argument("--without-cjk-windows", action="store_true")
    parser.add_argument("--sets", type=Path, default=PARAPHRASE, help="the folder of the sets")
    args = parser.parse_args(argv)
    index, _, _ = open_mixed(args.kb, args.ix)
    sets = [(label, load(name, kinds, args.sets), prefix) for label, name, kinds, prefix in ZH_SETS]
    if args.english_only:
        sets = [(label, qs, "") for label, qs, prefix in sets if prefix == "en/"]
    if args.latency is not None:  # first, so the first search reads the dictionary
        asked = dict.fromkeys(q["query"] for _, qs, _ in sets for q in qs)
        time_searches(index, [q for q in asked if is_cjk_query(q)], args.latency)
    rows: dict[tuple[str, str], list] = {}
    for mode in ("hybrid", "keyword"):
        for label, questions, prefix in sets:
            for q in questions:
                found = [h.source for h in index.search(q["query"], 10, mode=mode)]
                rows.setdefault((label, mode), []).append(
                    (files(found), {prefix + r for r in q["relevant"]})
                )
    switches = (
        (args.without_translated_share, "translated_share", "hybrid, translated share off"),
        (args.without_windows, "windows", "hybrid, windows off"),
        (args.without_cjk_windows, "cjk_windows", "hybrid, CJK windows off"),
    )
    for wanted, switch, ranking in switches:
        if wanted:
            index.tuning = replace(SHIPPED, **{switch: False})
            _hybrid(index, sets, rows, ranking)
    model = _cjk_model(index)
    base = retriever.ALPHA[model]
    for share in [float(s) for s in args.shares.split(",") if s]:
        index.tuning = replace(SHIPPED, dense_share=(base[0], share))
        _hybrid(index, sets, rows, f"hybrid, CJK dense share {share} ({model})")
    index.tuning = SHIPPED
    print_table(rows)


def _hybrid(index, sets: list, rows: dict, ranking: str) -> None:
    """Every set searched with the index's tuning as it is set now."""
    for label, qs, prefix in sets:
        for q in qs:
            found = [h.source for h in index.search(q["query"], 10)]
            rows.setdefault((label, ranking), []).append(
                (files(found), {prefix + r for r in q["relevant"]})
            )


def _cjk_model(index) -> str:
    """The model whose vectors rank a CJK question in this index (its dense share applies)."""
    side = dense.side_space(index.embedder, index.store)
    return side[0].id if side is not None else index.embedder.id


def smoke(tmp: Path) -> None:
    """The Chinese sets in small over the tiny mixed folder: every switch, one share, and
    the timing with no pause."""
    main([str(tiny_data(tmp / "data") / "mixed"), str(tmp / "ix"), "--sets",
          str(tiny_sets(tmp / "sets")), "--shares", "0.5", "--latency", "0",
          "--without-translated-share", "--without-windows", "--without-cjk-windows"])  # fmt: skip


if __name__ == "__main__":
    main()
