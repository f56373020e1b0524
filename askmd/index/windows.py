"""Window vectors: one vector for every few sentences of a chunk, from the chunk's own run.

A question in its asker's words often matches one sentence of a note ("how do I stop the
laptop going to sleep" against "disable suspend" in a section about power), and the
chunk's one vector, the mean of all its tokens, dilutes that sentence with the rest. So
each chunk also gets a vector per window of about WINDOW_CHARS characters (its sentences
and lines, merged while short), pooled from the same model run that gives the chunk's
vector ("late chunking"): the mean of the window's output token states, which have seen
the whole chunk, title and heading chain included. No second run of the model: a window
costs a few numpy sums and its bytes in the manifest.

At search a chunk's dense score is the better of its own cosine and its best window's
(retriever._with_windows). Measured on the English paraphrase set (76 questions) and
SciFact in BENCHMARKS.md; windows of 300 characters gained little, and windows embedded
by a run of their own (a second pass of the model over every chunk) less than these.

The multilingual model that embeds a folder's Chinese and Japanese chunks gives one
pooled vector per input and no token states, so its windows are embedded by a run of
their own (`own_run`), after the chunk's title and heading chain; CJK text packs more
meaning per character, so its windows are CJK_WINDOW_CHARS long (60 ranked Chinese
questions better than 100 or 150, BENCHMARKS.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from askmd.index.embedding_models import CJK_CHUNK
from askmd.terms import cjk_share

if TYPE_CHECKING:  # numpy loads with the model or the search, not with this module
    import numpy as np

WINDOW_CHARS = 150
CJK_WINDOW_CHARS = 60
# Sentence ends (Latin and CJK full stops, question and exclamation marks) and line breaks.
_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*|\n+")


def spans(text: str, start: int = 0, size: int | None = None) -> list[tuple[int, int]]:
    """Character spans of text[start:]'s windows: sentences and lines, each merged with the
    next while the two stay under `size` characters (default WINDOW_CHARS)."""
    size = WINDOW_CHARS if size is None else size
    pieces: list[tuple[int, int]] = []
    position = start
    for found in _BREAK.finditer(text, start):
        if found.start() > position and text[position : found.start()].strip():
            pieces.append((position, found.start()))
        position = max(position, found.end())
    if position < len(text) and text[position:].strip():
        pieces.append((position, len(text)))
    merged: list[tuple[int, int]] = []
    for first, last in pieces:
        if merged and last - merged[-1][0] < size:
            merged[-1] = (merged[-1][0], last)
        else:
            merged.append((first, last))
    return merged


def own_run(text: str, start: int) -> list[str]:
    """The texts a model that pools whole inputs embeds for this chunk's windows: each
    window after the chunk's title and heading chain (text[:start]), so it keeps its
    context. CJK chunks get windows of CJK_WINDOW_CHARS."""
    size = CJK_WINDOW_CHARS if cjk_share(text[start:]) >= CJK_CHUNK else WINDOW_CHARS
    prefix = text[:start].rstrip()
    found = [text[a:b] for a, b in spans(text, start, size)]
    return [f"{prefix}\n\n{window}" for window in found] if prefix else found


def pool(
    states: np.ndarray, offsets: Sequence[tuple[int, int]], windows: list[tuple[int, int]]
) -> np.ndarray:
    """Unit vectors (n, dim) of the windows that have tokens among these states: the mean
    of the states of the tokens lying inside each. A window past the model's length limit
    has none and is left out."""
    import numpy as np

    if not windows or not len(offsets):
        return np.zeros((0, states.shape[-1]), dtype=np.float32)
    bounds = np.asarray(offsets[: len(states)], dtype=np.int64).reshape(-1, 2)
    first, last = bounds[:, 0], bounds[:, 1]
    real = last > first  # special tokens have (0, 0)
    vectors = []
    for a, b in windows:
        inside = real & (first >= a) & (last <= b)
        if inside.any():
            vectors.append(states[: len(bounds)][inside].mean(axis=0))
    if not vectors:
        return np.zeros((0, states.shape[-1]), dtype=np.float32)
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def key(embedder_id: str) -> str:
    """Where an embedder's window vectors are kept in the manifest's embedding cache."""
    return embedder_id + "#windows"


def nearest(found: dict[str, np.ndarray], query: np.ndarray) -> dict[str, float]:
    """Per chunk, the cosine of its window nearest the question (unit vectors), in one
    product over every window: a few hundred candidates take about a millisecond."""
    import numpy as np

    if not found:
        return {}
    matrices = list(found.values())
    cosines = np.concatenate(matrices).astype(np.float32) @ query.astype(np.float32)
    starts = np.cumsum([0] + [len(m) for m in matrices[:-1]])
    return dict(zip(found, np.maximum.reduceat(cosines, starts).tolist(), strict=True))
