"""One index per knowledge folder: where it lives by default, and an index that belongs to
another folder refused rather than wiped."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pexpect
import pytest

from askmd.errors import AskmdError
from askmd.index import index_home
from askmd.settings import Settings, load_settings
from tests.conftest import ROOT, clean_env, write_notes

A_NOTES = {"ports.md": "# Ports\n\nThe API listens on port 8420.\n"}
B_NOTES = {"bread.md": "# Bread\n\nFeed the starter daily.\n"}


# --- where ------------------------------------------------------------------------------


def test_the_default_index_is_per_folder_under_the_data_home(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    (tmp_path / "one" / "notes").mkdir(parents=True)
    (tmp_path / "two" / "notes").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(tmp_path / "one" / "notes", target_is_directory=True)
    one = Settings(knowledge_dir=tmp_path / "one" / "notes").index_dir
    two = Settings(knowledge_dir=tmp_path / "two" / "notes").index_dir
    alias = Settings(knowledge_dir=tmp_path / "alias").index_dir
    assert one.parent == two.parent == tmp_path / "data" / "askmd"
    assert one.name.startswith("notes-") and two.name.startswith("notes-")
    assert one != two  # same name, different folders
    assert alias == one  # keyed by the real path
    loaded = load_settings({}, None, {"knowledge_dir": tmp_path / "two" / "notes"})
    assert loaded.index_dir == two


def test_the_data_home_falls_back_to_local_share() -> None:
    home = Path.home() / ".local" / "share"
    assert index_home.data_home({}) == home
    assert index_home.data_home({"XDG_DATA_HOME": "relative/dir"}) == home  # as the spec says
    assert index_home.data_home({"XDG_DATA_HOME": "/srv/data"}) == Path("/srv/data")
    assert index_home.default_index_dir(Path("/"), {}).name.startswith("root-")


def test_an_explicit_index_dir_still_wins(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    from_env = load_settings({"ASKMD_INDEX_DIR": "~/ix"}, None, need_knowledge_dir=False)
    assert from_env.index_dir == Path("~/ix").expanduser()
    flag = load_settings({}, None, {"index_dir": Path("here")}, need_knowledge_dir=False)
    assert flag.index_dir == Path("here")


# --- whose ------------------------------------------------------------------------------


def test_an_index_records_its_folder_and_refuses_another(tmp_path) -> None:
    a, b, ix = tmp_path.resolve() / "a", tmp_path.resolve() / "b", tmp_path / "ix"
    a.mkdir(), b.mkdir()
    index_home.check_owner(ix, b)  # nothing recorded yet: anyone may start it
    index_home.record_owner(ix, a)
    assert index_home.owner(ix) == str(a.resolve())
    index_home.check_owner(ix, a)
    with pytest.raises(AskmdError) as info:
        index_home.check_owner(ix, b)
    assert str(info.value) == (
        f"the index folder {ix} holds the index of {a}, not of {b}: point --index-dir "
        "(ASKMD_INDEX_DIR) elsewhere, or run index --rebuild to replace it"
    )
    index_home.check_owner(ix, b, rebuild=True)
    (ix / "owner.json").write_text("{not json")
    index_home.check_owner(ix, b)  # a damaged record protects nothing, and stops nothing


def test_a_second_folder_leaves_the_first_ones_index_alone(run_rag, tmp_path) -> None:
    data = tmp_path / "data"
    a = write_notes(tmp_path.resolve() / "a", A_NOTES)
    b = write_notes(tmp_path.resolve() / "b", B_NOTES)
    for folder in (a, b):
        first = run_rag("--knowledge", str(folder), "index", "--json", XDG_DATA_HOME=str(data))
        assert json.loads(first.stdout)["files_added"] == 1, first.stderr
    back = run_rag("--knowledge", str(a), "index", "--json", XDG_DATA_HOME=str(data))
    report = json.loads(back.stdout)
    assert (report["files_added"], report["files_unchanged"], report["chunks_embedded"]) == (
        0,
        1,
        0,
    )
    assert not (tmp_path / ".askmd").exists()  # nothing in the current folder
    homes = sorted(p.name for p in (data / "askmd").iterdir())
    assert len(homes) == 2 and homes[0].startswith("a-") and homes[1].startswith("b-")
    stats = json.loads(
        run_rag("--knowledge", str(b), "stats", "--json", XDG_DATA_HOME=str(data)).stdout
    )
    assert (stats["knowledge_dir"], stats["files"]) == (str(b), 1)
    assert stats["index_dir"] == str(data / "askmd" / homes[1])


def test_an_explicit_index_of_another_folder_is_refused_not_wiped(run_rag, tmp_path) -> None:
    a = write_notes(tmp_path.resolve() / "a", A_NOTES)
    b = write_notes(tmp_path.resolve() / "b", B_NOTES)
    first = run_rag("--knowledge", str(a), "--index-dir", "ix", "index")
    assert first.returncode == 0, first.stderr
    refusal = (
        f"error: the index folder ix holds the index of {a}, not of {b}: point --index-dir "
        "(ASKMD_INDEX_DIR) elsewhere, or run index --rebuild to replace it\n"
    )
    for command in (("index",), ("search", "starter"), ("stats",)):
        result = run_rag("--knowledge", str(b), "--index-dir", "ix", *command)
        assert (result.returncode, result.stdout, result.stderr) == (1, "", refusal)
    from_env = run_rag("--knowledge", str(b), "index", ASKMD_INDEX_DIR="ix")
    assert (from_env.returncode, from_env.stderr) == (1, refusal)
    stats = json.loads(
        run_rag("--knowledge", str(a), "--index-dir", "ix", "stats", "--json").stdout
    )
    assert (stats["knowledge_dir"], stats["files"], stats["chunks"]) == (str(a), 1, 1)

    rebuilt = run_rag("--knowledge", str(b), "--index-dir", "ix", "index", "--rebuild", "--json")
    assert json.loads(rebuilt.stdout)["files_added"] == 1, rebuilt.stderr
    shown = run_rag("--knowledge", str(b), "--index-dir", "ix", "stats")
    first = shown.stdout.split("\n\n")[0]  # a long path wraps inside its cell
    assert first.split()[0] == "knowledge_dir" and str(b) in "".join(first.split()[1:])
    assert "files         1" in shown.stdout
    again = run_rag("--knowledge", str(a), "--index-dir", "ix", "index")
    assert again.returncode == 1 and f"holds the index of {b}, not of {a}" in again.stderr


def test_the_repl_banner_names_the_folder_and_its_index(tmp_path) -> None:
    kb = write_notes(tmp_path.resolve() / "kb", A_NOTES)
    env = {**clean_env(XDG_DATA_HOME=str(tmp_path / "data")), "COLUMNS": "500", "TERM": "xterm"}
    child = pexpect.spawn(
        sys.executable,
        [str(ROOT / "rag.py"), "--knowledge", "kb"],
        cwd=str(tmp_path),
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(24, 500),
    )
    try:
        child.expect_exact(f"askmd over {kb}/ (index in ")
        child.expect(r"askmd/kb-[0-9a-f]{12}/\)")
        child.expect_exact("› ")  # a Ctrl-D sent before the prompt reads can be lost
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)


def test_a_running_index_replaced_for_another_folder_stops_answering(run_rag, tmp_path) -> None:
    """A server over folder a, and `index --rebuild` of folder b into its index folder
    by another process: the server's next search, answer or stats says so in one line
    (409 over HTTP), instead of answering with b's notes under a's name."""
    from askmd.errors import IndexReplaced
    from askmd.pipeline import Index

    a = write_notes(tmp_path.resolve() / "a", A_NOTES)
    b = write_notes(tmp_path.resolve() / "b", B_NOTES)
    settings = load_settings(
        environ={}, dotenv_path=None, overrides={"knowledge_dir": a, "index_dir": tmp_path / "ix"}
    )
    index = Index(settings)
    try:
        index.sync()
        assert index.search("port", 1)[0].source == "ports.md"
        rebuilt = run_rag("--knowledge", str(b), "--index-dir", "ix", "index", "--rebuild")
        assert rebuilt.returncode == 0, rebuilt.stderr
        said = (
            f"the index folder {tmp_path / 'ix'} was rebuilt for {b} by another process: "
            f"askmd over {a} stops answering from it (restart it with another --index-dir)"
        )
        for call in (lambda: index.search("starter", 1), index.graph.stats):
            with pytest.raises(IndexReplaced) as caught:
                call()
            assert str(caught.value) == said and caught.value.status == 409
        with pytest.raises(AskmdError, match=f"holds the index of {b}, not of {a}"):
            index.sync()  # nor is anything written into it
    finally:
        index.manifest.close()
