"""Every kept bench runs end to end on its smallest case, so a bench that stops working
fails here rather than on the day its figure is needed again."""

from __future__ import annotations

import importlib
import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHES = sorted(
    p.stem for p in (ROOT / "bench").glob("*.py") if p.stem not in ("__init__", "common")
)


def test_every_kept_bench_is_listed_in_its_readme():
    readme = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    assert [b for b in BENCHES if f"`python -m bench.{b}" not in readme] == []


def test_kept_benches_import_only_the_package_and_the_helper():
    """No sys.path edits, no sibling benches, no tests/ module: each runs as
    `python -m bench.NAME` from the repository with nothing else set up."""
    wrong = []
    for name in [*BENCHES, "common"]:
        text = (ROOT / "bench" / f"{name}.py").read_text(encoding="utf-8")
        for line in text.splitlines():
            words = line.split()
            if "sys.path" in line or (words[:1] in (["import"], ["from"]) and _sibling(words[1])):
                wrong.append(f"{name}: {line.strip()}")
    assert wrong == []


def _sibling(module: str) -> bool:
    top = module.split(".")[0]
    return (
        top == "tests"
        or top in BENCHES
        or (module.startswith("bench.") and module != "bench.common")
    )


@pytest.mark.slow  # each indexes with the real model, and some start rag.py processes
@pytest.mark.parametrize("name", BENCHES)
def test_smoke(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for key in list(os.environ):
        if key.startswith(("ASKMD_", "OPENAI_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("XDG_DATA_HOME", os.path.join(tempfile.gettempdir(), "askmd-tests-data"))
    monkeypatch.chdir(tmp_path)  # no developer .env is read
    module = importlib.import_module(f"bench.{name}")
    module.smoke(tmp_path)
