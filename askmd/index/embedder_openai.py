"""Vectors from an OpenAI-compatible server: POST /embeddings with the official openai
client, the texts in batches under the server's token limit, several in flight, retried
with the server's Retry-After or a backoff, and each row checked and scaled to unit
length. It reads no settings or environment: callers pass everything it needs.
"""

from __future__ import annotations

import email.utils
import math
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from askmd.errors import AskmdError, openai_error
from askmd.index import embedding_models as models
from askmd.index.embedded import as_list, normalise
from askmd.wording import plural as _plural

DEFAULT_OPENAI_MODEL = models.OPENAI_DEFAULT
DEFAULT_OPENAI_URL = "https://api.openai.com/v1"

# Several batches in flight keep a server busy while askmd sends, waits and parses. How
# many fits the server kind (0 in ASKMD_EMBED_CONCURRENCY picks; see default_concurrency).
REMOTE_CONCURRENCY = 4
LOCAL_CONCURRENCY = 2
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "0.0.0.0")
# A request's estimated tokens stay under this: OpenAI takes 300k a request, but TEI's
# default --max-batch-tokens is 16,384 and small Ollama/llama.cpp contexts less; 8k fits all.
# Estimated as UTF-8 bytes / 4: about right for English (~4 characters a token) and safe
# for Chinese (3 bytes a character, about one token each). A longer text goes alone.
MAX_BATCH_TOKENS = 8192
BYTES_PER_TOKEN = 4
# Each embed() call ends waiting for its slowest batch while the other slots idle; calls of
# SLICE_WAVES rounds of batches pay that a quarter as often. Against the scripted server
# (50 ms a request, 4 or 8 in flight, a busy 2-core machine) 1 round per call ran at
# 0.98-1.05x a raw client and 4 rounds at 1.02-1.04x: within the noise, so kept small.
SLICE_WAVES = 4
MAX_SLICE = 4096
# Retries: the server's Retry-After (or retry-after-ms) when it gives one and it is at most
# a minute (a longer one is a used-up quota: better said at once than waited out); else
# exponential backoff with jitter, 0.5 s doubling to at most 8 s.
RETRY_STATUSES = frozenset({408, 409, 429})
MAX_RETRY_AFTER = 60.0
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 8.0


def default_concurrency(url: str) -> int:
    """Batches in flight when the settings leave it to askmd.

    A server on this machine (Ollama, llama.cpp, a local TEI) shares its CPU or GPU with
    askmd and works through one or a few requests at a time (Ollama's OLLAMA_NUM_PARALLEL,
    llama-server's slots): 2 keeps it busy, one request computing while the next is sent
    and the last parsed; more would only queue there. api.openai.com and remote GPU boxes
    (vLLM, TEI, Infinity) batch concurrent requests together and sit behind network
    latency, so 4 in flight hide the round trip without flooding a rate limit (a 429 then
    pauses every batch for the server's Retry-After)."""
    host = (urlsplit(url).hostname or "").lower()
    if host in LOCAL_HOSTS or host.startswith("127."):
        return LOCAL_CONCURRENCY
    return REMOTE_CONCURRENCY


def estimated_tokens(text: str) -> int:
    return len(text.encode("utf-8")) // BYTES_PER_TOKEN + 1


def plan_batches(texts: Sequence[str], batch_size: int, max_tokens: int) -> list[range]:
    """Consecutive ranges of `texts`, each at most `batch_size` texts and `max_tokens`
    estimated tokens (a text above the cap alone), covering every text exactly once."""
    batches: list[range] = []
    start, tokens = 0, 0
    for i, text in enumerate(texts):
        cost = estimated_tokens(text)
        if i > start and (i - start >= batch_size or tokens + cost > max_tokens):
            batches.append(range(start, i))
            start, tokens = i, 0
        tokens += cost
    if start < len(texts):
        batches.append(range(start, len(texts)))
    return batches


def _retry_after(exc: BaseException) -> float | None:
    """The server's own wait, in seconds, from retry-after-ms or Retry-After (seconds or
    an HTTP date), or None."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            when = email.utils.parsedate_tz(value)
            if when is None:
                continue
            seconds = email.utils.mktime_tz(when) - time.time()
        if math.isfinite(seconds):
            return max(0.0, seconds)
    return None


def _retry_wait(exc: BaseException, attempt: int) -> float | None:
    """Seconds to wait before trying a failed request again, or None if retrying is futile:
    a timeout, a dropped connection, 408, 409, 429 and 5xx are worth another try."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        if exc.status_code not in RETRY_STATUSES and exc.status_code < 500:
            return None
    elif not isinstance(exc, openai.APIConnectionError):  # timeouts are connection errors
        return None
    hint = _retry_after(exc)
    if hint is not None:
        return hint if hint <= MAX_RETRY_AFTER else None
    return min(BACKOFF_MAX, BACKOFF_FIRST * 2**attempt) * (1 - 0.25 * random.random())


class _Pacer:
    """When the server says "slow down" (429), every batch waits it out, not just the one
    told: the others would only be refused too, spending their retries."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._until = 0.0

    def pause(self, seconds: float) -> None:
        with self._lock:
            self._until = max(self._until, time.monotonic() + seconds)

    def wait(self) -> None:
        while (left := self._until - time.monotonic()) > 0:
            time.sleep(left)


class OpenAIEmbedder:
    """Any OpenAI-compatible /embeddings endpoint: batches of at most `batch_size` texts
    and MAX_BATCH_TOKENS, `concurrency` of them in flight (0: default_concurrency), each
    retried on its own until it succeeds or the retries run out."""

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        model: str,
        batch_size: int = 64,
        timeout: float = 60.0,
        max_retries: int = 3,
        concurrency: int = 0,
        max_batch_tokens: int = MAX_BATCH_TOKENS,
        settings: tuple[str, str] = ("OPENAI_BASE_URL", "OPENAI_API_KEY"),
    ) -> None:
        import openai

        self.id = "openai:" + model
        self.model = model
        self.url = base_url or DEFAULT_OPENAI_URL
        self.batch_size = max(1, batch_size)
        self.timeout = timeout
        self.max_retries = max(0, max_retries)
        self.concurrency = concurrency if concurrency > 0 else default_concurrency(self.url)
        self.max_batch_tokens = max(1, max_batch_tokens)
        self.settings = settings  # the variables that set the URL and the key, for advice
        # Texts per embed() call (the indexer reads this): SLICE_WAVES rounds of every slot
        # busy, since each call ends waiting for its slowest batch with the others idle.
        wave = self.batch_size * self.concurrency
        self.slice_size = max(64, min(wave * SLICE_WAVES, max(MAX_SLICE, wave)))
        self._dimension: int | None = None
        self._dimension_lock = threading.Lock()
        self._pacer = _Pacer()
        # The URL is always passed: given None, the client would read OPENAI_BASE_URL itself,
        # and only settings.py reads the environment. Retries are ours (see _request), so
        # that a 429 pauses every batch in flight and a failure says how often it was tried.
        # The client is thread-safe: one connection pool for all batches.
        self._client = openai.OpenAI(
            base_url=self.url,
            api_key=api_key or "unused",
            timeout=timeout,
            max_retries=0,
        )

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self.embed(["dimension probe"])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Passages -> float32 (n, dimension), unit rows, in input order."""
        texts = as_list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # OpenAI rejects "" with a 400; a single space embeds as "nothing" just as well.
        inputs = [text if text else " " for text in texts]
        batches = plan_batches(inputs, self.batch_size, self.max_batch_tokens)
        if len(batches) == 1 or self.concurrency == 1:
            parts = [self._embed_batch(inputs[b.start : b.stop]) for b in batches]
        else:
            parts = self._in_flight(inputs, batches)
        return normalise(np.concatenate(parts))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Questions -> vectors; the same as embed() for OpenAI-style models."""
        return self.embed(texts)

    def _in_flight(self, inputs: list[str], batches: list[range]) -> list[np.ndarray]:
        """The batches' vectors in batch order, `concurrency` requests at a time; the first
        failure stops the rest (queued ones never start, running ones stop retrying)."""
        stop = threading.Event()
        workers = min(self.concurrency, len(batches))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="askmd-embed")
        try:
            futures = [
                pool.submit(self._embed_batch, inputs[b.start : b.stop], stop) for b in batches
            ]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            for future in futures:
                if future in done and future.exception() is not None:
                    raise future.exception()  # type: ignore[misc]
            return [future.result() for future in futures]
        finally:
            stop.set()
            pool.shutdown(wait=False, cancel_futures=True)

    def _embed_batch(self, texts: list[str], stop: threading.Event | None = None) -> np.ndarray:
        response = self._request(texts, stop)
        return self._vectors(getattr(response, "data", None) or [], len(texts))

    def _request(self, texts: list[str], stop: threading.Event | None) -> Any:
        """One batch's reply, retried on timeouts, dropped connections, 429 and 5xx; the
        same texts are sent each time, so a retry neither loses nor repeats a chunk."""
        import openai

        attempt = 0
        while True:
            self._pacer.wait()
            try:
                # "float" explicitly: the client otherwise asks for base64, which not every
                # OpenAI-compatible server understands.
                return self._client.embeddings.create(
                    model=self.model, input=texts, encoding_format="float"
                )
            except openai.OpenAIError as exc:
                pause = _retry_wait(exc, attempt)
                if pause is None or attempt >= self.max_retries or (stop and stop.is_set()):
                    said = openai_error(
                        exc,
                        kind="embeddings",
                        url=self.url,
                        model=self.model,
                        timeout=self.timeout,
                        retries=attempt,
                    )
                    raise self._error(str(said)) from None
                limited = getattr(exc, "status_code", None) == 429
            attempt += 1
            if limited:
                self._pacer.pause(pause)
            else:
                time.sleep(pause)

    def _error(self, message: str) -> AskmdError:
        """The message naming the variables this server's URL and key were set by."""
        url, key = self.settings
        return AskmdError(message.replace("OPENAI_BASE_URL", url).replace("OPENAI_API_KEY", key))

    def _vectors(self, data: list[Any], expected: int) -> np.ndarray:
        where = f"the embeddings server at {self.url}"
        if len(data) != expected:
            raise self._error(
                f"{where} returned {_plural(len(data), 'vector')} for {_plural(expected, 'text')}. "
                "Check that OPENAI_BASE_URL points at an OpenAI-compatible server."
            )
        # Servers may answer out of order; `index` says which input each vector belongs to.
        indexes = [getattr(item, "index", None) for item in data]
        if sorted(i for i in indexes if isinstance(i, int)) == list(range(expected)):
            data = [item for _, item in sorted(zip(indexes, data, strict=True))]
        try:
            rows = [np.asarray(item.embedding, dtype=np.float32) for item in data]
        except (AttributeError, TypeError, ValueError):
            rows = [np.zeros(0)]
        dimensions = sorted({row.size if row.ndim == 1 else 0 for row in rows})
        if 0 in dimensions:
            raise self._error(
                f"{where} returned something that is not a list of vectors. "
                "Check that OPENAI_BASE_URL points at an OpenAI-compatible server."
            )
        with self._dimension_lock:  # batches in flight answer at once
            if self._dimension is not None and dimensions != [self._dimension]:
                dimensions = sorted({*dimensions, self._dimension})
            if len(dimensions) > 1:
                shown = ", ".join(str(n) for n in dimensions)
                raise AskmdError(
                    f"{where} returned vectors of different dimensions ({shown}) for the model "
                    f"'{self.model}'. Check the server, then index again."
                )
            self._dimension = dimensions[0]
        return np.stack(rows)
