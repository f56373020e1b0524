"""Several folders answered as one (folders.py says how they are given).

Each folder keeps its own `Index`. A search asks each folder for its best chunks and
ranks them together by what means the same in every folder: a chunk's cosine with the
question and its BM25 score, blended as one folder's search blends them (retriever.py),
each folder's own order kept (its rules, such as a named day's entries first, stand).
An answer reads the passages ranked so, and its judge reads every folder's words.

A folder that is missing is said in one line when the shelf opens; the others answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from askmd import folders as folder_list
from askmd.answer.answerer import Answerer
from askmd.errors import AskmdError, BadRequest
from askmd.index import index_home
from askmd.pipeline import Index
from askmd.search.hits import Filters, Hit, Ranked, ranked_as
from askmd.search.retriever import is_cjk_query
from askmd.search.searcher import check_question
from askmd.shelf_parts import ShelfGraph, ShelfKeeper, Shelved
from askmd.terms import content_terms

if TYPE_CHECKING:
    from askmd.index.access import Loading
    from askmd.index.sync_report import Progress, SyncReport
    from askmd.search import dates_in_query
    from askmd.settings import Settings


def settings_of(settings: Settings, folder: folder_list.Folder) -> Settings:
    """One folder's settings: its own index where the defaults put it (or under
    ASKMD_INDEX_DIR, in a folder of its label), its own collection on a Chroma server."""
    default_index = index_home.default_index_dir(settings.knowledge_dir)
    given_index = settings.index_dir != default_index
    index_dir = settings.index_dir / folder.label if given_index else None
    collection = ""
    if settings.chroma_url:
        shared = index_home.default_collection(settings.knowledge_dir)
        if settings.collection != shared:  # named by the user: one per label from it
            collection = f"{settings.collection}-{folder.label}"
    elif settings.collection != "askmd":
        collection = settings.collection
    return dataclasses.replace(
        settings, knowledge_dir=folder.path, index_dir=index_dir, collection=collection,
        folders=(),
    )  # fmt: skip


def open_notes(
    settings: Settings,
    *,
    loading: Loading = nullcontext,
    warn: Callable[[str], None] = lambda line: None,
    rebuild: bool = False,
) -> Index | Shelf:
    """The one folder's index, or the shelf of several."""
    if settings.folders:
        return Shelf(settings, loading=loading, warn=warn, rebuild=rebuild)
    return Index(settings, loading=loading)


def folders_of(index: Index | Shelf, filters: Filters | None) -> list[Shelved] | None:
    """The folders `--in` (`filters.folders`) names, refused in one line when one is not
    there; with one folder, only its own label is one."""
    if filters is None or not filters.folders:
        return None
    if isinstance(index, Shelf):
        return index.chosen(filters)
    own = folder_list.label_of(index.settings.knowledge_dir)
    if other := next((label for label in filters.folders if label != own), None):
        raise BadRequest(f"no folder is labelled {other!r}: this reads one folder, {own}")
    return None


def each_folder(index: Index | Shelf) -> list[tuple[str, Index]]:
    """(label, index) of each folder; the label is "" for a lone folder."""
    if isinstance(index, Index):
        return [("", index)]
    return [(f.label, f.index) for f in index.folders]


class Shelf:
    """The folders of `settings.folders`, each with its own index, searched and answered
    from as one. `warn` hears, a line each, of a folder that is missing or whose
    `.askmd.toml` could not be read."""

    def __init__(
        self,
        settings: Settings,
        *,
        loading: Loading = nullcontext,
        warn: Callable[[str], None] = lambda line: None,
        rebuild: bool = False,
    ) -> None:
        self.settings = settings
        self.folders: list[Shelved] = []
        self.missing: list[folder_list.Folder] = []
        for folder in settings.folders:
            if not folder.path.is_dir():
                gone = "is not a folder" if folder.path.exists() else "does not exist"
                warn(f"the folder {folder.label} ({folder.path}) {gone}: answering from the others")
                self.missing.append(folder)
                continue
            own = settings_of(settings, folder)
            index_home.check_owner(own.index_dir, own.knowledge_dir, rebuild)
            description, problem = folder_list.description(folder.path)
            if problem:
                warn(problem)
            index = Index(own, loading=loading)
            self.folders.append(Shelved(folder.label, folder.path, description, index))
        if not self.folders:
            raise AskmdError(
                "none of the knowledge folders exists: point --knowledge at your notes"
            )
        self.searcher = ShelfSearcher(self)
        self.keeper = ShelfKeeper(self.folders)
        self.graph = ShelfGraph(self.folders, self.missing)
        first = self.folders[0].index
        self.answerer = Answerer(first, self.searcher, [f.index for f in self.folders])  # type: ignore[arg-type]

    @property
    def labels(self) -> list[str]:
        return [f.label for f in self.folders]

    def folder(self, label: str) -> Shelved:
        for shelved in self.folders:
            if shelved.label == label:
                return shelved
        raise BadRequest(self.unknown(label))

    def unknown(self, label: str) -> str:
        if any(f.label == label for f in self.missing):
            return f"the folder {label} is missing: nothing of it can be searched"
        return f"no folder is labelled {label!r} (folders: {', '.join(self.labels)})"

    def chosen(self, filters: Filters | None) -> list[Shelved]:
        """The folders a search reads: those `--in` names, else all."""
        if filters is None or not filters.folders:
            return self.folders
        return [self.folder(label) for label in dict.fromkeys(filters.folders)]

    def search(
        self, query: str, k: int, mode: str = "hybrid", filters: Filters | None = None
    ) -> Ranked:
        """The `k` chunks that best match `query` over the chosen folders, ranked as one."""
        check_question(query, "the query")
        chosen = self.chosen(filters)
        inner = replace(filters, folders=()) if filters else None
        inner = None if inner == Filters() else inner

        def one(shelved: Shelved) -> Ranked:
            return shelved.index.search(query, k, mode, inner)  # type: ignore[return-value]

        # One after another: the first embeds the question, the others find its vectors
        # made (embedder.remembered). Side by side was no faster on two cores.
        found = [one(shelved) for shelved in chosen]
        return fused(list(zip(chosen, found, strict=True)), k, query)

    def ask(self, question: str, history: list, k: int, **options):
        """Answer one question from every folder's notes (Answerer.ask)."""
        return self.answerer.ask(question, history, k, **options)

    def sync_to_read(
        self, progress: Callable[[], Progress | None] = lambda: None, **options
    ) -> list[tuple[Shelved, SyncReport | None]]:
        """Each folder synced before answering, one after another (Keeper.sync_to_read)."""
        return [(f, f.index.keeper.sync_to_read(progress(), **options)) for f in self.folders]

    def sync(
        self, progress: Callable[[], Progress | None] = lambda: None, **options
    ) -> list[tuple[Shelved, SyncReport]]:
        """Each folder synced, one after another (Index.sync: a rebuild is each one's)."""
        return [(f, f.index.sync(progress=progress(), **options)) for f in self.folders]

    def stats(self) -> dict:
        return self.graph.stats()

    def tags(self) -> set[str]:
        """The tags of every folder's notes (for saying why a tag filter found nothing)."""
        return set().union(*(f.index.manifest.tags() for f in self.folders if f.index.has_index()))

    def property_keys(self) -> dict[str, int]:
        """Every folder's property keys, with how many notes carry each."""
        keys: dict[str, int] = {}
        for f in self.folders:
            if f.index.has_index():
                for key, n in f.index.manifest.property_keys().items():
                    keys[key] = keys.get(key, 0) + n
        return keys


class ShelfSearcher:
    """What an answer searches with (searcher.Searcher's part the answer uses)."""

    def __init__(self, shelf: Shelf) -> None:
        self.shelf = shelf
        self.access = shelf.folders[0].index

    def search(self, query: str, k: int, mode: str = "hybrid", filters=None) -> Ranked:
        return self.shelf.search(query, k, mode, filters)

    def root(self, hit: Hit) -> Path:
        return self.shelf.folder(hit.folder).path

    def dates_in(self, query: str) -> dates_in_query.Period | None:
        """The day or period a question names; a day without its year is the latest such
        day any folder's note or entry is of."""
        from askmd.search import dates_in_query

        def held(since: str, until: str) -> bool:
            return any(
                f.index.has_index() and f.index.manifest.dated_between(since, until, 1)
                for f in self.shelf.folders
            )

        return dates_in_query.understand(query, dates_in_query.today(), held)


def fused(found: list[tuple[Shelved, Ranked]], k: int, query: str) -> Ranked:
    """Each folder's hits ranked as one. Where every list carries its evidence, a hit's
    value is a blend of its cosine and BM25 score that means the same in every folder
    (`_by_evidence`: a folder whose best hit is weak stays below another's strong one);
    else by rank alone (1 / (60 + rank)). Each folder's own order is kept (its rules,
    such as a named day's entries first, stand): the next hit is the best of the folders'
    next ones."""
    if len(found) == 1:
        shelved, ranked = found[0]
        return _labelled([(h, h.score) for h in ranked], shelved, ranked)
    valued = _by_evidence(found, query) if all(r.evidence or not r for _, r in found) else None
    if valued is None:
        valued = {(s.label, h.chunk_id): 1.0 / (60 + h.rank) for s, r in found for h in r}
    heads = [list(ranked) for _, ranked in found]
    merged: list[tuple[Hit, Shelved]] = []
    while len(merged) < k and any(heads):
        best = max(
            (i for i, head in enumerate(heads) if head),
            key=lambda i: (valued[(found[i][0].label, heads[i][0].chunk_id)], -i),
        )
        merged.append((heads[best].pop(0), found[best][0]))
    retrievers = {r.retriever for _, r in found if r}
    hits = [
        dataclasses.replace(
            hit,
            rank=n,
            score=valued[(s.label, hit.chunk_id)],
            folder=s.label,
            folder_description=s.description,
        )  # fmt: skip
        for n, (hit, s) in enumerate(merged, start=1)
    ]
    return ranked_as(hits, retrievers.pop() if len(retrievers) == 1 else "hybrid")


def _by_evidence(found: list[tuple[Shelved, Ranked]], query: str) -> dict[tuple[str, str], float]:
    """Each hit's blend of its cosine, scaled over every folder's hits, and its BM25 score
    over the most its folder gives the question's words (the sum of their idf there): a
    word rare in one folder and common in another weighs as much in both, so a folder's
    score says how much of the question a passage holds, not how rare its words are there."""
    cosines = [e[0] for _, r in found for e in r.evidence.values() if e[0] is not None]
    low, high = (min(cosines), max(cosines)) if cosines else (0.0, 0.0)
    terms = content_terms(query)
    matched: dict[tuple[str, str], float] = {}
    for shelved, ranked in found:
        idf = shelved.index.manifest.idf(terms, is_cjk_query(query)) if terms else {}
        most = sum(idf.values()) or 1.0
        for chunk_id, (_, bm25) in ranked.evidence.items():
            matched[(shelved.label, chunk_id)] = (bm25 or 0.0) / most
    best = max(matched.values(), default=0.0) or 1.0
    alpha = next((r.alpha for _, r in found if r), 0.5)
    if not cosines:
        alpha = 0.0
    elif not any(matched.values()):
        alpha = 1.0
    valued = {}
    for shelved, ranked in found:
        for chunk_id, (cosine, _) in ranked.evidence.items():
            dense = 0.0
            if cosine is not None:
                dense = (cosine - low) / (high - low) if high > low else 1.0
            key = (shelved.label, chunk_id)
            valued[key] = alpha * dense + (1 - alpha) * matched[key] / best
    return valued


def _labelled(scored: list[tuple[Hit, float]], shelved: Shelved, ranked: Ranked) -> Ranked:
    hits = [
        dataclasses.replace(
            hit, score=score, folder=shelved.label, folder_description=shelved.description
        )
        for hit, score in scored
    ]
    return ranked_as(hits, ranked.retriever)
