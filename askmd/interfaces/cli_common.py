"""What the command line and the REPL share: showing a sync, the wait for an answer and
its stream, saying what is kept on Ctrl-C, saving answers, and why a filter found
nothing."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from askmd import shelf
from askmd.interfaces import answer_display, console
from askmd.pipeline import Index
from askmd.read import vault

if TYPE_CHECKING:
    from askmd.answer.result import Answer
    from askmd.index.sync_report import SyncReport
    from askmd.search.hits import Filters
    from askmd.shelf import Shelf


def show_sync(index: Index | Shelf, report: SyncReport | list | None) -> None:
    """What a sync did, in one line (and its warnings), on stderr; a line a folder when
    several are answered from (`report` is then Shelf.sync_to_read's list)."""
    if isinstance(report, list):
        for shelved, each in report:
            if each is not None:
                console.show_sync(each, shelved.path, index.settings.include, shelved.label)
    elif report is not None:
        console.show_sync(report, index.settings.knowledge_dir, index.settings.include)


def sync_to_read(index: Index | Shelf, progress: bool = True, **options):
    """The sync before a search or an answer, shown with progress on a terminal."""
    shown = console.SyncProgress if progress else lambda: None
    if isinstance(index, Index):
        return index.keeper.sync_to_read(shown(), warn=console.warning, **options)
    return index.sync_to_read(shown, warn=console.warning, **options)


def progress(index: Index | Shelf):
    """A sync's progress display: one for a folder, a maker of one per folder for several."""
    return console.SyncProgress() if isinstance(index, Index) else console.SyncProgress


def live(index: Index | Shelf, **options):
    """The index kept live while an interface runs (live.py): a LiveIndex, or a LiveShelf
    with one per folder."""
    from askmd.interfaces.live import LiveIndex, LiveShelf

    return LiveIndex(index, **options) if isinstance(index, Index) else LiveShelf(index, **options)


def open_notes(settings, filters: Filters | None = None, **options) -> Index | Shelf:
    """The folder's index, or the shelf of several folders (a missing one said in a line);
    a folder `filters` names that is not one of them is refused before any indexing."""
    opened = shelf.open_notes(settings, warn=console.warning, **options)
    shelf.folders_of(opened, filters)
    return opened


def ask(
    index: Index,
    question: str,
    turns: list,
    k: int,
    show: Callable[[Iterator[str], int], str] | None,
    searched: Callable[[str, list], None] | None = None,
    **options: Any,
) -> Answer:
    """`index.ask` with a spinner on a terminal while the notes are searched and read (a
    first question in another language may load a model for seconds); it stops before
    the answer or the model's stream is shown."""
    waiting = console.working("searching your notes…")

    def shown(pieces: Iterator[str], sources: int) -> str:
        waiting.stop()
        return show(pieces, sources)  # type: ignore[misc]

    def found(query: str, hits: list) -> None:
        waiting.update(f"reading {console.plural(len(hits), 'passage')}…")
        if searched is not None:
            searched(query, hits)

    try:
        return index.ask(
            question, turns, k, show=shown if show else None, searched=found, **options
        )
    finally:
        waiting.stop()


def stream_answer(pieces: Iterator[str], sources: int) -> str:
    """An answer shown on the terminal as the model writes it."""
    return answer_display.stream_answer(pieces, sources=sources)


def save(index: Index, answers: list[Answer], target: str | None) -> None:
    """Keep answers in a Markdown file, and say where (and when it will be indexed)."""
    from askmd.answer import saving

    model = index.answerer.chat.model if any(a.mode == "llm" for a in answers) else None
    console.saved(saving.save(answers, target, index.settings, model))


@contextmanager
def kept_on_ctrl_c(index: Index) -> Iterator[None]:
    """Ctrl-C during a sync: say how much of the index is kept (every finished group of
    files is), since the next run goes on from there."""
    try:
        yield
    except KeyboardInterrupt:
        stats = index.graph.stats() if isinstance(index, Index) else index.stats()
        console.interrupted(stats["chunks"], stats["chunks_embedded"])
        raise


def unknown_filter(index: Index, filters: Filters | None) -> str:
    """Why a filter found nothing when no note has what it asks for: a tag or a property
    key, with the nearest ones (or those there are), as a misspelling is the likely cause."""
    if filters is None:
        return ""
    if filters.tags and (unknown := _unknown_tag(index, filters.tags)):
        return unknown
    return unknown_key(index, filters.where)


def unknown_key(index: Index, where: tuple) -> str:
    have = index.property_keys() if not isinstance(index, Index) else index.manifest.property_keys()
    for condition in where:
        if condition.key not in have:
            near = difflib.get_close_matches(condition.key, list(have), n=3, cutoff=0.6)
            listed = ", ".join(near or list(have)[:8])
            label = "nearest" if near else "properties in the notes"
            found = f" ({label}: {listed})" if listed else ""
            return f"no note has the property {condition.key!r}{found}"
    return ""


def _unknown_tag(index: Index, wanted: tuple[str, ...]) -> str:
    """Why a tag filter found nothing when no note has the tag: with the nearest tags (or
    those there are), as a misspelled tag is the likely cause."""
    have = index.tags() if not isinstance(index, Index) else index.manifest.tags()
    for tag in wanted:
        if not vault.tag_matches(tag, have):
            near = difflib.get_close_matches(tag, sorted(have), n=3, cutoff=0.6)
            listed = ", ".join(f"#{t}" for t in near or sorted(have)[:8])
            label = "nearest" if near else "tags in the notes"
            return f"no note has the tag #{tag}" + (f" ({label}: {listed})" if listed else "")
    return ""
