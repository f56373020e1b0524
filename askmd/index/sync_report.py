"""What a sync says as it goes (Progress) and when it is done (SyncReport)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Protocol

from askmd.read import notes


@dataclass
class SyncReport:
    files_scanned: int = 0
    files_added: int = 0
    files_changed: int = 0
    files_deleted: int = 0
    files_unchanged: int = 0
    files_skipped: list[notes.Skipped] = field(default_factory=list)
    chunks_embedded: int = 0  # by the settings' model: each chunk's own vector
    windows_embedded: int = 0  # chunks given window vectors (windows.py) by that model
    multilingual_embedded: int = 0  # CJK chunks given the second model's vector too
    multilingual_windows_embedded: int = 0  # ... and that model's window vectors
    chunks_deleted: int = 0
    chunks_total: int = 0
    chunks_waiting: int = 0  # recorded, searchable by keyword, their vectors not stored yet
    rebuilt: bool = False
    rebuild_reason: str = ""
    migrations: list[str] = field(default_factory=list)  # applied to an older index, by name
    seconds: float = 0.0
    embed_seconds: float = 0.0  # of `seconds`, spent inside the embedder
    warnings: list[str] = field(default_factory=list)
    # Set when the folder was gone or held no notes and the index kept them: said at once
    # by a watcher too, which shows no warnings. Not in the JSON (the warning is).
    kept_all: str = field(default="", repr=False)

    def absorb(self, other: SyncReport) -> None:
        """Add what another sync of the same call computed (a fill run after it)."""
        for name in _COUNTED:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.migrations.extend(other.migrations)
        self.warnings.extend(other.warnings)
        self.chunks_waiting = other.chunks_waiting

    def computed(self) -> dict[str, int]:
        """The vectors of each kind other than the chunks' own computed, by name."""
        return {label: getattr(self, name) for name, label in _KINDS if getattr(self, name)}

    def to_json(self) -> dict:
        data = asdict(self)
        del data["kept_all"]
        data["files_skipped"] = [{"path": s.source, "reason": s.reason} for s in self.files_skipped]
        return data


_KINDS = (
    ("windows_embedded", "window"),
    ("multilingual_embedded", "multilingual"),
    ("multilingual_windows_embedded", "multilingual window"),
)
_COUNTED = ("chunks_embedded", "embed_seconds", *(name for name, _ in _KINDS))


class Progress(Protocol):
    """What a sync reports as it goes: `start` with the files to index, `chunked` per file
    as it is read and split (so the file count moves from the start), `advance` per group
    of files recorded, `step` naming a long step that moves no count ("" when it is over);
    then `filling` with the chunks that wait for vectors and `advance` per batch of them
    embedded or found cached, and `counting` for vectors of another kind (window vectors
    an older index lacks, the second model's): `total` more of them to compute, `done`
    more computed, added to what that label counted so far; then `finish`."""

    def start(self, files: int, chunks: int) -> None: ...
    def chunked(self, chunks: int) -> None: ...
    def filling(self, chunks: int) -> None: ...
    def advance(self, files: int = 0, chunks: int = 0) -> None: ...
    def step(self, label: str) -> None: ...
    def counting(self, label: str, total: int = 0, done: int = 0) -> None: ...
    def finish(self) -> None: ...


class NoProgress:
    def start(self, files: int, chunks: int) -> None: ...
    def chunked(self, chunks: int) -> None: ...
    def filling(self, chunks: int) -> None: ...
    def advance(self, files: int = 0, chunks: int = 0) -> None: ...
    def step(self, label: str) -> None: ...
    def counting(self, label: str, total: int = 0, done: int = 0) -> None: ...
    def finish(self) -> None: ...
