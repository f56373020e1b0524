"""What the command line and the REPL share: showing a sync, the wait for an answer and
its stream, saying what is kept on Ctrl-C, and saving answers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from askmd.interfaces import answer_display, console

if TYPE_CHECKING:
    from askmd.answer.result import Answer
    from askmd.index.sync_report import SyncReport
    from askmd.pipeline import Index


def show_sync(index: Index, report: SyncReport | None) -> None:
    """What a sync did, in one line (and its warnings), on stderr."""
    if report is not None:
        console.show_sync(report, index.settings.knowledge_dir, index.settings.include)


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
        stats = index.graph.stats()
        console.interrupted(stats["chunks"], stats["chunks_embedded"])
        raise
