"""MCP over stdio: lines of JSON-RPC on stdin, answers on a private copy of stdout.

The SDK's own stdio transport drops a line it cannot parse unanswered, refuses a lone
surrogate that is valid JSON, reads a request with `"id": null` as a notification, and
holds a line of any length in memory; a client then waits for ever or the server runs out
of memory. This transport answers each such line with a JSON-RPC error and reads the
next, and the tools and resources are mcp_server.py's, run by the SDK's low-level server
(docs/architecture.md says why it reaches past the SDK's public API here).
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from askmd.interfaces import cli_common, console
from askmd.interfaces.mcp_server import NotesServer, build
from askmd.shelf import each_folder

MAX_LINE_BYTES = 8 * 1024 * 1024  # one JSON-RPC message; a longer line is refused unread
READ_BYTES = 64 * 1024
EOF = object()  # what `next` gives once stdin is closed


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
    index = cli_common.open_notes(settings, loading=console.status)
    server = build(index, allow_write)
    with server.notes.live:  # stopped on leaving, however it ends
        server.notes.start()
        mode = "read and write" if allow_write else "read-only"
        console.err.print(f"askmd MCP server over {_over(index)} ({mode}), on stdio")
        anyio.run(_serve, server, wire)
    return 0


def _over(index) -> str:
    return ", ".join(
        f"{label}={each.settings.knowledge_dir.resolve()}/"
        if label
        else f"{each.settings.knowledge_dir.resolve()}/"
        for label, each in each_folder(index)
    )
