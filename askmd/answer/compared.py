"""A question that weighs named things against each other, and whether a passage does.

"Vim 和 Emacs 到底哪个更好用？" over notes with a page on each editor finds both pages,
close in meaning, each naming one of them; quoting them answers nothing that was asked.
Whether one is better is said only where both are named: a passage (its text, heading
chain or file name) that holds every name the question weighs. When none of the top
passages does, the notes do not compare them, and the answer declines and says so.

A question weighs things when it names two or more (names.py) and asks which is better
or compares them: "better", "faster", "versus", "compared to", "should I learn X or Y",
哪个更, 更适合, 相比, 还是…好. A choice of ways ("Can I use Dropbox or iCloud to sync?")
weighs nothing.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from askmd.answer import names
from askmd.terms import STOPWORDS, terms

if TYPE_CHECKING:
    from askmd.search.hits import Hit

_WEIGHS = re.compile(
    r"\b(better|worse|best|worst|faster|slower|easier|harder|simpler|cheaper|safer|lighter"
    r"|superior|inferior|preferable|versus|compared? (to|with)|comparison)\b"
    r"|(?-i:\bvs\b)(?!\.?\s*code\b)"
    r"|\b(more|less) \w+ than\b|\bprefer\w*\b[^?!.]*\b(or|over|to)\b"
    r"|\b(should|would)\b[^?!.]*\b(use|learn|choose|pick|get|buy|go with|start with)\b"
    r"[^?!.]*\bor\b"
    # 更好地 is "make better use of", not a comparison
    r"|哪个更|哪一个更|哪个好|哪个比较|更好(?!地)|更适合|更快|更强|更方便|更容易|更简单"
    r"|还是[^？?。]*(好|合适|推荐|值得|适合)|相比|对比|比较好|优劣|孰优|哪个强",
    re.IGNORECASE,
)


# What stands between two names that are weighed: "X or Y", "X better than Y", "X 和 Y".
_BETWEEN = re.compile(
    r"[\s,，、]*(?:(?:(?:is|are)\s+)?(?:(?:much|far|a lot)\s+)?(?:\w+\s+)?(?:than|over)"
    r"|or|vs\.?|versus|and|compared\s+(?:to|with)|和|与|跟|同|还是用?|或者?|或是|比|对比|相比)"
    r"[\s,，、]*(?:(?:the|a|an)\s+)?",
    re.IGNORECASE,
)


_FIRST = re.compile(r"\s*([A-Z][A-Za-z0-9]*)")


def weighed(question: str) -> list[str]:
    """The names a question weighs against each other: those on either side of "or",
    "than", "vs", 和, 还是…, not the place or team it asks about ("Should our Berlin
    designers use Figma or Sketch?": Figma and Sketch). [] when it compares nothing."""
    if not _WEIGHS.search(question):
        return []
    placed: list[tuple[int, int, str]] = []
    start = 0
    found_names = names.named(question)
    first = _FIRST.match(question)
    if first and first.group(1) not in found_names and first.group(1).lower() not in STOPWORDS:
        # "Notion vs Logseq?": the first word starts the sentence, so names.py does not
        # count it; weighed against a name, it is one
        found_names.insert(0, first.group(1))
    for name in found_names:
        at = question.find(name, start)
        if at >= 0:
            placed.append((at, at + len(name), name))
            start = at + len(name)
    found: list[str] = []
    for (_, end, first), (begin, _, second) in itertools.pairwise(placed):
        if _BETWEEN.fullmatch(question[end:begin]):
            found += [n for n in (first, second) if n not in found]
    return found


def apart(question: str, hits: Sequence[Hit]) -> list[str]:
    """The names the question weighs when no passage names them all; else []. A name
    too short to check (names.SHORTEST: `Go`, `C`) counts as named."""
    asked = weighed(question)
    if not asked:
        return []
    kept = [w for name in asked for w in names.words(name)]
    for hit in hits:
        if names.all_held(kept, set(terms(f"{hit.source} {hit.heading_chain} {hit.text}"))):
            return []
    return asked
