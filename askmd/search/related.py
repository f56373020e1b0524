"""The notes most like one note: by meaning, by links and by tags, fused.

Each kind of evidence ranks the other notes on its own: meaning (the note's chunk vectors'
nearest chunks; while its vectors wait, its rarest words by keyword), direct links (either
way), shared link neighbours (Adamic-Adar: a hub linked from everywhere says little) and
shared tags (a rare tag says more). Reciprocal rank fusion joins the lists, each with a
weight: ranks, not scores, so a cosine and a tag count need no common scale. The weights
and the meaning method were measured on a real vault (bench/related_bench.py).

Pure: the caller (pipeline.Index.related) reads the index and passes the lists in.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from askmd.terms import content_terms

SIMILAR = "similar"  # near in meaning (the vectors)
SIMILAR_WORDS = "similar words"  # near by keyword: the note's vectors are not stored yet
LINKS_TO = "links to it"  # the other note links to this one
LINKED_FROM = "linked from it"  # this note links to the other one
SHARED_LINKS = "shared links"  # both link to, or are linked from, the same notes
TAG = "shared tag #{}"

RRF_K = 60  # reciprocal rank fusion's damping: 1 / (RRF_K + rank)
# Each list's weight in the fusion (bench/related_bench.py): a direct link is the user's
# own word that two notes belong together; meaning finds what no link says yet.
WEIGHTS = {"similar": 1.0, "linked": 1.0, "shared": 0.5, "tags": 0.5}
POOL = 50  # nearest chunks asked per query vector
# Below this cosine two notes are not "similar" (MiniLM puts unrelated English notes
# at about 0 to 0.15): a small folder would otherwise list every note as similar.
MIN_COSINE = 0.2
MAX_QUERIES = 8  # a long note asks with at most this many of its chunks (spread over it)
KEYWORD_TERMS = 24  # a note's rarest words searched for while its vectors wait
TAGS_SHOWN = 3  # a result names at most this many shared tags

if TYPE_CHECKING:  # numpy loads only when vectors are compared
    import numpy as np

# A query vector and how many chunks -> (source, cosine) of the nearest chunks.
Nearest = Callable[["np.ndarray", int], list[tuple[str, float]]]


@dataclass
class Related:
    source: str
    score: float = 0.0
    linked: bool = False
    why: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "source": self.source,
            "score": round(self.score, 4),
            "linked": self.linked,
            "why": self.why,
        }


def by_meaning(
    vectors: np.ndarray, nearest: Nearest, note: str, method: str = "maxsim"
) -> list[tuple[str, float]]:
    """Other notes by meaning, (source, cosine) best first. "maxsim": each of the note's
    chunks (at most MAX_QUERIES, spread over it) asks for its nearest chunks and a note
    scores its best cosine to any of them; "centroid": one query, the mean chunk vector."""
    import numpy as np

    if not len(vectors):
        return []
    if method == "centroid":
        mean = vectors.mean(axis=0)
        queries = [mean / (np.linalg.norm(mean) or 1.0)]
    else:
        picked = np.linspace(0, len(vectors) - 1, min(len(vectors), MAX_QUERIES)).round()
        queries = [vectors[int(i)] for i in dict.fromkeys(picked)]
    best: dict[str, float] = {}
    for vector in queries:
        for source, cosine in nearest(vector, POOL):
            if source != note and cosine >= MIN_COSINE and cosine > best.get(source, -2.0):
                best[source] = cosine
    return sorted(best.items(), key=lambda item: (-item[1], item[0]))


def keyword_terms(texts: Iterable[str], idf: Callable[[list[str]], Mapping[str, float]]):
    """The note's most telling words (tf x idf), to find notes like it by keyword."""
    counts = Counter(t for text in texts for t in content_terms(text))
    weights = idf(list(counts))
    ranked = sorted(counts, key=lambda t: (-counts[t] * weights.get(t, 0.0), t))
    return ranked[:KEYWORD_TERMS]


def rank(
    note: str,
    k: int,
    notes: set[str],
    edges: Iterable[tuple[str, str]],
    tags: Mapping[str, Iterable[str]],
    similar: list[tuple[str, float]],
    similar_why: str = SIMILAR,
    weights: Mapping[str, float] = WEIGHTS,
) -> list[Related]:
    """The k notes most related to `note`, best first, never itself. `edges` are resolved
    links (source, target) between files; `tags` each note's tags; `similar` other notes by
    meaning, best first."""
    out_links = {b for a, b in edges if a == note and b != note and b in notes}
    in_links = {a for a, b in edges if b == note and a != note and a in notes}
    found: dict[str, Related] = {}

    def add(ranked: list[str], weight: float, why: Callable[[str], list[str]]) -> None:
        for place, source in enumerate(ranked, 1):
            if source == note or source not in notes:
                continue
            entry = found.setdefault(source, Related(source))
            entry.score += weight / (RRF_K + place)
            entry.why.extend(w for w in why(source) if w not in entry.why)

    similar_rank = {s: i for i, (s, _) in enumerate(similar)}
    direct = sorted(
        out_links | in_links,
        key=lambda s: (-(s in out_links) - (s in in_links), similar_rank.get(s, len(similar)), s),
    )
    add([s for s, _ in similar], weights["similar"], lambda s: [similar_why])
    add(
        direct,
        weights["linked"],
        lambda s: [LINKED_FROM] * (s in out_links) + [LINKS_TO] * (s in in_links),
    )
    shared = _shared_neighbours(note, edges)
    add(_best(shared), weights["shared"], lambda s: [SHARED_LINKS])
    by_tag = _shared_tags(note, tags)
    add(_best({s: w for s, (w, _) in by_tag.items()}), weights["tags"], lambda s: by_tag[s][1])
    for entry in found.values():
        entry.linked = entry.source in out_links or entry.source in in_links
    return sorted(found.values(), key=lambda r: (-r.score, r.source))[:k]


def _best(scores: Mapping[str, float]) -> list[str]:
    return sorted(scores, key=lambda s: (-scores[s], s))


def _shared_neighbours(note: str, edges: Iterable[tuple[str, str]]) -> dict[str, float]:
    """Notes that share link neighbours with `note` (both link to Z, both are linked from
    Z, or one each way), by Adamic-Adar: each shared Z counts 1 / log(its degree)."""
    neighbours: dict[str, set[str]] = {}
    for a, b in edges:
        if a != b:
            neighbours.setdefault(a, set()).add(b)
            neighbours.setdefault(b, set()).add(a)
    scores: dict[str, float] = {}
    for middle in neighbours.get(note, ()):
        around = neighbours[middle]
        weight = 1.0 / math.log(1 + len(around))
        for other in around:
            if other != note:
                scores[other] = scores.get(other, 0.0) + weight
    return scores


def _shared_tags(
    note: str, tags: Mapping[str, Iterable[str]]
) -> dict[str, tuple[float, list[str]]]:
    """Notes sharing a tag with `note`: each shared tag weighs its idf over the notes;
    the why names the rarest shared tags first."""
    spelled = {t.lower(): t for t in sorted(tags.get(note, ()))}  # as the note writes it
    mine = set(spelled)
    if not mine:
        return {}
    lowered = {s: {t.lower() for t in ts} for s, ts in tags.items()}
    count = Counter(t for ts in lowered.values() for t in ts)
    idf = {t: math.log(1 + len(lowered) / count[t]) for t in mine}
    found: dict[str, tuple[float, list[str]]] = {}
    for source, theirs in lowered.items():
        shared = sorted(mine & theirs, key=lambda t: (-idf[t], t))
        if source != note and shared:
            why = [TAG.format(spelled[t]) for t in shared[:TAGS_SHOWN]]
            found[source] = (sum(idf[t] for t in shared), why)
    return found
