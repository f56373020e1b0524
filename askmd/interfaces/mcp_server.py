"""The notes inside AI assistants: the tools and resources of askmd's MCP server.

`python rag.py mcp` is started by a desktop client (Claude Desktop, Claude Code, Cursor,
VS Code…), which speaks JSON-RPC over the process's stdin and stdout. So stdout carries
protocol bytes and nothing else: the wire is a private copy of fd 1, and fd 1 itself
points at stderr from the start, where rich, logging, warnings, llama.cpp and progress
all end up, whatever writes them (Python or C).

The tools answer with the objects of the CLI's --json output (also as structured
content). Every path a client names goes through folder.py, the HTTP API's own checks;
writes exist only with --allow-write and follow the API's ingest and delete exactly. The
index is shared with a REPL or `serve` running at the same time (one writer at a time,
pipeline.Index), and a watcher keeps it in step with the folder while the server runs.
The transport is mcp_stdio.py; the tools' return types are mcp_schema.py.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import anyio
import mcp_types as types
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.mcpserver.resources.templates import ResourceSecurity
from mcp.shared.uri_template import UriTemplate
from pydantic import Field, ValidationError

from askmd import pipeline
from askmd.answer.limits import MAX_QUESTION_CHARS
from askmd.errors import AskmdError, NotFound, first_line
from askmd.interfaces import cli_common, console, folder
from askmd.interfaces.live import LiveIndex
from askmd.interfaces.mcp_schema import (
    AddResult,
    AskResult,
    DeleteResult,
    IndexStatus,
    NoteList,
    NoteText,
    RelatedNotes,
    SearchResults,
)
from askmd.pipeline import Index
from askmd.read import notes, readers
from askmd.search import where as where_conditions
from askmd.shelf import each_folder
from askmd.version import __version__

MAX_K = 50  # passages one search or answer returns: more would flood the client's context
MAX_READ_CHARS = 50_000  # one read_note or note:// read; a longer note is read by line range
MAX_LISTED = 1_000  # notes one list_notes (or the resource list) names
NOTE_URI = "note://{+path}"
LISTING_URI = "notes://list"
WRITE_QUEUE_SECONDS = 300.0  # as the API: a change behind a long one waits this long
WRITE_LOCK_SECONDS = 5.0  # ... and this long for another process's update

INSTRUCTIONS = (
    "Search and read the user's Markdown notes. search_notes finds passages (path and line "
    "range each); ask answers a question with [n] citations; read_note opens what a "
    "citation points at. Paths are relative to the notes folder."
)

Query = Annotated[str, Field(max_length=MAX_QUESTION_CHARS)]
K = Annotated[int, Field(ge=1, le=MAX_K, description=f"how many passages, 1 to {MAX_K}")]
NotesK = Annotated[int, Field(ge=1, le=MAX_K, description=f"how many notes, 1 to {MAX_K}")]
Line = Annotated[int | None, Field(ge=1, description="1-based, inclusive; front matter counts")]


# --- refusals -------------------------------------------------------------------------------


@contextmanager
def refusals() -> Iterator[None]:
    """askmd's own errors reach the client as one line: a bare exception would reach it
    only as "Error executing tool"."""
    try:
        yield
    except AskmdError as exc:
        raise ToolError(first_line(exc)) from None


def check_text(text: str | None, what: str) -> None:
    """Refuse a string holding a lone surrogate: it cannot be searched, nor sent back."""
    try:
        (text or "").encode("utf-8")
    except UnicodeEncodeError:
        raise AskmdError(f"{what} is not valid Unicode (a lone surrogate)") from None


def _problems(error: ValidationError) -> str:
    """Every wrong argument in one line, e.g. `k: input should be a valid integer`."""
    said = []
    for problem in error.errors():
        where = ".".join(str(p) for p in problem.get("loc", ())) or "arguments"
        what = str(problem.get("msg") or "invalid").removeprefix("Value error, ")
        said.append(f"{where}: {what[:1].lower()}{what[1:]}")
    return "; ".join(dict.fromkeys(said))


# --- the server -----------------------------------------------------------------------------


class NotesServer(MCPServer):
    """MCPServer with the notes as resources, one `note://` per note, and argument
    errors said in one line."""

    def __init__(self, notes_: Notes, **options: Any) -> None:
        super().__init__(**options)
        self.notes = notes_

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                problems = _problems(exc.__cause__)
                raise ToolError(f"Error executing tool {name}: {problems}") from None
            raise

    async def list_resources(self) -> list[types.Resource]:
        listed = await super().list_resources()
        entries = await anyio.to_thread.run_sync(lambda: self.notes.list_notes()["notes"])
        template = UriTemplate.parse(NOTE_URI)
        listed += [
            types.Resource(
                uri=template.expand({"path": entry["path"]}),
                name=entry["path"],
                title=entry["title"],
                mime_type="text/markdown",
            )
            for entry in entries
        ]
        return listed


class Notes:
    """What the tools and resources do, over one Index; each call runs in a worker thread."""

    def __init__(
        self, index: Index, watch: bool | None = None, live: LiveIndex | None = None
    ) -> None:
        self.index = index
        self.settings = index.settings
        self.watch = self.settings.watch if watch is None else watch
        # `serve` passes its own: the index it syncs and watches is the one MCP reads
        self.live = live or cli_common.live(
            index, warn=console.warning, on_change=_changed, on_notice=console.warning, watch=watch
        )
        self.started = self.live.started  # the start-up sync is over (done, or given up)

    @property
    def watcher(self):
        return self.live.watcher

    # -- starting ------------------------------------------------------------------------------

    def start(self) -> threading.Thread:
        """Sync, then watch, in the background: the client's handshake is answered at once,
        and a tool waits for the sync (index_status does not)."""
        return self.live.start_in_background(self._sync)

    def _sync(self) -> None:
        try:
            cli_common.show_sync(self.index, self.live.sync(cli_common.progress(self.index)))
        except AskmdError as exc:
            console.error(first_line(exc))
        except Exception as exc:  # noqa: BLE001 - the tools still answer from the index
            console.error(f"the start-up sync failed: {type(exc).__name__}: {first_line(exc)}")

    def stop(self) -> None:
        """Stop the start-up sync, the watcher and the filler (LiveIndex.stop)."""
        self.live.stop()

    def ready(self) -> None:
        """Before a read: the start-up sync is over, and without a watcher the index is
        brought in step (a no-change sync is one stat a note)."""
        self.started.wait()
        if self.watcher is None and not self.watch:
            for _, each in each_folder(self.index):
                if not each.read_only:
                    each.keeper.sync_to_read(warn=console.warning)

    # -- tools ---------------------------------------------------------------------------------

    def search_notes(
        self,
        query: Query,
        k: K = 5,
        source: str | None = None,
        heading_level: int | None = None,
        tags: list[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        where: list[str] | None = None,
        folders: list[str] | None = None,
    ) -> SearchResults:
        """Search the notes by keyword and meaning together: the best passages, each with
        its file (`source`), heading chain and line range, best first. `source` is a
        path glob (e.g. "guides/**"); `heading_level` N keeps passages under headings of
        level N or higher (1 = H1); `tags` keeps passages carrying every tag given
        ("project" also takes "project/alpha"); `since` and `until` (YYYY-MM-DD, both
        included) keep passages of notes or entries dated within them; `where` keeps the
        notes whose front matter meets every condition: KEY=VALUE, KEY!=VALUE, KEY>=VALUE,
        KEY<=VALUE or KEY~TEXT (contains), e.g. ["type=meeting", "rating>=4"]. When the
        server reads several folders, each result names its `folder` and that folder's
        `folder_description`, and `folders` (labels) keeps only theirs."""
        with refusals():
            if not query.strip():
                raise AskmdError("the query is empty")
            check_text(query, "the query")
            check_text(source, "source")
            filters = pipeline.filters(
                source, heading_level, tags=tags, since=since, until=until, where=where,
                where_name="where", folders=folders,
            )  # fmt: skip
            self.ready()
            hits = self.index.search(query, k, filters=filters)
            return pipeline.search_json(query, hits)

    def ask(
        self,
        question: Query,
        k: K = 5,
        tags: list[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        where: list[str] | None = None,
        folders: list[str] | None = None,
    ) -> AskResult:
        """Answer a question from the notes, with [n] citations checked against the
        passages and a reference for each (file, heading chain, lines, the quoted
        fragment). `mode` is "llm" when a model wrote it, "extractive" when it quotes the
        notes' own sentences (no LLM configured, or it failed: `llm_error` says why).
        `answered` is false when the notes don't answer the question: then nothing is
        cited and `nearest` points at the closest passages. `unsupported_citations` lists
        the passages a model's answer cites for what they do not say.
        `tags` answers only from passages carrying every tag given; `since` and `until`
        (YYYY-MM-DD, both included) only from notes or entries dated within them; `where`
        only from notes whose front matter meets every condition (as search_notes);
        `folders` only from those folders, by label, when the server reads several."""
        with refusals():
            if not question.strip():
                raise AskmdError("the question is empty")
            check_text(question, "the question")
            filters = pipeline.filters(
                None, None, tags=tags, since=since, until=until, where=where,
                where_name="where", folders=folders,
            )  # fmt: skip
            self.ready()
            return self.index.ask(question, [], k, filters=filters).to_json()

    def read_note(
        self, path: str, line_start: Line = None, line_end: Line = None
    ) -> Annotated[types.CallToolResult, NoteText]:
        """A note's text, or lines line_start..line_end of it (the numbers a citation
        gives). At most 50,000 characters a call: a longer range is cut at a line end and
        says where to read on."""
        with refusals():
            note = self._read(path, line_start, line_end)
        text = note["text"]
        if note["truncated"]:
            text += (
                f"\n[truncated at line {note['line_end']} of {note['total_lines']}: one read "
                f"returns at most {MAX_READ_CHARS:,} characters; read on with "
                f"line_start={note['line_end'] + 1}]"
            )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content=dict(note)
        )

    def list_notes(self, glob: str | None = None) -> NoteList:
        """The notes in the index (optionally those whose path matches `glob`, e.g.
        "guides/**"), with their chunk counts and titles; at most 1,000 are named."""
        with refusals():
            if glob is not None and not glob.strip():
                glob = None
            check_text(glob, "glob")
            self.ready()
            found = []  # (label, index, source, chunks)
            for label, index in each_folder(self.index):
                index.follow()
                files = index.manifest.files()
                found += [
                    (label, index, s, files[s].chunks)
                    for s in sorted(files)
                    if glob is None or notes.matches(s, (glob,))
                ]
            sources = [f"{label}:{s}" if label else s for label, _, s, _ in found]
            shown = found[:MAX_LISTED]
            titles: dict[tuple[str, str], str] = {}
            for label, index in each_folder(self.index):
                theirs = [s for lb, _, s, chunks in shown if lb == label and chunks]
                titles.update(((label, s), t) for s, t in self._titles(index, theirs).items())
            entries = [
                {
                    "path": f"{label}:{source}" if label else source,
                    "chunks": chunks,
                    "title": titles.get((label, source)) or _stem(source),
                }
                for label, _, source, chunks in shown
            ]
            return {
                "glob": glob,
                "count": len(sources),
                "truncated": len(sources) > len(shown),
                "notes": entries,
            }

    def related_notes(
        self, note: str, k: NotesK = 10, where: list[str] | None = None
    ) -> RelatedNotes:
        """The notes most related to a note (its path, or its name as a link gives it), by
        meaning, links and shared tags, best first: each says why and whether the two are
        linked already. "similar words" in place of "similar": its vectors are not stored
        yet, so meaning is judged by its words. `where`: only notes whose front matter
        meets every condition (as search_notes)."""
        with refusals():
            check_text(note, "note")
            conditions = where_conditions.parse_all(where, "where")
            self.ready()
            return self.index.graph.related(note, k, where=conditions)

    def index_status(self) -> IndexStatus:
        """What is indexed (the `stats --json` object), whether a sync is running now, and
        whether saved changes are being watched."""
        with refusals():
            stats = self.index.graph.stats()
            syncing = not self.started.is_set() or any(
                _lock_held(each.settings.index_dir) for _, each in each_folder(self.index)
            )
            watching = self.watcher is not None and self.watcher.ready.is_set()
            return {**stats, "syncing": syncing, "watching": watching}

    def add_note(self, path: str, content: str) -> AddResult:
        """Write a note into the folder and index it (the HTTP API's ingest): `status` is
        created, updated (the old version goes to the trash) or unchanged."""
        with refusals():
            self.started.wait()
            index, path = self._written(path)
            return folder.ingest(
                index,
                content=content,
                file_name=path,
                queue=WRITE_QUEUE_SECONDS,
                wait=WRITE_LOCK_SECONDS,
            )

    def delete_note(self, path: str) -> DeleteResult:
        """Move a note to the trash folder inside the index folder (nothing is lost) and
        take it out of the index (the HTTP API's DELETE)."""
        with refusals():
            self.started.wait()
            index, path, _ = self._which(path)
            return folder.delete(index, path, queue=WRITE_QUEUE_SECONDS, wait=WRITE_LOCK_SECONDS)

    # -- reading ----------------------------------------------------------------------------

    def _read(self, path: str, line_start: int | None, line_end: int | None) -> NoteText:
        """Lines of a note confined to the knowledge folder, numbered as the index numbers
        them: a Markdown file's own lines (front matter counted); for a PDF, Word, HTML or
        text file, the lines of the text read out of it."""
        index, path, label = self._which(path)
        settings = index.settings
        source = folder.existing(settings, path)
        where = settings.knowledge_dir / source
        limit = settings.max_file_bytes
        try:
            if readers.kind(source) is not None:  # PDF, Word, HTML, text: as it was indexed
                text = notes.read(settings.knowledge_dir, source, limit).text
            elif where.stat().st_size > limit:
                raise AskmdError(f"{source} is over the {limit / 1048576:.4g} MB limit")
            else:
                text = notes.decode(where.read_bytes())
        except notes.Unreadable as exc:
            raise AskmdError(f"{source}: {exc}") from None
        except OSError as exc:
            raise AskmdError(f"{source} cannot be read ({exc.strerror or exc})") from None
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        total = len(lines)
        first = line_start or 1
        last = min(line_end or total, total)
        if line_end is not None and line_end < first:
            raise AskmdError(f"line_end {line_end} is before line_start {first}")
        if first > max(total, 1):
            raise AskmdError(f"line_start {first}: {source} has {total} lines")
        shown, size, cut = [], 0, False
        for line in lines[first - 1 : last]:
            if size + len(line) + 1 > MAX_READ_CHARS and shown:
                break
            cut = cut or len(line) > MAX_READ_CHARS  # one line longer than a whole read
            shown.append(line[:MAX_READ_CHARS])
            size += len(line) + 1
        end = first + len(shown) - 1 if shown else first - 1
        return {
            "path": f"{label}:{source}" if label else source,
            "line_start": first,
            "line_end": max(end, first - 1),
            "total_lines": total,
            "truncated": end < last or cut,
            "text": "\n".join(shown),
        }

    def read_resource(self, path: str) -> str:
        """A note:// resource: the whole note, or its first MAX_READ_CHARS characters."""
        try:
            note = self._read(path, None, None)
        except NotFound as exc:
            raise ResourceNotFoundError(first_line(exc)) from None
        except AskmdError as exc:
            raise ResourceError(first_line(exc)) from None
        if note["truncated"]:
            return (
                note["text"] + f"\n[truncated at line {note['line_end']} of {note['total_lines']}]"
            )
        return note["text"]

    def _written(self, path: str) -> tuple[Index, str]:
        """Where a new note goes: of several folders, `LABEL:PATH`, else the first."""
        if isinstance(self.index, Index):
            return self.index, path
        label, colon, rest = path.partition(":")
        if colon and label in self.index.labels:
            return self.index.folder(label).index, rest
        return self.index.folders[0].index, path

    def _which(self, path: str) -> tuple[Index, str, str]:
        """The folder of a note's path, the path within it, and the folder's label: of
        several folders, `LABEL:PATH`, or a path only one of them has."""
        if isinstance(self.index, Index):
            return self.index, path, ""
        label, colon, rest = path.partition(":")
        if colon and label in self.index.labels:
            return self.index.folder(label).index, rest, label
        having = [
            (label, index)
            for label, index in each_folder(self.index)
            if (index.settings.knowledge_dir / path).is_file()
        ]
        if len(having) != 1:
            listed = ", ".join(self.index.labels)
            raise NotFound(f"{path!r}: name the note as LABEL:PATH (folders: {listed})")
        return having[0][1], path, having[0][0]

    def _titles(self, index: Index, sources: list[str]) -> dict[str, str]:
        """Each note's title, as its first chunk carries it in the store."""
        if not sources:
            return {}
        with index.reading() as store:
            found = store.get([f"{s}#0" for s in sources])
        return {c.metadata.get("source", ""): str(c.metadata.get("title") or "") for c in found}


def _stem(source: str) -> str:
    return source.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def _lock_held(index_dir) -> bool:
    """Whether an askmd process is updating the index now: the lock file names its pid
    while it is held, and is emptied when it is let go."""
    try:
        holder = (index_dir / "lock").read_text().strip()
    except OSError:
        return False
    if not holder.isdigit():
        return False
    try:
        os.kill(int(holder), 0)
    except ProcessLookupError:
        return False  # a writer that was killed leaves its pid behind
    except PermissionError:
        pass
    return True


def _changed(change) -> None:
    """A change the watcher applied, on stderr (a client keeps it in its log)."""
    console.err.print(f"{change.time[11:]} {console.clean(change.line())}", markup=False)


def _folders_said(index) -> str:
    """What each folder holds, for the client, when several are read."""
    if isinstance(index, Index):
        return ""
    listed = "\n".join(f"- {f.label}: {f.description or '(no description)'}" for f in index.folders)
    return (
        "\n\nThe notes come from several folders, each named by its label in results and "
        f"paths (LABEL:PATH); `folders` narrows search_notes and ask to some:\n{listed}"
    )


def build(
    index: Index,
    allow_write: bool = False,
    watch: bool | None = None,
    live: LiveIndex | None = None,
) -> NotesServer:
    """The server over `index`: the read tools, the write tools only with `allow_write`,
    and the notes as resources. Nothing runs until `notes.start()`, unless `live` (the
    `serve` command's) keeps the index in step already."""
    notes_ = Notes(index, watch, live)
    server = NotesServer(
        notes_,
        name="askmd",
        version=__version__,
        instructions=INSTRUCTIONS + _folders_said(index),
        log_level="WARNING",  # a refused call is the client's answer, not a log line
    )
    read = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
    for tool in (notes_.search_notes, notes_.ask, notes_.read_note, notes_.list_notes):
        server.add_tool(tool, annotations=read)
    server.add_tool(notes_.index_status, annotations=read)
    server.add_tool(notes_.related_notes, annotations=read)
    if allow_write:
        write = types.ToolAnnotations(read_only_hint=False, open_world_hint=False)
        server.add_tool(notes_.add_note, annotations=write)
        delete = types.ToolAnnotations(read_only_hint=False, destructive_hint=True)
        server.add_tool(notes_.delete_note, annotations=delete)

    @server.resource(
        NOTE_URI,
        name="note",
        description="a note of the folder, by its path inside it",
        mime_type="text/markdown",
        security=ResourceSecurity(exempt_params={"path"}),  # folder.py checks every path
    )
    async def note(path: str) -> str:
        return await anyio.to_thread.run_sync(notes_.read_resource, path)

    @server.resource(
        LISTING_URI,
        name="notes",
        description="every note in the index, with its chunk count and title (JSON)",
        mime_type="application/json",
    )
    async def listing() -> str:
        found = await anyio.to_thread.run_sync(notes_.list_notes)
        return json.dumps(found, ensure_ascii=False, indent=1)

    return server
