"""The manifest's keyword index: BM25 statistics per script, and old indexes upgraded."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from askmd.index.manifest import ChunkRow, FileRecord, Manifest
from askmd.terms import content_terms

CHINESE = {
    "zh/备份.md": "数据库备份每天凌晨两点开始，保留十四天。",
    "zh/端口.md": "接口服务监听八四二零端口，指标在九四二零端口。",
    "zh/猫.md": "猫整个下午都睡在窗台上，晚上才出来吃饭。",
}
# Long English notes: they change the folder's average chunk length a lot.
ENGLISH = {
    f"en/{n}.md": " ".join(["the nightly report lists every service and its owner"] * 20)
    for n in range(30)
}


def record(manifest: Manifest, notes: dict[str, str]) -> None:
    manifest.record(
        (
            FileRecord(source, f"md5-{source}", len(text), 0, 1),
            [ChunkRow(f"{source}#0", f"hash-{source}", content_terms(text))],
        )
        for source, text in notes.items()
    )


@pytest.fixture
def chinese_only(tmp_path: Path) -> Manifest:
    manifest = Manifest(tmp_path / "zh" / "manifest.sqlite3")
    record(manifest, CHINESE)
    yield manifest
    manifest.close()


@pytest.fixture
def mixed(tmp_path: Path) -> Manifest:
    manifest = Manifest(tmp_path / "mixed" / "manifest.sqlite3")
    record(manifest, {**CHINESE, **ENGLISH})
    yield manifest
    manifest.close()


@pytest.mark.parametrize("question", ["数据库备份保留多久？", "接口监听哪个端口", "猫睡在哪里"])
def test_english_notes_beside_chinese_ones_do_not_change_a_chinese_questions_scores(
    chinese_only: Manifest, mixed: Manifest, question: str
) -> None:
    terms = content_terms(question)
    alone = chinese_only.keyword(terms, 10, cjk=True)
    beside = mixed.keyword(terms, 10, cjk=True)
    assert alone and [c for c, _ in beside] == [c for c, _ in alone]
    assert [s for _, s in beside] == pytest.approx([s for _, s in alone])
    # Without the script, the English notes' lengths would shift the scores.
    assert [s for _, s in mixed.keyword(terms, 10)] != pytest.approx([s for _, s in alone])


def test_a_question_in_a_script_no_note_has_uses_the_whole_folder(chinese_only: Manifest) -> None:
    terms = content_terms("窗台 cat")
    assert chinese_only.keyword(terms, 10, cjk=False) == chinese_only.keyword(terms, 10)


def test_a_term_in_more_chunks_than_the_scripts_count_still_scores(mixed: Manifest) -> None:
    # "report" is in 30 English chunks, more than the 3 Chinese ones whose count is used.
    hits = mixed.keyword(content_terms("窗台 report"), 50, cjk=True)
    assert {c for c, _ in hits} >= {"zh/猫.md#0", "en/0.md#0"}
    assert all(score > 0 for _, score in hits)


def test_an_index_made_before_the_script_flag_gets_it_from_its_postings(tmp_path: Path) -> None:
    path = tmp_path / "manifest.sqlite3"
    manifest = Manifest(path)
    record(manifest, {"zh/猫.md": CHINESE["zh/猫.md"], "en/0.md": ENGLISH["en/0.md"]})
    manifest.close()
    db = sqlite3.connect(path)  # make it look like an older index: no cjk column
    db.executescript(
        "CREATE TABLE old AS SELECT doc, chunk, source, length FROM documents;"
        "DROP TABLE documents; ALTER TABLE old RENAME TO documents;"
        "DROP TABLE _migrations;"  # older code recorded no migrations
    )
    db.close()
    upgraded = Manifest(path)
    flags = dict(upgraded.db.execute("SELECT source, cjk FROM documents"))
    assert flags == {"zh/猫.md": 1, "en/0.md": 0}
    assert upgraded.keyword(content_terms("窗台"), 5, cjk=True)[0][0] == "zh/猫.md#0"
    upgraded.close()


def test_every_commit_readers_can_see_counts_one_generation(tmp_path: Path) -> None:
    manifest = Manifest(tmp_path / "manifest.sqlite3")
    other = Manifest(tmp_path / "manifest.sqlite3")  # another process's view of the file
    assert other.generation() == 0
    record(manifest, CHINESE)
    assert other.generation() == 1
    manifest.set(gate="abc", last_sync="now")  # bookkeeping, not what searches see
    manifest.touch([FileRecord("zh/猫.md", "md5-zh/猫.md", 1, 5, 1)])
    assert other.generation() == 1
    manifest.forget(["zh/猫.md"])
    assert other.generation() == 2
    manifest.forget_all()  # a rebuild starts
    assert other.generation() == 3
    manifest.close()
    other.close()


def test_a_manifest_let_go_without_close_releases_its_files_at_once(tmp_path: Path) -> None:
    """A sqlite3 connection sits in a reference cycle with its statement cache (Python
    3.11), so without an explicit release its three files (db, -wal, -shm) stay open until
    a full garbage collection; a long process that opens indexes then runs out of file
    descriptors (past 1,024, select() refuses them)."""
    import gc
    import os

    def open_files() -> set[str]:
        found = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                found.add(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                pass
        return found

    path = tmp_path / "manifest.sqlite3"
    gc.disable()
    try:
        m = Manifest(path)
        assert any(f.startswith(str(path)) for f in open_files())
        del m
        assert not any(f.startswith(str(path)) for f in open_files())
        read_only = Manifest(path, read_only=True)
        del read_only
        assert not any(f.startswith(str(path)) for f in open_files())
    finally:
        gc.enable()


def test_a_manifest_opened_in_a_thread_and_left_open_ends_the_process_quietly(
    tmp_path: Path,
) -> None:
    """The release of a dropped Manifest must not print a traceback at exit when the
    connection was opened by another thread (the MCP server's and the filler's)."""
    import subprocess
    import sys

    script = (
        "import threading\n"
        "from pathlib import Path\n"
        "from askmd.index.manifest import Manifest\n"
        "kept = []\n"
        "t = threading.Thread(target=lambda: kept.append(Manifest(Path(r'{}'))))\n"
        "t.start(); t.join()\n"
        "dropped = []\n"
        "t = threading.Thread(target=lambda: dropped.append(Manifest(Path(r'{}'))))\n"
        "t.start(); t.join(); dropped.clear()\n"
    ).format(tmp_path / "a.sqlite3", tmp_path / "b.sqlite3")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, "")
