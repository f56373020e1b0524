"""Making the vector store agree with the manifest before a filling: emptied after a
rebuild, moved aside when damaged, stale vectors removed, and files whose vector counts
differ made to wait again (or adopted when the store holds exactly their chunks)."""

from __future__ import annotations

from pathlib import Path

from askmd.errors import Damaged
from askmd.index.fingerprint import what_changed
from askmd.index.manifest import Manifest
from askmd.index.store import Store
from askmd.index.sync_report import SyncReport


def open_for_filling(
    store: Store, manifest: Manifest, meta: dict, report: SyncReport, commit, folder: Path
) -> None:
    """Open the vector store and make it agree with the manifest: emptied after a
    rebuild or when built with other settings, moved aside when damaged, the vectors of
    deleted and changed files removed, and any file whose vector count differs from the
    manifest's (a killed run, a store changed behind our back) made to wait again."""
    try:
        stored = store.open(meta)
        store.claim(folder)  # a Chroma server shared by machines: one writer at a time
        in_store = store.check()
    except Damaged as exc:
        with commit():
            recover(store, manifest, meta, exc, report)
        return
    built_for = str(stored.get("fingerprint", ""))
    if manifest.get("reset_vectors") or what_changed(built_for, meta["fingerprint"]):
        with commit():
            store.reset(meta)
            manifest.unfill()
            manifest.cleared(manifest.stale())
            manifest.set(reset_vectors="")
        return
    gone = manifest.stale()
    if gone:
        with commit():
            store.delete(gone)
        manifest.cleared(gone)
        in_store = store.count()
    if in_store != manifest.embedded():
        with commit():
            repair(store, manifest, report)


def repair(store: Store, manifest: Manifest, report: SyncReport) -> None:
    """The store and the manifest disagree on some file's vectors (a run killed between
    storing a group and recording it, or the store changed behind our back): those files'
    vectors go from the store and wait to be stored again; no file is re-chunked."""
    stored = store.chunk_hashes()
    have = manifest.embedded_by_source()
    bad = sorted(s for s in set(stored) | set(have) if len(stored.get(s, {})) != have.get(s, 0))
    # A file whose every chunk the store holds for exactly its recorded text (a run killed
    # after storing it, another machine sharing a Chroma server) is adopted, not redone.
    adopt = [s for s in bad if stored.get(s) and stored[s] == manifest.chunk_ids(s)]
    redo = [s for s in bad if s not in adopt]
    manifest.filled(adopt)
    store.delete([s for s in redo if s in stored])
    manifest.unfill([s for s in redo if s in have])
    if redo:
        report.warnings.append(f"repaired the index: {len(redo)} file(s) were out of step with it")


def recover(
    store: Store, manifest: Manifest, meta: dict, damage: Damaged, report: SyncReport
) -> dict:
    """The local Chroma folder cannot be read back (a kill while Chroma saved its HNSW
    segment: the graph on disk is newer than its id map and log watermark, so every
    replay of the log fails). Move it aside and start an empty collection; every chunk
    then waits for its vector, taken from the embedding cache."""
    moved = store.set_aside()
    manifest.unfill()  # every chunk waits for its vector again; the embedding cache stays
    manifest.cleared(manifest.stale())
    stored = store.open(meta)
    report.warnings.append(
        f"the vector index could not be read ({damage.cause}); moved it to {moved.name} "
        "and rebuilt it from your notes and the embedding cache"
    )
    return stored
