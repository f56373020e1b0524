"""`Index.sync`, the one door for changes: a whole-folder sync, one limited to the paths
a watcher saw change, and one writer at a time within a process."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from askmd.errors import Busy
from askmd.pipeline import Index
from askmd.settings import load_settings
from tests.conftest import write_notes

NOTES = {
    "ops/ports.md": "# Ports\n\nThe API listens on port 8088.\n",
    "ops/keys.md": "# Keys\n\nRotate the S3 keys every ninety days.\n",
    "garden/tomatoes.md": "# Tomatoes\n\nPlant them in the south bed in April.\n",
}


@pytest.fixture(scope="module")
def embedder():
    from askmd.index.embedder import make_embedder

    return make_embedder("local", None)


@pytest.fixture
def index(tmp_path: Path, embedder) -> Index:
    knowledge = write_notes(tmp_path / "kb", NOTES)
    settings = load_settings(
        environ={},
        dotenv_path=None,
        overrides={"knowledge_dir": knowledge, "index_dir": tmp_path / "ix"},
    )
    index = Index(settings)
    index.embedder = embedder
    assert index.sync().files_added == 3
    return index


def indexed(index: Index) -> set[str]:
    return set(index.manifest.files())


def test_a_path_sync_takes_in_that_note_and_looks_at_no_other(index: Index) -> None:
    kb = index.settings.knowledge_dir
    (kb / "ops/ports.md").write_text("# Ports\n\nThe API listens on port 9090.\n")
    (kb / "ops/keys.md").write_text("# Keys\n\nRotate them weekly.\n")  # not named
    report = index.sync(paths=["ops/ports.md"])
    assert (report.files_changed, report.files_added, report.files_deleted) == (1, 0, 0)
    assert index.search("which port does the API listen on", 1)[0].text.count("9090") == 1
    assert index.sync().files_changed == 1  # the other edit waited for a sync that looks


def test_a_deleted_path_leaves_the_index(index: Index) -> None:
    kb = index.settings.knowledge_dir
    (kb / "ops/keys.md").unlink()
    report = index.sync(paths=[str(kb / "ops/keys.md")])  # absolute, as a watcher gives
    assert report.files_deleted == 1
    assert indexed(index) == {"ops/ports.md", "garden/tomatoes.md"}
    assert all(h.source != "ops/keys.md" for h in index.search("rotate the S3 keys", 3))


def test_a_note_renamed_to_what_is_not_a_note_leaves_the_index(index: Index) -> None:
    kb = index.settings.knowledge_dir
    (kb / "ops/keys.md").rename(kb / "ops/.keys.md")  # hidden now
    (kb / "ops/ports.md").rename(kb / "ops/ports.log")  # not matched by the globs
    report = index.sync(paths=["ops/keys.md", "ops/.keys.md", "ops/ports.md", "ops/ports.log"])
    assert (report.files_deleted, report.files_added) == (2, 0)
    assert indexed(index) == {"garden/tomatoes.md"}


def test_a_moved_note_is_one_delete_and_one_add_with_nothing_embedded(index: Index) -> None:
    kb = index.settings.knowledge_dir
    (kb / "archive").mkdir()
    (kb / "ops/keys.md").rename(kb / "archive/keys.md")
    report = index.sync(paths=["ops/keys.md", "archive/keys.md"])
    assert (report.files_deleted, report.files_added, report.chunks_embedded) == (1, 1, 0)
    assert "archive/keys.md" in indexed(index) and "ops/keys.md" not in indexed(index)


def test_a_deleted_folder_takes_its_notes_along(index: Index) -> None:
    kb = index.settings.knowledge_dir
    for name in ("ports.md", "keys.md"):
        (kb / "ops" / name).unlink()
    (kb / "ops").rmdir()
    assert index.sync(paths=["ops"]).files_deleted == 2
    assert indexed(index) == {"garden/tomatoes.md"}


def test_a_folder_that_exists_and_paths_outside_are_handled(index: Index, tmp_path) -> None:
    kb = index.settings.knowledge_dir
    write_notes(kb / "new", {"a.md": "# A\n\nAlpha.\n", "b.md": "# B\n\nBeta.\n"})
    assert index.sync(paths=[str(tmp_path / "elsewhere.md")]).files_added == 0
    assert index.sync(paths=["new"]).files_added == 2  # a folder moved in is walked


def test_one_writer_per_process_a_background_sync_does_not_queue(index: Index) -> None:
    holding, release = threading.Event(), threading.Event()

    def change() -> None:
        with index.keeper.writing():
            holding.set()
            release.wait(10)

    worker = threading.Thread(target=change)
    worker.start()
    try:
        assert holding.wait(10)
        with pytest.raises(Busy, match="another change to the notes is still running"):
            index.sync(queue=0)
        with pytest.raises(Busy):
            index.sync(paths=["ops/ports.md"], queue=0.2)
    finally:
        release.set()
        worker.join()
    assert index.sync(queue=0).files_unchanged == 3  # the turn is free again
