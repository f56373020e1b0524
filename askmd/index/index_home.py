"""Where a knowledge folder's index lives, and which folder an index belongs to.

By default each knowledge folder gets its own index under the user's data directory,
`$XDG_DATA_HOME/askmd/<folder name>-<hash of its real path>/` (`~/.local/share/askmd/...`
when XDG_DATA_HOME is unset), so pointing askmd at a second folder never touches the
first one's index. Why there and not in a hidden `.askmd/` inside the knowledge folder:

- the knowledge folder may be read-only (a mounted share, someone else's notes);
- it is often synced (Dropbox, iCloud, Syncthing) or a git repository: an index inside
  would be committed or uploaded, and a sync service copying a live SQLite and HNSW
  database between machines is how such files get corrupted;
- the notes stay the only thing in the user's folder; the index is rebuildable state.

Data, not cache: the index holds the trash of notes deleted through the API, which a
cache cleaner must not wipe. The cost: a moved or renamed folder starts a new index (its
real path changed); move the old one along or point ASKMD_INDEX_DIR/--index-dir at it.

Every index records its knowledge folder's real path in `owner.json`, so an explicit
index folder that holds another folder's index is refused instead of being wiped. Every
sync stamps that file's mtime, so `rag.py indexes` can say when each index was last used
and which ones a folder deleted or moved left behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from askmd.errors import AskmdError, IndexBusy
from askmd.index.manifest import MANIFEST, Manifest, prepare_index_dir
from askmd.index.rwlock import file_lock

OWNER_FILE = "owner.json"
T = TypeVar("T")


def data_home(environ: Mapping[str, str]) -> Path:
    """XDG_DATA_HOME when it is an absolute path (the spec ignores relative ones)."""
    value = environ.get("XDG_DATA_HOME", "").strip()
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / ".local" / "share"


def cache_home(environ: Mapping[str, str] | None = None) -> Path:
    """askmd's folder under XDG_CACHE_HOME (~/.cache): files made from installed packages
    that any run may remake, never the notes' indexes."""
    environ = os.environ if environ is None else environ
    value = environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(value) if value and os.path.isabs(value) else Path.home() / ".cache"
    return base / "askmd"


def remade(
    name: str, make: Callable[[], T], dump: Callable[[T], bytes], load: Callable[[bytes], T]
) -> T:
    """What `make` makes from an installed package, kept in the cache folder as `name`
    (which says what made it: the package's version) and read back by the next process;
    a copy that cannot be read is made again, and one that cannot be written is not kept."""
    path = cache_home() / name
    try:
        return load(path.read_bytes())
    except Exception:  # noqa: BLE001 - none yet, cut short, or another version's: remade
        pass
    made = make()
    partial = path.with_name(f".{name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(dump(made))
        os.replace(partial, path)  # whole or not at all: another process may read it now
    except OSError:
        partial.unlink(missing_ok=True)
    return made


def default_index_dir(knowledge_dir: Path, environ: Mapping[str, str] | None = None) -> Path:
    """The index folder of one knowledge folder: readable name, unique by real path."""
    real = os.path.realpath(knowledge_dir)
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:12]
    name = re.sub(r"[^\w.-]+", "_", Path(real).name).strip("._")[:40] or "root"
    return data_home(os.environ if environ is None else environ) / "askmd" / f"{name}-{digest}"


def default_collection(knowledge_dir: Path) -> str:
    """The Chroma collection of one knowledge folder on a shared Chroma server: the same
    `<folder name>-<hash of its real path>` as its index folder, so folders never share
    (and never wipe) one collection by accident, kept to Chroma's rules (3-512 of
    [A-Za-z0-9._-], alphanumeric at both ends). Machines that mount one share at one path
    get one collection; others name it with ASKMD_COLLECTION."""
    real = os.path.realpath(knowledge_dir)
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(real).name)
    name = re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", name[:40]) or "notes"
    return f"{name}-{digest}"


def owner(index_dir: Path) -> str | None:
    """The real path of the knowledge folder this index was built for, if recorded."""
    try:
        data = json.loads((index_dir / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("knowledge_dir") if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else None


def check_owner(index_dir: Path, knowledge_dir: Path, rebuild: bool = False) -> None:
    """Refuse, in one line, an index built for another knowledge folder (unless rebuilding)."""
    recorded, real = owner(index_dir), os.path.realpath(knowledge_dir)
    if recorded is None or recorded == real or rebuild:
        return
    raise AskmdError(
        f"the index folder {index_dir} holds the index of {recorded}, not of {real}: point "
        "--index-dir (ASKMD_INDEX_DIR) elsewhere, or run index --rebuild to replace it"
    )


def record_owner(index_dir: Path, knowledge_dir: Path) -> None:
    """Write down which folder the index is for (atomically), before anything is indexed;
    when it is written down already, mark the index used now.

    A folder that cannot be written is left to the commands to report: an index nobody
    can write to cannot be wiped either."""
    real = os.path.realpath(knowledge_dir)
    if owner(index_dir) == real:
        mark_used(index_dir)
        return
    prepare_index_dir(index_dir)
    path = index_dir / OWNER_FILE
    partial = path.with_name(f".{OWNER_FILE}.{os.getpid()}")
    try:
        partial.write_text(json.dumps({"knowledge_dir": real}) + "\n", encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        partial.unlink(missing_ok=True)


def mark_used(index_dir: Path) -> None:
    """Stamp the owner record's mtime: the last use `rag.py indexes` shows (a sync that
    finds nothing changed writes nothing else)."""
    try:
        os.utime(index_dir / OWNER_FILE)
    except OSError:
        pass  # a read-only or unrecorded index: its last use stays the last write


# --- every index: `rag.py indexes` --------------------------------------------------------


def indexes_home(environ: Mapping[str, str] | None = None) -> Path:
    """The folder that holds every default index."""
    return data_home(os.environ if environ is None else environ) / "askmd"


def list_indexes(environ: Mapping[str, str] | None = None) -> list[dict]:
    """Each index under the data home: its folder (None when unrecorded), whether that
    folder still exists, its files, chunks, bytes on disk and last use."""
    home = indexes_home(environ)
    try:
        found = sorted(p for p in home.iterdir() if p.is_dir() and _is_index(p))
    except OSError:
        return []
    return [describe(p) for p in found]


def _is_index(path: Path) -> bool:
    return (path / OWNER_FILE).exists() or (path / MANIFEST).exists()


def describe(index_dir: Path) -> dict:
    folder = owner(index_dir)
    files, chunks = _counts(index_dir)
    return {
        "folder": folder,
        "exists": folder is not None and os.path.isdir(folder),
        "files": files,
        "chunks": chunks,
        "bytes": _size(index_dir),
        "last_used": _last_used(index_dir),
        "index_dir": str(index_dir),
    }


def _counts(index_dir: Path) -> tuple[int, int]:
    """Files and chunks from the manifest, only read; 0, 0 when there is none to read."""
    path = index_dir / MANIFEST
    if not path.exists():
        return 0, 0
    try:
        manifest = Manifest(path, read_only=True)
    except (AskmdError, sqlite3.Error):
        return 0, 0
    try:
        return len(manifest.files()), manifest.total_chunks()
    except sqlite3.Error:
        return 0, 0
    finally:
        manifest.close()


def _size(index_dir: Path) -> int:
    total = 0
    for root, _dirs, names in os.walk(index_dir):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def _last_used(index_dir: Path) -> str | None:
    """The owner record's mtime (stamped by every sync), else the newest file's."""
    try:
        stamp = (index_dir / OWNER_FILE).stat().st_mtime
    except OSError:
        stamps = [p.stat().st_mtime for p in index_dir.iterdir() if p.is_file()]
        if not stamps:
            return None
        stamp = max(stamps)
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(stamp))


def find_indexes(target: Path, environ: Mapping[str, str] | None = None) -> list[dict]:
    """The indexes of a knowledge folder (by its real path, which may be gone), or the
    index folder itself when `target` is one under the data home."""
    real = os.path.realpath(target)
    return [
        i
        for i in list_indexes(environ)
        if i["folder"] == real or os.path.realpath(i["index_dir"]) == real
    ]


def remove_index(index_dir: Path) -> None:
    """Delete one index folder, unless another process holds its write lock: then say in
    one line who, and delete nothing (it would be writing into a folder that is gone)."""
    try:
        with file_lock(index_dir):
            shutil.rmtree(index_dir)
    except IndexBusy as exc:
        raise AskmdError(
            f"not removed: the index at {index_dir} is in use by another askmd process "
            f"(pid {exc.holder}); stop it, then try again"
        ) from None
    except OSError as exc:
        raise AskmdError(f"cannot remove {index_dir} ({exc.strerror or exc})") from None
