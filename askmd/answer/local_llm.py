"""Run a GGUF model with llama.cpp's own OpenAI-compatible server, inside this process.

The optional `xllamacpp` wheel carries llama.cpp and its HTTP server prebuilt, so a user
with a .gguf file needs nothing else: the server listens on 127.0.0.1 on a free port,
behind a random API key (llama.cpp allows every CORS origin, so without a key any web page
open in a browser could use it), and askmd talks to it through the same openai client as
to any other server. This module only starts and stops it.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from askmd.errors import AskmdError, first_line

XLLAMACPP_PIN = "xllamacpp==2026.10.11549"
ALIAS = "local"


@dataclass
class LocalServer:
    url: str  # ends in /v1
    api_key: str = field(repr=False)
    model: str
    _server: Any = field(repr=False)

    def close(self) -> None:
        """Stop the server (the C++ threads end when the object is released)."""
        self._server = None


def default_threads() -> int:
    """Half the cores, at least one. llama.cpp's threads spin while they wait, so a model
    given every core of a machine busy with anything else slows down badly: on 2 shared
    cores under load, 1 thread answered in a median 14.8 s against 39.5 s for 2, with a
    third of the CPU time; idle, 2 threads reached the first token 1.8x sooner than 1
    (BENCHMARKS.md). ASKMD_LOCAL_THREADS sets it."""
    return max(1, (os.cpu_count() or 1) // 2)


REPEAT_PENALTY = 1.1  # llama.cpp's default is 1.0 (off); small models loop without one
REPEAT_LAST_N = 128  # tokens the penalty looks back on


def sampling(model_path: Path, max_tokens: int, context: int) -> tuple[int, dict]:
    """max_tokens scaled to the model, and llama.cpp's own options against loops.

    A small model (a file under 0.5 GB, ~135-500M parameters) says what it can in a few
    hundred tokens and only drifts or loops after that, so its answers are capped at 300
    tokens (400 under 2 GB); never more than a quarter of the context, which also holds
    the sources.
    """
    size = model_path.stat().st_size if model_path.is_file() else 0
    cap = 300 if size < 500e6 else 400 if size < 2e9 else max_tokens
    extra = {"repeat_penalty": REPEAT_PENALTY, "repeat_last_n": REPEAT_LAST_N}
    return max(1, min(max_tokens, cap, context // 4)), extra


def start(model_path: Path, *, threads: int = 0, context: int = 4096) -> LocalServer:
    """Load the model and start serving it; raises AskmdError with the fix when it cannot."""
    try:
        import xllamacpp
    except ImportError:
        raise AskmdError(
            f"ASKMD_LOCAL_MODEL needs the optional xllamacpp package: "
            f"pip install {XLLAMACPP_PIN} (or unset ASKMD_LOCAL_MODEL)"
        ) from None
    if not model_path.is_file():
        raise AskmdError(f"ASKMD_LOCAL_MODEL={model_path}: no such file. Give a .gguf file.")
    with open(model_path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise AskmdError(
                f"ASKMD_LOCAL_MODEL={model_path} is not a GGUF model file. "
                "Give a .gguf file, e.g. a Q4_K_M quantisation of an instruct model."
            )
    params = xllamacpp.CommonParams()
    params.model.path = str(model_path)
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # a free port, chosen by the OS
    params.n_ctx = context
    params.n_parallel = 1
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads or default_threads()
    params.model_alias = {ALIAS}
    params.verbosity = -1  # llama.cpp logs every request to stderr otherwise
    key = secrets.token_urlsafe(24)
    params.api_keys = [key]
    try:
        server = xllamacpp.Server(params)
    except Exception as exc:  # xllamacpp raises plain RuntimeErrors
        raise AskmdError(
            f"llama.cpp could not load {model_path} ({first_line(exc)}). "
            "Check that it is a chat model in GGUF format that fits in memory."
        ) from None
    return LocalServer(
        url=server.listening_address.rstrip("/") + "/v1", api_key=key, model=ALIAS, _server=server
    )
