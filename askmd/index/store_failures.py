"""What goes wrong with a Chroma folder or server, said in one line: a full disk
(`DiskFull`), a local collection that cannot be read back (`Damaged`, which the sync
repairs by moving the folder aside and rebuilding from the embedding cache), or the
generic advice; and the moving aside itself.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from askmd import wording
from askmd.errors import AskmdError, Damaged, DiskFull, disk_full

FULL_BELOW = 16 * 2**20  # free bytes under which a failed local write is a full disk
KEEP_BROKEN = 2  # damaged Chroma folders kept for inspection; older ones are deleted
# What Chroma's embedded client says when its files on disk no longer agree: a HNSW
# segment saved without its id map and log watermark, a torn file, a corrupt SQLite.
_DAMAGE_WORDS = ("hnsw", "segment", "compaction", "backfill", "pickle", "malformed",
                 "not a database", "apply logs")  # fmt: skip


class Failing:
    """A Store's failures and repairs (store.Store mixes this in)."""

    chroma_url: str | None
    index_dir: Path

    def _stop_system(self) -> None: ...  # Store's: Chroma's system for this folder stopped

    def set_aside(self) -> Path:
        """Move a damaged local Chroma folder to chroma.broken-<time> (the next open starts
        an empty one) and delete all but the newest KEEP_BROKEN of those, so a disk does
        not fill with them. Never for a Chroma server: its data is not ours to move."""
        if self.chroma_url:
            raise RuntimeError("a Chroma server's data is never moved aside")
        self._stop_system()
        folder = self.index_dir / "chroma"
        stamp = time.strftime("%Y%m%dT%H%M%S")
        target = self.index_dir / f"chroma.broken-{stamp}"
        n = 1
        while target.exists():
            n += 1
            target = self.index_dir / f"chroma.broken-{stamp}-{n}"
        folder.rename(target)
        broken = sorted(self.index_dir.glob("chroma.broken-*"), key=lambda p: p.stat().st_mtime)
        for old in broken[:-KEEP_BROKEN]:
            if old != target:
                shutil.rmtree(old, ignore_errors=True)
        return target

    def _disk_nearly_full(self) -> bool:
        """Chroma's core often loses the cause of a failed write ("Failed to apply logs to
        the metadata segment" and nothing else), so a local store asks the disk itself."""
        if self.chroma_url:
            return False
        try:
            return shutil.disk_usage(self.index_dir).free < FULL_BELOW
        except OSError:
            return False

    def _failure(self, exc: BaseException) -> AskmdError:
        """The one-line error for a Chroma failure: a full disk, damage the sync can
        repair (embedded client only), or the generic advice."""
        if disk_full(exc) or self._disk_nearly_full():
            return DiskFull(
                f"the disk holding the index ({self.where}) is full: free some space and run again"
            )
        if not self.chroma_url and _looks_damaged(exc) and (self.index_dir / "chroma").is_dir():
            first = str(exc).strip().splitlines()[0].rstrip(" :.")
            return Damaged(
                f"the index at {self.where} is damaged ({first}). Rebuild it with: "
                f"{wording.command('index --rebuild')} (cached embeddings make it quick)",
                cause=first,
            )
        return AskmdError(_explain(self.where, exc))


def _looks_damaged(exc: BaseException) -> bool:
    if type(exc).__name__ == "InternalError":  # chromadb.errors.InternalError: the Rust core
        return True
    text = str(exc).lower()
    return any(word in text for word in _DAMAGE_WORDS)


def _explain(where: str, exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    first = first.rstrip(" :")
    end = " " if first.endswith((".", "?", "!")) else ". "
    if where.startswith("http"):
        return (
            f"the Chroma server at {where} failed: {first}{end}Is it running "
            "(chroma run --path DIR --port N)? Check ASKMD_CHROMA_URL."
        )
    return (
        f"the index at {where} cannot be used: {first}{end}"
        f"Rebuild it with: {wording.command('index --rebuild')}"
    )
