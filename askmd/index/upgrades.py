"""An index older code made, brought up to this code's: the numbered index upgrades (the
second list of migrations.py) and the days of its chunks read again (chunk_dates.py).

Both run in a sync under the writer lock (indexer.sync) and are read from the manifest
alone first (`upgrades_due`, `dates_due`), so a sync that finds nothing owed takes no
lock. To mend indexes made by older code, append a function to the end of
INDEX_UPGRADES; never reorder, rename or remove one (its name is what is recorded).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from askmd.index import note_properties
from askmd.index.chunk_dates import KEY, VERSION, record
from askmd.index.migrations import applied
from askmd.read import dates, notes, vault

if TYPE_CHECKING:
    from askmd.index.manifest import Manifest


@dataclass
class Upgraded:
    """What an index upgrade asks of the sync that ran it."""

    rescan: bool = False  # notes were made to look changed: the whole folder is scanned
    rebuild: str = ""  # why the index must be rebuilt ("" when it need not be)
    applied: list[str] = field(default_factory=list)  # the upgrades recorded done


def u001_drop_repeats(manifest: Manifest) -> Upgraded:
    """Notes indexed by older code hold word-for-word repeats of a chunk (prepare.py now
    indexes each once): they are made to look changed, so the scan that follows records
    them again, their vectors from the embedding cache. No rebuild."""
    if manifest.get("repeats") == "once":  # done by older code, which said so in meta
        return Upgraded()
    return Upgraded(rescan=bool(manifest.reread_repeats()))


def u002_store_copies_apart(manifest: Manifest) -> Upgraded:
    """Chunks that several notes share word for word were stored by older code as
    identical vectors, which cut HNSW's graph (store.JITTER now keeps them apart): such
    an index is rebuilt once, every vector from the embedding cache."""
    if manifest.get("copies") == "apart":
        return Upgraded()
    if manifest.copies_shared():
        return Upgraded(rebuild="passages several notes share are now stored apart")
    manifest.set(copies="apart")
    return Upgraded()


INDEX_UPGRADES: list[Callable[[Manifest], Upgraded]] = [
    u001_drop_repeats,
    u002_store_copies_apart,
]


def upgrades_due(manifest: Manifest) -> bool:
    """Whether an index upgrade is owed: read from the manifest alone, so a sync that finds
    nothing changed and nothing owed takes no lock. An empty index owes none."""
    if manifest.read_only or manifest.total_chunks() == 0:
        return False
    done = applied(manifest.db)
    return any(step.__name__ not in done for step in INDEX_UPGRADES)


def upgrade_index(manifest: Manifest, commit: Callable[[], AbstractContextManager]) -> Upgraded:
    """Run the index upgrades this index owes, in order, each inside `commit()`; with the
    lock file held. One that asks for a rebuild is recorded when the rebuild begins
    (`mark_current`): a run killed before then asks again."""
    wanted = Upgraded()
    if not upgrades_due(manifest):
        return wanted
    done = applied(manifest.db)
    for step in INDEX_UPGRADES:
        if step.__name__ in done:
            continue
        with commit():
            outcome = step(manifest)
        wanted.rescan = wanted.rescan or outcome.rescan
        if outcome.rebuild:
            wanted.rebuild = wanted.rebuild or outcome.rebuild
        else:
            manifest.record_upgrades([step.__name__])
            wanted.applied.append(step.__name__)
    return wanted


def mark_current(manifest: Manifest) -> None:
    """A new or rebuilt index is this code's: it owes no index upgrade. The meta keys
    older code looks for are set too, so it does not redo them either."""
    manifest.set(repeats="once", copies="apart")
    manifest.record_upgrades([step.__name__ for step in INDEX_UPGRADES])


def dates_due(manifest: Manifest) -> bool:
    """Whether the index's chunks were dated by another VERSION, or not at all."""
    return not manifest.read_only and manifest.get(KEY) != VERSION


def backfill(manifest: Manifest, root: Path, max_bytes: int | None) -> int:
    """Date every indexed chunk again, in one commit; how many got a date. A note's own
    date is read again from its front matter and name; its headings are in the chunks'
    stored metadata. A PDF or Word file is dated by its name alone (converting it again
    would cost seconds each, for a date it rarely holds)."""
    rows: dict[str, list[tuple[str, str]]] = {}
    for source in manifest.files():
        note_date = dates.from_name(source)
        if vault.is_note(source):
            try:
                note_date = notes.read(root, source, max_bytes).date
            except notes.Unreadable:
                pass  # its next sync says why; dated by its name meanwhile
        rows[source] = [
            (chunk.id, found)
            for chunk in manifest.chunks_of([source])
            if (found := dates.of_chunk(note_date, _chain(chunk.metadata)))
        ]
    with manifest._transaction():
        manifest.db.execute("DELETE FROM chunk_dates")
        for source, dated in rows.items():
            record(manifest.db, source, dated)
        manifest.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (KEY, VERSION))
        manifest._bump()
    return sum(len(d) for d in rows.values())


def properties_due(manifest: Manifest) -> bool:
    """Whether the notes' properties were read by another VERSION, or not at all."""
    return not manifest.read_only and manifest.get(note_properties.KEY) != note_properties.VERSION


def properties_backfill(manifest: Manifest, root: Path, max_bytes: int | None) -> int:
    """Read every indexed note's properties again, in one commit; how many rows."""
    found: dict[str, tuple] = {}
    for source in manifest.files():
        if not vault.is_note(source):
            continue  # PDF, Word and HTML files have no front matter
        try:
            found[source] = notes.read(root, source, max_bytes).properties
        except notes.Unreadable:
            continue  # its next sync says why
    with manifest._transaction():
        manifest.db.execute("DELETE FROM note_properties")
        for source, rows in found.items():
            note_properties.record(manifest.db, source, rows)
        manifest.db.execute(
            "INSERT OR REPLACE INTO meta VALUES (?, ?)",
            (note_properties.KEY, note_properties.VERSION),
        )
        manifest._bump()
    return sum(len(rows) for rows in found.values())


def _chain(metadata: dict) -> list[str]:
    chain = str(metadata.get("heading_chain", ""))
    return chain.split(" > ") if chain else []
