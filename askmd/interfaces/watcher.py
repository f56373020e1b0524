"""Keep the index live: notes saved on disk reach it within a second, through Index.sync.

The operating system says which paths changed (inotify, through watchfiles and Rust's
`notify`), so nothing is re-scanned while nothing happens: an idle watcher only wakes
every `quiet_ms` to see whether it should stop. Events are coalesced: a batch is applied
once the folder has been quiet for `quiet_ms` (and at most `max_wait_ms` after its first
event), so a `git checkout` of 500 files or an editor's temp-file-then-rename save is one
sync. That sync re-embeds only chunk texts it has never seen (the embedding cache), so a
rename, a move or a rewrite with the same content embeds nothing.

What is not a note never wakes the index: hidden paths (`.git/`, `.obsidian/`, `.trash/`,
`.#lock` and `.swp` files), editor temp files, files outside the include globs, and the
index folder itself. Where notifications cannot be had (a network drive, the inotify watch
limit reached) the watcher says so once and polls instead. It never prints and never
raises out of its thread: what happened goes to the `on_change` and `on_notice` callbacks.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from watchfiles import Change as Event
from watchfiles._rust_notify import RustNotify

from askmd.errors import AskmdError, Busy, first_line
from askmd.read import notes
from askmd.wording import plural

QUIET_MS = 50  # a batch is applied once the folder has been quiet this long
MAX_WAIT_MS = 1600  # ... or this long after its first event, if writes keep coming
POLL_SECONDS = 2.0  # polling interval where change notifications are not available
RETRY_SECONDS = 2.0  # a sync refused (another process writing, an error) is tried again
# Files editors and sync clients write beside a note and then rename or delete: vim's
# `4913` probe and `.swp`, emacs' `x~`, `#x#` and `.#x`, temp and partial downloads.
TEMP_SUFFIXES = ("~", ".swp", ".swo", ".swx", ".tmp", ".temp", ".part", ".crdownload", ".bak")
TEMP_NAMES = ("4913",)
# File systems where inotify sees only this machine's own writes, if anything.
NETWORK_FS = {
    "nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "lustre",
    "fuse.sshfs", "fuse.rclone", "fuse.s3fs", "fuse.gcsfuse", "davfs", "fuse.davfs",
}  # fmt: skip


@dataclass
class Change:
    """One applied change, as `watch --json` prints it (one object per line)."""

    time: str  # when it was applied, local time, ISO 8601 to the second
    added: list[str] = field(default_factory=list)  # paths relative to the knowledge folder
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    chunks_embedded: int = 0  # 0 for a rename, a move or a rewrite with the same content
    seconds: float = 0.0  # how long applying it took (the sync)
    errors: list[dict[str, str]] = field(default_factory=list)  # {"path", "reason"}, once each
    folder: str = ""  # the label of its folder, when several are watched

    @property
    def notes(self) -> int:
        return len(self.added) + len(self.changed) + len(self.deleted)

    def to_json(self) -> dict[str, Any]:
        found = asdict(self)
        if not self.folder:
            del found["folder"]
        return found

    def line(self) -> str:
        """One line for a terminal: what changed, what it cost, and why a note was not read."""
        parts = [
            _names(verb, paths)
            for verb, paths in (
                ("added", self.added),
                ("changed", self.changed),
                ("deleted", self.deleted),
            )
            if paths
        ]
        said = ", ".join(parts)
        if said:
            said += f" ({plural(self.chunks_embedded, 'chunk')} embedded, {self.seconds:.2f} s)"
        problems = "; ".join(f"{e['path']}: {e['reason']}" for e in self.errors)
        line = "; ".join(p for p in (said, problems) if p)
        return f"{self.folder}: {line}" if self.folder else line


def _names(verb: str, paths: list[str]) -> str:
    if len(paths) <= 3:
        return f"{verb} {', '.join(paths)}"
    return f"{verb} {len(paths)} notes"


def ignored_name(name: str) -> bool:
    """An editor's or a sync client's scratch file, never a note."""
    return (
        name.startswith(".")
        or (name.startswith("#") and name.endswith("#"))
        or name.endswith(TEMP_SUFFIXES)
        or name in TEMP_NAMES
    )


def network_fs(path: Path) -> str | None:
    """The type of network file system `path` is on, or None (local, or unknown)."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as mounts:
            table = [line.split()[1:3] for line in mounts if len(line.split()) >= 3]
    except OSError:
        return None
    real = os.path.realpath(path)
    best, kind = "", None
    for point, fstype in table:
        point = point.replace("\\040", " ")
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best):
            best, kind = point, fstype
    return kind if kind in NETWORK_FS else None


class Watcher:
    """Watch the knowledge folder and apply each batch of changes through `index.sync`.

    `run()` watches in the calling thread until `stop()` (or Ctrl-C, in the main thread);
    `start()` does it in a daemon thread. `poll_seconds` > 0 polls at that interval instead
    of using notifications (`ASKMD_WATCH_POLL`). `notify` is the watchfiles backend, a
    parameter so a failing one can be given.
    """

    def __init__(
        self,
        index,
        on_change: Callable[[Change], None] | None = None,
        on_notice: Callable[[str], None] | None = None,
        *,
        quiet_ms: int = QUIET_MS,
        max_wait_ms: int = MAX_WAIT_MS,
        poll_seconds: float | None = None,
        notify: Callable[..., Any] = RustNotify,
        on_ready: Callable[[], None] | None = None,
    ):
        self.index = index
        self.settings = index.settings
        self.on_change = on_change or (lambda change: None)
        self.on_notice = on_notice or (lambda line: None)
        self.quiet_ms, self.max_wait_ms = quiet_ms, max_wait_ms
        if poll_seconds is None:
            poll_seconds = getattr(self.settings, "watch_poll", 0.0)
        self.poll_seconds = poll_seconds
        self.notify = notify
        self.root = os.path.abspath(self.settings.knowledge_dir)
        self.index_dir = os.path.abspath(self.settings.index_dir)
        self.syncs = 0  # syncs run for events (not the first one): how well bursts coalesce
        self.polling = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._known: dict[str, str] | None = None  # source -> md5, as last seen
        self._folders: set[str] = set()
        self._said: dict[str, str] = {}  # source -> reason it could not be read, said once
        self._notices: set[str] = set()
        self._updated: set[str] = set()
        self._updated_lock = threading.Lock()
        self._pending: set[str] = set()  # paths seen changing, not yet applied
        self._full = False  # events may have been missed: sync everything
        self.ready = threading.Event()  # set once watching and the first sync is done
        self.on_ready = on_ready or (lambda: None)

    # -- running ---------------------------------------------------------------------------

    def start(self) -> threading.Thread:
        self._thread = threading.Thread(target=self._run_quietly, name="askmd-watch", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run_quietly(self) -> None:
        try:
            self.run()
        except Exception as exc:  # noqa: BLE001 - a bug must not take the server down
            self.on_notice(f"watching stopped: {first_line(exc)}")

    def run(self) -> None:
        """Watch until stopped. The notifications start before the first sync, so a note
        saved while that sync runs is not missed. A watch that breaks (the inotify limit
        reached in a new folder, the folder unmounted) goes on by polling, after a full
        sync for whatever it may have missed."""
        while not self._stop.is_set():
            try:
                backend = self._open()
            except OSError as exc:  # the folder itself is gone: wait for it to come back
                self._note(f"cannot watch {self.root} ({first_line(exc)}); trying again")
                self._stop.wait(RETRY_SECONDS)
                continue
            try:
                if self._known is None:
                    self.prime()
                if not self.ready.is_set():
                    self.ready.set()
                    self.on_ready()
                self._watch(backend)
                return
            except RuntimeError as exc:
                self._note(f"watching {self.root} failed ({first_line(exc)}); polling instead")
                self.poll_seconds = self.poll_seconds or POLL_SECONDS
                self._full = True
            finally:
                backend.close()

    def _watch(self, backend) -> None:
        while not self._stop.is_set():
            busy = self._pending or self._full
            timeout = int(RETRY_SECONDS * 1000) if busy else 0
            raw = backend.watch(self.max_wait_ms, self.quiet_ms, timeout, self._stop)
            if raw == "signal":
                raise KeyboardInterrupt
            if raw == "stop":
                return
            if raw != "timeout":
                self._pending |= {rel for kind, path in raw if (rel := self.relevant(kind, path))}
            if (self._pending or self._full) and self._apply(None if self._full else self._pending):
                self._pending, self._full = set(), False

    def _open(self):
        """Notifications where the folder is local and inotify has room; else polling."""
        if self.poll_seconds:
            self._note(f"watching {self.root} by polling every {self.poll_seconds:g} s")
            return self._polling(self.poll_seconds)
        remote = network_fs(Path(self.root))
        if remote:
            self._note(
                f"{self.root} is on a network drive ({remote}), where change notifications "
                f"do not arrive: polling it every {POLL_SECONDS:g} s"
            )
            return self._polling(POLL_SECONDS)
        try:
            return self.notify([self.root], False, False, 0, True, True)
        except (OSError, RuntimeError) as exc:
            self._note(
                f"change notifications are not available ({first_line(exc)}): polling "
                f"{self.root} every {POLL_SECONDS:g} s (raise fs.inotify.max_user_watches "
                "to watch instead)"
            )
            return self._polling(POLL_SECONDS)

    def _polling(self, seconds: float):
        self.polling = True
        return self.notify([self.root], False, True, int(seconds * 1000), True, True)

    def _note(self, line: str) -> None:
        """Say a notice once per watcher, however often its cause recurs."""
        if line not in self._notices:
            self._notices.add(line)
            self.on_notice(line)

    # -- what counts -----------------------------------------------------------------------

    def relevant(self, kind: int, path: str) -> str | None:
        """The path relative to the knowledge folder when this event may change the index,
        else None. A folder counts when it appears (its notes may have been written before
        its own watch was set up) or when one that held notes goes."""
        if not path.startswith(self.root + os.sep):
            return None
        if path == self.index_dir or path.startswith(self.index_dir + os.sep):
            return None
        rel = path[len(self.root) + 1 :].replace(os.sep, "/")
        parts = rel.split("/")
        if any(part.startswith(".") for part in parts) or ignored_name(parts[-1]):
            return None
        if notes.matches(rel, self.settings.exclude):
            return None
        if notes.matches(rel, self.settings.include):
            return rel
        if kind == Event.deleted:
            return rel if rel in self._folders else None
        if kind == Event.added and os.path.isdir(path):
            return rel
        return None

    # -- applying --------------------------------------------------------------------------

    def prime(self):
        """The first sync: catch up with what changed while nobody watched (reported as a
        change). Returns its report; the notes it cannot read then are not said again by
        later changes: whoever started the watcher has shown that sync already."""
        self._known = self._snapshot()
        started = time.perf_counter()
        try:
            report = self._sync(None)
        except AskmdError as exc:  # busy, or broken: tried again by the loop, said once
            self._note(f"could not update the index: {first_line(exc)}")
            self._full = True
            return None
        self._said = _unread(report)
        change = self._change(report, None, time.perf_counter() - started)
        change.errors = []
        if change.notes:
            self._report(change)
        return report

    def _apply(self, paths: set[str] | None) -> bool:
        """Sync for these paths (None: the whole folder); True when done, or failed in a
        way a retry would not mend, False to try again."""
        started = time.perf_counter()
        try:
            report = self._sync(paths)
        except Busy:
            return False  # another process is writing: it may be applying this very change
        except AskmdError as exc:
            self._note(f"could not update the index: {first_line(exc)}")
            return False
        except Exception as exc:  # noqa: BLE001 - a bug; watching goes on
            self._note(f"could not update the index: {type(exc).__name__}: {first_line(exc)}")
            return True
        self.syncs += 1
        if report.kept_all:
            self._note(report.kept_all)
        change = self._change(report, paths, time.perf_counter() - started)
        if change.notes or change.errors:
            self._report(change)
        return True

    def _report(self, change: Change) -> None:
        with self._updated_lock:
            self._updated.update(change.added + change.changed + change.deleted)
        self.on_change(change)

    def _sync(self, paths: set[str] | None):
        """One sync through the index's single door for writes, limited to `paths`."""
        return self.index.sync(sorted(paths) if paths is not None else None)

    def _change(self, report, paths: set[str] | None, seconds: float) -> Change:
        """What this sync changed, from the manifest before and after: a change another
        process applied first (two watchers on one index) is reported here too."""
        before, after = self._known or {}, self._snapshot()
        self._known = after
        unread = _unread(report)
        fresh = {s: r for s, r in unread.items() if self._said.get(s) != r}
        self._remember(unread, paths)
        return Change(
            time=time.strftime("%Y-%m-%dT%H:%M:%S"),
            added=sorted(s for s in after if s not in before),
            changed=sorted(s for s in after if s in before and after[s] != before[s]),
            deleted=sorted(s for s in before if s not in after),
            chunks_embedded=report.chunks_embedded,
            seconds=round(seconds, 3),
            errors=[{"path": s, "reason": _kept(r, s in after)} for s, r in sorted(fresh.items())],
        )

    def _remember(self, unread: dict[str, str], paths: set[str] | None) -> None:
        """The notes that cannot be read, as said: a sync of some paths speaks only for
        those (and what is under them), so the others' reasons are kept, not said again."""
        if paths is None:
            self._said = unread
            return
        folders = tuple(p + "/" for p in paths)
        for source in [s for s in self._said if s in paths or s.startswith(folders)]:
            del self._said[source]
        self._said.update(unread)

    def _snapshot(self) -> dict[str, str]:
        if not self.index.has_index():  # a folder with no notes yet: none known, none made
            self._folders = set()
            return {}
        known = {s: rec.md5 for s, rec in self.index.manifest.files().items()}
        self._folders = {str(parent) for s in known for parent in PurePosixPath(s).parents}
        self._folders.discard(".")
        return known

    def take_updated(self) -> list[str]:
        """The notes added, changed or deleted since the last call (the REPL's notice)."""
        with self._updated_lock:
            updated, self._updated = sorted(self._updated), set()
        return updated


def _unread(report) -> dict[str, str]:
    """Notes that could not be read in this sync, with why (not hidden ones: never notes)."""
    return {
        s.source: s.reason
        for s in report.files_skipped
        if s.reason != notes.HIDDEN and not s.unreadable_folder
    }


def _kept(reason: str, indexed: bool) -> str:
    return f"{reason}; its earlier chunks are kept" if indexed else f"{reason}; not indexed"
