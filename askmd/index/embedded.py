"""What every embedder gives back: one float32 row of L2 norm 1 per text, the texts taken
as a list (a bare string is refused, not embedded a character at a time)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # An all-zero row stays zero instead of becoming NaN.
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


def as_list(texts: Sequence[str]) -> list[str]:
    # A bare str is a Sequence[str] too, and would be embedded one character at a time.
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not one str")
    return list(texts)
