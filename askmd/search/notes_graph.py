"""The notes as a whole, over one index: their links and backlinks, the notes related to
one (related.py), and the index's stats."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from askmd.errors import BadRequest, NotFound
from askmd.index import indexer
from askmd.index import manifest as manifest_file
from askmd.read import vault

if TYPE_CHECKING:
    from askmd.index.access import IndexAccess
    from askmd.index.keeper import Keeper

RELATED_K = 10  # notes `related` lists unless told


class NotesGraph:
    def __init__(self, access: IndexAccess, keeper: Keeper) -> None:
        self.access = access
        self.keeper = keeper  # how far the vectors are, and its filler's state
        self.settings = access.settings

    def stats(self) -> dict:
        stats = {
            "knowledge_dir": str(self.settings.knowledge_dir.resolve()),
            "files": 0,
            "chunks": 0,
            "embedder": indexer.embedder_id(self.settings),
            "dimension": 0,
            "index_dir": str(self.settings.index_dir),
            "last_sync": None,
            "links": 0,
            "broken_links": 0,
            "chunks_embedded": 0,
            "keyword_ready": False,
            "collection": self.settings.collection,
            "filler": self.keeper.filler.state if self.keeper.filler is not None else "off",
            "properties": {},
        }
        if not (self.settings.index_dir / manifest_file.MANIFEST).exists():
            return stats  # nothing indexed yet; do not create an index just to say so
        self.access.follow()
        m = self.access.manifest
        if self.keeper.filler is None:  # a REPL or server's, when one runs over this index
            from askmd.index.filler import recorded

            stats["filler"] = recorded(m.get("filler"))
        stats.update(
            files=len(m.files()),
            embedder=m.get("embedder") or stats["embedder"],
            dimension=int(m.get("dimension") or 0),
            last_sync=m.get("last_sync"),
            **self.keeper.filling(),  # chunks, chunks_embedded, keyword_ready
        )
        found = self.link_graph()
        stats.update(links=len(found), broken_links=sum(1 for k in found if k.to is None))
        stats["properties"] = m.property_keys()
        return stats

    def link_graph(self) -> list[vault.Resolved]:
        """Every indexed link, resolved against the indexed notes and the files on disk
        (attachments are link targets too)."""
        m = self.access.manifest
        return vault.graph(m.links(), set(m.files()) | _folder_files(self.settings))

    def backlinks(self) -> dict[str, int]:
        """How many other notes link to each note (for /debug)."""
        linking: dict[str, set[str]] = {}
        for k in self.link_graph():
            if k.to and k.to != k.source:
                linking.setdefault(k.to, set()).add(k.source)
        return {note: len(sources) for note, sources in linking.items()}

    def links(self, note: str) -> dict:
        """A note's outgoing links and its backlinks; `note` is a path or a name, found
        as a link to it would be."""
        source = self.find_note(note)
        found = self.link_graph()
        return {
            "note": source,
            "links": [
                {"target": k.to or k.target, "heading": k.heading, "line": k.line,
                 "broken": k.to is None}
                for k in found
                if k.source == source
            ],
            "backlinks": [
                {"source": k.source, "line": k.line}
                for k in found
                if k.to == source and k.source != source
            ],
        }  # fmt: skip

    def find_note(self, name: str) -> str:
        """The indexed note a path or a name means, found as a link to it would be."""
        self.access.follow()
        indexed = set(self.access.manifest.files())
        source = vault.Resolver(indexed).resolve(name.strip().lstrip("/"), "")
        if not name.strip() or source is None or source not in indexed:
            raise NotFound(f"no indexed note named {name!r}")
        return source

    def related(
        self, note: str, k: int = RELATED_K, method: str = "maxsim", where: tuple = ()
    ) -> dict:
        """The notes most related to `note` (a path or a name, as `links` takes it): by
        meaning, links and tags (search/related.py). While its vectors wait, meaning is
        judged by keyword and each such result says "similar words". `where`: only notes
        whose properties meet those conditions (search/where.py) are listed."""
        from askmd.search import related  # only `related` needs it

        if k < 1:
            raise BadRequest(f"k {k}: give 1 or more")
        source = self.find_note(note)
        edges = [(link.source, link.to) for link in self.link_graph() if link.to is not None]
        m = self.access.manifest
        indexed = set(m.files())
        if where:
            indexed &= m.sources_where(where)
        similar, why = self.similar_notes(source, method)
        ranked = related.rank(source, k, indexed, edges, m.tags_by_source(), similar, why)
        return {"note": source, "related": [r.to_json() for r in ranked]}

    def similar_notes(
        self, source: str, method: str = "maxsim"
    ) -> tuple[list[tuple[str, float]], str]:
        """Other notes by meaning, best first, and the why it gives: by the note's vectors
        ("similar") when every chunk of it has one and no note waits for its own, else by
        its most telling words ("similar words")."""
        from askmd.search import related  # only `related` needs it

        a = self.access
        m = a.manifest
        chunks = m.chunks_of([source])
        ids = [c.id for c in chunks]
        if chunks and not m.pending() and len(m.with_vectors(ids)) == len(ids):
            with a.reading() as store:
                vectors = self._vectors(chunks, a.embedder.id)

                def nearest(vector, n: int) -> list[tuple[str, float]]:
                    found = store.nearest(vector, n, content=False)
                    sources = m.sources_of([f.id for f in found])
                    return [(sources[f.id], 1 - f.distance) for f in found if f.id in sources]

                return related.by_meaning(vectors, nearest, source, method), related.SIMILAR
        terms = related.keyword_terms((c.text for c in chunks), m.idf)
        best: dict[str, float] = {}
        found = m.keyword(terms, related.POOL * 4)
        sources = m.sources_of([i for i, _ in found])
        for chunk_id, score in found:
            other = sources.get(chunk_id)
            if other and other != source and score > best.get(other, -1.0):
                best[other] = score
        return sorted(best.items(), key=lambda i: (-i[1], i[0])), related.SIMILAR_WORDS

    def _vectors(self, chunks: list[manifest_file.Pending], embedder_id: str):
        """The note's chunk vectors: from the embedding cache, else from the store."""
        import numpy as np

        cached = self.access.manifest.cached(embedder_id, [c.text_hash for c in chunks])
        missing = [c.id for c in chunks if c.text_hash not in cached]
        stored = self.access.store.vectors(missing)
        rows = [cached.get(c.text_hash, stored.get(c.id)) for c in chunks]
        return np.array([r for r in rows if r is not None], dtype=np.float32)


def _folder_files(settings) -> set[str]:
    """Every file under the knowledge folder but hidden ones, as relative paths."""
    root = settings.knowledge_dir
    found: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        rel = os.path.relpath(dirpath, root)
        for name in filenames:
            if not name.startswith("."):
                found.add(name if rel == "." else f"{rel}/{name}".replace(os.sep, "/"))
    return found
