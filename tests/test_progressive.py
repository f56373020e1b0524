"""Keyword first, vectors after: a folder is searchable as soon as every note is chunked,
its vectors are stored after (in the foreground for `index`, in the background for the
REPL), ranking says which retriever ranked it, and an interrupted filling resumes
without embedding anything twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from askmd.search.tuning import SHIPPED
from tests.conftest import ROOT, clean_env, write_notes
from tests.openai_server import OpenAIServer

NOTES = {
    f"notes/n{i:03}.md": f"# Note {i}\n\nThe courier code of depot {i} is kx{i:03}q.\n"
    for i in range(120)
}
NOTES["guides/ports.md"] = "# Ports\n\nThe metrics endpoint listens on port 9420.\n"


@pytest.fixture(scope="module")
def slow_server():
    """An embeddings server that takes 0.25 s a request: a filling takes seconds."""
    with OpenAIServer(dimension=16, latency=0.25) as server:
        yield server


def env_for(server: OpenAIServer) -> dict[str, str]:
    """Embeddings from the scripted server, one batch at a time, and no LLM (extractive)."""
    return {
        "ASKMD_EMBEDDING_BACKEND": "openai",
        "ASKMD_EMBEDDING_MODEL": "test-embed",
        "ASKMD_EMBEDDING_BASE_URL": server.url,
        "ASKMD_EMBEDDING_API_KEY": "k",
        "ASKMD_EMBED_BATCH": "4",
        "ASKMD_EMBED_CONCURRENCY": "1",
        "ASKMD_WATCH": "0",
    }


def embedded_inputs(server: OpenAIServer) -> list[str]:
    """Every note text the server was asked to embed (not the dimension probe)."""
    return [
        text
        for r in server.requests
        if r.path.endswith("/embeddings")
        for text in r.body["input"]
        if text != "dimension probe"
    ]


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    return write_notes(tmp_path / "kb", NOTES)


BIG = 1100  # notes: more chunks than a one-shot search embeds before answering


def test_keyword_only_is_searchable_then_index_stores_the_vectors(tmp_path: Path, run_rag) -> None:
    kb = write_notes(
        tmp_path / "kb",
        {f"n{i:04}.md": f"The courier code of depot {i} is kx{i:04}q.\n" for i in range(BIG)},
    )
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    with OpenAIServer(dimension=16) as server:
        env = {**env_for(server), "ASKMD_EMBED_BATCH": "64"}
        first = run_rag(*where, "index", "--keyword-only", "--json", **env)
        assert first.returncode == 0, first.stderr
        assert json.loads(first.stdout)["chunks_embedded"] == 0
        assert embedded_inputs(server) == []  # nothing was embedded
        stats = json.loads(run_rag(*where, "stats", "--json", **env).stdout)
        assert (stats["chunks"], stats["chunks_embedded"], stats["keyword_ready"]) == (
            BIG, 0, True,
        )  # fmt: skip

        found = run_rag(*where, "search", "courier code of depot 77", "--json", **env)
        assert found.returncode == 0, found.stderr
        assert found.stderr == (
            f"warning: {BIG:,} chunks wait for their vectors: only passages sharing a "
            "word with the question are found until python rag.py index (or the REPL, "
            "or serve) has stored them\n"
        )
        result = json.loads(found.stdout)
        assert result["retriever"] == "hybrid"  # meaning read for the keyword matches
        assert result["results"][0]["source"] == "n0077.md"
        assert "kx0077q" in result["results"][0]["text"]  # the text is there before its vector
        # A one-shot search did not wait for vectors: it embedded the question and the
        # keyword ranking's first few, not the folder.
        asked = embedded_inputs(server)
        assert 0 < len(asked) <= 1 + SHIPPED.filling_candidates

        second = run_rag(*where, "index", "--json", **env)
        assert second.returncode == 0, second.stderr
        report = json.loads(second.stdout)
        assert report["chunks_embedded"] == BIG and report["files_unchanged"] == BIG
        stats = json.loads(run_rag(*where, "stats", "--json", **env).stdout)
        assert stats["chunks_embedded"] == stats["chunks"] == BIG
        found = run_rag(*where, "search", "depot 77 courier", "--json", **env)
        assert found.stderr == ""
        result = json.loads(found.stdout)
        assert result["retriever"] == "hybrid" and result["results"][0]["source"] == "n0077.md"


def test_a_keyword_only_rebuild_says_the_vectors_wait(
    kb: Path, tmp_path: Path, run_rag, slow_server: OpenAIServer
) -> None:
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    env = env_for(slow_server)
    assert run_rag(*where, "index", **env).returncode == 0
    rebuilt = run_rag(*where, "index", "--rebuild", "--keyword-only", **env)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "rebuilt: 121 files, 121 chunks (0 embedded, 121 waiting for vectors)" in rebuilt.stderr


def test_a_one_shot_search_stores_a_few_missing_vectors_first(
    kb: Path, tmp_path: Path, run_rag, slow_server: OpenAIServer
) -> None:
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    env = env_for(slow_server)
    assert run_rag(*where, "index", "--keyword-only", **env).returncode == 0
    found = run_rag(*where, "search", "metrics endpoint", "--json", **env)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["retriever"] == "hybrid"
    stats = json.loads(run_rag(*where, "stats", "--json", **env).stdout)
    assert stats["chunks_embedded"] == stats["chunks"] == 121


def test_while_vectors_are_missing_hybrid_ranks_the_keyword_matches_by_meaning_too(
    kb: Path, tmp_path: Path, run_rag, slow_server: OpenAIServer
) -> None:
    """Part filled, a hybrid search blends meaning into the keyword ranking's first
    candidates (their cosines computed where no vector is stored), so it ranks only
    what keyword or the stored vectors found; `filling_candidates=0` keeps keyword
    ranking alone until done."""
    from dataclasses import replace

    from askmd.pipeline import Index
    from askmd.search.tuning import SHIPPED
    from askmd.settings import load_settings

    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    env = env_for(slow_server)
    assert run_rag(*where, "index", "--keyword-only", **env).returncode == 0
    # Half the notes get their vectors: the store is part filled.
    settings = load_settings(
        environ=env, dotenv_path=None,
        overrides={"knowledge_dir": kb, "index_dir": tmp_path / "ix"},
    )  # fmt: skip
    index = Index(settings)
    index.keeper.fill_some(60, lambda: False)
    filling = index.keeper.filling()
    assert 0 < filling["chunks_embedded"] < filling["chunks"]
    for query in ("metrics port", "courier depot 12", "kx005q", "what listens where"):
        keyword = index.search(query, 10, mode="keyword")
        stored = index.search(query, 200, mode="dense")
        hybrid = index.search(query, 10)
        assert hybrid.retriever == "hybrid" and keyword.retriever == "keyword"
        found = {h.chunk_id for h in keyword} | {h.chunk_id for h in stored}
        assert {h.chunk_id for h in hybrid} <= found
        index.tuning = replace(SHIPPED, filling_candidates=0)
        alone = index.search(query, 10)
        index.tuning = SHIPPED
        assert alone.retriever == "keyword"
        assert [h.chunk_id for h in alone] == [h.chunk_id for h in keyword]
    dense = index.search("metrics endpoint port", 200, mode="dense")
    assert dense and len(dense) <= filling["chunks_embedded"]  # only chunks with vectors


MIXED = {
    "power.md": "# Power\n\nThe laptop sleeps when the lid is closed, unless a display is\n"
    "plugged in. The battery lasts about six hours.\n",
    "printer.md": "# Printer\n\nThe printer in the study needs toner every month.\n",
    "手册.md": "# 笔记本\n\n合上盖子时电脑会进入睡眠，接了外接显示器时不会。"
    "电池大约能用六个小时。\n",
    "做饭.md": "# 做饭\n\n红烧肉要小火炖六十分钟，最后大火收汁。\n",
}


def _filled_and_filling(tmp_path: Path, notes: dict[str, str]):
    from askmd.pipeline import Index
    from askmd.settings import load_settings

    kb = write_notes(tmp_path / "kb", notes)
    made = []
    for name, vectors in (("filled", True), ("filling", False)):
        overrides = {"knowledge_dir": kb, "index_dir": tmp_path / name}
        index = Index(load_settings(environ={}, dotenv_path=None, overrides=overrides))
        index.sync(vectors=vectors)
        made.append(index)
    return made


@pytest.mark.parametrize("question", ["Does the laptop sleep when I close it?", "合上盖子会睡眠吗"])
def test_while_vectors_are_missing_the_keyword_matches_get_the_cosines_they_will_have(
    tmp_path: Path, question: str
) -> None:
    """The cosines computed for keyword candidates while nothing is stored are those the
    filled index's vectors give them, in the space a filled index reads the question in
    (the multilingual model's for a Chinese question in a folder with Chinese notes)."""
    from askmd.index.store import Stored
    from askmd.search import dense

    filled, filling = _filled_and_filling(tmp_path, MIXED)
    assert filling.keeper.filling()["chunks_embedded"] == 0
    keyword = filling.search(question, 10, mode="keyword")
    assert keyword
    first = [(h.chunk_id, h.score) for h in keyword]
    kept = filling.manifest.stored([c for c, _ in first])
    texts = {i: Stored(i, text, meta, 1.0) for i, (text, meta) in kept.items()}
    scored, by = dense.while_filling(
        question, [], filling.embedder.id, first, texts, (None, None),
        filling.embedder, filling.manifest,
    )  # fmt: skip
    expected = {h.chunk_id: h.score for h in filled.search(question, 10, mode="dense")}
    chinese = question.startswith("合")
    assert by == (filling.embedder.companion_id if chinese else filling.embedder.id)
    assert {c for c, _ in scored} == {c for c, _ in first}
    for chunk, cosine in scored:
        assert cosine == pytest.approx(expected[chunk], abs=0.01), chunk


def test_while_vectors_are_missing_a_hybrid_answer_reads_the_question_by_meaning(
    tmp_path: Path,
) -> None:
    """Asked before any vector is stored, hybrid search is not keyword ranking alone:
    the matches' order follows the filled index's, not BM25's."""
    filled, filling = _filled_and_filling(tmp_path, MIXED)
    question = "how long do I braise the pork belly? 红烧肉"
    hybrid = filling.search(question, 4)
    assert hybrid.retriever == "hybrid"
    assert [h.source for h in hybrid][:1] == [h.source for h in filled.search(question, 4)][:1]


def test_a_killed_filling_resumes_and_embeds_nothing_twice(tmp_path: Path) -> None:
    notes = 700  # a few groups of vectors (indexer.GROUP_CHUNKS each)
    kb = write_notes(
        tmp_path / "kb", {f"n{i:04}.md": f"Depot {i} ships on day {i % 7}.\n" for i in range(notes)}
    )
    ix = tmp_path / "ix"
    args = [sys.executable, str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(ix)]
    with OpenAIServer(dimension=16, latency=0.1) as server:
        env = clean_env(**{**env_for(server), "ASKMD_EMBED_BATCH": "16"})
        child = subprocess.Popen(
            [*args, "index"], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            embedded = 0
            deadline = time.monotonic() + 90
            while not embedded and time.monotonic() < deadline:  # a group is stored
                time.sleep(0.2)
                shown = subprocess.run(
                    [*args, "stats", "--json"], env=env, cwd=tmp_path, capture_output=True,
                    text=True,
                )  # fmt: skip
                if shown.returncode == 0:
                    embedded = json.loads(shown.stdout)["chunks_embedded"]
            assert 0 < embedded < notes, embedded
            os.killpg(child.pid, signal.SIGKILL)  # kill -9: no cleanup of any kind
            child.wait(10)
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
        first = embedded_inputs(server)
        server.reset()
        again = subprocess.run(
            [*args, "index", "--json"], env=env, cwd=tmp_path, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert again.returncode == 0, again.stderr
        second = embedded_inputs(server)
    # Every vector stored before the kill was kept, and so was every vector cached: the
    # resumed run embeds only texts the killed one never got back from the server.
    assert len(second) <= notes - embedded
    # At most the slice in flight at the kill (the texts handed to the embedder in one call,
    # cached when it returns: 64 here) is embedded again.
    assert len(set(first) & set(second)) <= 64
    assert len(set(first) | set(second)) == notes
    assert json.loads(again.stdout)["chunks_total"] == notes
    stats = subprocess.run(
        [*args, "stats", "--json"], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert json.loads(stats.stdout)["chunks_embedded"] == notes


def test_the_repl_answers_at_once_by_keyword_while_vectors_fill_in_the_background(
    tmp_path: Path, slow_server: OpenAIServer
) -> None:
    notes = 400  # more chunks than the REPL waits for (keeper.FOREGROUND_CHUNKS_LIVE)
    kb = write_notes(tmp_path / "kb", {**NOTES, **{
        f"more/m{i:03}.md": f"# More {i}\n\nShelf {i} holds spare cables.\n"
        for i in range(notes - len(NOTES))
    }})  # fmt: skip
    ix = tmp_path / "ix"
    args = [sys.executable, str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(ix)]
    env = clean_env(**env_for(slow_server))
    started = time.monotonic()
    repl = subprocess.run(
        args, input="which port does the metrics endpoint use?\n/stats\n", env=env,
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    took = time.monotonic() - started
    assert repl.returncode == 0, repl.stderr
    said = repl.stdout
    assert "9420" in said and "guides/ports.md" in said
    assert "keyword matches only until done" in said  # the status line before the answer
    stats = {
        line.split()[0]: line.split()[1] for line in said.splitlines() if len(line.split()) == 2
    }
    assert int(stats["chunks_embedded"]) < notes  # answered before the vectors were all in
    assert took < notes / 4 * 0.25  # sooner than embedding everything, a batch at a time

    # The next start goes on from where the REPL left the filling.
    done = subprocess.run(
        [*args, "index", "--json"], env=env, cwd=tmp_path, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert 0 < json.loads(done.stdout)["chunks_embedded"] < notes


def test_a_note_changed_while_vectors_fill_is_never_found_by_its_old_vector(
    kb: Path, tmp_path: Path, run_rag, slow_server: OpenAIServer
) -> None:
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    env = env_for(slow_server)
    assert run_rag(*where, "index", **env).returncode == 0
    (kb / "guides/ports.md").write_text(
        "# Ports\n\nThe admin console listens on port 7001.\n", encoding="utf-8"
    )
    assert run_rag(*where, "index", "--keyword-only", **env).returncode == 0
    stats = json.loads(run_rag(*where, "stats", "--json", **env).stdout)
    assert stats["chunks_embedded"] == 120  # the changed note waits for its new vector
    found = run_rag(*where, "search", "metrics endpoint port", "--json", "-k", "3", **env)
    texts = [r["text"] for r in json.loads(found.stdout)["results"]]
    assert not any("9420" in t for t in texts)  # the old text is gone with its file's record
    found = json.loads(run_rag(*where, "search", "admin console", "--json", **env).stdout)
    assert found["results"][0]["source"] == "guides/ports.md"
    assert "7001" in found["results"][0]["text"]


@pytest.mark.slow  # builds a big folder or runs several syncs: minutes on a busy machine
def test_notes_prepared_in_worker_processes_are_recorded_as_in_this_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big cold sync prepares notes in workers; the manifest must not tell which way."""
    import sqlite3

    from askmd.index import prepare
    from askmd.pipeline import Index
    from askmd.settings import load_settings

    count = prepare.WORKERS_FROM_NOTES + 5
    notes = {
        f"d{i % 7}/n{i:04}.md": f"---\ntags: [t{i % 3}]\n---\n# Note {i}\n\nSee [[n{i + 1:04}]] "
        f"about depot {i} #inline/{i % 2}.\n\n## Part\n\n配送 {i} 号仓库。\n"
        for i in range(count)
    }
    kb = write_notes(tmp_path / "kb", notes)
    (kb / "bad.md").write_bytes(b"\xff\xfe\x00broken")  # binary: skipped either way

    def build(where: Path) -> dict[str, list]:
        settings = load_settings(
            environ={}, dotenv_path=None, overrides={"knowledge_dir": kb, "index_dir": where}
        )
        report = Index(settings).sync(vectors=False)
        assert [s.source for s in report.files_skipped] == ["bad.md"]
        db = sqlite3.connect(where / "manifest.sqlite3")
        tables = {
            "files": "SELECT source, md5, chunks FROM files ORDER BY source",
            "chunks": "SELECT id, source, text_hash, text, meta FROM chunks ORDER BY id",
            "postings": "SELECT d.chunk, p.term, p.tf, p.title_tf, p.alias_tf, p.heading_tf "
            "FROM postings p JOIN documents d ON d.doc = p.doc ORDER BY 1, 2",
            "links": "SELECT * FROM links ORDER BY source, line",
        }
        return {name: db.execute(query).fetchall() for name, query in tables.items()}

    assert prepare.workers() >= 1  # CI machines have two cores at least
    in_workers = build(tmp_path / "a")
    monkeypatch.setattr(prepare, "WORKERS_FROM_NOTES", 10**9)  # this process alone
    here = build(tmp_path / "b")
    assert len(in_workers["files"]) == count
    for name in here:
        assert in_workers[name] == here[name], name


def test_a_note_changed_before_its_vectors_does_not_keep_the_filler_busy(
    tmp_path: Path, run_rag
) -> None:
    """A note edited after the keyword phase recorded it cannot be filled until a sync
    records it again: the filler then rests (a sync wakes it) instead of re-reading it in
    a loop that holds a core."""
    from askmd.pipeline import Index
    from askmd.settings import load_settings

    kb = write_notes(tmp_path / "kb", {"a.md": "# A\n\nAlpha depot.\n", "b.md": "# B\n\nBeta.\n"})
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    assert run_rag(*where, "index", "--keyword-only").returncode == 0
    (kb / "b.md").write_text("# B\n\nChanged since it was recorded.\n", encoding="utf-8")
    settings = load_settings(
        environ={}, dotenv_path=None, overrides={"knowledge_dir": kb, "index_dir": tmp_path / "ix"}
    )
    index = Index(settings)
    try:
        calls = 1
        while index.keeper.fill_some(64, lambda: False):
            calls += 1
            assert calls < 5, "the filler keeps retrying a note it cannot fill"
        assert index.keeper.filling()["chunks_embedded"] == 1  # a.md's
        index.sync()  # b.md recorded again, with its vectors
        assert index.keeper.filling()["chunks_embedded"] == 2
        assert index.search("changed since", 1)[0].source == "b.md"
    finally:
        index.manifest.close()


def test_a_big_note_is_embedded_a_slice_a_call_and_stored_whole_once_cached(
    tmp_path: Path, run_rag
) -> None:
    """A 5 MB note is thousands of chunks: the filler embeds it a budget at a time into
    the cache and lets go of the index between calls (a note saved meanwhile is recorded
    with its vectors at once), and the call that finds every vector cached stores the note
    whole. Nothing is embedded twice."""
    from askmd.pipeline import Index
    from askmd.settings import load_settings

    big = "# Log\n\n" + "".join(
        f"Entry {i} of the depot log: crate kx{i:04}q.\n\n" for i in range(1400)
    )
    kb = write_notes(tmp_path / "kb", {"big.md": big})
    with OpenAIServer(dimension=16) as server:
        env = {**env_for(server), "ASKMD_CHUNK_SIZE": "200", "ASKMD_CHUNK_OVERLAP": "0"}
        where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
        assert run_rag(*where, "index", "--keyword-only", **env).returncode == 0
        settings = load_settings(
            environ=env, dotenv_path=None,
            overrides={"knowledge_dir": kb, "index_dir": tmp_path / "ix"},
        )  # fmt: skip
        index = Index(settings)
        try:
            chunks = index.keeper.filling()["chunks"]
            assert chunks > 4 * 64, chunks  # far bigger than the filler's budget
            assert index.keeper.fill_some(64, lambda: False) is True  # one slice, not the note
            assert index.keeper.filling()["chunks_embedded"] == 0  # stored whole, later
            assert 0 < len(embedded_inputs(server)) < chunks / 2
            # The index is free between calls: a note saved now is recorded with its vectors
            # (as a watcher records it while the filler runs).
            write_notes(kb, {"saved.md": "# Saved\n\nThe metrics endpoint listens on 9420.\n"})
            assert index.sync(["saved.md"], vectors=["saved.md"]).chunks_embedded == 1
            calls = 1
            while index.keeper.fill_some(64, lambda: False):
                calls += 1
                assert calls < chunks, "the filler makes no headway"
            assert calls >= 3
            assert index.keeper.filling()["chunks_embedded"] == chunks + 1
            inputs = embedded_inputs(server)
            assert len(inputs) == len(set(inputs)) == chunks + 1  # nothing embedded twice
            assert index.search("kx0399q", 1, mode="dense")  # stored, searchable by vector
        finally:
            index.manifest.close()


def test_a_saved_big_note_leaves_its_vectors_to_the_filler(tmp_path: Path) -> None:
    """A watcher's sync embeds the few notes saved, unless they are big: a 5 MB note
    would hold the index for minutes, and every later save with it."""
    from askmd.index.keeper import FOREGROUND_BYTES
    from askmd.pipeline import Index
    from askmd.settings import load_settings

    kb = write_notes(tmp_path / "kb", {"a.md": "# A\n\nAlpha.\n"})
    with OpenAIServer(dimension=16) as server:
        env = env_for(server)
        settings = load_settings(
            environ=env, dotenv_path=None,
            overrides={"knowledge_dir": kb, "index_dir": tmp_path / "ix"},
        )  # fmt: skip
        index = Index(settings)
        try:
            index.sync()
            index.keeper.fill_in_background()
            line = "Crate kx{:06}q entered the depot log at minute {} of the day.\n\n"
            write_notes(
                kb,
                {
                    "big.md": "# Big\n\n"
                    + "".join(line.format(i, i) for i in range(FOREGROUND_BYTES // 50)),
                    "small.md": "# Small\n\nThe metrics endpoint listens on 9420.\n",
                },
            )
            report = index.sync(["big.md", "small.md"])
            assert report.files_added == 2
            assert report.chunks_embedded == 1  # small.md's; big.md's are the filler's
        finally:
            index.keeper.filler.stop()
            index.manifest.close()


def depot_log(lines: int) -> str:
    """A long note of distinct lines (repeats would be stored once)."""
    return "# Depot log\n\n" + "".join(
        f"Crate kx{i:06}q entered the depot at minute {i} of the day.\n\n" for i in range(lines)
    )


def read_json_lines(stream, until, within: float = 120) -> list[dict]:
    """JSON lines from `stream` until one satisfies `until` (or the time is up)."""
    import select

    seen: list[dict] = []
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 1)
        if not ready:
            continue
        line = stream.readline()
        if not line:
            break
        seen.append(json.loads(line))
        if until(seen[-1]):
            return seen
    raise AssertionError(f"not seen in {within} s: {seen}")


def test_watch_reports_a_big_note_at_once_stores_its_vectors_after_and_ctrl_c_exits_0(
    tmp_path: Path,
) -> None:
    """`watch` records a saved 600 KB note for keyword search and says so, and the note
    saved after it too, while the note's vectors are still being stored in the
    background; Ctrl-C then leaves at once with status 0 (not aborted inside the model)."""
    kb = write_notes(tmp_path / "kb", {"a.md": "# A\n\nAlpha.\n"})
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    rag = [sys.executable, str(ROOT / "rag.py"), *where]
    assert subprocess.run([*rag, "index"], env=clean_env(), capture_output=True).returncode == 0
    log = (tmp_path / "stderr.log").open("w+b")
    watch = subprocess.Popen(
        [*rag, "watch", "--json"], stdout=subprocess.PIPE, stderr=log, env=clean_env(), text=True
    )
    try:
        deadline = time.monotonic() + 60
        while b"watching" not in (tmp_path / "stderr.log").read_bytes():
            assert time.monotonic() < deadline and watch.poll() is None, "watch did not start"
            time.sleep(0.2)
        (kb / "big.md").write_text(depot_log(5_000), encoding="utf-8")  # 310 KB
        read_json_lines(watch.stdout, lambda e: "big.md" in e.get("added", []))
        (kb / "small.md").write_text("# Small\n\nThe metrics port is 9420.\n", encoding="utf-8")
        read_json_lines(watch.stdout, lambda e: "small.md" in e.get("added", []))
        stats = subprocess.run(
            [*rag, "stats", "--json"], env=clean_env(), capture_output=True, text=True
        )
        stats = json.loads(stats.stdout)
        assert stats["files"] == 3
        assert stats["chunks_embedded"] < stats["chunks"]  # big.md's vectors still to come
        watch.send_signal(signal.SIGINT)
        assert watch.wait(timeout=60) == 0
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
    said = (tmp_path / "stderr.log").read_text(encoding="utf-8", errors="replace")
    assert "terminate called" not in said and "Traceback" not in said, said


def test_while_vectors_are_stored_a_question_about_an_unknown_name_is_declined(
    tmp_path: Path,
) -> None:
    """Ranked by keyword alone, "What is the capital of Australia?" finds no passage: it
    is declined as it is once the vectors are in, naming what the notes never mention."""
    from askmd.pipeline import Index
    from askmd.settings import load_settings

    kb = write_notes(tmp_path / "kb", {"ops.md": "# Ops\n\nThe API listens on port 8420.\n"})
    overrides = {"knowledge_dir": kb, "index_dir": tmp_path / "ix"}
    index = Index(load_settings(environ={}, dotenv_path=None, overrides=overrides))
    index.sync(vectors=False)
    assert index.keeper.filling()["chunks_embedded"] == 0
    result = index.ask("What is the capital of Australia?", [], 5)
    assert result.answered is False
    assert result.text == "Your notes don't seem to answer this. They never mention “Australia”."
    assert [(r.kind, r.items) for r in result.reasons] == [("unmentioned", ("Australia",))]
