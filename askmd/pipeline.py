"""The pipeline that every interface drives: sync the index, search it, answer from it.

`Index` is the composition root: one index opened by this process (index/access.py:
the store, the manifest and the embedder, each built only when first needed, so a
no-change sync never loads a model), and the four jobs done on it, each its own object:

- `keeper` keeps it in step with the folder, and decides which vectors are stored now
  and which by the background filler (index/keeper.py);
- `searcher` searches it (search/searcher.py);
- `answerer` answers from it, with the LLM if one is configured (answer/answerer.py);
- `graph` holds the notes as a whole: links, backlinks, related notes, stats
  (search/notes_graph.py).

`sync`, `search` and `ask`, what every interface does, are on `Index` itself. It never
prints: progress, waiting and streamed answers go through what the caller passes in, so
the same core serves a terminal, HTTP and a protocol spoken over stdout.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from askmd.answer.answerer import Answerer, Searched, Show
from askmd.errors import BadRequest
from askmd.index.access import IndexAccess, Loading
from askmd.index.keeper import Keeper
from askmd.search import retriever
from askmd.search import where as where_conditions
from askmd.search.notes_graph import RELATED_K, NotesGraph
from askmd.search.searcher import Searcher, check_question

__all__ = [
    "RELATED_K",
    "Index",
    "Loading",
    "Searched",
    "Show",
    "check_question",
    "filters",
    "search_json",
]


@dataclass
class Index(IndexAccess):
    """What the commands and the server share, built once from Settings."""

    keeper: Keeper = field(init=False, repr=False)
    searcher: Searcher = field(init=False, repr=False)
    answerer: Answerer = field(init=False, repr=False)
    graph: NotesGraph = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.keeper = Keeper(self)
        self.searcher = Searcher(self)
        self.answerer = Answerer(self, self.searcher)
        self.graph = NotesGraph(self, self.keeper)

    def sync(self, paths: list[str] | None = None, **options):
        """Bring the index in step with the folder: the one door for every change to it
        (Keeper.sync says how)."""
        return self.keeper.sync(paths, **options)

    def search(self, query: str, k: int, mode: str = "hybrid", filters=None):
        """The chunks that best match `query` (Searcher.search)."""
        return self.searcher.search(query, k, mode, filters)

    def ask(self, question: str, history: list, k: int, **options):
        """Answer one question from the notes (Answerer.ask)."""
        return self.answerer.ask(question, history, k, **options)


def filters(
    source: str | None,
    heading_level: int | None,
    name: str = "heading_level",
    tags: Iterable[str] | None = None,
    since: str | None = None,
    until: str | None = None,
    where: Iterable[str] | None = None,
    where_name: str = "--where",
    folders: Iterable[str] | None = None,
) -> retriever.Filters | None:
    """Search filters from what a user gave (a path glob, a heading level, tags: `#project`
    also takes `#project/alpha`), or None; a bad level is refused in one line that calls
    it by the `name` the user gave it by."""
    if heading_level is not None and not 1 <= heading_level <= 4:
        raise BadRequest(f"{name} {heading_level}: give 1 to 4 (1 = only under H1 headings)")
    wanted = tuple(dict.fromkeys(t.strip().lstrip("#").strip("/") for t in tags or ()))
    if "" in wanted:
        raise BadRequest("an empty tag: give it as #project or project")
    from askmd.search import dates_in_query  # its patterns load when a date is given

    since = dates_in_query.parse_day(since, "since") if since else ""
    until = dates_in_query.parse_day(until, "until") if until else ""
    if since and until and since > until:
        raise BadRequest(f"since {since} is after until {until}: nothing could match")
    conditions = where_conditions.parse_all(where, where_name)
    within = tuple(dict.fromkeys(f.strip() for f in folders or () if f.strip()))
    if not (source or heading_level or wanted or since or until or conditions or within):
        return None
    return retriever.Filters(
        source=source or "", heading_level=heading_level or 0, tags=wanted, since=since,
        until=until, where=conditions, folders=within,
    )  # fmt: skip


def search_json(query: str, hits: list[retriever.Hit]) -> dict:
    """The `search --json` object: the query, what ranked the results, the results."""
    return {
        "query": query,
        "retriever": getattr(hits, "retriever", "hybrid"),
        "results": [h.to_json() for h in hits],
    }
