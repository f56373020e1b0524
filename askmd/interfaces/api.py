"""The HTTP API and the web page: the same pipeline as the REPL, as JSON over HTTP.

Endpoints under /api/v1 answer with the same objects as the CLI's --json output. Errors
are always {"error": "one line"} with a fitting status, never a traceback. The checks
that keep the API private (host, origin, token, size, content type) are in guard.py.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from askmd import pipeline
from askmd.answer.followup import MAX_TURNS
from askmd.answer.limits import MAX_QUESTION_CHARS
from askmd.answer.result import Turn
from askmd.errors import AskmdError, BadRequest, first_line
from askmd.interfaces import folder, guard, mcp_http
from askmd.interfaces.syncing import Syncer
from askmd.pipeline import Index
from askmd.search import retriever
from askmd.search import where as where_conditions
from askmd.shelf import each_folder

if TYPE_CHECKING:
    from askmd.interfaces.mcp_server import NotesServer

WEB = Path(__file__).resolve().parent / "web"
MAX_QUERY_CHARS = MAX_QUESTION_CHARS
WRITER_WAIT_SECONDS = 300.0  # an ingest behind a long one waits this long, then 409
LOCK_WAIT_SECONDS = 5.0  # a change waits this long for another process's update, then 409
MAX_HISTORY = 50  # turns accepted; the last few are used (as in the REPL)
MAX_TURN_CHARS = 20_000
MAX_RELATED = 200  # notes one related call lists, as search's top_k

log = logging.getLogger("askmd.server")


# --- request bodies ---------------------------------------------------------------------


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt field is an error, not ignored


class FiltersBody(_Body):
    source: str | None = Field(None, max_length=1000, examples=["guides/**"])
    heading_level: int | None = Field(None, ge=1, le=4)
    tag: list[str] | None = Field(None, max_length=20, examples=[["project"]])
    since: str | None = Field(None, max_length=40, examples=["2026-01-01"])
    until: str | None = Field(None, max_length=40, examples=["2026-01-31"])
    where: list[str] | None = Field(
        None, max_length=20, examples=[["type=meeting", "rating>=4"]],
        description="conditions on the notes' front matter, all of which must hold: KEY=VALUE, "
        "KEY!=VALUE, KEY>=VALUE, KEY<=VALUE or KEY~TEXT (contains)",
    )  # fmt: skip
    folders: list[str] | None = Field(
        None, max_length=20, examples=[["work"]],
        description="only these folders' notes, by label, when several are served",
    )  # fmt: skip

    def filters(self) -> retriever.Filters | None:
        return pipeline.filters(
            self.source, self.heading_level, tags=self.tag, since=self.since, until=self.until,
            where=self.where, where_name="filters.where", folders=self.folders,
        )  # fmt: skip


class IngestBody(_Body):
    file_path: str | None = Field(
        None, description="a note already inside the knowledge folder (relative or absolute)"
    )
    content: str | None = Field(None, description="the note's Markdown text, written as file_name")
    content_base64: str | None = Field(
        None, description="a PDF, DOCX, HTML, TXT or Markdown file's bytes, base64, written as "
        "file_name",
    )  # fmt: skip
    file_name: str | None = Field(None, description="where to write content, e.g. guides/vpn.md")
    folder: str | None = Field(
        None, description="the label of the folder to write into, when several are served "
        "(default: the first)",
    )  # fmt: skip


class SearchBody(_Body):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    top_k: int | None = Field(None, ge=1, le=200)
    filters: FiltersBody | None = None


class Exchange(_Body):
    """One earlier turn, as {question, answer} or as an OpenAI-style message."""

    question: str | None = Field(None, max_length=MAX_TURN_CHARS)
    answer: str | None = Field(None, max_length=MAX_TURN_CHARS)
    role: Literal["user", "assistant"] | None = None
    content: str | None = Field(None, max_length=MAX_TURN_CHARS)


class AskBody(_Body):
    question: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    history: Annotated[list[Exchange], Field(max_length=MAX_HISTORY)] = []
    stream: bool = False
    top_k: int | None = Field(None, ge=1, le=200)
    filters: FiltersBody | None = None


def turns(history: list[Exchange]) -> list[Turn]:
    """Earlier exchanges as Turns; OpenAI-style messages are paired user → assistant."""
    result: list[Turn] = []
    asked: str | None = None
    for item in history:
        if item.role is None:
            if item.question is None:
                raise BadRequest("history: each item needs question and answer (or role/content)")
            result.append(Turn(item.question, item.question, item.answer or ""))
        elif item.role == "user":
            asked = item.content or ""
        elif asked is not None:
            result.append(Turn(asked, asked, item.content or ""))
            asked = None
    return result[-MAX_TURNS:]


# --- the app ----------------------------------------------------------------------------


def create_app(
    index: Index, loopback_only: bool = True, mcp: NotesServer | None = None
) -> FastAPIOffline:
    """The app over `index`; `loopback_only` is False when it listens beyond this machine
    (which the server allows only with a token). With `mcp`, MCP's tools and resources
    are served at /mcp too, behind the same guard (mcp_http.py)."""
    settings = index.settings
    # Notes saved on disk: the watcher applies them (serve starts it); with ASKMD_WATCH=0 a
    # search or ask still wakes a background re-scan now and then.
    syncers = [] if settings.watch else [Syncer(each) for _, each in each_folder(index)]
    app = FastAPIOffline(
        title="askmd",
        summary="Cited answers from a folder of Markdown notes.",
        redoc_url=None,
        lifespan=mcp_http.lifespan(mcp),
    )
    if mcp is not None:
        mcp_http.mount(app, mcp)
    app.add_middleware(guard.Guard, settings=settings, loopback_only=loopback_only)
    app.mount("/static", StaticFiles(directory=WEB), name="static")

    @app.exception_handler(AskmdError)
    async def askmd_error(request: Request, exc: AskmdError) -> JSONResponse:
        return JSONResponse({"error": first_line(exc)}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"error": _validation_message(exc)}, status_code=422)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        message = {404: f"not found: {request.url.path}", 405: "method not allowed"}
        if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
            # FastAPI's words for a body that is not UTF-8: it is invalid JSON, like any other
            return JSONResponse({"error": "the body is not valid JSON (not UTF-8)"}, 422)
        return JSONResponse(
            {"error": message.get(exc.status_code, str(exc.detail))},
            status_code=exc.status_code,
            headers=exc.headers,
        )

    @app.exception_handler(Exception)
    async def bug(request: Request, exc: Exception) -> JSONResponse:
        log.exception("internal error on %s %s", request.method, request.url.path)
        return JSONResponse(
            {"error": f"internal error ({type(exc).__name__}); the server's log has details"},
            status_code=500,
        )

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(WEB / "index.html")

    @app.get("/api/v1/health", tags=["index"])
    async def health() -> dict:
        """Liveness, without a token: says nothing about the notes. Answered on the event
        loop itself, so it needs no worker thread while every one is busy."""
        return {"status": "ok"}

    @app.get("/api/v1/stats", tags=["index"])
    def stats() -> dict:
        """What is indexed: the `stats --json` object."""
        return index.graph.stats()

    @app.get("/api/v1/collections", tags=["index"])
    def collections() -> dict:
        """The index's collection with its documents and their chunk counts: one per
        folder, with its label and description, when several are served."""
        found = []
        for label, each in each_folder(index):
            info = each.graph.stats()
            files = each.manifest.files() if info["files"] else {}
            labelled = {"label": label, "description": _described(index, label)} if label else {}
            found.append(
                {
                    "name": each.settings.collection,
                    **labelled,
                    "knowledge_dir": str(each.settings.knowledge_dir),
                    "embedder": info["embedder"],
                    "dimension": info["dimension"],
                    "files": info["files"],
                    "chunks": info["chunks"],
                    "documents": [
                        {"file": source, "chunks": rec.chunks}
                        for source, rec in sorted(files.items())
                    ],
                }
            )
        return {"collections": found}

    @app.post("/api/v1/ingest", tags=["notes"])
    def ingest(body: IngestBody) -> dict:
        """Index a note: one already in the knowledge folder (`file_path`), or new text
        (`content` + `file_name`) written into it first. Returns the note's path, its chunk
        count and `status`: for content, whether the file was created, updated or left
        unchanged; for file_path, whether the index gained, updated or already had it."""
        sent = body.content is not None or body.content_base64 is not None
        if body.content is not None and body.content_base64 is not None:
            raise BadRequest("give content or content_base64, not both")
        if body.file_path is not None and (sent or body.file_name):
            raise BadRequest("give file_path, or content with file_name, not both")
        if body.file_path is None and (not sent or not body.file_name):
            raise BadRequest('give {"file_path"} or {"content", "file_name"}')
        data = None
        if body.content_base64 is not None:
            try:
                data = base64.b64decode(body.content_base64, validate=True)
            except (binascii.Error, ValueError):
                raise BadRequest("content_base64 is not valid base64") from None

        return folder.ingest(
            _written(index, body.folder),
            file_path=body.file_path,
            content=body.content if data is None else data,
            file_name=body.file_name,
            queue=WRITER_WAIT_SECONDS,
            wait=LOCK_WAIT_SECONDS,
        )

    @app.delete("/api/v1/documents/{file:path}", tags=["notes"])
    def delete(file: str) -> dict:
        """Remove a note: it moves to the trash folder inside the index folder (nothing
        is lost) and its chunks leave the index."""

        into, file = _written_note(index, file)
        return folder.delete(into, file, queue=WRITER_WAIT_SECONDS, wait=LOCK_WAIT_SECONDS)

    @app.post("/api/v1/search", tags=["questions"])
    def search(body: SearchBody) -> dict:
        """The chunks that best match the query: the `search --json` object."""
        if not body.query.strip():
            raise BadRequest("the query is empty")
        for syncer in syncers:
            syncer.poke()
        filters = body.filters.filters() if body.filters else None
        hits = index.search(body.query, body.top_k or settings.top_k, filters=filters)
        return pipeline.search_json(body.query, hits)

    @app.get("/api/v1/related", tags=["notes"])
    def related(
        note: Annotated[str, Query(min_length=1, max_length=1000)],
        k: Annotated[int, Query(ge=1, le=MAX_RELATED)] = pipeline.RELATED_K,
        where: Annotated[list[str] | None, Query(max_length=500)] = None,
    ) -> dict:
        """The notes most related to `note` (a path, or a name as a link gives it): the
        `related --json` object; 404 for a note the index does not have. `where`
        (repeatable): only notes whose front matter meets every condition."""
        conditions = where_conditions.parse_all(where, "where")
        return index.graph.related(note, k, where=conditions)

    @app.post("/api/v1/ask", tags=["questions"], response_model=None)
    def ask(body: AskBody) -> dict | StreamingResponse:
        """A cited answer: the `ask --json` object, or with `"stream": true` Server-Sent
        Events: `retrieved` (the chunks), `token`s of the answer as it is written, then
        one `done` event holding the `ask --json` object (checked citations and
        references), or an `error` event."""
        if not body.question.strip():
            raise BadRequest("the question is empty")
        for syncer in syncers:
            syncer.poke()
        history = turns(body.history)
        k = body.top_k or settings.top_k
        filters = body.filters.filters() if body.filters else None
        if body.stream:
            return StreamingResponse(
                _events(index, body.question, history, k, filters),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
            )
        return index.ask(body.question, history, k, filters=filters).to_json()

    return app


# Pydantic's wording for the two mistakes clients make most, in plainer words.
WORDING = {"missing": "field required", "extra_forbidden": "unknown field"}
MAX_PROBLEMS = 8  # listed in the one line; the rest are counted


def _described(index, label: str) -> str:
    return index.folder(label).description


def _written(index, label: str | None) -> Index:
    """The folder a note is written into: the one, or of several the one labelled so (the
    first when none is named)."""
    if isinstance(index, Index):
        if label:
            raise BadRequest("folder: only one folder is served")
        return index
    return index.folder(label).index if label else index.folders[0].index


def _written_note(index, file: str) -> tuple[Index, str]:
    """The folder of a note to delete: `LABEL:PATH` when several are served."""
    if isinstance(index, Index):
        return index, file
    label, colon, rest = file.partition(":")
    if not colon or label not in index.labels:
        raise BadRequest(f"{file!r}: name the note as LABEL:PATH ({', '.join(index.labels)})")
    return index.folder(label).index, rest


def _validation_message(exc: RequestValidationError) -> str:
    """Every problem with a body in one line, e.g. `query: field required; quer: unknown
    field`: naming only the first would send the client back once per mistake."""
    errors = exc.errors()
    if not errors:
        return "invalid request"
    if errors[0].get("type") == "json_invalid":
        return "the body is not valid JSON"
    problems = list(dict.fromkeys(_problem(error) for error in errors))
    shown = "; ".join(problems[:MAX_PROBLEMS])
    left = len(problems) - MAX_PROBLEMS
    return f"{shown}; and {left} more" if left > 0 else shown


def _problem(error: dict) -> str:
    where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
    what = WORDING.get(error.get("type", "")) or str(error.get("msg") or "invalid")
    what = what.removeprefix("Input ").removeprefix("Value error, ")
    return f"{where}: {what[:1].lower()}{what[1:]}"


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


async def _events(
    index: Index,
    question: str,
    history: list[Turn],
    k: int,
    filters: retriever.Filters | None,
) -> AsyncIterator[str]:
    """Run the answer in a worker thread and relay what it produces as SSE events.

    When the client goes away the generator is cancelled; the worker sees `stop` at the
    next token and closes the model's stream, so the LLM stops generating too.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any] | None] = asyncio.Queue()
    stop = threading.Event()

    def put(item: tuple[str, Any] | None) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, item)

    def searched(query: str, hits: list[retriever.Hit]) -> None:
        put(("retrieved", {"query": query, "results": [h.to_json() for h in hits]}))

    def show(pieces, sources: int) -> str:
        text = []
        for piece in pieces:
            if stop.is_set():
                break
            text.append(piece)
            put(("token", {"text": piece}))
        return "".join(text)

    def work() -> None:
        try:
            result = index.ask(question, history, k, filters=filters, show=show, searched=searched)
            if result.mode != "llm" or not result.hits:  # nothing was streamed
                put(("token", {"text": result.text}))
            put(("done", result.to_json()))
        except AskmdError as exc:
            put(("error", {"error": first_line(exc), "status": exc.status}))
        except Exception as exc:  # noqa: BLE001 - reported as one line, logged in full
            log.exception("internal error while answering")
            put(("error", {"error": f"internal error ({type(exc).__name__})", "status": 500}))
        finally:
            put(None)

    threading.Thread(target=work, name="askmd-answer", daemon=True).start()
    try:
        while (item := await queue.get()) is not None:
            yield _sse(*item)
    finally:
        stop.set()
