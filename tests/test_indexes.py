"""`rag.py indexes`: every index under the data home, listed and removed; a folder with no
notes leaves none behind."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pexpect

from askmd.index import index_home
from tests.conftest import ROOT, clean_env, write_notes
from tests.test_repl_pty import Term

A_NOTES = {"ports.md": "# Ports\n\nThe API listens on port 8420.\n\n## Metrics\n\nOn 9420.\n"}
B_NOTES = {"bread.md": "# Bread\n\nFeed the starter daily.\n"}
FIELDS = ["folder", "exists", "files", "chunks", "bytes", "last_used", "index_dir"]


def data_env(tmp_path: Path) -> dict[str, str]:
    return {"XDG_DATA_HOME": str(tmp_path / "data")}


def listed(run_rag, tmp_path: Path) -> list[dict]:
    result = run_rag("indexes", "--json", **data_env(tmp_path))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["indexes"]


def two_indexes(run_rag, tmp_path: Path) -> tuple[Path, Path]:
    a = write_notes(tmp_path.resolve() / "a", A_NOTES)
    b = write_notes(tmp_path.resolve() / "b", B_NOTES)
    for folder in (a, b):
        result = run_rag("--knowledge", str(folder), "index", **data_env(tmp_path))
        assert result.returncode == 0, result.stderr
    return a, b


def test_a_folder_with_no_notes_gets_no_index(run_rag, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    where = ("--knowledge", "empty")
    assert run_rag(*where, "index", **data_env(tmp_path)).returncode == 0
    assert run_rag(*where, "search", "port", **data_env(tmp_path)).returncode == 0
    assert run_rag(*where, "ask", "what port?", **data_env(tmp_path)).returncode == 0
    piped = subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), *where],
        cwd=tmp_path,
        env=clean_env(**data_env(tmp_path)),
        input="what port?\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert piped.returncode == 0, piped.stderr
    home = tmp_path / "data" / "askmd"
    assert not home.exists() or list(home.iterdir()) == []
    assert listed(run_rag, tmp_path) == []
    # Once it has a note, it gets its index as before.
    write_notes(tmp_path / "empty", B_NOTES)
    assert run_rag(*where, "index", **data_env(tmp_path)).returncode == 0
    assert [i["folder"] for i in listed(run_rag, tmp_path)] == [str((tmp_path / "empty").resolve())]


def test_the_repl_on_an_empty_folder_makes_its_index_with_the_first_note_saved(
    tmp_path: Path,
) -> None:
    (tmp_path / "kb").mkdir()
    env = {**clean_env(**data_env(tmp_path)), "COLUMNS": "500", "TERM": "xterm"}
    child = pexpect.spawn(
        sys.executable,
        [str(ROOT / "rag.py"), "--knowledge", "kb"],
        cwd=str(tmp_path),
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(24, 500),
    )
    home = tmp_path / "data" / "askmd"
    try:
        child.expect_exact("› ")
        assert not home.exists() or list(home.iterdir()) == []
        write_notes(tmp_path / "kb", B_NOTES)  # the watcher takes it in, making the index
        deadline = time.monotonic() + 30
        while not list(home.glob("kb-*/manifest.sqlite3")) and time.monotonic() < deadline:
            time.sleep(0.2)
        child.sendline("how often is the starter fed?")
        child.expect_exact("Feed the starter daily.")
        child.expect_exact("› ")
        # Ctrl-D before readline reads the terminal would be lost: the vector filler
        # may hold the GIL a moment after the prompt is drawn.
        Term(child).idle(timeout=10)
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert [i["files"] for i in index_home.list_indexes(data_env(tmp_path))] == [1]


def test_indexes_lists_each_index_with_its_folder_size_and_last_use(run_rag, tmp_path) -> None:
    a, b = two_indexes(run_rag, tmp_path)
    shutil.rmtree(b)
    found = {i["folder"]: i for i in listed(run_rag, tmp_path)}
    assert set(found) == {str(a), str(b)}
    one = found[str(a)]
    assert list(one) == FIELDS
    assert one["exists"] is True and one["files"] == 1 and one["chunks"] == 2
    assert one["bytes"] > 0
    assert one["index_dir"] == str(index_home.default_index_dir(a, data_env(tmp_path)))
    assert time.strptime(one["last_used"], "%Y-%m-%dT%H:%M:%S%z")
    assert found[str(b)]["exists"] is False and found[str(b)]["files"] == 1
    # Using an index counts as use, even when nothing changed.
    before = one["last_used"]
    time.sleep(1.1)
    assert run_rag("--knowledge", str(a), "search", "port", **data_env(tmp_path)).returncode == 0
    assert {i["folder"]: i for i in listed(run_rag, tmp_path)}[str(a)]["last_used"] > before

    shown = run_rag("indexes", **data_env(tmp_path))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert any(str(a) in line and "1 file" in line and "2 chunks" in line for line in lines)
    assert any(str(b) in line and "folder missing" in line for line in lines)
    assert str(tmp_path / "data" / "askmd") in shown.stdout  # where they are kept


def test_indexes_remove_a_folders_index_or_every_missing_ones(run_rag, tmp_path) -> None:
    a, b = two_indexes(run_rag, tmp_path)
    ix_a = index_home.default_index_dir(a, data_env(tmp_path))
    ix_b = index_home.default_index_dir(b, data_env(tmp_path))
    shutil.rmtree(b)
    gone = run_rag("indexes", "remove", "--missing", **data_env(tmp_path))
    assert gone.returncode == 0, gone.stderr
    assert not ix_b.exists() and ix_a.exists()
    assert str(b) in gone.stdout
    nothing = run_rag("indexes", "remove", "--missing", **data_env(tmp_path))
    assert nothing.returncode == 0 and "no index" in nothing.stdout

    removed = run_rag("indexes", "remove", str(a), **data_env(tmp_path))
    assert removed.returncode == 0, removed.stderr
    assert not ix_a.exists() and a.exists()  # the notes are untouched
    assert listed(run_rag, tmp_path) == []

    again = run_rag("indexes", "remove", str(a), **data_env(tmp_path))
    assert again.returncode == 1
    assert again.stderr.count("\n") == 1 and again.stderr.startswith("error: no index of ")
    both = run_rag("indexes", "remove", str(a), "--missing", **data_env(tmp_path))
    assert both.returncode == 2  # one or the other


def test_indexes_remove_refuses_an_index_another_process_is_writing(run_rag, tmp_path) -> None:
    a, _ = two_indexes(run_rag, tmp_path)
    ix = index_home.default_index_dir(a, data_env(tmp_path))
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from askmd.index.rwlock import file_lock\n"
         "with file_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)",
         str(ix)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        refused = run_rag("indexes", "remove", str(a), **data_env(tmp_path))
        assert refused.returncode == 1
        assert refused.stderr.count("\n") == 1
        assert f"pid {holder.pid}" in refused.stderr and "in use" in refused.stderr
        assert (ix / "owner.json").exists()
    finally:
        holder.kill()
        holder.wait()
    assert run_rag("indexes", "remove", str(a), **data_env(tmp_path)).returncode == 0
    assert not ix.exists()
