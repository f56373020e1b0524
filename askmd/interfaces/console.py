"""All terminal output: warnings, errors, chunk listings, JSON.

Colours and layout come from rich and only when the stream is a terminal; JSON is always
plain so that other programs can read it. Nothing outside this module and rag.py prints.
"""

from __future__ import annotations

import json
import re
import sys
import time
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.console import Console
from rich.markdown import Markdown, Paragraph
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

from askmd.answer import exchange
from askmd.answer.reasons import render
from askmd.read import chunker
from askmd.wording import INVISIBLE, plural

if TYPE_CHECKING:
    from collections.abc import Iterator

    from askmd.answer.result import Answer, Reference

out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False, soft_wrap=True)

# Every C0 control but tab and newline, DEL, every C1 control (0x9b is a CSI of its own),
# and characters that change the order text is shown in (bidi embeddings, overrides, isolates
# and marks), or that show nothing (zero-width space, word joiners, BOM, line and paragraph
# separators): "evil\u202egnp.md" is shown as "evildm.png". Zero-width (non-)joiners
# stay: scripts and emoji need them, and they reorder nothing.
_UNSAFE = re.compile(rf"\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f{INVISIBLE}]")


def clean(text: str) -> str:
    """Text from a note, a file name or a model, made safe to print: controls shown, not obeyed.

    A note can hold escape sequences that a terminal would obey (ESC]52 writes the
    clipboard, ESC]0 the window title, ESC[2J clears the screen), and a lone CR lets a
    line overwrite another; a bidi override reverses what follows it, and invisible
    characters hide what a name or line holds. Each becomes visible instead: C0 controls
    as their Unicode pictures (ESC → ␛, CR → ␍), C1 ones as \\x9b, the others as \\u202e.
    CRLF is a plain line end.
    """
    return _UNSAFE.sub(_visible, text)


def _visible(match: re.Match) -> str:
    char = match.group()
    if char == "\r\n":
        return "\n"
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def warning(message: str) -> None:
    err.print(f"[yellow]warning:[/] {escape(clean(message))}")


def error(message: str) -> None:
    for line in clean(message).splitlines() or [""]:
        err.print(f"[bold red]error:[/] {escape(line)}")


def notice(message: str) -> None:
    out.print(escape(clean(message)))


def print_json(data: Any) -> None:
    """JSON on stdout. json.dumps escapes C0 controls but, with ensure_ascii off, leaves DEL,
    the C1 controls and bidi and invisible characters raw; they are escaped too, so a pipe
    into a terminal stays safe."""
    text = json.dumps(data, ensure_ascii=False, indent=2)
    text = re.sub(rf"[\x7f-\x9f{INVISIBLE}]", lambda m: f"\\u{ord(m.group()):04x}", text)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def show_chunks(file: str, mode: str, chunks: list[chunker.Chunk], size: int) -> None:
    total = sum(len(c.text) for c in chunks)
    out.print(
        f"[bold]{escape(clean(file))}[/] · {mode} mode · {plural(len(chunks), 'chunk')} · "
        f"{total:,} chars "
        f"(target {size}, cap {chunker.hard_cap(size)})",
        soft_wrap=True,
    )
    for c in chunks:
        chain = clean(" › ".join(c.heading_chain)) or "(no heading)"
        title = Text.assemble(
            (f"#{c.chunk_index} ", "bold cyan"),
            (f"lines {c.line_start}–{c.line_end} ", "green"),
            (_pages(c.page_start, c.page_end, " ").lstrip(), "green"),
            (chain, "bold"),
            (f"  {len(c.text)} chars", "dim"),
            (f", {c.overlap} overlap" if c.overlap else "", "dim"),
        )
        out.print(Panel(Text(clean(c.text)), title=title, title_align="left", border_style="dim"))


class SyncProgress:
    """Progress of a sync on a terminal (silent otherwise): files, then vectors.

    Files count as they are read, chunked and recorded (the folder is searchable by
    keyword when that bar is full); the vectors bar moves per embedding batch, with the
    time left estimated from the rate since embedding began, so an estimate shows from
    the first batch on.
    """

    def __init__(self) -> None:
        self.bar = None
        self.files_task = self.chunks_task = None
        self.other: dict[str, int] = {}  # a task per other kind of vectors, by label
        self.began = 0.0  # when embedding started
        self.done = 0
        self.ended = False  # by Ctrl-C: what a sync reports while it unwinds is not drawn

    def start(self, files: int, chunks: int) -> None:
        if (files == 0 and chunks == 0) or self.files_task is not None or not self._open():
            return
        self.files_task = self.bar.add_task("files", total=files, rate="", eta="")
        self.chunks_task = self.bar.add_task("vectors", total=chunks, rate="", eta="")

    def _open(self) -> bool:
        """Start drawing, on a terminal: whether a bar is drawn."""
        if self.bar is not None:
            return True
        if not err.is_terminal or self.ended:
            return False
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.bar = Progress(
            TextColumn("{task.description:<10}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TextColumn("{task.fields[eta]}"),
            console=err,
            transient=True,
        )
        self.began = time.monotonic()
        self.bar.start()
        _running.add(self)
        return True

    def chunked(self, chunks: int) -> None:
        """One more file was read and split into `chunks` chunks."""
        if self.bar is not None and self.files_task is not None:
            self.bar.advance(self.files_task, 1)

    def filling(self, chunks: int) -> None:
        """The vector phase begins: `chunks` chunks to embed or find cached."""
        if self.bar is None:
            self.start(0, chunks)
        if self.bar is not None and self.chunks_task is not None:
            self.bar.update(self.chunks_task, total=chunks, completed=0)
            self.began, self.done = time.monotonic(), 0

    def advance(self, files: int = 0, chunks: int = 0) -> None:
        """Chunks embedded or found cached (files were counted when chunked)."""
        if self.bar is None or self.chunks_task is None or not chunks:
            return
        self.done += chunks
        self.bar.advance(self.chunks_task, chunks)
        elapsed = time.monotonic() - self.began
        left = self._total(self.chunks_task) - self.done
        if elapsed > 0 and left > 0:
            rate = self.done / elapsed
            self.bar.update(self.chunks_task, rate=f"{rate:.1f} chunks/s", eta=_left(left / rate))
        else:
            self.bar.update(self.chunks_task, eta="")

    def step(self, label: str) -> None:
        """A long step with no count to move (sorting, packing) named beside the files bar,
        so a full bar that stays still for a minute says why."""
        if self.bar is not None and self.files_task is not None:
            self.bar.update(self.files_task, eta=f"{label}…" if label else "")

    def counting(self, label: str, total: int = 0, done: int = 0) -> None:
        """Vectors of another kind (window vectors an older index lacks, the second
        model's): a bar of their own, drawn from the first one to compute."""
        if label not in self.other:
            if not total or not self._open():
                return
            self.other[label] = self.bar.add_task(label, total=0, rate="", eta="")
        task = self.other[label]
        if self.bar is not None:
            self.bar.update(task, total=self._total(task) + total)
            self.bar.advance(task, done)

    def _total(self, task) -> int:
        return next(int(t.total or 0) for t in self.bar.tasks if t.id == task)

    def finish(self) -> None:
        _running.discard(self)
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
        self.files_task = self.chunks_task = None
        self.other = {}


_running: set[SyncProgress] = set()  # the bars on screen, stopped before "interrupted:"


def _left(seconds: float) -> str:
    if seconds < 60:
        return f"about {max(1, round(seconds))} s left"
    minutes, seconds = divmod(round(seconds), 60)
    return f"about {minutes} min {seconds:02d} s left"


_warned: set[str] = set()  # sync warnings already shown: each is said once per session


def show_sync(report, knowledge_dir=None, include=()) -> None:
    """The sync's warnings (once per session each), then one line for what it did."""
    if report.files_scanned == 0 and knowledge_dir is not None:
        warning(
            f"no notes found in {knowledge_dir}/ (looked for {', '.join(include)}). "
            "Add notes, or set ASKMD_KNOWLEDGE_DIR or ASKMD_INCLUDE."
        )
    for skipped in report.files_skipped:
        warning(f"{skipped.source}: {skipped.reason}; skipped")
    for line in report.warnings:
        if line not in _warned:
            _warned.add(line)
            warning(line)
    if getattr(report, "migrations", None):
        err.print(f"upgraded the index: {plural(len(report.migrations), 'migration')} applied")
    also = _computed(report)
    if report.rebuilt:
        if report.rebuild_reason != "asked for":
            notice(f"rebuilding the index: {report.rebuild_reason}")
        err.print(f"rebuilt: {_rebuilt(report)}{also} ({report.seconds:.1f} s)")
        return
    touched = report.files_added + report.files_changed + report.files_deleted
    waiting = getattr(report, "chunks_waiting", 0)
    still = f", {waiting:,} waiting for vectors" if waiting else ""
    if not touched and report.chunks_embedded:  # vectors a keyword-only run left waiting
        err.print(
            f"indexed: {report.files_unchanged} unchanged; vectors stored for "
            f"{plural(report.chunks_embedded, 'chunk')} that were waiting{also}; "
            f"{plural(report.chunks_total, 'chunk')} in the index{still} ({report.seconds:.1f} s)"
        )
        return
    if not touched:
        err.print(
            f"[dim]index up to date: {plural(report.files_unchanged, 'file')}, "
            f"{plural(report.chunks_total, 'chunk')}{still}{also} ({report.seconds:.2f} s)[/]"
        )
        return
    err.print(
        f"indexed: {report.files_added} added, {report.files_changed} changed, "
        f"{report.files_deleted} deleted, {report.files_unchanged} unchanged; "
        f"{plural(report.chunks_embedded, 'chunk')} embedded, {report.chunks_deleted} removed"
        f"{also}; {plural(report.chunks_total, 'chunk')} in the index{still} "
        f"({report.seconds:.1f} s)"
    )


def _computed(report) -> str:
    """ "; 1,286 window and 586 multilingual vectors computed", or "": the vectors of other
    kinds than the chunks' own that this sync computed."""
    kinds = report.computed() if hasattr(report, "computed") else {}
    if not kinds:
        return ""
    said = [f"{n:,} {label}" for label, n in kinds.items()]
    listed = said[0] if len(said) == 1 else f"{', '.join(said[:-1])} and {said[-1]}"
    noun = "vector" if len(said) == 1 and next(iter(kinds.values())) == 1 else "vectors"
    return f"; {listed} {noun} computed"


def _rebuilt(report) -> str:
    """What a rebuild did, e.g. "13 files, 163 chunks (5 re-embedded, rest from cache)"."""
    total, embedded = report.chunks_total, report.chunks_embedded
    waiting = getattr(report, "chunks_waiting", 0)
    if waiting:  # --keyword-only, or vectors left to a background filler
        how = f"{embedded:,} embedded, {waiting:,} waiting for vectors"
    elif embedded == 0:
        how = "all from cache"
    elif embedded >= total:
        how = "all embedded"
    else:
        how = f"{embedded:,} re-embedded, rest from cache"
    files = report.files_added + report.files_changed + report.files_unchanged
    return f"{plural(files, 'file')}, {plural(total, 'chunk')} ({how})"


def interrupted(chunks: int, embedded: int) -> None:
    """Ctrl-C during a sync: what is kept (every recorded group of files, every stored
    group of vectors), and what to do. Any bar still drawn is stopped first, so the bar
    is not drawn again below this line."""
    for progress in list(_running):
        progress.ended = True
        progress.finish()
    err.print(
        f"interrupted: {plural(chunks, 'chunk')} kept ({embedded:,} with vectors), "
        "run again to continue"
    )


def show_hits(hits, query: str, full: bool = False) -> None:
    """Retrieved chunks, best first, each as `[n] score path › chain (lines a–b)` + text:
    in full for /sources (what an answer was built from), else cut at 600 characters."""
    if not hits:
        out.print(f"no chunks found for {escape(clean(query))!r}")
        return
    for hit in hits:
        title = Text.assemble(
            (f"[{hit.rank}] ", "bold cyan"),
            (f"{hit.score:.3f} ", "magenta"),
            (clean(hit.source), "bold"),
            (_pages(hit.page_start, hit.page_end), "green"),
            (f" › {clean(hit.heading_chain)}" if hit.heading_chain else "", ""),
            _lines(hit),
        )
        text = clean(hit.text)
        snippet = text if full or len(text) <= 600 else text[:600].rstrip() + " …"
        out.print(title, soft_wrap=True)
        if hit.shown_in:
            out.print(Text(f"  {_shown_in(hit)}", style="dim"), soft_wrap=True)
        out.print(Panel(Text(snippet), border_style="dim"))


def show_related(found: dict) -> None:
    """`related`: the note, then each related note with its score, whether it is linked
    already, and why; a dim line when meaning was judged by words (vectors waiting)."""
    out.print(Text(clean(found["note"]), style="bold"), soft_wrap=True)
    if not found["related"]:
        out.print("  no related notes", style="dim")
    for r in found["related"]:
        line = Text.assemble(
            (f"  {r['score']:.4f} ", "magenta"),
            (clean(r["source"]), "bold"),
            (" (linked)" if r["linked"] else "", "cyan"),
            (f"  {', '.join(clean(w) for w in r['why'])}", "dim"),
        )
        out.print(line, soft_wrap=True)
    if any("similar words" in r["why"] for r in found["related"]):
        out.print("(vectors still being stored: similar by words until then)", style="dim")


def _shown_in(hit) -> str:
    """Where embeds show a hit's words (`![[Note#Heading]]`): `shown in a.md:12, b.md:3`."""
    return "shown in " + ", ".join(f"{clean(s)}:{line}" for s, line in hit.shown_in)


def show_debug(hits, query: str, backlinks: dict[str, int] | None = None) -> None:
    """/debug: the retrieved chunks as one table (rank, score, where, lines or pages, tags,
    how many notes link to the hit's note, the start of the text)."""
    if not hits:
        out.print(f"no chunks found for {escape(clean(query))!r}")
        return
    from rich.table import Table

    table = Table(title=f"retrieved for {clean(query)!r}", title_justify="left", expand=True)
    table.add_column("#", style=CITATION_STYLE, justify="right", no_wrap=True)
    table.add_column("score", style="magenta", justify="right", no_wrap=True)
    # as wide as the longest path (up to half the screen): a path cut at its hyphens
    # reads as two
    widest = min(max(len(clean(hit.source)) for hit in hits), max(20, out.width // 2))
    table.add_column("source › heading chain", overflow="fold", width=max(widest, 24))
    table.add_column("lines", style="green", no_wrap=True)
    backlinks = backlinks or {}
    # Tags and inbound links only where the notes have them: a plain folder keeps its room.
    tagged = any(hit.tags for hit in hits)
    linked = any(backlinks.get(hit.source) for hit in hits)
    if tagged:
        table.add_column("tags", style="cyan", overflow="fold")
    if linked:
        table.add_column("links in", justify="right", no_wrap=True)
    table.add_column("text", ratio=3, style="dim")
    for hit in hits:
        where = clean(hit.source + (f" › {hit.heading_chain}" if hit.heading_chain else ""))
        where += f"\n{_shown_in(hit)}" if hit.shown_in else ""
        snippet = " ".join(clean(hit.text).split())
        snippet = snippet if len(snippet) <= 160 else snippet[:159] + "…"
        span = f"{hit.line_start}–{hit.line_end}"
        if hit.page_start is not None:
            pages = (
                hit.page_start
                if hit.page_end in (None, hit.page_start)
                else (f"{hit.page_start}–{hit.page_end}")
            )
            span = f"p. {pages}"
        cells: list = [str(hit.rank), f"{hit.score:.3f}", Text(where), span]
        if tagged:
            cells.append(Text(clean(" ".join(f"#{t}" for t in hit.tags))))
        if linked:
            cells.append(str(backlinks.get(hit.source, 0)))
        table.add_row(*cells, Text(snippet))
    out.print(table)


def show_verdict(verdict) -> None:
    """/debug: whether an answer would answer from these passages, and what that rests on."""
    said = "answers" if verdict.answered else "declines: the notes don't seem to answer this"
    out.print(
        f"[dim]{said} (confidence {verdict.confidence:.2f}: best sentence similarity "
        f"{verdict.similarity:.2f} in {escape(verdict.model)}, coverage of the question's "
        f"words {verdict.coverage:.2f}; ASKMD_MIN_CONFIDENCE moves the line)[/]"
    )
    for reason in verdict.reasons:
        out.print(f"[dim]{escape(render(reason, form='debug'))}[/]")


def show_eval(report, verbose: bool = False) -> None:
    """The metrics, and with --verbose each query whose relevant file was not found."""
    queries = plural(report.queries, "query", "queries")
    out.print(f"[bold]{queries}[/], files ranked by their best chunk, k={report.k}")
    metrics = report.to_json()
    for name in ("hit@1", "hit@5", "hit@10", "recall@10", "mrr@10"):
        out.print(f"{name:<10} {metrics[name]:.3f}")
    out.print(
        f"[dim]search latency p50 {report.latency_p50:.1f} ms, "
        f"p95 {report.latency(0.95):.1f} ms; {plural(len(report.misses), 'miss', 'misses')}[/]"
    )
    if verbose:
        for miss in report.misses:
            out.print(
                f"[yellow]miss[/] {escape(clean(miss.id))}: {escape(clean(miss.query))}\n"
                f"     wanted {escape(clean(', '.join(miss.relevant)))}; "
                f"got {escape(clean(', '.join(miss.found)) or 'nothing')}",
                soft_wrap=True,
            )


def show_answers_eval(report, verbose: bool = False) -> None:
    """The answers' figures, overall and per language, a few lines each; with --verbose
    each question with its confidence."""
    found = report.to_json()
    for name, g in [("all", found), *found.get("by_lang", {}).items()]:
        out.print(
            f"[bold]{escape(name)}[/]: {plural(g['questions'], 'question')} "
            f"({g['unanswerable']} unanswerable, {g['answerable']} answerable)"
        )
        out.print(
            f"  declined  {_figure(g['declined_unanswerable'])} of the unanswerable, "
            f"{_figure(g['declined_answerable'])} of the answerable"
        )
        if g["answerable"]:
            out.print(
                f"  gold recall  {_figure(g['gold_recall'])} "
                f"(top chunk {_figure(g['top_chunk_recall'])}), "
                f"{_figure(g['answer_chars'], '{:.0f}')} characters "
                f"(top chunk {_figure(g['top_chunk_chars'], '{:.0f}')})"
            )
    out.print(f"[dim]time per question p50 {found['ms_p50'] or 0:.0f} ms[/]")
    if verbose:
        for a in found["asked"]:
            said = "answered" if a["answered"] else "declined"
            wrong = a["answered"] == a["unanswerable"]
            names = ", ".join(a["unmentioned"])
            kinds = ", ".join(a["lacking"])
            weighed = " and ".join(a["uncompared"])
            elsewhere = ", ".join(a["absent"])
            out.print(
                f"{'[yellow]' if wrong else ''}{escape(clean(a['id']))}: {said}"
                f"{'[/]' if wrong else ''} (confidence {_figure(a['confidence'])}"
                f", gold recall {_figure(a['gold_recall'])}"
                f"{', never mentioned: ' + escape(names) if names else ''}"
                f"{', no close sentence gives: ' + kinds if kinds else ''}"
                f"{', never compared: ' + escape(weighed) if weighed else ''}"
                f"{', not in the passages: ' + escape(elsewhere) if elsewhere else ''})",
                soft_wrap=True,
            )


def _figure(value: float | None, form: str = "{:.3f}") -> str:
    return "–" if value is None else form.format(value)


class _Working:
    """A spinner on stderr that can be told what it waits for and stopped twice."""

    def __init__(self, message: str) -> None:
        self._status = err.status(Text(message, style="dim"), spinner="dots")
        self._status.start()

    def update(self, message: str) -> None:
        self._status.update(Text(message, style="dim"))

    def stop(self) -> None:
        self._status.stop()


class _Quiet:
    def update(self, message: str) -> None:
        pass

    def stop(self) -> None:
        pass


def working(message: str) -> _Working | _Quiet:
    """A wait shown while it lasts, on a terminal only (piped output stays clean)."""
    return _Working(message) if err.is_terminal else _Quiet()


def status(message: str):
    """A spinner on a terminal while something slow happens; nothing when piped."""
    if err.is_terminal:
        return err.status(escape(clean(message)))
    from contextlib import nullcontext

    return nullcontext()


def filling(stats: dict) -> str | None:
    """ "vectors 34% — keyword matches only until done" while the vectors are stored:
    a passage that shares no word with the question is found once they are in."""
    chunks, embedded = stats.get("chunks", 0), stats.get("chunks_embedded", 0)
    if not chunks or embedded >= chunks:
        return None
    return f"vectors {100 * embedded // chunks}% — keyword matches only until done"


def show_filling(stats: dict) -> None:
    said = filling(stats)
    if said:
        out.print(escape(said), style="dim")


def show_read_as(query: str) -> None:
    """The query a question was searched as, when it was read with the one before."""
    out.print(escape(f'(read as a follow-up: "{clean(query)}")'), style="dim")


def show_stats(stats: dict) -> None:
    for key, value in stats.items():
        out.print(f"[bold]{key:<13}[/] {escape(clean(str(value)))}")


def saved(kept) -> None:
    """Where an answer was kept, on stderr (stdout may be JSON)."""
    err.print(escape(clean(f"saved to {kept.path}")), soft_wrap=True)
    if kept.indexed:
        err.print(
            "[dim]the file is inside the knowledge folder: it will be indexed and searched, "
            "but not answered from (its tag askmd-answer keeps it out; ask with --tag "
            "askmd-answer to use it)[/dim]",
            soft_wrap=True,
        )


def show_file_status(rows: list[dict]) -> None:
    """One line a file, the path last so the columns stay aligned however long paths are;
    written as it goes, plainly (rich would lay out every line of a big folder first)."""
    dated = any(r["date"] for r in rows)
    head = f"{'CHUNKS':>6}  {'INDEXED':<16}  " + (f"{'DATE':<10}  " if dated else "")
    write = sys.stdout.write
    write(f"{head}{'STATUS':<15}  FILE\n")
    counts: dict[str, int] = {}
    for r in rows:
        status, _, reason = r["status"].partition(": ")
        short = "keyword only" if status == "keyword only" else status
        counts[short] = counts.get(short, 0) + 1
        when = (r["indexed_at"] or "-")[:16].replace("T", " ")
        date = f"{(r['date'] or '-')[:10]:<10}  " if dated else ""
        why = f"  — {reason}" if reason and status == "skipped" else ""
        write(clean(f"{r['chunks']:>6,}  {when:<16}  {date}{short:<15}  {r['source']}{why}") + "\n")
    order = ["indexed", "keyword only", "not indexed yet", "skipped"]
    ranked = sorted(counts.items(), key=lambda c: order.index(c[0]) if c[0] in order else 9)
    said = ", ".join(f"{n:,} {status}" for status, n in ranked)
    write(f"{plural(len(rows), 'file')}: {said}\n" if rows else "no files\n")
    sys.stdout.flush()


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


def _pages(page_start: int | None, page_end: int | None, sep: str = "") -> str:
    """` p. 12–13` for a paged format (PDF), else nothing."""
    label = chunker.pages_label(page_start, page_end)
    return f" {label}{sep}" if label else ""


def _lines(where) -> tuple[str, str]:
    """` (lines a–b)`, which a paged format's page label stands in for."""
    if getattr(where, "page_start", None) is not None:
        return ("", "")
    return (f" (lines {where.line_start}–{where.line_end})", "green")


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
                (clean(ref.source), "bold"),
                (_pages(ref.page_start, ref.page_end), "green"),
                clean(chain),
                _lines(ref),
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
                (clean(hit.source), "bold"),
                (_pages(hit.page_start, hit.page_end), "green"),
                clean(chain),
                _lines(hit),
                style="dim",
            ),
            soft_wrap=True,
        )


def cancelled() -> None:
    err.print("[dim](cancelled)[/]")
