"""Settings: one frozen object, loaded once, from four layers.

defaults < .env (read with dotenv_values, so os.environ is never touched) < environment
< command-line flags. Every problem is reported at once, one line each, naming where the
bad value came from. Nothing else in askmd reads the environment (but for XDG_DATA_HOME,
which places the default index folder: see index_home).
"""

from __future__ import annotations

import difflib
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from dotenv import dotenv_values

from askmd import folders as folder_list
from askmd.errors import AskmdError
from askmd.folders import Folder
from askmd.index import index_home

MIN_CHUNK_SIZE = 100
MIN_TOKEN_CHARS = 16  # an API token short enough to guess is refused


@dataclass(frozen=True)
class Settings:
    knowledge_dir: Path = Path("knowledge")
    # None: one index per knowledge folder, in the user's data folder (see index_home);
    # always a Path once the object exists.
    index_dir: Path = None  # type: ignore[assignment]
    chunk_size: int = 1000
    chunk_overlap: int = 200
    # Markdown, plus the formats readers.py converts; ASKMD_EXCLUDE=*.pdf switches one off.
    include: tuple[str, ...] = (
        "*.md", "*.markdown", "*.pdf", "*.docx", "*.html", "*.htm", "*.txt",
    )  # fmt: skip
    exclude: tuple[str, ...] = ()
    max_file_mb: float = 10.0
    watch: bool = True  # keep the index live while the REPL or serve runs
    watch_poll: float = 0.0  # > 0: poll the folder every this many seconds, not inotify
    embedding_backend: str = "local"
    embedding_model: str = ""
    embedding_base_url: str = ""  # the embeddings server, when it is not the chat server
    embedding_api_key: str = field(default="", repr=False)
    embed_threads: int = 0
    embed_batch: int = 0
    embed_concurrency: int = 0
    chroma_url: str = ""
    # Empty: "askmd" in the index's own embedded Chroma; on a Chroma server, one collection
    # per knowledge folder (see index_home.default_collection). Always set once it exists.
    collection: str = ""
    top_k: int = 5
    min_confidence: float = 0.5  # below it, the notes are judged not to answer (grounding.py)
    openai_api_key: str = field(default="", repr=False)
    openai_base_url: str = ""
    llm_model: str = ""
    llm_temperature: float = 0.1
    llm_max_tokens: int = 800
    llm_timeout: float = 60.0
    llm_budget: float = 120.0
    local_model: Path | None = None
    local_threads: int = 0
    local_context: int = 4096
    api_token: str = field(default="", repr=False)
    follow_symlinks: bool = False
    rerank: str = ""  # "llm": the chat model reorders the top candidates before answering
    rerank_model: Path | None = None  # a folder with an ONNX cross-encoder, to rerank with
    search_rewrite: bool = False  # the chat model restates each question before the search
    # Every folder answered from, when there are several (--knowledge repeated, or a list
    # in ASKMD_KNOWLEDGE_DIR: folders.py); knowledge_dir is then the first. Set from
    # knowledge_dir's own setting, so it has no variable of its own (DERIVED).
    folders: tuple[Folder, ...] = ()

    def __post_init__(self) -> None:
        if self.index_dir is None:
            object.__setattr__(self, "index_dir", index_home.default_index_dir(self.knowledge_dir))
        if not self.collection:
            shared = self.chroma_url and index_home.default_collection(self.knowledge_dir)
            object.__setattr__(self, "collection", shared or "askmd")

    @property
    def llm_configured(self) -> bool:
        """An LLM answers when a key, a server URL or a local model is given."""
        return bool(self.openai_api_key or self.openai_base_url or self.local_model)

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * 1024 * 1024)


# Fields set from another field's setting, with no variable of their own.
DERIVED = frozenset({"folders"})

# Field -> (environment variable, one-line meaning). The order is the order of .env.example.
DOCS: dict[str, tuple[str, str]] = {
    "knowledge_dir": (
        "ASKMD_KNOWLEDGE_DIR",
        "folder of Markdown notes to answer from; several joined by ':' (';' on Windows), "
        "each PATH or LABEL=PATH",
    ),
    "index_dir": (
        "ASKMD_INDEX_DIR",
        "where the index (Chroma, manifest, embedding cache) is kept; empty: one per knowledge "
        "folder under $XDG_DATA_HOME/askmd (~/.local/share/askmd)",
    ),
    "chunk_size": ("ASKMD_CHUNK_SIZE", "target chunk length in characters (hard cap 1.5x)"),
    "chunk_overlap": (
        "ASKMD_CHUNK_OVERLAP",
        "characters repeated between pieces of one long section; smaller than the size",
    ),
    "include": ("ASKMD_INCLUDE", "comma-separated globs of files to read"),
    "exclude": ("ASKMD_EXCLUDE", "comma-separated globs of files or folders to skip"),
    "max_file_mb": ("ASKMD_MAX_FILE_MB", "files larger than this many MB are skipped"),
    "watch": (
        "ASKMD_WATCH",
        "1: the REPL and serve pick up notes saved on disk within a second; 0: only on sync",
    ),
    "watch_poll": (
        "ASKMD_WATCH_POLL",
        "seconds between scans when watching by polling (network drives); 0: change "
        "notifications, polling every 2 s only where they are unavailable",
    ),
    "embedding_backend": (
        "ASKMD_EMBEDDING_BACKEND",
        "local (bundled MiniLM, offline) or openai (any OpenAI-compatible /v1/embeddings)",
    ),
    "embedding_model": (
        "ASKMD_EMBEDDING_MODEL",
        "empty: all-MiniLM-L6-v2 (local, English; Chinese and Japanese chunks also get "
        "use-multilingual vectors) or text-embedding-3-small (openai); use-multilingual "
        "(local, Chinese too, matches across languages) or multilingual-e5-small (local, best "
        "on Chinese, ~6x slower to index; pip install -r requirements-multilingual.txt) for "
        "every chunk",
    ),
    "embedding_base_url": (
        "ASKMD_EMBEDDING_BASE_URL",
        "the openai embedding backend's server, when it is not the LLM's; empty: OPENAI_BASE_URL",
    ),
    "embedding_api_key": (
        "ASKMD_EMBEDDING_API_KEY",
        "API key for ASKMD_EMBEDDING_BASE_URL; empty: OPENAI_API_KEY",
    ),
    "embed_threads": ("ASKMD_EMBED_THREADS", "CPU threads for the local model; 0 lets it choose"),
    "embed_batch": (
        "ASKMD_EMBED_BATCH",
        "texts per embedding batch; 0 picks per backend (8 local, 64 openai)",
    ),
    "embed_concurrency": (
        "ASKMD_EMBED_CONCURRENCY",
        "batches in flight to the openai embedding server; 0 fits the server (2 on this "
        "machine, 4 remote)",
    ),
    "chroma_url": (
        "ASKMD_CHROMA_URL",
        "a Chroma server (e.g. http://127.0.0.1:8001) instead of the embedded database",
    ),
    "collection": (
        "ASKMD_COLLECTION",
        "Chroma collection name; empty: askmd, or on a Chroma server one per knowledge folder "
        "(<folder name>-<hash of its path>)",
    ),
    "top_k": ("ASKMD_TOP_K", "how many chunks a search returns"),
    "min_confidence": (
        "ASKMD_MIN_CONFIDENCE",
        "0 to 1: below it an answer says the notes don't answer the question (0: never; "
        "eval --answers shows each question's confidence)",
    ),
    "openai_api_key": ("OPENAI_API_KEY", "API key for the LLM and the openai embedding backend"),
    "openai_base_url": (
        "OPENAI_BASE_URL",
        "OpenAI-compatible server for the LLM and embeddings; empty: api.openai.com",
    ),
    "llm_model": (
        "ASKMD_LLM_MODEL",
        "chat model; empty: gpt-4o-mini on api.openai.com, or the one model a server lists",
    ),
    "llm_temperature": ("ASKMD_LLM_TEMPERATURE", "sampling temperature, 0 to 2"),
    "llm_max_tokens": ("ASKMD_LLM_MAX_TOKENS", "longest answer, in tokens"),
    "llm_timeout": (
        "ASKMD_LLM_TIMEOUT",
        "seconds to wait for the LLM server's reply, and for each streamed piece of it",
    ),
    "llm_budget": ("ASKMD_LLM_BUDGET", "seconds one answer may take before it is cut; 0: no limit"),
    "local_model": (
        "ASKMD_LOCAL_MODEL",
        "a .gguf chat model to run in-process with llama.cpp (pip install xllamacpp)",
    ),
    "local_threads": ("ASKMD_LOCAL_THREADS", "CPU threads for the local model; 0: half the cores"),
    "local_context": ("ASKMD_LOCAL_CONTEXT", "context length of the local model, in tokens"),
    "api_token": (
        "ASKMD_API_TOKEN",
        "bearer token the HTTP API (serve) requires; needed to listen beyond this machine",
    ),
    "follow_symlinks": (
        "ASKMD_FOLLOW_SYMLINKS",
        "1: also read notes through symlinks that lead out of the knowledge folder",
    ),
    "rerank": (
        "ASKMD_RERANK",
        "llm: before answering, the chat model reorders the top 20 passages (one short call)",
    ),
    "rerank_model": (
        "ASKMD_RERANK_MODEL",
        "a folder with an ONNX cross-encoder (model.onnx, tokenizer.json) to rerank with",
    ),
    "search_rewrite": (
        "ASKMD_SEARCH_REWRITE",
        "1: the chat model restates each question in a note's words, searched with it",
    ),
}


# The command-line flag that sets a field, for messages about a bad value.
FLAGS = {
    "knowledge_dir": "--knowledge",
    "index_dir": "--index-dir",
    "chunk_size": "--size",
    "chunk_overlap": "--overlap",
    "top_k": "-k",
}


def variable_fields(cls: type) -> list:
    """The fields a variable sets (all but the DERIVED)."""
    return [f for f in fields(cls) if f.name not in DERIVED]


def env_name(field_name: str) -> str:
    return DOCS[field_name][0]


def _globs(value: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in value.split(",") if p.strip())


def _whole(value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise ValueError("is not a whole number") from None


def _number(value: str) -> float:
    try:
        number = float(value.strip())
    except ValueError:
        raise ValueError("is not a number") from None
    if not math.isfinite(number):
        raise ValueError("is not a finite number")
    return number


def _text(value: str) -> str:
    return value.strip()


def _flag(value: str) -> bool:
    word = value.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("is not 1 or 0")


_PARSERS: dict[str, Callable[[str], Any]] = {
    "knowledge_dir": lambda v: folder_list.parse(folder_list.split_listed(v)),
    "index_dir": lambda v: Path(v.strip()).expanduser(),
    "embedding_backend": lambda v: v.strip().lower(),
    "embedding_model": _text,
    "embedding_base_url": _text,
    "embedding_api_key": _text,
    "embed_threads": _whole,
    "embed_batch": _whole,
    "embed_concurrency": _whole,
    "chroma_url": _text,
    "collection": _text,
    "top_k": _whole,
    "min_confidence": _number,
    "openai_api_key": _text,
    "openai_base_url": _text,
    "chunk_size": _whole,
    "chunk_overlap": _whole,
    "include": _globs,
    "exclude": _globs,
    "max_file_mb": _number,
    "watch": _flag,
    "watch_poll": _number,
    "llm_model": _text,
    "llm_temperature": _number,
    "llm_max_tokens": _whole,
    "llm_timeout": _number,
    "llm_budget": _number,
    "local_model": lambda v: Path(v.strip()).expanduser() if v.strip() else None,
    "local_threads": _whole,
    "local_context": _whole,
    "api_token": _text,
    "follow_symlinks": _flag,
    "rerank": lambda v: v.strip().lower(),
    "rerank_model": lambda v: Path(v.strip()).expanduser() if v.strip() else None,
    "search_rewrite": _flag,
}


def default_text(field_name: str) -> str:
    """A default as it is written in .env.example and the README."""
    if field_name in ("index_dir", "collection"):
        return ""  # computed per knowledge folder
    value = getattr(Settings(), field_name)
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# Settings where an empty value is a real choice that overrides a lower layer.
_EMPTY_MEANS_SOMETHING = {
    "exclude",
    "embedding_model",
    "embedding_base_url",
    "embedding_api_key",
    "chroma_url",
    "openai_api_key",
    "openai_base_url",
    "llm_model",
    "local_model",
    "api_token",
}


def load_settings(
    environ: Mapping[str, str] | None = None,
    dotenv_path: Path | None = Path(".env"),
    overrides: Mapping[str, Any] | None = None,
    *,
    need_knowledge_dir: bool = True,
    warn: Callable[[str], None] | None = None,
) -> Settings:
    """Merge the layers and validate once. `overrides` are already-typed values from flags.
    `warn` hears, in one line, of ASKMD_* names that no setting has (a misspelling)."""
    environ = os.environ if environ is None else environ
    layers: list[tuple[str, Mapping[str, str | None]]] = []
    if dotenv_path is not None and dotenv_path.is_file():
        layers.append((str(dotenv_path), dotenv_values(dotenv_path)))
    layers.append(("environment", environ))

    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    problems: list[str] = []
    unread: set[str] = set()  # the settings whose value could not be read
    for f in variable_fields(Settings):
        name = env_name(f.name)
        for layer_name, layer in reversed(layers):  # the highest layer that sets it wins
            raw = layer.get(name)
            if raw is None or (raw.strip() == "" and f.name not in _EMPTY_MEANS_SOMETHING):
                continue
            try:
                values[f.name] = _PARSERS[f.name](raw)
                origin[f.name] = f"{name}={raw!r} (from {layer_name})"
            except ValueError as exc:
                problems.append(f"{name}={raw!r} (from {layer_name}) {exc}")
                unread.add(f.name)
            break
    unknown = _unknown_names(layers)
    if unknown and warn is not None:
        warn(f"unknown settings ignored: {unknown}")
    for key, value in (overrides or {}).items():
        if value is not None:
            flag = FLAGS.get(key, "--" + key.replace("_", "-"))
            shown = ",".join(map(str, value)) if isinstance(value, tuple) else value
            if key == "knowledge_dir":  # the folders typed, each PATH or LABEL=PATH
                try:
                    value = folder_list.parse((value,) if isinstance(value, str | Path) else value)
                except ValueError as exc:
                    problems.append(f"{flag} {exc}")
                    unread.add(key)
                    continue
            values[key] = value
            origin[key] = f"{flag} {shown}"
    if given := values.pop("knowledge_dir", None):
        values["knowledge_dir"] = given[0].path
        values["folders"] = given if len(given) > 1 else ()
        if len(given) > 1:
            origin.pop("knowledge_dir", None)  # each folder is checked on its own, below
    settings = Settings(**values)
    # a folder setting that could not be read is not also said to be missing
    problems += _validate(settings, origin, need_knowledge_dir and "knowledge_dir" not in unread)
    if problems:
        raise AskmdError("\n".join(problems))
    return settings


# ASKMD_* names read outside Settings: not misspelt settings. ASKMD_TODAY fixes the day
# questions are dated against (search/dates_in_query.py), for tests and measurements.
NOT_SETTINGS = frozenset({"ASKMD_TODAY"})


def _unknown_names(layers: list[tuple[str, Mapping[str, str | None]]]) -> str:
    """Each ASKMD_* name no setting reads, where it was set, and the nearest known name:
    a misspelled setting is otherwise ignored without a word."""
    known = {env_name(f.name)[len("ASKMD_") :]: env_name(f.name) for f in variable_fields(Settings)}
    found: dict[str, str] = {}
    for layer_name, layer in layers:
        for name in layer:
            if name in NOT_SETTINGS:
                continue
            if name.startswith("ASKMD_") and name[len("ASKMD_") :] not in known:
                found[name] = layer_name
    said = []
    for name, layer_name in found.items():
        near = difflib.get_close_matches(name[len("ASKMD_") :], list(known), n=1)
        hint = f"; did you mean {known[near[0]]}?" if near else ""
        said.append(f"{name} (from {layer_name}{hint})")
    return ", ".join(said)


def _validate(s: Settings, origin: dict[str, str], need_knowledge_dir: bool) -> list[str]:
    def where(name: str) -> str:
        return origin.get(name, f"{env_name(name)} (default {default_text(name)})")

    problems = []
    if s.chunk_size < MIN_CHUNK_SIZE:
        problems.append(f"{where('chunk_size')}: the chunk size must be at least {MIN_CHUNK_SIZE}")
    if s.chunk_overlap < 0:
        problems.append(f"{where('chunk_overlap')}: the overlap cannot be negative")
    elif s.chunk_overlap >= s.chunk_size and (
        s.chunk_size >= MIN_CHUNK_SIZE or "chunk_overlap" in origin
    ):  # a bad size is the one problem, unless the overlap was set too
        problems.append(
            f"{where('chunk_overlap')}: the overlap must be smaller than the chunk size "
            f"({s.chunk_size}); the default is {default_text('chunk_overlap')}"
        )
    if not s.include:
        problems.append(f"{where('include')}: at least one include glob is needed, e.g. *.md")
    if s.embedding_backend not in ("local", "openai"):
        problems.append(f"{where('embedding_backend')}: the backend must be local or openai")
    if s.embed_threads < 0:
        problems.append(f"{where('embed_threads')}: threads cannot be negative (0 = automatic)")
    if not 0 <= s.embed_batch <= 4096:
        problems.append(
            f"{where('embed_batch')}: the batch size must be between 1 and 4096 (0 = automatic)"
        )
    if not 0 <= s.embed_concurrency <= 64:
        problems.append(
            f"{where('embed_concurrency')}: batches in flight must be between 1 and 64 "
            "(0 = automatic)"
        )
    if not 0.0 <= s.min_confidence <= 1.0:
        problems.append(f"{where('min_confidence')}: the confidence must be between 0 and 1")
    if not 1 <= s.top_k <= 200:
        problems.append(f"{where('top_k')}: top-k must be between 1 and 200")
    if s.chroma_url and not re.match(r"^https?://[^/:]+(:\d+)?/?$", s.chroma_url):
        problems.append(f"{where('chroma_url')}: expected a URL like http://127.0.0.1:8001")
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$", s.collection):
        problems.append(
            f"{where('collection')}: a collection name is 3-512 letters, digits, . _ or -, "
            "starting and ending with a letter or digit"
        )
    if not 0 <= s.llm_temperature <= 2:
        problems.append(f"{where('llm_temperature')}: the temperature must be between 0 and 2")
    if not 1 <= s.llm_max_tokens <= 1_000_000:
        problems.append(f"{where('llm_max_tokens')}: max tokens must be at least 1")
    if s.llm_budget < 0:
        problems.append(f"{where('llm_budget')}: the budget cannot be negative (0 = no limit)")
    if not s.llm_timeout > 0:
        problems.append(f"{where('llm_timeout')}: the timeout must be above 0 seconds")
    if s.local_model is not None and not s.local_model.is_file():
        problems.append(f"{where('local_model')}: no such file; give the path of a .gguf model")
    if s.rerank not in ("", "llm"):
        problems.append(f"{where('rerank')}: rerank is llm or empty (off)")
    if s.rerank_model is not None and not s.rerank_model.is_dir():
        problems.append(f"{where('rerank_model')}: no such folder; give the cross-encoder's")
    if s.local_threads < 0:
        problems.append(f"{where('local_threads')}: threads cannot be negative (0 = automatic)")
    if not 256 <= s.local_context <= 1_048_576:
        problems.append(f"{where('local_context')}: the context must be at least 256 tokens")
    if s.api_token and (len(s.api_token) < MIN_TOKEN_CHARS or re.search(r"\s", s.api_token)):
        problems.append(
            f"{env_name('api_token')}: the token must be at least {MIN_TOKEN_CHARS} characters "
            "with no spaces; make one with: python3 -c 'import secrets; "
            "print(secrets.token_urlsafe())'"
        )
    if not s.max_file_mb > 0:
        problems.append(f"{where('max_file_mb')}: the size limit must be above 0")
    if s.watch_poll < 0:
        problems.append(f"{where('watch_poll')}: the interval cannot be negative (0 = notify)")
    if s.folders:  # several: one missing is said when opened, the others still answer
        if need_knowledge_dir and not any(f.path.is_dir() for f in s.folders):
            listed = ", ".join(str(f.path) for f in s.folders)
            problems.append(
                f"none of the knowledge folders exists ({listed}): point "
                f"{env_name('knowledge_dir')} or --knowledge at your notes"
            )
        return problems
    if need_knowledge_dir and not s.knowledge_dir.is_dir():
        exists = s.knowledge_dir.exists()
        what = "is not a folder" if exists else "does not exist"
        todo = "point" if exists else "create it, or point"
        said = (
            f"{origin['knowledge_dir']}: the knowledge folder"
            if "knowledge_dir" in origin
            else (f"the knowledge folder {s.knowledge_dir}")
        )
        problems.append(
            f"{said} {what}: {todo} {env_name('knowledge_dir')} or --knowledge at your notes"
        )
    return problems
