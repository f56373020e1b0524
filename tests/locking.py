"""Another askmd process holding an index's write lock: a real process, as in real use."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import ROOT, clean_env

HOLD = """
import sys, time
from pathlib import Path
from askmd.index import rwlock
with rwlock.file_lock(Path(sys.argv[1])):
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
"""


@contextmanager
def lock_held(index_dir: Path, seconds: float = 120.0) -> Iterator[subprocess.Popen]:
    """A process that takes the write lock of `index_dir` and keeps it for `seconds`
    (or until the block ends); the block starts once it holds the lock."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(index_dir), str(seconds)],
        cwd=ROOT,
        env=clean_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.kill()
        holder.wait()
