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

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

from askmd.read import chunker
from askmd.wording import INVISIBLE, plural

if TYPE_CHECKING:
    pass

out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False, soft_wrap=True)
CITATION_STYLE = "bold cyan"

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
            (pages(c.page_start, c.page_end, " ").lstrip(), "green"),
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


def show_sync(report, knowledge_dir=None, include=(), label: str = "") -> None:
    """The sync's warnings (once per session each), then one line for what it did (led by
    its folder's `label` when several are answered from)."""

    def say(line: str) -> None:
        err.print(f"{escape(label)}: {line}" if label else line)

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
        say(f"rebuilt: {_rebuilt(report)}{also} ({report.seconds:.1f} s)")
        return
    touched = report.files_added + report.files_changed + report.files_deleted
    waiting = getattr(report, "chunks_waiting", 0)
    still = f", {waiting:,} waiting for vectors" if waiting else ""
    if not touched and report.chunks_embedded:  # vectors a keyword-only run left waiting
        say(
            f"indexed: {report.files_unchanged} unchanged; vectors stored for "
            f"{plural(report.chunks_embedded, 'chunk')} that were waiting{also}; "
            f"{plural(report.chunks_total, 'chunk')} in the index{still} ({report.seconds:.1f} s)"
        )
        return
    if not touched:
        say(
            f"[dim]index up to date: {plural(report.files_unchanged, 'file')}, "
            f"{plural(report.chunks_total, 'chunk')}{still}{also} ({report.seconds:.2f} s)[/]"
        )
        return
    say(
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
    """Each figure on a line; several folders' one after another, each led by its label
    and description."""
    if "folders" not in stats:
        for key, value in stats.items():
            out.print(f"[bold]{key:<13}[/] {escape(clean(str(value)))}")
        return
    for key in ("files", "chunks", "chunks_embedded"):
        out.print(f"[bold]{key:<13}[/] {stats[key]} in all")
    for folder in stats["folders"]:
        folder = dict(folder)
        label, description = folder.pop("label"), folder.pop("description")
        out.print(f"\n[bold]{escape(clean(label))}[/]", soft_wrap=True)
        if description:
            out.print(f"[dim]{escape(clean(description))}[/]", soft_wrap=True)
        show_stats(folder)
    for gone in stats.get("missing", ()):
        label, path = escape(clean(gone["label"])), escape(clean(gone["knowledge_dir"]))
        out.print(f"\n[bold]{label}[/] missing: {path}")


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
        file = f"{r['folder']}:{r['source']}" if r.get("folder") else r["source"]
        write(clean(f"{r['chunks']:>6,}  {when:<16}  {date}{short:<15}  {file}{why}") + "\n")
    order = ["indexed", "keyword only", "not indexed yet", "skipped"]
    ranked = sorted(counts.items(), key=lambda c: order.index(c[0]) if c[0] in order else 9)
    said = ", ".join(f"{n:,} {status}" for status, n in ranked)
    write(f"{plural(len(rows), 'file')}: {said}\n" if rows else "no files\n")
    sys.stdout.flush()


def pages(page_start: int | None, page_end: int | None, sep: str = "") -> str:
    """` p. 12–13` for a paged format (PDF), else nothing."""
    label = chunker.pages_label(page_start, page_end)
    return f" {label}{sep}" if label else ""


def lines(where) -> tuple[str, str]:
    """` (lines a–b)`, which a paged format's page label stands in for."""
    if getattr(where, "page_start", None) is not None:
        return ("", "")
    return (f" (lines {where.line_start}–{where.line_end})", "green")
