"""What the command line and the REPL share: showing a sync and a streamed answer, saying
what is kept on Ctrl-C, and saving answers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from askmd.interfaces import console

if TYPE_CHECKING:
    from askmd.answer.result import Answer
    from askmd.index.sync_report import SyncReport
    from askmd.pipeline import Index


def show_sync(index: Index, report: SyncReport | None) -> None:
    """What a sync did, in one line (and its warnings), on stderr."""
    if report is not None:
        console.show_sync(report, index.settings.knowledge_dir, index.settings.include)


def stream_answer(pieces: Iterator[str], sources: int) -> str:
    """An answer shown on the terminal as the model writes it."""
    return console.stream_answer(pieces, sources=sources)


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
