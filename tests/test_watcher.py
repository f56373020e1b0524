"""Watch mode with real files, the real watcher (inotify through watchfiles) and the real
index: what a user does to a folder of notes, and what reaches the index, how often."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from watchfiles._rust_notify import RustNotify

from askmd.interfaces.watcher import POLL_SECONDS, Change, Watcher
from askmd.pipeline import Index
from askmd.settings import Settings
from tests.conftest import NOTES, ROOT, clean_env, write_notes

WAIT = 20.0  # the longest a change may take to arrive on a busy machine


@dataclass
class Live:
    kb: Path
    index: Index
    watcher: Watcher
    changes: queue.Queue = field(default_factory=queue.Queue)
    notices: list[str] = field(default_factory=list)

    def next(self) -> Change:
        return self.changes.get(timeout=WAIT)

    def quiet(self, seconds: float = 1.0) -> None:
        """Nothing more arrives: no change reported in `seconds`."""
        time.sleep(seconds)
        assert self.changes.empty(), self.changes.get()

    def sources(self, query: str) -> list[str]:
        return [h.source for h in self.index.search(query, 5)]


def watching(tmp_path: Path, notes=NOTES, **kwargs) -> Live:
    kb = write_notes(tmp_path / "kb", notes)
    index = Index(Settings(knowledge_dir=kb, index_dir=tmp_path / "ix", exclude=("drafts",)))
    index.sync()  # as the REPL and serve do before they watch
    live = Live(kb, index, None)  # type: ignore[arg-type]
    live.watcher = Watcher(index, live.changes.put, live.notices.append, **kwargs)
    live.watcher.start()
    assert live.watcher.ready.wait(60), "the watcher did not start"
    return live


@pytest.fixture
def live(tmp_path: Path):
    live = watching(tmp_path)
    yield live
    live.watcher.stop()


def test_an_edit_is_searchable_when_its_change_is_reported(live: Live) -> None:
    (live.kb / "bread.md").write_text("# Bread\n\nFeed the sourdough starter with rye flour.\n")
    change = live.next()
    assert (change.changed, change.added, change.deleted) == (["bread.md"], [], [])
    assert change.chunks_embedded == 1
    assert live.sources("rye flour")[0] == "bread.md"
    assert "changed bread.md (1 chunk embedded" in change.line()


def test_a_new_note_is_added_and_a_deleted_one_leaves(live: Live) -> None:
    (live.kb / "tea.md").write_text("# Tea\n\nSteep oolong for three minutes.\n")
    assert live.next().added == ["tea.md"]
    assert live.sources("oolong")[0] == "tea.md"
    (live.kb / "tea.md").unlink()
    assert live.next().deleted == ["tea.md"]
    assert "tea.md" not in live.sources("oolong")


def test_a_rename_and_a_move_across_folders_embed_nothing(live: Live) -> None:
    os.rename(live.kb / "bread.md", live.kb / "baking.md")
    change = live.next()
    assert (change.added, change.deleted) == (["baking.md"], ["bread.md"])
    assert change.chunks_embedded == 0
    (live.kb / "archive").mkdir()
    os.rename(live.kb / "guides" / "ports.md", live.kb / "archive" / "ports.md")
    change = live.next()
    assert (change.added, change.deleted) == (["archive/ports.md"], ["guides/ports.md"])
    assert change.chunks_embedded == 0
    assert live.sources("port 8420")[0] == "archive/ports.md"


def test_a_folder_renamed_moves_its_notes_in_one_change(live: Live) -> None:
    os.rename(live.kb / "guides", live.kb / "manuals")
    change = live.next()
    assert (change.added, change.deleted) == (["manuals/ports.md"], ["guides/ports.md"])
    assert change.chunks_embedded == 0


def test_a_burst_of_500_files_is_one_sync_and_rewriting_the_same_content_embeds_nothing(
    tmp_path: Path,
) -> None:
    live = watching(tmp_path, quiet_ms=200)  # a checkout on a busy machine pauses now and then
    try:
        syncs = live.watcher.syncs
        for i in range(500):  # one text, so the embedder runs once; the store gets 500 chunks
            write_notes(live.kb, {f"batch/n{i:03}.md": "# Batch\n\nA note of the checkout.\n"})
        change = live.next()
        assert len(change.added) == 500 and change.chunks_embedded == 1
        assert live.watcher.syncs == syncs + 1
        live.quiet(0.5)

        for i in range(500):  # a sync client writes every file again, unchanged
            write_notes(live.kb, {f"batch/n{i:03}.md": "# Batch\n\nA note of the checkout.\n"})
        deadline = time.monotonic() + WAIT
        while live.watcher.syncs < syncs + 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert live.watcher.syncs == syncs + 2  # one sync for the lot, and nothing changed
        live.quiet(0.5)
    finally:
        live.watcher.stop()


def test_an_editors_save_through_a_temp_file_is_one_change(live: Live) -> None:
    # vim: probe with 4913, keep a backup~, write anew; others write x.tmp and rename it over
    (live.kb / "4913").write_text("")
    (live.kb / "4913").unlink()
    os.rename(live.kb / "bread.md", live.kb / "bread.md~")
    (live.kb / "bread.md").write_text("# Bread\n\nBake at 250 degrees.\n")
    (live.kb / "bread.md~").unlink()
    change = live.next()
    assert (change.changed, change.added, change.deleted) == (["bread.md"], [], [])
    (live.kb / "bread.md.tmp").write_text("# Bread\n\nBake at 230 degrees with steam.\n")
    os.replace(live.kb / "bread.md.tmp", live.kb / "bread.md")
    change = live.next()
    assert (change.changed, change.added, change.deleted) == (["bread.md"], [], [])
    live.quiet(0.5)
    assert live.sources("steam")[0] == "bread.md"


def test_tool_folders_temp_files_and_other_files_never_wake_the_index(live: Live) -> None:
    syncs = live.watcher.syncs
    write_notes(
        live.kb,
        {
            ".git/objects/ab/cdef": "blob",
            ".git/notes.md": "# not a note\n",
            ".obsidian/workspace.json": "{}",
            ".trash/old.md": "# Old\n\nthrown away\n",
            ".bread.md.swp": "swap",
            ".#bread.md": "lock",
            "#bread.md#": "autosave",
            "bread.md~": "backup",
            "guides/ports.md.tmp": "partial",
            "4913": "",
            "todo.log": "not an included file",
            "drafts/idea.md": "# Draft\n\nexcluded folder\n",
        },
    )
    (live.kb / "empty").mkdir()  # a folder that appears is looked into: one (empty) sync
    live.quiet(1.0)
    assert live.watcher.syncs == syncs + 1


def test_a_note_that_becomes_unreadable_keeps_its_chunks_and_says_why_once(live: Live) -> None:
    (live.kb / "bread.md").write_bytes(b"# Bread\x00\x01 now binary\n")
    change = live.next()
    assert (change.added, change.changed, change.deleted) == ([], [], [])
    assert change.errors == [
        {
            "path": "bread.md",
            "reason": "binary (it contains NUL bytes), not a text note; "
            "its earlier chunks are kept",
        }
    ]
    assert live.sources("starter")[0] == "bread.md"
    (live.kb / "bread.md").write_bytes(b"# Bread\x00\x02 still binary\n")
    live.quiet(1.0)  # said once
    (live.kb / "bread.md").write_text("# Bread\n\nFeed the starter twice a day.\n")
    assert live.next().changed == ["bread.md"]


def test_without_notifications_it_says_so_once_and_polls(tmp_path: Path) -> None:
    def no_watches_left(paths, debug, force_polling, poll_delay_ms, recursive, ignore_denied):
        if not force_polling:
            raise OSError("OS file watch limit reached. about [...]")
        return RustNotify(paths, debug, force_polling, poll_delay_ms, recursive, ignore_denied)

    live = watching(tmp_path, notify=no_watches_left)
    try:
        assert live.watcher.polling
        assert live.notices == [
            "change notifications are not available (OS file watch limit reached. about [...]): "
            f"polling {live.kb} every {POLL_SECONDS:g} s "
            "(raise fs.inotify.max_user_watches to watch instead)"
        ]
        (live.kb / "tea.md").write_text("# Tea\n\nSteep oolong for three minutes.\n")
        assert live.next().added == ["tea.md"]
    finally:
        live.watcher.stop()


def test_two_watchers_on_one_index_apply_a_change_once_and_both_report_it(
    tmp_path: Path,
) -> None:
    first = watching(tmp_path)
    second_index = Index(first.index.settings)
    second = Live(first.kb, second_index, None)  # type: ignore[arg-type]
    second.watcher = Watcher(second_index, second.changes.put, second.notices.append)
    second.watcher.start()
    try:
        assert second.watcher.ready.wait(60)
        (first.kb / "tea.md").write_text("# Tea\n\nSteep oolong for three minutes.\n")
        one, two = first.next(), second.next()
        assert one.added == two.added == ["tea.md"]
        assert one.chunks_embedded + two.chunks_embedded == 1  # embedded by one of them
        assert second.sources("oolong")[0] == first.sources("oolong")[0] == "tea.md"
        assert second.watcher.take_updated() == ["tea.md"]
        assert second.watcher.take_updated() == []
    finally:
        first.watcher.stop()
        second.watcher.stop()


def test_two_watching_processes_on_one_index_embed_a_change_once(tmp_path: Path) -> None:
    """`rag.py watch --json` twice over one index (as a REPL and a server would be)."""
    kb = write_notes(tmp_path / "kb", NOTES)
    command = [sys.executable, str(ROOT / "rag.py"), "--knowledge", str(kb)]
    command += ["--index-dir", str(tmp_path / "ix"), "watch", "--json"]
    procs = []
    try:
        for _ in range(2):  # one after the other: the second waits for the first's sync
            proc = subprocess.Popen(
                command, cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            procs.append(proc)
            for line in proc.stderr:  # the first sync is done, the notifications are on
                if line.startswith("watching "):
                    break
        lines = [queue.Queue(), queue.Queue()]
        for proc, out in zip(procs, lines, strict=True):
            threading.Thread(target=lambda p=proc, q=out: [q.put(x) for x in p.stdout]).start()
        (kb / "tea.md").write_text("# Tea\n\nSteep oolong for three minutes.\n")
        one, two = (json.loads(q.get(timeout=WAIT)) for q in lines)
        assert list(one) == ["time", "added", "changed", "deleted", "chunks_embedded",
                             "seconds", "errors"]  # fmt: skip
        assert one["added"] == two["added"] == ["tea.md"]
        assert one["chunks_embedded"] + two["chunks_embedded"] == 1
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGINT)
        for proc in procs:
            assert proc.wait(10) == 0


def test_every_note_removed_keeps_the_index_and_says_so_once(live: Live) -> None:
    """A folder emptied under the watcher (a sync client half-way, a disk swapped) is
    not taken for every note deleted: `index`, asked for by hand, removes them."""
    (live.kb / "bread.md").unlink()
    (live.kb / "guides" / "ports.md").unlink()
    deadline = time.monotonic() + WAIT
    while not any("holds no notes" in n for n in live.notices):
        assert time.monotonic() < deadline, live.notices
        time.sleep(0.05)
    assert live.index.manifest.files()  # the last note at least: never an empty index
    assert live.sources("port 8420")
