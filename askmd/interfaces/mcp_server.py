"""The notes inside AI assistants: a Model Context Protocol server over stdio.

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
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated, Any

import anyio
import mcp_types as types
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.mcpserver.resources.templates import ResourceSecurity
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from mcp.shared.uri_template import UriTemplate
from pydantic import ConfigDict, Field, ValidationError, with_config
from typing_extensions import TypedDict

from askmd import pipeline
from askmd.answer.limits import MAX_QUESTION_CHARS
from askmd.errors import AskmdError, NotFound, first_line
from askmd.interfaces import console, folder
from askmd.interfaces.live import LiveIndex
from askmd.pipeline import Index
from askmd.read import notes, readers
from askmd.version import __version__

MAX_K = 50  # passages one search or answer returns: more would flood the client's context
MAX_READ_CHARS = 50_000  # one read_note or note:// read; a longer note is read by line range
MAX_LISTED = 1_000  # notes one list_notes (or the resource list) names
NOTE_URI = "note://{+path}"
LISTING_URI = "notes://list"
WRITE_QUEUE_SECONDS = 300.0  # as the API: a change behind a long one waits this long
WRITE_LOCK_SECONDS = 5.0  # ... and this long for another process's update
MAX_LINE_BYTES = 8 * 1024 * 1024  # one JSON-RPC message; a longer line is refused unread
READ_BYTES = 64 * 1024
EOF = object()  # what `next` gives once stdin is closed

INSTRUCTIONS = (
    "Search and read the user's Markdown notes. search_notes finds passages (path and line "
    "range each); ask answers a question with [n] citations; read_note opens what a "
    "citation points at. Paths are relative to the notes folder."
)

Query = Annotated[str, Field(max_length=MAX_QUESTION_CHARS)]
K = Annotated[int, Field(ge=1, le=MAX_K, description=f"how many passages, 1 to {MAX_K}")]
NotesK = Annotated[int, Field(ge=1, le=MAX_K, description=f"how many notes, 1 to {MAX_K}")]
Line = Annotated[int | None, Field(ge=1, description="1-based, inclusive; front matter counts")]


# --- the results: the CLI's --json objects --------------------------------------------------

# A field the CLI's JSON gains is passed on, not dropped by the schema.
OPEN = ConfigDict(extra="allow")


@with_config(OPEN)
class SearchResult(TypedDict):
    rank: int
    score: float
    source: str
    heading_chain: str
    line_start: int
    line_end: int
    chunk_id: str
    text: str


class SearchResults(TypedDict):
    query: str
    retriever: str  # "hybrid", or "keyword" while the vectors are still being stored
    results: list[SearchResult]


@with_config(OPEN)
class ReferenceJson(TypedDict):
    n: int
    source: str
    heading_chain: str
    line_start: int
    line_end: int
    text: str
    supported: bool | None  # False: the answer cites this passage for what it does not say


class PointerJson(TypedDict):
    source: str
    heading_chain: str
    line_start: int
    line_end: int


class ReasonJson(TypedDict):
    # why the notes do not answer (askmd/answer/reasons.py): "unmentioned", "uncompared",
    # "absent", "not_days", "other_days", "neighbour" or "lacking"
    kind: str
    items: list[str]  # the names, days or kinds of value it is about
    given_for: list[str]  # "neighbour": what the closest passages give the value for
    value: str  # "neighbour": the kind of value


@with_config(OPEN)
class AskResult(TypedDict):
    question: str
    answer: str
    mode: str  # "llm", or "extractive" (no LLM configured, or it failed: llm_error says why)
    citations: list[int]
    invalid_citations: list[int]
    references: list[ReferenceJson]
    retrieval_ms: float
    generation_ms: float
    rerank_ms: float | None
    query: str
    llm_error: str | None
    retriever: str
    answered: bool  # False: the notes don't answer it; nothing is cited, `nearest` points
    confidence: float | None
    nearest: list[PointerJson]
    unsupported_citations: list[int]
    dates: dict | None  # {"since", "until"}: the days the question named or were given
    reasons: list[ReasonJson]  # why it was declined, or what to check in an answer


class NoteText(TypedDict):
    path: str
    line_start: int
    line_end: int
    total_lines: int
    truncated: bool  # the range was longer than MAX_READ_CHARS: read on from line_end + 1
    text: str


class NoteEntry(TypedDict):
    path: str
    chunks: int
    title: str


class NoteList(TypedDict):
    glob: str | None
    count: int  # notes matching, all of them
    truncated: bool  # more than MAX_LISTED matched: narrow the glob
    notes: list[NoteEntry]


class IndexStatus(TypedDict):
    knowledge_dir: str
    files: int
    chunks: int
    embedder: str
    dimension: int
    index_dir: str
    last_sync: str | None
    links: int  # links written in the notes
    broken_links: int  # of those, the ones that lead to no note
    chunks_embedded: int  # chunks whose vectors are stored; the rest are found by keyword
    keyword_ready: bool  # every note is recorded for keyword search
    collection: str  # the Chroma collection holding the vectors
    filler: str  # vectors stored in the background: "running", "stopped: <why>" or "off"
    syncing: bool  # this server's start-up sync, or any process's update, is running
    watching: bool  # changes saved in the folder reach the index as they happen


@with_config(OPEN)
class RelatedNote(TypedDict):
    source: str
    score: float
    linked: bool  # already linked to or from the note
    why: list[str]  # "similar", "links to it", "linked from it", "shared links", "shared tag #x"


class RelatedNotes(TypedDict):
    note: str
    related: list[RelatedNote]


class AddResult(TypedDict):
    status: str  # "created", "updated" or "unchanged"
    file: str
    chunks: int


class DeleteResult(TypedDict):
    status: str
    file: str
    chunks: int
    trash: str | None


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

    def __init__(self, index: Index, watch: bool | None = None) -> None:
        self.index = index
        self.settings = index.settings
        self.watch = self.settings.watch if watch is None else watch
        self.live = LiveIndex(
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
            report = self.live.sync(console.SyncProgress())
            if report is not None:
                console.show_sync(report, self.settings.knowledge_dir, self.settings.include)
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
        if self.watcher is None and not self.watch and not self.index.read_only:
            self.index.keeper.sync_to_read(warn=console.warning)

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
    ) -> SearchResults:
        """Search the notes by keyword and meaning together: the best passages, each with
        its file (`source`), heading chain and line range, best first. `source` is a
        path glob (e.g. "guides/**"); `heading_level` N keeps passages under headings of
        level N or higher (1 = H1); `tags` keeps passages carrying every tag given
        ("project" also takes "project/alpha"); `since` and `until` (YYYY-MM-DD, both
        included) keep passages of notes or entries dated within them."""
        with refusals():
            if not query.strip():
                raise AskmdError("the query is empty")
            check_text(query, "the query")
            check_text(source, "source")
            filters = pipeline.filters(source, heading_level, tags=tags, since=since, until=until)
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
    ) -> AskResult:
        """Answer a question from the notes, with [n] citations checked against the
        passages and a reference for each (file, heading chain, lines, the quoted
        fragment). `mode` is "llm" when a model wrote it, "extractive" when it quotes the
        notes' own sentences (no LLM configured, or it failed: `llm_error` says why).
        `answered` is false when the notes don't answer the question: then nothing is
        cited and `nearest` points at the closest passages. `unsupported_citations` lists
        the passages a model's answer cites for what they do not say.
        `tags` answers only from passages carrying every tag given; `since` and `until`
        (YYYY-MM-DD, both included) only from notes or entries dated within them."""
        with refusals():
            if not question.strip():
                raise AskmdError("the question is empty")
            check_text(question, "the question")
            filters = pipeline.filters(None, None, tags=tags, since=since, until=until)
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
            self.index.follow()
            files = self.index.manifest.files()
            sources = sorted(s for s in files if glob is None or notes.matches(s, (glob,)))
            shown = sources[:MAX_LISTED]
            titles = self._titles([s for s in shown if files[s].chunks])
            entries = [
                {"path": s, "chunks": files[s].chunks, "title": titles.get(s) or _stem(s)}
                for s in shown
            ]
            return {
                "glob": glob,
                "count": len(sources),
                "truncated": len(sources) > len(shown),
                "notes": entries,
            }

    def related_notes(self, note: str, k: NotesK = 10) -> RelatedNotes:
        """The notes most related to a note (its path, or its name as a link gives it), by
        meaning, links and shared tags, best first: each says why and whether the two are
        linked already. "similar words" in place of "similar": its vectors are not stored
        yet, so meaning is judged by its words."""
        with refusals():
            check_text(note, "note")
            self.ready()
            return self.index.graph.related(note, k)

    def index_status(self) -> IndexStatus:
        """What is indexed (the `stats --json` object), whether a sync is running now, and
        whether saved changes are being watched."""
        with refusals():
            stats = self.index.graph.stats()
            syncing = not self.started.is_set() or _lock_held(self.settings.index_dir)
            watching = self.watcher is not None and self.watcher.ready.is_set()
            return {**stats, "syncing": syncing, "watching": watching}

    def add_note(self, path: str, content: str) -> AddResult:
        """Write a note into the folder and index it (the HTTP API's ingest): `status` is
        created, updated (the old version goes to the trash) or unchanged."""
        with refusals():
            self.started.wait()
            return folder.ingest(
                self.index,
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
            return folder.delete(
                self.index, path, queue=WRITE_QUEUE_SECONDS, wait=WRITE_LOCK_SECONDS
            )

    # -- reading ----------------------------------------------------------------------------

    def _read(self, path: str, line_start: int | None, line_end: int | None) -> NoteText:
        """Lines of a note confined to the knowledge folder, numbered as the index numbers
        them: a Markdown file's own lines (front matter counted); for a PDF, Word, HTML or
        text file, the lines of the text read out of it."""
        source = folder.existing(self.settings, path)
        where = self.settings.knowledge_dir / source
        limit = self.settings.max_file_bytes
        try:
            if readers.kind(source) is not None:  # PDF, Word, HTML, text: as it was indexed
                text = notes.read(self.settings.knowledge_dir, source, limit).text
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
            "path": source,
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

    def _titles(self, sources: list[str]) -> dict[str, str]:
        """Each note's title, as its first chunk carries it in the store."""
        if not sources:
            return {}
        with self.index.reading() as store:
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


def build(index: Index, allow_write: bool = False, watch: bool | None = None) -> NotesServer:
    """The server over `index`: the read tools, the write tools only with `allow_write`,
    and the notes as resources. Nothing runs until `notes.start()`."""
    notes_ = Notes(index, watch)
    server = NotesServer(
        notes_,
        name="askmd",
        version=__version__,
        instructions=INSTRUCTIONS,
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


# --- stdio ------------------------------------------------------------------------------------


def divert_stdout() -> io.BufferedWriter:
    """The protocol's own copy of stdout; fd 1 then points at stderr for the rest of the
    process, so nothing else (a print, a C library, a child process) reaches the wire."""
    sys.stdout.flush()
    wire = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    return wire


class ParseError(Exception):
    """A line that is no JSON-RPC message: answered with an error at once, not handed on
    (the SDK drops it unanswered). `code` is -32700 for a line that is not JSON, -32600
    for JSON that is not a message."""

    def __init__(self, message: str, code: int = types.PARSE_ERROR, id: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.id = id if isinstance(id, str | int) and not isinstance(id, bool) else None


_NULL_ID = re.compile(r'"id"\s*:\s*null')


def parse(line: str) -> SessionMessage | ParseError:
    """One JSON-RPC message from a line. The SDK's own parser refuses a lone surrogate
    (`"\\ud800"`, valid JSON) and the request would then go unanswered, so such a line is
    parsed by Python's json and validated as an object: the tool then refuses the string
    in one line. JSON nested deeper than Python's json recurses is not JSON here."""
    if _NULL_ID.search(line):  # MCP: "the ID MUST NOT be null"; read as a notification
        try:  # it would go unanswered and the client wait for ever
            message = json.loads(line)
        except (ValueError, RecursionError):
            message = None
        if isinstance(message, dict) and "id" in message and message["id"] is None:
            return ParseError("Invalid request: its id is null", types.INVALID_REQUEST)
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValidationError:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            return ParseError("Parse error: not JSON")
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(message, by_name=False))
    except (ValidationError, RecursionError):
        id = message.get("id") if isinstance(message, dict) else None
        return ParseError("Invalid request: not a JSON-RPC message", types.INVALID_REQUEST, id)


def lines(stream: io.BufferedIOBase, limit: int = MAX_LINE_BYTES) -> Iterator[bytes | None]:
    """The lines of `stream`, read a block at a time so that none is held past `limit`
    bytes: a longer line yields None as soon as it is over, and the rest of it, up to its
    newline, is read and dropped (a client's runaway line must not fill the memory)."""
    pending = bytearray()
    skipping = False
    while block := stream.read1(READ_BYTES):
        start = 0
        while (end := block.find(b"\n", start)) != -1:
            if not skipping:
                pending += block[start:end]
                yield None if len(pending) > limit else bytes(pending)
            pending.clear()
            skipping = False
            start = end + 1
        if not skipping:
            pending += block[start:]
            if len(pending) > limit:
                pending.clear()
                skipping = True
                yield None
    if pending and not skipping:
        yield bytes(pending)


def refused(problem: ParseError) -> SessionMessage:
    """The JSON-RPC error answering a line that was no message."""
    error = types.ErrorData(code=problem.code, message=str(problem))
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=problem.id, error=error))


@asynccontextmanager
async def stdio(wire: io.BufferedWriter) -> AsyncIterator[tuple[Any, Any]]:
    """The stdio transport (the SDK's, with `parse` and `lines` for reading): lines of
    JSON from stdin, lines of JSON to `wire`. It ends when the client closes stdin; a line
    it cannot read is answered with an error and the next one is read."""
    incoming = lines(sys.stdin.buffer)
    out = anyio.wrap_file(io.TextIOWrapper(wire, encoding="utf-8", write_through=True))
    read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_reader = create_context_streams[SessionMessage](0)
    writing = anyio.Lock()

    async def send(message: SessionMessage) -> None:
        text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
        async with writing:
            try:
                await out.write(text + "\n")
            except (BrokenPipeError, ConnectionResetError):
                # the client no longer reads: nothing more can be answered
                tasks.cancel_scope.cancel()

    async def reader() -> None:
        async with read_writer:
            while (
                line := await anyio.to_thread.run_sync(next, incoming, EOF, abandon_on_cancel=True)
            ) is not EOF:
                if line is None:
                    limit = MAX_LINE_BYTES / 1048576
                    await send(refused(ParseError(f"Parse error: a line over {limit:.4g} MB")))
                elif line.strip():
                    message = parse(line.decode("utf-8", errors="replace"))
                    if isinstance(message, ParseError):
                        await send(refused(message))
                    else:
                        await read_writer.send(message)

    async def writer() -> None:
        async with write_reader:
            async for message in write_reader:
                await send(message)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(reader)
        tasks.start_soon(writer)
        yield read_stream, write_stream


async def _serve(server: NotesServer, wire: io.BufferedWriter) -> None:
    async with stdio(wire) as (read_stream, write_stream):
        lowlevel = server._lowlevel_server
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def serve(settings, allow_write: bool = False) -> int:
    """`python rag.py mcp`: serve until the client closes stdin, then exit 0."""
    wire = divert_stdout()
    index = Index(settings, loading=console.status)
    server = build(index, allow_write)
    with server.notes.live:  # stopped on leaving, however it ends
        server.notes.start()
        mode = "read and write" if allow_write else "read-only"
        console.err.print(
            f"askmd MCP server over {settings.knowledge_dir.resolve()}/ ({mode}), on stdio"
        )
        anyio.run(_serve, server, wire)
    return 0
