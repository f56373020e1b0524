"""How often a question asked after another retrieves its note: old rule against new.

    python -m bench.follow_up_bench [--knowledge knowledge] [--pairs bench/follow_up_pairs.jsonl]

Each line of the pairs file holds a first question, a second one, whether the second is
a follow-up, and the file that answers the second. The first is searched as asked; the
second is searched as the old rule chose (any question with a pronoun, "and…", or two
content words or fewer was merged with the previous query) and as `followup.resolve`
chooses now (no LLM). Prints hit@1 and hit@5 of the relevant file, per kind of pair.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from askmd.answer.followup import merged_query, resolve
from askmd.answer.result import Turn
from askmd.terms import content_terms, has_cjk
from bench.common import ROOT, open_index, tiny_folder

K = 10
# The old rule's words of dependence: any pronoun, demonstrative, or opening "and", "why"…
_OLD_FOLLOW_UP = re.compile(
    r"^\s*(?:and|also|what about|how about|then|so|but|same for|why)\b"
    r"|\b(?:it|its|it's|that|this|those|these|they|them|their|there|he|she|one)\b"
    r"|它|这个|那个|这些|那些|他们|她们|其中|^\s*(?:那|那么|还有|而|并且|另外)|呢[？?]?\s*$",
    re.IGNORECASE,
)


def old_rule(question: str, history: list[Turn]) -> str:
    if _OLD_FOLLOW_UP.search(question) or len(set(content_terms(question))) <= 2:
        return merged_query(question, history)
    return question


def file_rank(hits, relevant: str | list[str]) -> int:
    """1-based rank of the first file that answers (one path, or a list of paths); 0: none."""
    wanted = {relevant} if isinstance(relevant, str) else set(relevant)
    files = list(dict.fromkeys(h.source for h in hits))
    return next((i for i, f in enumerate(files, start=1) if f in wanted), 0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--knowledge", default=str(ROOT / "knowledge"))
    parser.add_argument("--pairs", default=str(ROOT / "bench" / "follow_up_pairs.jsonl"))
    parser.add_argument("--index-dir", default="")
    args = parser.parse_args(argv)
    index_dir = Path(args.index_dir or tempfile.mkdtemp(prefix="askmd-follow-up-"))
    index = open_index(Path(args.knowledge), index_dir)
    search = lambda q: index.search(q, K)  # noqa: E731
    pairs = [json.loads(line) for line in open(args.pairs, encoding="utf-8") if line.strip()]
    table: dict[tuple[str, str], list[int]] = {}
    for pair in pairs:
        history = [Turn(pair["first"], pair["first"], "")]
        kind = "follow-up" if pair["follow_up"] else "new question"
        lang = "zh" if has_cjk(pair["second"]) else "en"
        old_hits = search(old_rule(pair["second"], history))
        query, new_hits = resolve(pair["second"], history, search, None)
        for rule, hits in (("old", old_hits), ("new", new_hits)):
            rank = file_rank(hits, pair["relevant"])
            for group in (kind, lang, "all"):
                table.setdefault((group, rule), []).append(rank)
        if file_rank(new_hits, pair["relevant"]) != 1:
            print(f"  miss@1 new: {pair['second']!r} searched {query!r}", file=sys.stderr)
    print(f"{len(pairs)} pairs over {args.knowledge}/, files ranked by their best chunk (k={K})")
    heads = "".join(f"{h:>10}" for h in ("old hit@1", "old hit@5", "new hit@1", "new hit@5"))
    print(f"{'pairs':<14}{'n':>4}{heads}")
    for group in ("follow-up", "new question", "en", "zh", "all"):
        old, new = table.get((group, "old"), []), table.get((group, "new"), [])
        if not old:
            continue

        def rate(ranks: list[int], at: int) -> str:
            return f"{sum(1 for r in ranks if 0 < r <= at) / len(ranks):.3f}"

        cells = (rate(old, 1), rate(old, 5), rate(new, 1), rate(new, 5))
        rates = "".join(f"{x:>10}" for x in cells)
        print(f"{group:<14}{len(old):>4}{rates}")


def smoke(tmp: Path) -> None:
    """Two pairs over the tiny notes: a follow-up and a new question."""
    pairs = [
        {"first": "how long are database backups kept", "second": "and how do I restore it",
         "follow_up": True, "relevant": "en/backups.md"},
        {"first": "how long are database backups kept", "second": "which port does the API use",
         "follow_up": False, "relevant": "en/deploy.md"},
    ]  # fmt: skip
    lines = "\n".join(json.dumps(p) for p in pairs)
    (tmp / "pairs.jsonl").write_text(lines, encoding="utf-8")
    main(["--knowledge", str(tiny_folder(tmp / "kb")), "--pairs", str(tmp / "pairs.jsonl"),
          "--index-dir", str(tmp / "ix")])  # fmt: skip


if __name__ == "__main__":
    main()
