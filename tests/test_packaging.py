"""`pip install .` gives the whole package: every module of every stage, the page, the
tokenizer and the `askmd` command; only `askmd` at the top of the import path (the card's
two files stay in the repository, for `python rag.py` from a checkout). Built from a copy of the
repository (a build writes build/ and *.egg-info beside the sources), without a download:
setuptools is pinned in requirements-dev.txt as pyproject.toml pins it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

from tests.conftest import ROOT

SOURCES = ["pyproject.toml", "README.md", "LICENSE", "requirements.txt"]


def test_the_wheel_holds_every_module_the_page_the_tokenizer_and_the_command(tmp_path) -> None:
    copy = tmp_path / "src"
    copy.mkdir()
    for name in SOURCES:
        shutil.copy2(ROOT / name, copy / name)
    shutil.copytree(ROOT / "askmd", copy / "askmd", ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", str(copy), "-w", str(tmp_path / "dist")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("askmd-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    wanted = {p.relative_to(ROOT).as_posix() for p in (ROOT / "askmd").rglob("*.py")}
    wanted |= {"askmd/interfaces/web/index.html"}
    wanted |= {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "askmd" / "models").rglob("*")
        if p.is_file()
    }
    assert sorted(wanted - names) == []
    tops = {name.split("/")[0].removesuffix(".py") for name in names if ".dist-info" not in name}
    assert tops == {"askmd"}  # nothing generic on the import path
    (entry_points,) = [n for n in names if n.endswith("entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "askmd = askmd.__main__:main" in text
