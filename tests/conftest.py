"""Shared fixtures: running the real program as a subprocess, in a clean folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def clean_env(**extra: str) -> dict[str, str]:
    """The current environment minus every askmd and OpenAI variable, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASKMD_", "OPENAI_"))}
    env.update(COLUMNS="80", TERM="dumb", **extra)
    return env


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
