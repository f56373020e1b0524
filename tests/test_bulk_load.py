"""A cold build's postings are appended to a load table and sorted into the keyed one when
the keyword phase ends: the index must be the same as one recorded group by group, and a
build killed before the sort must be finished by the next run, never left unsearchable."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from askmd.index.manifest import Manifest
from askmd.pipeline import Index
from askmd.settings import load_settings
from askmd.terms import content_terms
from tests.conftest import ROOT, clean_env, write_notes


def note(i: int) -> str:
    return (
        f"---\naliases: [depot-{i}]\n---\n# Depot {i}\n\nParcels for depot {i} leave from "
        f"dock {i % 9} with courier code kx{i:04}q.\n\n## Returns\n\n退货 {i} 号仓库 on "
        f"weekday {i % 7}.\n"
    )


NOTES = {f"d{i % 5}/n{i:04}.md": note(i) for i in range(300)}

POSTINGS = (
    "SELECT d.chunk, p.term, p.tf, p.title_tf, p.alias_tf, p.heading_tf "
    "FROM postings p JOIN documents d ON d.doc = p.doc ORDER BY 1, 2"
)


def settings_for(kb: Path, ix: Path):
    return load_settings(
        environ={}, dotenv_path=None, overrides={"knowledge_dir": kb, "index_dir": ix}
    )


def shape(ix: Path) -> dict:
    """What searches read: postings by chunk, and the keyed table's indexes."""
    db = sqlite3.connect(ix / "manifest.sqlite3")
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    return {
        "postings": db.execute(POSTINGS).fetchall(),
        "load table": "postings_load" in tables,
        "doc index": "postings_by_doc" in tables,
    }


def test_a_bulk_loaded_build_equals_one_recorded_group_by_group(tmp_path: Path) -> None:
    kb = write_notes(tmp_path / "kb", NOTES)
    Index(settings_for(kb, tmp_path / "bulk")).sync(vectors=False)

    # The same notes into an index that already has postings: recorded group by group.
    first = write_notes(tmp_path / "kb2", {"d0/n0000.md": NOTES["d0/n0000.md"]})
    grouped = Index(settings_for(first, tmp_path / "grouped"))
    grouped.sync(vectors=False)
    write_notes(first, NOTES)
    assert grouped.sync(vectors=False).files_added == len(NOTES) - 1

    bulk, by_group = shape(tmp_path / "bulk"), shape(tmp_path / "grouped")
    assert bulk["postings"] and bulk["postings"] == by_group["postings"]
    assert (bulk["load table"], bulk["doc index"]) == (False, True)

    # And it ranks the same: the doc numbers (the tie order) follow the same files.
    a = Manifest(tmp_path / "bulk" / "manifest.sqlite3")
    b = Manifest(tmp_path / "grouped" / "manifest.sqlite3")
    for query in ("depot returns", "kx0123q", "退货仓库", "dock courier"):
        found = a.keyword(content_terms(query), 10)
        assert found and found == b.keyword(content_terms(query), 10), query


def test_an_edit_after_a_bulk_build_replaces_the_notes_postings(tmp_path: Path) -> None:
    kb = write_notes(tmp_path / "kb", NOTES)
    index = Index(settings_for(kb, tmp_path / "ix"))
    index.sync(vectors=False)
    (kb / "d1/n0001.md").write_text("# Depot 1\n\nNow ships by zeppelin only.\n", "utf-8")
    assert index.sync(vectors=False).files_changed == 1
    manifest = Manifest(tmp_path / "ix" / "manifest.sqlite3")
    assert [h[0].split("#")[0] for h in manifest.keyword(content_terms("zeppelin"), 5)] == [
        "d1/n0001.md"
    ]
    assert manifest.keyword(content_terms("kx0001q"), 5) == []  # the old text's postings are gone


def run(args: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_a_build_killed_before_its_postings_are_sorted_in_is_finished_by_the_next_run(
    tmp_path: Path,
) -> None:
    kb = write_notes(tmp_path / "kb", NOTES)
    ix = tmp_path / "ix"
    args = [sys.executable, str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(ix)]
    env = clean_env(ASKMD_WATCH="0")
    assert run([*args, "index", "--keyword-only"], env, tmp_path).returncode == 0
    clean = shape(ix)
    # The state a kill leaves after the last group was recorded and before the sort: every
    # file recorded (nothing left to read), every posting still in the load table.
    db = sqlite3.connect(ix / "manifest.sqlite3")
    db.executescript(
        "CREATE TABLE postings_load AS SELECT * FROM postings; DELETE FROM postings; "
        "DROP INDEX postings_by_doc;"
    )
    db.close()

    found = run([*args, "search", "kx0042q", "--json"], env, tmp_path)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["results"]
    assert hits and hits[0]["source"] == "d2/n0042.md", found.stdout
    assert shape(ix) == clean


def test_a_cold_build_killed_mid_way_resumes_into_the_same_index(tmp_path: Path) -> None:
    notes = {f"n{i:05}.md": note(i) for i in range(1500)}  # worker process, several groups
    kb = write_notes(tmp_path / "kb", notes)
    ix = tmp_path / "ix"
    args = [sys.executable, str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(ix)]
    env = clean_env(ASKMD_WATCH="0")
    child = subprocess.Popen(
        [*args, "index", "--keyword-only"], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        recorded = 0
        deadline = time.monotonic() + 90
        while not recorded and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.05)
            try:
                db = sqlite3.connect(f"file:{ix / 'manifest.sqlite3'}?mode=ro", uri=True)
                recorded = db.execute("SELECT COUNT(*) FROM postings_load").fetchone()[0]
                db.close()
            except sqlite3.Error:
                continue  # not created yet
        assert recorded, "the build never showed a recorded group"
        os.killpg(child.pid, signal.SIGKILL)  # kill -9 with postings waiting to be sorted in
        child.wait(10)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert shape(ix)["load table"]

    again = run([*args, "index", "--keyword-only", "--json"], env, tmp_path)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["chunks_total"] == 2 * len(notes)  # title + Returns
    resumed = shape(ix)
    assert (resumed["load table"], resumed["doc index"]) == (False, True)

    assert run([*args, "index", "--keyword-only", "--rebuild"], env, tmp_path).returncode == 0
    assert shape(ix)["postings"] == resumed["postings"]


def test_a_first_build_killed_mid_way_is_resumed_not_taken_for_an_old_index(
    tmp_path: Path,
) -> None:
    """Notes that share a passage word for word once made an index built by older code be
    rebuilt; a first build cut short by a kill is this code's, and goes on."""
    template = "# Daily\n\nWhat went out today, what came back.\n"  # never filled in
    notes = {f"n{i:05}.md": template if i % 20 == 0 else note(i) for i in range(1500)}
    kb = write_notes(tmp_path / "kb", notes)
    ix = tmp_path / "ix"
    args = [sys.executable, str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(ix)]
    env = clean_env(ASKMD_WATCH="0")
    child = subprocess.Popen(
        [*args, "index"], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        recorded = 0
        deadline = time.monotonic() + 90
        while not recorded and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.05)
            try:
                db = sqlite3.connect(f"file:{ix / 'manifest.sqlite3'}?mode=ro", uri=True)
                recorded = db.execute("SELECT COUNT(*) FROM files").fetchone()[0]
                db.close()
            except sqlite3.Error:
                continue  # not created yet
        assert 0 < recorded < len(notes), "the build never showed a recorded group"
        os.killpg(child.pid, signal.SIGKILL)  # kill -9 during the keyword phase
        child.wait(10)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    db = sqlite3.connect(f"file:{ix / 'manifest.sqlite3'}?mode=ro", uri=True)
    recorded = db.execute("SELECT COUNT(*) FROM files").fetchone()[0]
    db.close()

    again = run([*args, "index", "--keyword-only", "--json"], env, tmp_path)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert (report["rebuilt"], report["rebuild_reason"]) == (False, ""), (recorded, report)
    assert report["files_added"] == len(notes) - recorded, (recorded, report)  # kept
