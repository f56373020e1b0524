"""All terminal output: warnings, errors, chunk listings, JSON.

Colours and layout come from rich and only when the stream is a terminal; JSON is always
plain so that other programs can read it. Nothing outside this module and rag.py prints.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

import chunker

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
