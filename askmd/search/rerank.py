"""A second look at the best candidates, when something better than the blend is at hand.

Two optional rerankers reorder the top DEPTH hits of a search, never by default:
- `LLMRerank`: the configured chat model reads the question and the numbered passages
  and replies with their numbers, best first, in one short call. A reply that names no
  passage, or one that does not exist, leaves the order as it was: a rerank may only
  help, never lose a search.
- `CrossEncoder`: an ONNX cross-encoder the user points to (ASKMD_RERANK_MODEL=DIR with
  model.onnx and tokenizer.json) scores each (question, passage) pair; run with
  onnxruntime, which the local embedder already needs.
Each records how long its last call took (`last_ms`), for `ask --json`'s `rerank_ms`.
`SearchRewrite`, also optional, has the chat model restate a question in a note's words
before the search.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from askmd.errors import AskmdError, LLMFailed, first_line

if TYPE_CHECKING:
    from askmd.answer.chat import Chat
    from askmd.search.hits import Hit
    from askmd.settings import Settings

DEPTH = 20  # candidates a reranker reads
PASSAGE_CHARS = 300  # of each passage shown to the LLM: the call stays short
REWRITE_CHARS = 300  # of a search rewrite kept
MAX_LENGTH = 256  # tokens of one (question, passage) pair for the cross-encoder


def renumbered(hits: list[Hit], order: list[int]) -> list[Hit]:
    """The hits in the given order (indexes into `hits`), ranks 1.. again."""
    return [replace(hits[i], rank=rank) for rank, i in enumerate(order, start=1)]


class LLMRerank:
    """Listwise rerank by the chat model: one call for all candidates."""

    def __init__(self, chat: Chat):
        self.chat = chat
        self.last_ms: float | None = None
        self.error: str | None = None  # why the last call kept the original order

    def __call__(self, question: str, hits: list[Hit]) -> list[Hit]:
        started = time.perf_counter()
        self.error = None
        try:
            reply = self.chat.complete(messages(question, hits), max_tokens=4 * len(hits) + 8)
            order = parse_order(reply, len(hits))
            if order is None:
                self.error = f"the reranking reply named no passage in order: {reply[:80]!r}"
                order = list(range(len(hits)))
        except LLMFailed as exc:
            self.error, order = first_line(exc), list(range(len(hits)))
        finally:
            self.last_ms = (time.perf_counter() - started) * 1000
        return renumbered(hits, order)


class SearchRewrite:
    """Before searching, the chat model says the question again in the words a note that
    answers it would use; the search reads both, so no word of the question is lost."""

    def __init__(self, chat: Chat):
        self.chat = chat
        self.last_ms: float | None = None
        self.error: str | None = None

    def __call__(self, query: str) -> str:
        started = time.perf_counter()
        self.error = None
        try:
            reply = self.chat.complete(rewrite_messages(query), max_tokens=60)
        except LLMFailed as exc:
            self.error, reply = first_line(exc), ""
        finally:
            self.last_ms = (time.perf_counter() - started) * 1000
        words = " ".join(reply.split())[:REWRITE_CHARS]  # a runaway reply is cut
        return f"{query} {words}" if words else query


def rewrite_messages(query: str) -> list[dict]:
    return [
        {
            "role": "system",
            "content": "Rewrite the user's question as a short search query: the words and "
            "technical terms a note that answers it would use. Reply with the query only.",
        },
        {"role": "user", "content": query},
    ]


def messages(question: str, hits: list[Hit]) -> list[dict]:
    passages = "\n".join(
        f"[{n}] {h.source} > {h.heading_chain}: {' '.join(h.text.split())[:PASSAGE_CHARS]}"
        for n, h in enumerate(hits, start=1)
    )
    return [
        {
            "role": "system",
            "content": "You rank passages by how well they answer a question. Reply with the "
            "passage numbers only, most useful first, separated by commas, e.g. 3, 1, 2.",
        },
        {"role": "user", "content": f"Question: {question}\n\nPassages:\n{passages}"},
    ]


def parse_order(reply: str, n: int) -> list[int] | None:
    """Indexes (0-based) in the reply's order, the unnamed ones after in their old order;
    None when the reply names no passage or one that does not exist.

    >>> parse_order("3, 1", 4)
    [2, 0, 1, 3]
    >>> parse_order("I cannot rank these.", 4) is None
    True
    """
    numbers = [int(x) for x in re.findall(r"\d+", reply)]
    if not numbers or any(not 1 <= x <= n for x in numbers):
        return None
    named = list(dict.fromkeys(x - 1 for x in numbers))
    return named + [i for i in range(n) if i not in named]


class CrossEncoder:
    """Scores (question, passage) pairs with an ONNX model: the higher logit first."""

    def __init__(self, folder: Path):
        model, vocab = folder / "model.onnx", folder / "tokenizer.json"
        missing = [p.name for p in (model, vocab) if not p.is_file()]
        if missing:
            raise AskmdError(
                f"ASKMD_RERANK_MODEL={folder}: no {' or '.join(missing)} there; the folder "
                "needs an ONNX cross-encoder (model.onnx) and its tokenizer.json"
            )
        import onnxruntime
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(vocab))
        self.tokenizer.enable_truncation(MAX_LENGTH)
        self.tokenizer.enable_padding()
        self.session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.last_ms: float | None = None
        self.error: str | None = None

    def scores(self, question: str, texts: list[str]) -> list[float]:
        import numpy as np

        encoded = self.tokenizer.encode_batch([(question, t) for t in texts])
        feed = {
            "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
        }
        out = self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0]
        # A cross-encoder gives one logit per pair; a model with per-token output (the
        # stand-in embedder in the tests) is mean-pooled over real tokens, first value read.
        out = np.asarray(out, dtype=np.float32)
        if out.ndim == 3:
            mask = feed["attention_mask"][:, :, None].astype(np.float32)
            out = (out * mask).sum(axis=1) / mask.sum(axis=1)
        return [float(v) for v in out.reshape(len(texts), -1)[:, 0]]

    def __call__(self, question: str, hits: list[Hit]) -> list[Hit]:
        started = time.perf_counter()
        try:
            values = self.scores(question, [f"{h.heading_chain}\n{h.text}" for h in hits])
            order = sorted(range(len(hits)), key=lambda i: -values[i])
        finally:
            self.last_ms = (time.perf_counter() - started) * 1000
        return renumbered(hits, order)


def from_settings(settings: Settings, chat: Chat | None) -> LLMRerank | CrossEncoder | None:
    """The reranker the settings ask for, or None (the default): a cross-encoder folder
    wins over the LLM, which needs a configured model."""
    if settings.rerank_model is not None:
        return _loaded(settings.rerank_model.resolve())
    if settings.rerank == "llm" and chat is not None:
        return LLMRerank(chat)
    return None


def search_rewrite(settings: Settings, chat: Chat | None) -> SearchRewrite | None:
    """The rewrite for search the settings ask for (ASKMD_SEARCH_REWRITE=1 and an LLM)."""
    return SearchRewrite(chat) if settings.search_rewrite and chat is not None else None


@lru_cache(maxsize=2)
def _loaded(folder: Path) -> CrossEncoder:
    """One session per model folder for the life of the process (a REPL asks many times)."""
    return CrossEncoder(folder)
