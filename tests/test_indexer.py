"""The sync against a real Chroma in a temp dir and a real OpenAI-compatible embeddings
server on 127.0.0.1 (deterministic vectors, fast), plus the real local model once.

Every scenario checks exact chunk counts in the store against what the chunker makes of
the files on disk, so a duplicate, stale or missing chunk fails the test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import chunker
from askmd.errors import AskmdError
from askmd.index import indexer
from askmd.index.embedder import OpenAIEmbedder, make_embedder
from askmd.index.manifest import Manifest
from askmd.index.store import Store
from askmd.read import notes
from askmd.settings import Settings
from tests.conftest import ROOT, clean_env, synced_index
from tests.locking import lock_held
from tests.openai_server import OpenAIServer

GUIDE = """# Deploy guide

## Install

{install}

## Configure

Set `LUMEN_PORT` to 8420. {configure}

## Rollback

Run `lumenctl rollback` and check the health endpoint.
"""


@pytest.fixture(scope="module")
def server():
    with OpenAIServer(dimension=8) as s:
        yield s


def make_settings(tmp_path: Path, server: OpenAIServer, **changes) -> Settings:
    values = dict(
        knowledge_dir=tmp_path / "kb",
        index_dir=tmp_path / "ix",
        embedding_backend="openai",
        embedding_model="test-embed",
        openai_base_url=server.url,
        openai_api_key="test-key",
        embed_batch=8,
    )
    values.update(changes)
    values["knowledge_dir"].mkdir(parents=True, exist_ok=True)
    return Settings(**values)


def sync(settings: Settings, rebuild: bool = False, **lock) -> indexer.SyncReport:
    manifest = Manifest(settings.index_dir / "manifest.sqlite3")
    try:
        return indexer.sync(
            settings,
            Store(settings.index_dir, settings.chroma_url, settings.collection),
            manifest,
            lambda: (
                OpenAIEmbedder(
                    settings.openai_base_url,
                    settings.openai_api_key,
                    settings.embedding_model,
                    batch_size=settings.embed_batch,
                    max_retries=0,
                )
                if settings.embedding_backend == "openai"
                else make_embedder("local", None)
            ),
            indexer.SyncOptions(rebuild=rebuild, **lock),
        )
    finally:
        manifest.close()


def expected_counts(settings: Settings) -> dict[str, int]:
    """What the chunker makes of every readable note on disk now."""
    found, _ = notes.find(settings.knowledge_dir, settings.include, settings.exclude)
    counts = {}
    for source in found:
        try:
            note = notes.read(settings.knowledge_dir, source)
        except notes.Unreadable:
            continue
        counts[source] = len(chunker.split_note(note, settings.chunk_size, settings.chunk_overlap))
    return {s: n for s, n in counts.items() if n}


def stored_counts(settings: Settings) -> dict[str, int]:
    store = Store(settings.index_dir, settings.chroma_url, settings.collection)
    store.open({})
    return store.source_counts()


def write(settings: Settings, source: str, text: str | bytes) -> Path:
    path = settings.knowledge_dir / source
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def long_install(words: int = 160) -> str:
    return " ".join(f"Step {i} copies the release bundle." for i in range(words))


def seed(settings: Settings) -> None:
    write(settings, "guides/deploy.md", GUIDE.format(install=long_install(), configure="Done."))
    write(settings, "faq.md", "# FAQ\n\nQ: port?\n\n---\n\nA second entry.\n\n---\n\nThird.\n")
    write(settings, "zh/备份.md", "# 数据库备份\n\n每天凌晨两点半执行备份，保留十四天。\n")


def embedded_requests(server: OpenAIServer) -> int:
    return sum(len(r.body["input"]) for r in server.requests if r.path == "/v1/embeddings")


def test_first_sync_then_no_change_then_touch(tmp_path, server) -> None:
    settings = make_settings(tmp_path, server)
    seed(settings)
    first = sync(settings)
    expected = expected_counts(settings)
    assert stored_counts(settings) == expected
    assert (first.files_scanned, first.files_added, first.files_unchanged) == (3, 3, 0)
    assert first.chunks_total == sum(expected.values()) == first.chunks_embedded
    assert first.rebuilt is False and first.files_skipped == []

    before = embedded_requests(server)
    again = sync(settings)
    assert (again.files_unchanged, again.files_added, again.chunks_embedded) == (3, 0, 0)
    assert again.chunks_total == first.chunks_total
    assert embedded_requests(server) == before

    path = settings.knowledge_dir / "faq.md"
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))  # saved, not changed
    touched = sync(settings)
    assert (touched.files_unchanged, touched.files_changed, touched.chunks_embedded) == (3, 0, 0)
    assert embedded_requests(server) == before


def test_editing_one_paragraph_re_embeds_only_changed_chunks(tmp_path, server) -> None:
    settings = make_settings(tmp_path, server)
    seed(settings)
    sync(settings)
    old = {c.text for c in _chunks(settings, "guides/deploy.md")}
    write(
        settings,
        "guides/deploy.md",
        GUIDE.format(install=long_install(), configure="Restart the API afterwards."),
    )
    report = sync(settings)
    new = _chunks(settings, "guides/deploy.md")
    changed = [c for c in new if c.text not in old]
    assert (report.files_changed, report.files_unchanged, report.files_added) == (1, 2, 0)
    assert report.chunks_embedded == len(changed) == 1
    assert report.chunks_deleted == 1
    assert stored_counts(settings) == expected_counts(settings)


def _chunks(settings: Settings, source: str) -> list[chunker.Chunk]:
    note = notes.read(settings.knowledge_dir, source)
    return chunker.split_note(note)


def test_rename_delete_and_re_add(tmp_path, server) -> None:
    settings = make_settings(tmp_path, server)
    seed(settings)
    sync(settings)
    deploy = settings.knowledge_dir / "guides/deploy.md"
    deploy.rename(settings.knowledge_dir / "guides/deployment.md")
    renamed = sync(settings)
    assert (renamed.files_added, renamed.files_deleted, renamed.files_unchanged) == (1, 1, 2)
    assert renamed.chunks_embedded == 0  # same texts (the title is the H1): from the cache
    assert stored_counts(settings) == expected_counts(settings)
    assert "guides/deploy.md" not in stored_counts(settings)

    faq = (settings.knowledge_dir / "faq.md").read_text(encoding="utf-8")
    (settings.knowledge_dir / "faq.md").unlink()
    deleted = sync(settings)
    assert (deleted.files_deleted, deleted.chunks_deleted) == (1, 3)
    assert stored_counts(settings) == expected_counts(settings)

    write(settings, "faq.md", faq)
    back = sync(settings)
    assert (back.files_added, back.chunks_embedded) == (1, 0)
    assert stored_counts(settings) == expected_counts(settings)


def test_bad_files_are_skipped_and_never_destroy_indexed_chunks(tmp_path, server) -> None:
    settings = make_settings(tmp_path, server)
    seed(settings)
    write(settings, "latin1.md", "caf\xe9 notes".encode("latin-1"))
    write(settings, "image.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    write(settings, "empty.md", "")
    report = sync(settings)
    assert sorted((s.source, s.reason) for s in report.files_skipped) == [
        ("image.md", "binary (it contains NUL bytes), not a text note"),
        ("latin1.md", "not UTF-8 (byte 0xe9 at offset 3); re-save it as UTF-8"),
    ]
    assert stored_counts(settings) == expected_counts(settings)
    indexed = stored_counts(settings)

    write(settings, "faq.md", "broken \xff save".encode("latin-1"))  # a good note goes bad
    kept = sync(settings)
    assert [s.source for s in kept.files_skipped] == ["faq.md", "image.md", "latin1.md"]
    assert stored_counts(settings) == indexed  # its earlier chunks are still there
    assert kept.chunks_deleted == 0


def test_embedder_or_chunk_settings_change_means_rebuild(tmp_path, server) -> None:
    settings = make_settings(tmp_path, server)
    seed(settings)
    sync(settings)
    other = make_settings(tmp_path, server, embedding_model="other-embed")
    report = sync(other)
    assert report.rebuilt is True
    assert report.rebuild_reason == "embedder changed (openai:test-embed → openai:other-embed)"
    assert report.chunks_embedded == report.chunks_total
    assert stored_counts(other) == expected_counts(other)

    smaller = make_settings(
        tmp_path, server, embedding_model="other-embed", chunk_size=300, chunk_overlap=50
    )
    resized = sync(smaller)
    assert resized.rebuild_reason == "chunk settings changed (size 1000 → 300, overlap 200 → 50)"
    assert stored_counts(smaller) == expected_counts(smaller)

    again = sync(smaller, rebuild=True)
    assert (again.rebuilt, again.rebuild_reason, again.chunks_embedded) == (True, "asked for", 0)
    assert stored_counts(smaller) == expected_counts(smaller)


def test_a_store_changed_behind_the_manifest_is_repaired(tmp_path, server) -> None:
    settings = make_settings(tmp_path, server)
    seed(settings)
    sync(settings)
    store = Store(settings.index_dir)
    store.open({})
    store.delete(["zh/备份.md"])  # the store loses a file the manifest thinks is indexed
    write(settings, "new.md", "# New\n\nA new note forces a full comparison.\n")
    report = sync(settings)
    assert report.warnings == ["repaired the index: 1 file(s) were out of step with it"]
    assert stored_counts(settings) == expected_counts(settings)


def test_a_second_writer_is_refused_with_the_holder_pid(tmp_path, server) -> None:
    settings = make_settings(tmp_path, server)
    seed(settings)
    with lock_held(settings.index_dir) as holder:
        with pytest.raises(AskmdError) as info:
            sync(settings)
    assert str(info.value) == (
        f"the index at {settings.index_dir} is being updated by another askmd process "
        f"(pid {holder.pid}). Wait for it to finish, or stop it."
    )
    assert sync(settings).files_added == 3  # the lock is free again


def test_a_writer_waits_for_the_lock_saying_so_then_writes(tmp_path, server) -> None:
    settings = make_settings(tmp_path, server)
    seed(settings)
    said: list[str] = []
    with lock_held(settings.index_dir, seconds=1.0) as holder:
        started = time.monotonic()
        report = sync(settings, wait=20, on_wait=said.append)
    assert said == [f"waiting for pid {holder.pid} to finish updating the index (up to 20 s)…"]
    assert report.files_added == 3 and time.monotonic() - started < 20
    assert stored_counts(settings) == expected_counts(settings)


def test_a_writer_gives_up_after_its_stated_wait(tmp_path, server) -> None:
    settings = make_settings(tmp_path, server)
    seed(settings)
    with lock_held(settings.index_dir) as holder:
        started = time.monotonic()
        with pytest.raises(indexer.IndexBusy) as info:
            sync(settings, wait=1.5)
        waited = time.monotonic() - started
    assert 1.5 <= waited < 5
    assert info.value.holder == str(holder.pid)
    assert "still after 2 s" in str(info.value)  # 1.5 s, rounded as it was stated


def test_finding_nothing_changed_needs_no_lock(tmp_path, server) -> None:
    settings = make_settings(tmp_path, server)
    seed(settings)
    sync(settings)
    os.utime(settings.knowledge_dir / "faq.md", ns=(1, 1))  # saved again, unchanged: a write
    sync(settings)
    with lock_held(settings.index_dir):
        report = sync(settings)  # what a server's re-scan does every few seconds
        chunks = sum(expected_counts(settings).values())
        assert (report.files_unchanged, report.chunks_total) == (3, chunks)
        write(settings, "new.md", "# New\n\nA new note needs the lock.\n")
        with pytest.raises(indexer.IndexBusy):
            sync(settings)


def test_the_real_local_model_indexes_and_finds_the_right_note(tmp_path, server) -> None:
    settings = make_settings(tmp_path, server, embedding_backend="local", embedding_model="")
    write(settings, "ports.md", "# Ports\n\nThe API listens on port 8420 and metrics on 9420.\n")
    write(settings, "bread.md", "# Sourdough\n\nFeed the starter flour and water every day.\n")
    write(settings, "tax.md", "# Taxes\n\nFile the yearly return before the end of April.\n")
    report = sync(settings)
    assert (report.files_added, report.chunks_total) == (3, 3)
    store = Store(settings.index_dir)
    store.open({})
    model = make_embedder("local", None)
    hit = store.nearest(model.embed_queries(["which port does the server use?"])[0], 1)[0]
    assert hit.metadata["source"] == "ports.md"
    manifest = Manifest(settings.index_dir / "manifest.sqlite3")
    assert (manifest.get("embedder"), manifest.get("dimension")) == (
        "local:all-MiniLM-L6-v2-int8",
        "384",
    )


# --- whole processes: concurrent runs and kill -9 -------------------------------------


def index_process(settings: Settings, *extra: str) -> subprocess.Popen:
    env = clean_env(
        ASKMD_EMBEDDING_BACKEND="openai",
        ASKMD_EMBEDDING_MODEL=settings.embedding_model,
        OPENAI_BASE_URL=settings.openai_base_url,
        OPENAI_API_KEY="test-key",
        ASKMD_EMBED_BATCH=str(settings.embed_batch),
    )
    return subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "rag.py"),
            "--knowledge",
            str(settings.knowledge_dir),
            "--index-dir",
            str(settings.index_dir),
            "index",
            "--json",
            *extra,
        ],
        cwd=settings.knowledge_dir.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def many_notes(settings: Settings, files: int = 60) -> None:
    for i in range(files):
        body = "\n\n".join(
            f"## Part {j}\n\n" + f"Note {i} part {j} talks about topic {i * j}. " * 12
            for j in range(6)
        )
        write(settings, f"notes/n{i:03}.md", f"# Note {i}\n\n{body}\n")


def test_two_index_runs_at_once(tmp_path, server) -> None:
    settings = make_settings(tmp_path, server, embed_batch=16)
    many_notes(settings, files=20)
    server.force("/v1/embeddings", delay=0.2, times=200)  # keep the first run busy
    try:
        first = index_process(settings)
        time.sleep(1.5)
        second = index_process(settings)
        out2, err2 = second.communicate(timeout=60)
        out1, err1 = first.communicate(timeout=120)
    finally:
        server._forced.clear()
    assert first.returncode == 0, err1
    assert second.returncode == 0, err2  # it waited for the first, then found nothing to do
    assert err2.startswith(f"warning: waiting for pid {first.pid} to finish updating the index")
    assert stored_counts(settings) == expected_counts(settings)


@pytest.mark.parametrize("kill_after", [1, 8])  # embedding batches asked for
def test_kill_9_during_index_then_rerun_repairs(tmp_path, server, kill_after: int) -> None:
    """Killed after so many batches, not seconds: on a fast machine the whole run took
    less than the seconds it was given."""
    settings = make_settings(tmp_path, server, embed_batch=16)
    many_notes(settings, files=60)
    server.force("/v1/embeddings", delay=0.1, times=1000)
    try:
        victim = index_process(settings)
        deadline = time.monotonic() + 120
        while victim.poll() is None and time.monotonic() < deadline:
            if sum(r.path == "/v1/embeddings" for r in list(server.requests)) >= kill_after:
                break
            time.sleep(0.01)
        assert victim.poll() is None, "the run finished before it could be killed"
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
    finally:
        server._forced.clear()
    again = index_process(settings)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    expected = expected_counts(settings)
    assert stored_counts(settings) == expected
    manifest = Manifest(settings.index_dir / "manifest.sqlite3")
    assert manifest.total_chunks() == sum(expected.values())
    quiet = sync(settings)
    assert (quiet.files_unchanged, quiet.chunks_embedded) == (60, 0)


@pytest.mark.slow  # builds a big folder or runs several syncs: minutes on a busy machine
def test_a_note_repeating_one_passage_does_not_hide_the_other_notes(tmp_path: Path) -> None:
    """Thousands of identical chunks were thousands of identical vectors, which cut the
    other notes out of Chroma's HNSW graph: a question sharing no word with its note found
    nothing else. A note's repeats of a chunk are now indexed once."""
    notes = {
        "big.md": "# Big\n\n" + "A sentence about nothing in particular. " * 60000,
        "power.md": "# Power\n\nTo keep the machine awake, disable suspend.\n",
        "garden.md": "# Garden\n\nWater tomatoes in the morning, before the heat.\n",
        "bread.md": "# Bread\n\nLet the dough rise overnight in the fridge.\n",
    }
    index = synced_index(tmp_path, notes)
    try:
        assert len(index.manifest.chunk_ids("big.md")) < 10  # its distinct pieces only
        for question, note in (
            ("stop the computer sleeping", "power.md"),
            ("when should I irrigate my vegetables", "garden.md"),
            ("leaving yeast loaves to prove in the refrigerator", "bread.md"),
        ):
            assert index.search(question, 1, mode="dense")[0].source == note, question
            assert index.search(question, 1)[0].source == note, question
    finally:
        index.manifest.close()


TEMPLATE = (
    "# Daily note\n\n## Tasks\n\nNothing planned yet, fill this in during the day.\n\n"
    "## Log\n\nWrite what happened today here.\n"
)


def test_many_notes_made_from_one_template_do_not_hide_the_other_notes(tmp_path: Path) -> None:
    """200 unfilled daily notes are 400 vectors in two groups of identical ones; stored as
    they are, Chroma's HNSW graph linked them only among themselves and dense search found
    no other note. Each stored vector is now moved a little in a direction of its own."""
    notes = {f"daily/{day:03d}.md": TEMPLATE for day in range(200)}
    notes |= {
        "power.md": "# Power\n\nTo keep the machine awake, disable suspend.\n",
        "garden.md": "# Garden\n\nWater tomatoes in the morning, before the heat.\n",
        "bread.md": "# Bread\n\nLet the dough rise overnight in the fridge.\n",
    }
    index = synced_index(tmp_path, notes)
    try:
        assert index.manifest.total_chunks() == 403  # every note stays citable on its own
        for question, note in (
            ("stop the computer sleeping", "power.md"),
            ("when should I irrigate my vegetables", "garden.md"),
            ("leaving yeast loaves to prove in the refrigerator", "bread.md"),
        ):
            assert index.search(question, 1, mode="dense")[0].source == note, question
        found = index.search("what happened today", 5, mode="dense")
        assert all(h.source.startswith("daily/") for h in found)
    finally:
        index.manifest.close()


def test_an_index_holding_identical_vectors_keeps_them_apart_at_its_next_sync(
    tmp_path: Path, monkeypatch
) -> None:
    """An index made by older code, which stored copies as identical vectors, is rebuilt
    once at its next sync, every vector from the embedding cache (updating the vectors in
    place leaves HNSW's links as they were: the graph stays cut)."""
    from askmd.index import store

    notes = {f"daily/{day:03d}.md": TEMPLATE for day in range(200)}
    notes["garden.md"] = "# Garden\n\nWater tomatoes in the morning, before the heat.\n"
    notes["power.md"] = "# Power\n\nTo keep the machine awake, disable suspend.\n"
    monkeypatch.setattr(store, "JITTER", 0.0)  # as older code stored them
    index = synced_index(tmp_path, notes)
    try:
        # (whether these copies cut garden.md off depends on where Chroma's graph search
        # enters, which varies between runs: the test asks only for the mend)
        question = "when should I irrigate my vegetables"
        monkeypatch.setattr(store, "JITTER", 1e-3)
        with index.manifest.db:  # and as older code left it
            index.manifest.db.execute("DELETE FROM meta WHERE key = 'copies'")
            index.manifest.db.execute("DELETE FROM _migrations WHERE name LIKE 'u%'")
        report = index.sync()
        assert report.rebuild_reason == "passages several notes share are now stored apart"
        assert report.chunks_embedded == 0  # every vector from the cache
        assert index.search(question, 1, mode="dense")[0].source == "garden.md"
        again = index.sync()  # looked for once: nothing is read again
        assert (again.files_changed, again.files_unchanged, again.rebuilt) == (0, 202, False)
    finally:
        index.manifest.close()


@pytest.mark.slow  # builds a big folder or runs several syncs: minutes on a busy machine
def test_an_index_holding_a_notes_repeats_drops_them_at_its_next_sync(
    tmp_path: Path, monkeypatch
) -> None:
    """An index made by older code, which stored every repeat, is mended without a
    rebuild: the notes holding repeats are recorded again, once."""
    from askmd.index import prepare

    notes = {
        "big.md": "# Big\n\n" + "A sentence about nothing in particular. " * 60000,
        "garden.md": "# Garden\n\nWater tomatoes in the morning, before the heat.\n",
        "power.md": "# Power\n\nTo keep the machine awake, disable suspend.\n",
    }
    monkeypatch.setattr(prepare, "REPEATS_ONCE", False)  # as older code indexed it
    index = synced_index(tmp_path, notes)
    try:
        assert len(index.manifest.chunk_ids("big.md")) == 3000
        monkeypatch.setattr(prepare, "REPEATS_ONCE", True)
        with index.manifest.db:  # and as older code left it: never looked for repeats
            index.manifest.db.execute("DELETE FROM meta WHERE key = 'repeats'")
            index.manifest.db.execute("DELETE FROM _migrations WHERE name LIKE 'u%'")
        report = index.sync()
        assert (report.files_changed, report.files_unchanged) == (1, 2)
        assert len(index.manifest.chunk_ids("big.md")) < 10
        assert index.keeper.filling()["chunks_embedded"] == index.keeper.filling()["chunks"]
        question = "when should I irrigate my vegetables"
        assert index.search(question, 1, mode="dense")[0].source == "garden.md"
        again = index.sync()  # looked for once: nothing is read again
        assert (again.files_changed, again.files_unchanged) == (0, 3)
    finally:
        index.manifest.close()
