"""What the interfaces read of a shelf besides searching and answering, each the sum or
the choice of its folders' own: how far the vectors are, a rebuild, stats, and the
notes' graph (a note is one folder's: `LABEL:NOTE`, or found by name in the one folder
that has it)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from askmd.errors import BadRequest, NotFound
from askmd.folders import Folder
from askmd.pipeline import Index


@dataclass
class Shelved:
    """One folder of the shelf: its label, description and index."""

    label: str
    path: Path
    description: str
    index: Index


class ShelfKeeper:
    filler = None  # each folder's keeper has its own

    def __init__(self, folders: list[Shelved]) -> None:
        self.folders = folders

    def filling(self) -> dict:
        """{"chunks", "chunks_embedded", "keyword_ready"} over every folder."""
        each = [f.index.keeper.filling() for f in self.folders]
        return {
            "chunks": sum(e["chunks"] for e in each),
            "chunks_embedded": sum(e["chunks_embedded"] for e in each),
            "keyword_ready": all(e["keyword_ready"] for e in each),
        }


class ShelfGraph:
    def __init__(self, folders: list[Shelved], missing: list[Folder]) -> None:
        self.folders, self.missing = folders, missing

    def stats(self) -> dict:
        """The stats of one folder (NotesGraph.stats) over all of them: counts summed, the
        folders and their index folders joined as ASKMD_KNOWLEDGE_DIR joins them; then
        each folder's own under `folders`, led by its label and description."""
        each = [
            {"label": f.label, "description": f.description, **f.index.graph.stats()}
            for f in self.folders
        ]
        summed = ("files", "chunks", "chunks_embedded", "links", "broken_links")
        properties: dict[str, int] = {}
        for e in each:
            for key, n in e["properties"].items():
                properties[key] = properties.get(key, 0) + n
        fillers = {e["filler"] for e in each}
        return {
            "knowledge_dir": os.pathsep.join(e["knowledge_dir"] for e in each),
            **{key: sum(e[key] for e in each) for key in summed},
            "embedder": ", ".join(dict.fromkeys(e["embedder"] for e in each)),
            "dimension": max(e["dimension"] for e in each),
            "index_dir": os.pathsep.join(e["index_dir"] for e in each),
            "last_sync": max((e["last_sync"] for e in each if e["last_sync"]), default=None),
            "keyword_ready": all(e["keyword_ready"] for e in each),
            "collection": ", ".join(e["collection"] for e in each),
            "filler": "running" if "running" in fillers else each[0]["filler"],
            "properties": dict(sorted(properties.items(), key=lambda kv: (-kv[1], kv[0]))),
            "folders": each,
            "missing": [{"label": f.label, "knowledge_dir": str(f.path)} for f in self.missing],
        }

    def backlinks(self) -> dict[str, int]:
        """How many notes link to each note, by `LABEL:NOTE` and by the note alone (a
        note's own folder's count)."""
        counts: dict[str, int] = {}
        for f in self.folders:
            for source, n in f.index.graph.backlinks().items():
                counts[f"{f.label}:{source}"] = n
                counts.setdefault(source, n)
        return counts

    def note(self, name: str) -> tuple[Shelved, str]:
        """The folder of the note a name means, and the name within it."""
        label, colon, rest = name.partition(":")
        if colon and (labelled := [f for f in self.folders if f.label == label]):
            return labelled[0], rest
        having = []
        for f in self.folders:
            try:
                f.index.graph.find_note(name)
            except NotFound:
                continue
            having.append(f)
        if not having:
            raise NotFound(f"no indexed note named {name!r} in any folder")
        if len(having) > 1:
            listed = ", ".join(f"{f.label}:{name}" for f in having)
            raise BadRequest(f"{name!r} is a note of several folders: give one of {listed}")
        return having[0], name

    def related(self, note: str, k: int = 10, method: str = "maxsim", where: tuple = ()) -> dict:
        """The related notes of `note`, within its own folder."""
        shelved, name = self.note(note)
        found = shelved.index.graph.related(name, k, method, where)
        return {**found, "folder": shelved.label}

    def links(self, note: str) -> dict:
        shelved, name = self.note(note)
        return {**shelved.index.graph.links(name), "folder": shelved.label}
