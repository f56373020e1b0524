"""All terminal output: warnings, errors, chunk listings, JSON.

Colours and layout come from rich and only when the stream is a terminal; JSON is always
plain so that other programs can read it. Nothing outside this module and rag.py prints.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markdown import Markdown, Paragraph
from rich.markup import escape
from rich.panel import Panel
from rich.segment import Segment
from rich.text import Text

import chunker

if TYPE_CHECKING:
    from collections.abc import Iterator

    from answer import Answer, Reference

out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def warning(message: str) -> None:
    err.print(f"[yellow]warning:[/] {escape(message)}")


def error(message: str) -> None:
    for line in message.splitlines() or [""]:
        err.print(f"[bold red]error:[/] {escape(line)}")


def notice(message: str) -> None:
    out.print(escape(message))


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def show_chunks(file: str, mode: str, chunks: list[chunker.Chunk], size: int) -> None:
    total = sum(len(c.text) for c in chunks)
    out.print(
        f"[bold]{escape(file)}[/] · {mode} mode · {len(chunks)} chunks · {total:,} chars "
        f"(target {size}, cap {chunker.hard_cap(size)})",
        soft_wrap=True,
    )
    for c in chunks:
        chain = " › ".join(c.heading_chain) or "(no heading)"
        title = Text.assemble(
            (f"#{c.chunk_index} ", "bold cyan"),
            (f"lines {c.line_start}–{c.line_end} ", "green"),
            (chain, "bold"),
            (f"  {len(c.text)} chars", "dim"),
            (f", {c.overlap} overlap" if c.overlap else "", "dim"),
        )
        out.print(Panel(Text(c.text), title=title, title_align="left", border_style="dim"))


class SyncProgress:
    """A rich progress bar on a terminal (files, chunks, embeddings/s, ETA); silent otherwise."""

    def __init__(self) -> None:
        self.bar = None
        self.files_task = self.chunks_task = None

    def start(self, files: int, chunks: int) -> None:
        if not err.is_terminal or (files == 0 and chunks == 0):
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(
            TextColumn("{task.description:<10}"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            console=err,
            transient=True,
        )
        self.files_task = self.bar.add_task("files", total=files, rate="")
        self.chunks_task = self.bar.add_task("chunks", total=chunks, rate="")
        self.bar.start()

    def advance(self, files: int = 0, chunks: int = 0) -> None:
        if self.bar is None:
            return
        self.bar.advance(self.files_task, files)
        self.bar.advance(self.chunks_task, chunks)
        task = self.bar.tasks[1]
        if task.speed:
            self.bar.update(self.chunks_task, rate=f"{task.speed:.1f} emb/s")

    def finish(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def show_sync(report, knowledge_dir=None, include=()) -> None:
    if report.files_scanned == 0 and knowledge_dir is not None:
        warning(
            f"no notes found in {knowledge_dir}/ (looked for {', '.join(include)}). "
            "Add notes, or set ASKMD_KNOWLEDGE_DIR or ASKMD_INCLUDE."
        )
    for skipped in report.files_skipped:
        warning(f"{skipped.source} is {skipped.reason}; skipped")
    for line in report.warnings:
        warning(line)
    if report.rebuilt:
        notice(f"rebuilding the index: {report.rebuild_reason}")
    touched = report.files_added + report.files_changed + report.files_deleted
    if not touched and not report.rebuilt:
        err.print(
            f"[dim]index up to date: {report.files_unchanged} files, "
            f"{report.chunks_total} chunks ({report.seconds:.2f} s)[/]"
        )
        return
    err.print(
        f"indexed: {report.files_added} added, {report.files_changed} changed, "
        f"{report.files_deleted} deleted, {report.files_unchanged} unchanged; "
        f"{report.chunks_embedded} chunks embedded, {report.chunks_deleted} removed; "
        f"{report.chunks_total} chunks in the index ({report.seconds:.1f} s)"
    )


def show_hits(hits, query: str) -> None:
    """Retrieved chunks, best first, each as `[n] score path › chain (lines a–b)` + text."""
    if not hits:
        out.print(f"no chunks found for {escape(query)!r}")
        return
    for hit in hits:
        title = Text.assemble(
            (f"[{hit.rank}] ", "bold cyan"),
            (f"{hit.score:.3f} ", "magenta"),
            (hit.source, "bold"),
            (f" › {hit.heading_chain}" if hit.heading_chain else "", ""),
            (f" (lines {hit.line_start}–{hit.line_end})", "green"),
        )
        snippet = hit.text if len(hit.text) <= 600 else hit.text[:600].rstrip() + " …"
        out.print(title, soft_wrap=True)
        out.print(Panel(Text(snippet), border_style="dim"))


def show_debug(hits, query: str) -> None:
    """/debug: the retrieved chunks as one table (rank, score, where, the start of the text)."""
    if not hits:
        out.print(f"no chunks found for {escape(query)!r}")
        return
    from rich.table import Table

    table = Table(title=f"retrieved for {query!r}", title_justify="left", expand=True)
    table.add_column("#", style=CITATION_STYLE, justify="right", no_wrap=True)
    table.add_column("score", style="magenta", justify="right", no_wrap=True)
    table.add_column("source › heading chain", ratio=2, overflow="fold")
    table.add_column("lines", style="green", no_wrap=True)
    table.add_column("text", ratio=3, style="dim")
    for hit in hits:
        where = hit.source + (f" › {hit.heading_chain}" if hit.heading_chain else "")
        snippet = " ".join(hit.text.split())
        snippet = snippet if len(snippet) <= 160 else snippet[:159] + "…"
        table.add_row(
            str(hit.rank), f"{hit.score:.3f}", where, f"{hit.line_start}–{hit.line_end}", snippet
        )
    out.print(table)


def show_eval(report, verbose: bool = False) -> None:
    """The metrics, and with --verbose each query whose relevant file was not found."""
    out.print(f"[bold]{report.queries}[/] queries, files ranked by their best chunk, k={report.k}")
    metrics = report.to_json()
    for name in ("hit@1", "hit@5", "hit@10", "recall@10", "mrr@10"):
        out.print(f"{name:<10} {metrics[name]:.3f}")
    out.print(
        f"[dim]search latency p50 {report.latency_p50:.1f} ms, "
        f"p95 {report.latency(0.95):.1f} ms; {len(report.misses)} misses[/]"
    )
    if verbose:
        for miss in report.misses:
            out.print(
                f"[yellow]miss[/] {escape(miss.id)}: {escape(miss.query)}\n"
                f"     wanted {escape(', '.join(miss.relevant))}; "
                f"got {escape(', '.join(miss.found) or 'nothing')}",
                soft_wrap=True,
            )


def status(message: str):
    """A spinner on a terminal while something slow happens; nothing when piped."""
    if err.is_terminal:
        return err.status(escape(message))
    from contextlib import nullcontext

    return nullcontext()


def show_stats(stats: dict) -> None:
    for key, value in stats.items():
        out.print(f"[bold]{key:<10}[/] {escape(str(value))}")


# --- answers ---------------------------------------------------------------------------

CITATION_STYLE = "bold cyan"
_CITATION = r"\[\d+\]|【\d+】"


class _CitedParagraph(Paragraph):
    """A Markdown paragraph whose [n] citations stand out."""

    def __rich_console__(self, console, options):
        self.text.highlight_regex(_CITATION, CITATION_STYLE)
        yield from super().__rich_console__(console, options)


class _CitedMarkdown(Markdown):
    elements = {**Markdown.elements, "paragraph_open": _CitedParagraph}


class _Tail:
    """The last lines of a renderable that fit the screen: a long streamed answer scrolls."""

    def __init__(self, renderable) -> None:
        self.renderable = renderable

    def __rich_console__(self, console, options):
        lines = console.render_lines(self.renderable, options, pad=False)
        room = max(3, (options.height or console.height) - 2)
        for line in lines[-room:]:
            yield from line
            yield Segment.line()


def stream_answer(pieces: Iterator[str]) -> str:
    """Show the answer as it is written (on a terminal); return the whole raw text.

    The live view is transient: once the reply is complete, the checked answer is printed
    in its place, so what stays on screen never shows a removed citation.
    """
    text = ""
    if not out.is_terminal:
        return "".join(pieces)
    from rich.live import Live
    from rich.spinner import Spinner

    waiting = Spinner("dots", Text("waiting for the model…", style="dim"))
    with Live(waiting, console=out, transient=True, refresh_per_second=12) as live:
        for piece in pieces:
            text += piece
            live.update(_Tail(_CitedMarkdown(text)))
    return text


def show_answer(answer: Answer, hint: bool = True) -> None:
    """The checked answer, the reference list, and what was removed or is missing."""
    if answer.llm_error:  # the LLM failed: say why above the notes' own sentences
        error(f"{answer.llm_error} Quoting your notes instead.")
    if out.is_terminal:
        out.print(_CitedMarkdown(answer.text))
    else:
        out.print(Text(answer.text), soft_wrap=True)
    if answer.invalid_citations:
        shown = ", ".join(f"[{n}]" for n in answer.invalid_citations)
        count = len(answer.hits)
        warning(
            f"the answer cited {shown}, but there {'was' if count == 1 else 'were'} only "
            f"{count} source{'' if count == 1 else 's'}; removed"
        )
    if answer.mode == "llm" and answer.hits and not answer.citations:
        warning("the answer cites none of the sources; check it against them (/sources)")
    show_references(answer.references)
    if hint and answer.mode == "extractive" and not answer.llm_error:
        from answer import ENABLE_GENERATION

        err.print(f"[dim]{escape(ENABLE_GENERATION)}[/]")


def show_references(references: list[Reference]) -> None:
    """`[n] path › heading chain (lines a–b)` and the quoted fragment, in citation order."""
    if not references:
        return
    out.print()
    for ref in references:
        chain = f" › {ref.heading_chain}" if ref.heading_chain else ""
        out.print(
            Text.assemble(
                (f"[{ref.n}] ", CITATION_STYLE),
                (ref.source, "bold"),
                chain,
                (f" (lines {ref.line_start}–{ref.line_end})", "green"),
            ),
            soft_wrap=True,
        )
        out.print(Text(f'    "{ref.text}"', style="dim"), soft_wrap=True)


def cancelled() -> None:
    err.print("[dim](cancelled)[/]")
