"""Chinese questions, English notes: the question's words looked up in CC-CEDICT for BM25.

BM25 cannot match a Chinese question to an English note, and what it matches instead
(Chinese pages sharing a common word) is noise in the blend. Dictionary query
translation, the classic cross-language retrieval baseline: the question is cut into
dictionary words (longest match first), each word's first senses give English content
terms, and those terms are searched by BM25 over the English chunks' statistics. Scored
offline on the same candidate lists (USE over every chunk; BM25 of the question; BM25 of
its translation), each min-max scaled:

    score = alpha * dense + (1 - alpha) * max(keyword, t * translated)

for a few weights t (t = 0: as shipped), on the Chinese questions about the English vault
and about the Chinese tldr pages in the mixed folder (see zh_to_en_bench.py).

`--minilm` also embeds the translation with MiniLM and searches the main collection
(kept: retriever._translation); `--queries FILE` scores one set of another index instead.

    python bench/zh_translate_bench.py KB IX [--senses 3] [--minilm]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zh_to_en_bench  # noqa: E402
from multilingual_bench import POOL, files, load, open_mixed, print_table, scaled  # noqa: E402

from askmd.search import query_translation  # noqa: E402
from askmd.terms import content_terms  # noqa: E402

SETS = zh_to_en_bench.SETS  # the Chinese question sets of the mixed folder
WEIGHTS = (0.0, 0.3, 0.5, 0.7, 1.0)


def translated(text: str, senses: int, singles: bool) -> list[str]:
    """query_translation.english_terms with the number of glosses (up to its SENSES) and
    the single characters as parameters."""
    words = query_translation._dictionary()
    out: list[str] = []
    for word in query_translation.segment(text):
        if len(word) == 1 and not singles:
            continue
        for gloss in words.get(word, ())[:senses]:
            out.extend(content_terms(query_translation._NOT_MEANING.sub(" ", gloss)))
    return out + [t for t in content_terms(text) if t.isascii()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kb", type=Path)
    parser.add_argument("ix", type=Path)
    parser.add_argument("--senses", type=int, default=query_translation.SENSES)
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--show", type=int, default=3, help="translations printed per set")
    parser.add_argument("--minilm", action="store_true", help="try MiniLM on the translation")
    parser.add_argument("--queries", type=Path, help="score this set instead (rag.py eval format)")
    args = parser.parse_args()
    index, side, companion = open_mixed(args.kb, args.ix)
    cjk_of = dict(index.manifest.db.execute("SELECT chunk, cjk FROM documents"))
    rows: dict[tuple[str, str], list] = {}
    sets = [(label, load(name, kinds), prefix) for label, name, kinds, prefix in SETS]
    if args.queries:
        lines = args.queries.read_text(encoding="utf-8").splitlines()
        sets = [(args.queries.stem, [json.loads(line) for line in lines if line.strip()], "")]
    for label, questions, prefix in sets:
        for n, q in enumerate(questions):
            text, relevant = q["query"], {prefix + r for r in q["relevant"]}
            dense = scaled(
                [
                    (s.id, 1 - s.distance)
                    for s in side.nearest(companion.embed_queries([text])[0], POOL, content=False)
                ]
            )
            keyword = scaled(index.manifest.keyword(content_terms(text), POOL, cjk=True))
            top = sorted(dense, key=lambda c: -dense[c])[:10]
            en_share = sum(1 for c in top if not cjk_of.get(c, 0)) / max(1, len(top))
            for singles in (False, True):
                english = translated(text, args.senses, singles)
                if n < args.show and not singles:
                    print(f"{text} -> {' '.join(english)}", file=sys.stderr)
                found = scaled(index.manifest.keyword(english, POOL, cjk=False))
                rows.setdefault((label, f"translated BM25 alone, singles {singles}"), []).append(
                    (files(sorted(found, key=lambda c: -found[c])), relevant)
                )
                half, most = (1.0 if en_share >= x else 0.5 for x in (0.5, 0.7))
                dynamic = [
                    (en_share, "t = English share of dense top 10"),
                    (half, "t 1 if half the dense top 10 English, else 0.5"),
                    (most, "t 1 if 70% of the dense top 10 English, else 0.5"),
                    (0.75 * en_share, "t = 0.75 x English share"),
                    (en_share**2, "t = English share squared"),
                    (0.5 + 0.5 * en_share, "t = 0.5 + 0.5 x English share"),
                ]
                for t in [*WEIGHTS, *dynamic]:
                    t, rule = t if isinstance(t, tuple) else (t, "")
                    if t == 0.0 and singles and not rule:
                        continue
                    both = {
                        c: max(keyword.get(c, 0.0), t * found.get(c, 0.0))
                        for c in {*keyword, *found}
                    }
                    fused = {
                        c: args.alpha * dense.get(c, 0.0) + (1 - args.alpha) * both.get(c, 0.0)
                        for c in {*dense, *both}
                    }
                    ranked = sorted(fused, key=lambda c: (-fused[c], -both.get(c, 0.0)))
                    if not rule:
                        rule = "as shipped (offline)" if t == 0 else f"t {t}"
                    rule = f"{rule}, singles {singles}" if rule != "as shipped (offline)" else rule
                    rows.setdefault((label, rule), []).append((files(ranked), relevant))
                if singles or not args.minilm:
                    continue
                # The translation embedded by MiniLM, searched in the main (English) space.
                vector = index.embedder.embed_queries([" ".join(english)])[0]
                near = index.store.nearest(vector, POOL, content=False)
                by_minilm = scaled([(s.id, 1 - s.distance) for s in near])
                rows.setdefault((label, "MiniLM of the translation alone"), []).append(
                    (files(sorted(by_minilm, key=lambda c: -by_minilm[c])), relevant)
                )
                both = {
                    c: max(keyword.get(c, 0.0), en_share * found.get(c, 0.0))
                    for c in {*keyword, *found}
                }
                for w in (0.5, 1.0):
                    mixed = {
                        c: max(dense.get(c, 0.0), w * en_share * by_minilm.get(c, 0.0))
                        for c in {*dense, *by_minilm}
                    }
                    fused = {
                        c: args.alpha * mixed.get(c, 0.0) + (1 - args.alpha) * both.get(c, 0.0)
                        for c in {*mixed, *both}
                    }
                    ranked = sorted(fused, key=lambda c: (-fused[c], -both.get(c, 0.0)))
                    rule = f"kept rule + MiniLM of the translation, {w} x share"
                    rows.setdefault((label, rule), []).append((files(ranked), relevant))
    print_table(rows)


if __name__ == "__main__":
    main()
