"""Answers on the terminal: streamed as the model writes them, rendered as Markdown with
their citations standing out, then the reference list and what was removed or is missing.
Piped, the same text without colours (console.py's streams)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Console
from rich.markdown import Markdown, Paragraph
from rich.markup import escape
from rich.text import Text

from askmd.answer import exchange
from askmd.answer.reasons import render
from askmd.interfaces.console import (
    CITATION_STYLE,
    clean,
    err,
    error,
    lines,
    out,
    pages,
    warning,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from askmd.answer.result import Answer, Reference

_CITATION = r"\[\d+\]|【\d+】"


class _CitedParagraph(Paragraph):
    """A Markdown paragraph whose [n] citations stand out."""

    def __rich_console__(self, console, options):
        self.text.highlight_regex(_CITATION, CITATION_STYLE)
        yield from super().__rich_console__(console, options)


class _CitedMarkdown(Markdown):
    elements = {**Markdown.elements, "paragraph_open": _CitedParagraph}


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.M)
_BLOCK_END = re.compile(r"\n[ \t]*\n(?=\S)")  # a blank line, then a block that starts unindented


def _split_block(text: str) -> tuple[str, str] | None:
    """(the first finished block, the rest), or None while the first block may go on.

    A block ends at a blank line that the next block has begun after, outside code
    fences; an indented next line still belongs to it (a list item's second paragraph).
    """
    for match in _BLOCK_END.finditer(text):
        head = text[: match.start()]
        if len(_FENCE.findall(head)) % 2 == 0:
            return head, text[match.end() :]
    return None


_LEADING_BLANK = re.compile(r"\A(?:(?:[ \t]|\x1b\[[0-9;]*m)*\n)+")


class _Stream:
    """An answer shown as it arrives, by appending: the bytes written stay a few times its size.

    Finished blocks (paragraphs, lists, code blocks) are printed once as Markdown, their
    citations checked; the block still being written is printed as plain text, a piece at
    a time, and replaced by its rendering when it ends. Only that block is ever rewritten
    (redrawing the whole answer per refresh wrote megabytes for a long one). A block taller
    than the screen cannot be erased, so it stays as plain text.
    """

    def __init__(self, console: Console, sources: int | None) -> None:
        self.console, self.sources = console, sources
        self.text = ""  # everything received
        self.tail = ""  # the block being written, as received
        self.rows = self.column = 0  # where the plain tail ends: rows below its first line
        self.frozen = False  # the tail scrolled off the top: it stays as printed
        self.blocks = 0  # blocks rendered so far

    def add(self, piece: str) -> None:
        self.text += piece
        self.tail += piece
        finished = _split_block(self.tail)
        if finished is None:
            self._write(piece)
            return
        while finished is not None:
            self._settle(finished[0])
            self.tail = finished[1]
            finished = _split_block(self.tail)
        self._write(self.tail)

    def finish(self) -> None:
        if self.tail.strip():
            self._settle(self.tail)
        elif not self.frozen:
            self._erase()
        self.tail = ""

    def _write(self, piece: str) -> None:
        """Print plain text, wrapping it here so that its height on screen is known."""
        if not piece:
            return
        width = self.console.width
        written = ["\n"] if self.blocks and not (self.rows or self.column) else []
        for char in clean(piece).replace("\t", "    "):
            if char == "\n":
                written.append("\n")
                self.rows, self.column = self.rows + 1, 0
                continue
            size = cell_len(char)
            if self.column + size > width:
                written.append("\n")
                self.rows, self.column = self.rows + 1, 0
            written.append(char)
            self.column += size
        self.console.file.write("".join(written))
        self.console.file.flush()
        if self.rows >= self.console.height - 2:
            self.frozen = True

    def _erase(self) -> None:
        """Take the plain tail off the screen: back to its first line, clear below."""
        up = f"\x1b[{self.rows}A" if self.rows else ""
        self.console.file.write(f"\r{up}\x1b[J")
        self.rows = self.column = 0

    def _settle(self, block: str) -> None:
        """Replace the plain text of a finished block with its checked Markdown."""
        if self.frozen:
            self.console.file.write("\n")
        else:
            self._erase()
            with self.console.capture() as shown:
                self.console.print(_CitedMarkdown(self._checked(block)))
            # rich starts a list, quote or table with a blank line; the gap is written already
            self.console.file.write(_LEADING_BLANK.sub("", shown.get()))
            self.console.file.flush()
        self.rows = self.column = 0
        self.frozen = False
        self.blocks += 1

    def _checked(self, block: str) -> str:
        if self.sources is None:
            return clean(block)
        from askmd.answer.citations import check_citations

        return clean(check_citations(block.strip(), self.sources).text)


_streamed: list[str] = []  # the text stream_answer last put on screen, for show_answer


def stream_answer(pieces: Iterator[str], sources: int | None = None) -> str:
    """Show the answer as it is written (on a terminal); return the whole raw text.

    `sources` is how many passages the model was given: citations of others are removed
    from each block before it is shown, as from the answer. On Ctrl-C what was written
    stays on screen, rendered, and the interrupt goes on to the caller.
    """
    _streamed.clear()
    if not out.is_terminal:
        return "".join(pieces)
    stream = _Stream(out, sources)
    waiting = out.status(Text("waiting for the model…", style="dim"), spinner="dots")
    waiting.start()
    try:
        for piece in pieces:
            if waiting is not None:
                waiting.stop()
                waiting = None
            stream.add(piece)
    finally:
        if waiting is not None:
            waiting.stop()
        stream.finish()
        _streamed.append(stream.text)
    return stream.text


def show_answer(answer: Answer, hint: bool = True) -> None:
    """The checked answer, the reference list, and what was removed or is missing."""
    if answer.llm_error:  # the LLM failed: say why above the notes' own sentences
        error(f"{answer.llm_error} Quoting your notes instead.")
    streamed = bool(_streamed) and answer.mode == "llm"  # already on screen, block by block
    _streamed.clear()
    if streamed:
        first = answer.text.split("\n", 1)[0]
        if first in (exchange.UNSUPPORTED, exchange.UNSUPPORTED_ZH):  # found after the stream
            out.print(Text(first.strip("*"), style="bold yellow"))
    elif out.is_terminal:
        out.print(_CitedMarkdown(clean(answer.text)))
    else:
        out.print(Text(clean(answer.text)), soft_wrap=True)
    if answer.cancelled:
        cancelled()
    if answer.invalid_citations:
        shown = ", ".join(f"[{n}]" for n in answer.invalid_citations)
        count = len(answer.hits)
        warning(
            f"the answer cited {shown}, but there {'was' if count == 1 else 'were'} only "
            f"{count} source{'' if count == 1 else 's'}; removed"
        )
    if not answer.answered:
        show_nearest(answer.nearest)
        return
    for reason in answer.reasons:
        warning(render(reason, form="warn"))
    if answer.mode == "llm" and answer.hits and not answer.citations:
        warning("the answer cites none of the sources; check it against them (/sources)")
    if answer.unsupported_citations:
        shown = ", ".join(f"[{n}]" for n in answer.unsupported_citations)
        warning(f"the answer cites {shown} for what the passage does not say; check it")
    show_references(answer.references)
    if hint and answer.mode == "extractive" and not answer.llm_error:
        from askmd.answer.extractive import ENABLE_GENERATION

        err.print(f"[dim]{escape(ENABLE_GENERATION)}[/]")


UNSUPPORTED = "(this passage does not say this)"


def show_references(references: list[Reference]) -> None:
    """`[n] path › heading chain (lines a–b)` and the quoted fragment, in citation order;
    a passage cited for what it does not say is marked so."""
    if not references:
        return
    out.print()
    for ref in references:
        chain = f" › {ref.heading_chain}" if ref.heading_chain else ""
        out.print(
            Text.assemble(
                (f"[{ref.n}] ", CITATION_STYLE),
                (clean(ref.shown_source), "bold"),
                (pages(ref.page_start, ref.page_end), "green"),
                clean(chain),
                lines(ref),
                (f" {UNSUPPORTED}", "yellow") if ref.supported is False else "",
            ),
            soft_wrap=True,
        )
        out.print(Text(f'    "{clean(ref.text)}"', style="dim"), soft_wrap=True)


def show_nearest(hits) -> None:
    """Where the closest passages are, as pointers, not citations: a declined answer's."""
    if not hits:
        return
    out.print()
    out.print("[dim]Closest in your notes:[/]")
    for hit in hits:
        chain = f" › {hit.heading_chain}" if hit.heading_chain else ""
        out.print(
            Text.assemble(
                "  ",
                (clean(hit.shown_source), "bold"),
                (pages(hit.page_start, hit.page_end), "green"),
                clean(chain),
                lines(hit),
                style="dim",
            ),
            soft_wrap=True,
        )


def cancelled() -> None:
    err.print("[dim](cancelled)[/]")
