"""Answerable questions declined for naming what the notes never mention, on a labelled set.

    python -m bench.names_bench CORPUS QUERIES --index-dir IX
    python -m bench.names_bench /tmp/ev/scisub/corpus /tmp/ev/scisub/queries.jsonl --index-dir IX

Every question of a retrieval set (`relevant` notes, no gold answers) is answerable from
its corpus, so each decline is a cost. For each question: the names the notes never
mention (answer/names.py), whether the judge declines it with the name check and without
it, and, for a decline, whether the closest passages it points at (the top three) hold a
relevant note. Feeds docs/benchmarks/answers.md, "Names the notes never mention".
"""

from __future__ import annotations

from bench.common import labelled_set, tiny_labelled_set

NEAREST = 3  # the passages a declined answer points at (answer/exchange.py)


def main(argv: list[str] | None = None) -> None:
    index, queries = labelled_set(__doc__, argv)
    checked = index.answerer.grounding()
    unchecked = index.answerer.grounding()
    unchecked.mentioned = None  # the same judge without the name check
    named = declined = declined_before = pointed = 0
    for q in queries:
        hits = index.search(q.query, index.settings.top_k)
        verdict = checked.judge(q.query, hits)
        named += bool(verdict.unmentioned)
        declined_before += not unchecked.judge(q.query, hits).answered
        if not verdict.answered:
            declined += 1
            pointed += any(h.source in q.relevant for h in hits[:NEAREST])
            if verdict.unmentioned:
                print(f"declined, never mentioned {verdict.unmentioned}: {q.query[:90]}")
    n = max(len(queries), 1)
    print(f"questions {len(queries)}; a name never mentioned {named} ({named / n:.3f})")
    print(f"declined {declined} ({declined / n:.3f}), without the name check "
          f"{declined_before} ({declined_before / n:.3f})")  # fmt: skip
    print(f"declined ones whose closest {NEAREST} passages hold a relevant note: {pointed}")


def smoke(tmp) -> None:
    """The tiny English notes and their two questions."""
    main(tiny_labelled_set(tmp))


if __name__ == "__main__":
    main()
