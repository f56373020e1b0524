"""An index written by the release before numbered migrations (tests/fixtures/release-index)
opens and syncs without a rebuild or re-embedding; each migration runs once."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from askmd.index import migrations, upgrades
from askmd.index.manifest import MANIFEST, Manifest
from askmd.pipeline import Index
from askmd.settings import load_settings
from askmd.terms import content_terms
from tests.conftest import ROOT

RELEASE = ROOT / "tests" / "fixtures" / "release-index"
SCHEMA = [m.__name__ for m in migrations.SCHEMA]
UPGRADES = [u.__name__ for u in upgrades.INDEX_UPGRADES]
QUESTION = "what water temperature for a pour-over"


@pytest.fixture
def release(tmp_path: Path) -> Path:
    """A copy of the release's index and its notes: tmp_path/notes, tmp_path/ix."""
    shutil.copytree(RELEASE / "notes", tmp_path / "notes")
    shutil.copytree(RELEASE / "index", tmp_path / "ix")
    return tmp_path


def open_index(root: Path) -> Index:
    overrides = {"knowledge_dir": root / "notes", "index_dir": root / "ix"}
    return Index(load_settings(environ={}, dotenv_path=None, overrides=overrides))


def recorded(root: Path) -> dict[str, str]:
    db = sqlite3.connect(root / "ix" / MANIFEST)
    try:
        return dict(db.execute("SELECT name, applied FROM _migrations"))
    finally:
        db.close()


def embedded_vectors(root: Path) -> int:
    db = sqlite3.connect(root / "ix" / MANIFEST)
    try:
        return db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
    finally:
        db.close()


def test_the_upgrades_known_by_name_are_the_upgrades_run() -> None:
    """A manifest refuses an index holding migrations it does not know by their names
    alone; those names must be the upgrades this code runs, in their order."""
    assert tuple(UPGRADES) == migrations.INDEX_UPGRADE_NAMES


def test_the_release_index_migrates_once_when_opened(release: Path) -> None:
    first = Manifest(release / "ix" / MANIFEST)
    assert first.migrated == SCHEMA
    first.close()
    assert list(recorded(release)) == SCHEMA
    again = Manifest(release / "ix" / MANIFEST)
    assert again.migrated == []
    again.close()


def test_the_release_index_syncs_without_a_rebuild_or_re_embedding(release: Path) -> None:
    vectors = embedded_vectors(release)
    index = open_index(release)
    try:
        report = index.sync()
        assert (report.rebuilt, report.rebuild_reason) == (False, "")
        assert (report.chunks_embedded, report.files_changed, report.files_added) == (0, 0, 0)
        assert report.files_unchanged == 3
        assert index.search(QUESTION, 1, mode="dense")[0].source == "coffee.md"
        assert index.keeper.filling()["chunks_embedded"] == 4
        assert list(recorded(release)) == SCHEMA + UPGRADES  # the index upgrades, once
        done = recorded(release)
        again = index.sync()
        assert (again.rebuilt, again.chunks_embedded, again.files_unchanged) == (False, 0, 3)
        assert recorded(release) == done  # nothing ran twice
    finally:
        index.manifest.close()
    assert embedded_vectors(release) == vectors  # nothing new went into the cache


def test_an_older_index_gets_its_index_upgrades_at_its_next_sync(release: Path) -> None:
    db = sqlite3.connect(release / "ix" / MANIFEST)  # never looked for repeats or copies
    with db:
        db.execute("DELETE FROM meta WHERE key IN ('repeats', 'copies')")
    db.close()
    index = open_index(release)
    try:
        report = index.sync()
        assert (report.rebuilt, report.chunks_embedded, report.files_changed) == (False, 0, 0)
        assert list(recorded(release)) == SCHEMA + UPGRADES
        assert index.manifest.get("repeats") == "once"  # what older code looks for
        assert index.manifest.get("copies") == "apart"
    finally:
        index.manifest.close()


def test_a_read_only_manifest_never_migrates(release: Path) -> None:
    manifest = Manifest(release / "ix" / MANIFEST, read_only=True)
    assert manifest.migrated == []
    assert manifest.total_chunks() == 4
    manifest.close()
    with pytest.raises(sqlite3.OperationalError):
        recorded(release)


def test_an_index_from_before_fields_and_chunk_texts_still_upgrades(release: Path) -> None:
    db = sqlite3.connect(release / "ix" / MANIFEST)  # as the oldest code left it
    db.executescript(
        "DROP INDEX documents_cjk; DROP INDEX chunks_pending;"
        "ALTER TABLE documents DROP COLUMN cjk;"
        "ALTER TABLE postings DROP COLUMN title_tf; ALTER TABLE postings DROP COLUMN alias_tf;"
        "ALTER TABLE postings DROP COLUMN heading_tf;"
        "ALTER TABLE chunks DROP COLUMN text; ALTER TABLE chunks DROP COLUMN meta;"
        "ALTER TABLE chunks DROP COLUMN vector;"
        "UPDATE meta SET value = replace(replace(value, 'terms=2', 'terms=1'), 'layout=2', "
        "'layout=1') WHERE key = 'fingerprint'; DELETE FROM meta WHERE key = 'gate';"
    )
    db.close()
    old = Manifest(release / "ix" / MANIFEST, read_only=True)
    assert not old.vectors_kept() and old.keyword(
        content_terms("airtight beans"), 5
    )  # still read as it is
    old.close()
    upgraded = Manifest(release / "ix" / MANIFEST)
    assert upgraded.migrated == SCHEMA
    assert upgraded.vectors_kept()
    assert {r[1] for r in upgraded.db.execute("PRAGMA table_info(postings)")} >= {"title_tf"}
    upgraded.close()
    index = open_index(release)
    try:
        report = index.sync()
        assert report.rebuild_reason == "the keyword index changed (new search terms or fields)"
        assert report.chunks_embedded == 0  # every vector from the embedding cache
        assert index.search(QUESTION, 1)[0].source == "coffee.md"
    finally:
        index.manifest.close()


def _rows(db_path: Path, table: str) -> list[tuple]:
    with sqlite3.connect(db_path) as db:
        return sorted(db.execute(f"SELECT * FROM {table}"))


def test_notes_an_older_askmd_wrote_are_read_again(tmp_path: Path, run_rag) -> None:
    """An older askmd records a changed note in the tables it knows and leaves the newer
    ones as they were (here: the days of the chunks, and this code's own hashes, put back
    as they were before it wrote). The next sync sees it and reads the note again."""
    kb = tmp_path / "kb"
    kb.mkdir()
    log = kb / "cooking.md"
    log.write_text("# Cooking\n\n## 2026-11-19\n\nCooked risotto.\n", encoding="utf-8")
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    assert run_rag(*where, "index", "--keyword-only").returncode == 0
    manifest = tmp_path / "ix" / MANIFEST
    days, kept = _rows(manifest, "chunk_dates"), _rows(manifest, "kept")
    with log.open("a", encoding="utf-8") as f:
        f.write("\n## 2026-11-20\n\nCooked ramen with the leftover stock.\n")
    assert run_rag(*where, "index", "--keyword-only").returncode == 0
    with sqlite3.connect(manifest) as db:  # as the older writer leaves them
        for table, rows in (("chunk_dates", days), ("kept", kept)):
            db.execute(f"DELETE FROM {table}")
            db.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(rows[0]))})", rows)

    synced = run_rag(*where, "index", "--keyword-only")
    assert synced.returncode == 0, synced.stderr
    assert "older askmd" in synced.stderr + synced.stdout
    assert "2026-11-20" in {row[2] for row in _rows(manifest, "chunk_dates")}
    found = run_rag(*where, "search", "ramen", "--since", "2026-11-20", "--json")
    assert "ramen" in found.stdout, found.stderr
    again = run_rag(*where, "index", "--keyword-only")
    assert "older askmd" not in again.stderr + again.stdout


def test_an_index_a_newer_askmd_wrote_is_not_written(tmp_path: Path, run_rag) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    assert run_rag(*where, "index", "--keyword-only").returncode == 0
    with sqlite3.connect(tmp_path / "ix" / MANIFEST) as db:
        db.execute("INSERT INTO _migrations VALUES ('m999_from_the_future', 'then')")
        db.execute("INSERT OR REPLACE INTO meta VALUES ('writer', '9.9.9')")
    before = _rows(tmp_path / "ix" / MANIFEST, "files")
    (kb / "b.md").write_text("# B\n\nMore.\n", encoding="utf-8")
    refused = run_rag(*where, "index")
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "askmd 9.9.9" in lines[0], refused.stderr
    assert _rows(tmp_path / "ix" / MANIFEST, "files") == before


def test_an_upgrade_says_which_migrations_it_applied(release: Path, run_rag) -> None:
    where = ["--knowledge", str(release / "notes"), "--index-dir", str(release / "ix")]
    shutil.copytree(release / "ix", release / "ix2")
    first = run_rag(*where, "index", "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["migrations"] == SCHEMA + UPGRADES
    again = run_rag(*where, "index", "--json")
    assert json.loads(again.stdout)["migrations"] == []
    said = run_rag(where[0], where[1], "--index-dir", str(release / "ix2"), "index")
    assert f"upgraded the index: {len(SCHEMA + UPGRADES)} migrations applied" in said.stderr


class Counted:
    """A sync's progress, recorded: each kind of vectors' (done, total) by label."""

    def __init__(self) -> None:
        self.counts: dict[str, tuple[int, int]] = {}

    def counting(self, label: str, total: int = 0, done: int = 0) -> None:
        was = self.counts.get(label, (0, 0))
        self.counts[label] = (was[0] + done, was[1] + total)

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: None


LONG = (
    "# Bread\n\nThe starter is fed at nine with equal weights of flour and water. "
    "It doubles in about five hours in a warm kitchen. The dough rests for an hour "
    "before the salt goes in. Shape it at four and leave it in the fridge overnight. "
    "Bake at 250 degrees with the lid on for twenty minutes, then lid off for twenty "
    "more until the crust is dark.\n"
)


def test_window_vectors_an_older_index_lacks_are_counted_and_shown(tmp_path: Path, run_rag) -> None:
    """An index stored before window vectors gets them at its next sync: the report
    counts them and their time, and the progress counts them as they are computed."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "bread.md").write_text(LONG, encoding="utf-8")
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    built = json.loads(run_rag(*where, "index", "--json").stdout)
    assert built["windows_embedded"] == 1 and built["migrations"] == []

    def without_windows() -> None:
        with sqlite3.connect(tmp_path / "ix" / MANIFEST) as db:  # as code before them left it
            db.execute("DELETE FROM embeddings WHERE embedder LIKE '%#windows'")
            db.execute("DELETE FROM meta WHERE key LIKE '%windows%'")

    without_windows()
    report = json.loads(run_rag(*where, "index", "--json").stdout)
    assert (report["windows_embedded"], report["chunks_embedded"]) == (1, 0)
    assert report["embed_seconds"] > 0
    without_windows()
    said = run_rag(*where, "index")
    assert "1 window vector computed" in said.stderr, said.stderr
    without_windows()
    progress = Counted()
    overrides = {"knowledge_dir": kb, "index_dir": tmp_path / "ix"}
    index = Index(load_settings(environ={}, dotenv_path=None, overrides=overrides))
    try:
        index.sync(progress=progress)
    finally:
        index.manifest.close()
    assert progress.counts["window vectors"] == (1, 1)


def test_multilingual_vectors_are_counted_apart(tmp_path: Path, run_rag) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    tea = "# 喝茶\n\n龙井用八十度的水泡三分钟，第二泡多泡一分钟。\n"
    (kb / "茶.md").write_text(tea, encoding="utf-8")
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    result = run_rag(*where, "index", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["chunks_embedded"], report["multilingual_embedded"]) == (1, 1)
