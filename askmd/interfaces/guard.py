"""What keeps the HTTP API private: checked on every request before any route runs.

- Host: on a loopback address only loopback host names are served, so a web page that
  rebinds its own DNS name to 127.0.0.1 cannot read the API (DNS rebinding).
- Origin: a browser request from another site is refused. With JSON-only bodies (below)
  a browser cannot even send one without a CORS preflight, which is never granted.
- Token: with ASKMD_API_TOKEN set, /api/ and MCP's /mcp need `Authorization: Bearer
  <token>`, except /api/v1/health; compared in constant time.
- Size: a body larger than the note size limit allows is refused with 413 as soon as its
  length is known, whether declared or streamed. A body is read whole here, and one with
  more keys, items or strings than any real request holds is refused with 413 before it
  is parsed: parsing and validating a million keys would hold the event loop (and every
  other request, /health included) for a minute.
- Content type: bodies must be JSON, which makes cross-site form posts impossible.
- Headers: the page gets a strict Content-Security-Policy; nothing may frame it.

A refusal is {"error": ...} with its status, like every other error.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from urllib.parse import urlsplit

import anyio
from starlette.exceptions import HTTPException

from askmd.interfaces import folder
from askmd.settings import Settings

PUBLIC = ("/api/v1/health",)
MCP_PATH = "/mcp"  # MCP over HTTP (the SDK's streamable HTTP transport): guarded as /api/


def is_api(path: str) -> bool:
    return path.startswith("/api/") or path == MCP_PATH


# Keys, strings, array items and nested values in one body. An ask with a full history
# (50 turns of 4 fields) needs about 450; a note, however long, is one string.
MAX_JSON_VALUES = 2000
WINDOW = 1 << 16  # bytes counted at a time between two strings
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}
SAFE_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
)
PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)


def body_limit(settings: Settings) -> int:
    """The largest request body: a note at the limit for notes sent as content,
    JSON-escaped (ASCII-only JSON triples the bytes of accented letters and emoji: é is
    \\u00e9), plus room for the other fields."""
    return 3 * folder.sent_note_limit(settings) + 64 * 1024


def _too_large(limit: int) -> str:
    return f"the request body is over {limit / 1048576:.3g} MB"


def json_shape_problem(body: bytes, limit: int = MAX_JSON_VALUES) -> str | None:
    """Why `body` holds too many JSON values to parse, found without parsing it.

    Counts the strings and, between them, the bytes that start a value or a member
    (`,` `:` `[` `{`), and stops as soon as the count passes `limit`. The text inside a
    string is never examined, so a note full of commas costs nothing; the work is one
    step per string or escaped quote, in pure Python, so a worker thread running it lets
    the event loop run too (json.loads in C would hold it until done). Malformed JSON
    passes: the parser says what is wrong with it.
    """
    count = position = 0
    while True:
        quote = body.find(b'"', position)
        stop = len(body) if quote < 0 else quote
        for start in range(position, stop, WINDOW):  # windows: a huge array stops early
            end = min(start + WINDOW, stop)
            count += sum(body.count(mark, start, end) for mark in (b",", b":", b"[", b"{"))
            if count > limit:
                return f"the request body holds over {limit} keys, items or values"
        if quote < 0:
            return None
        end = _string_end(body, quote)
        if end < 0:
            return None
        count += 1
        position = end + 1


def _string_end(body: bytes, quote: int) -> int:
    """The index of the quote that closes the string opened at `quote`, or -1."""
    checked = quote + 1
    while True:
        end = body.find(b'"', checked)
        if end < 0:
            return -1
        run = body[checked:end]
        backslashes = len(run) - len(run.rstrip(b"\\"))
        if backslashes % 2 == 0:  # not escaped (\\" is an escaped backslash, then the end)
            return end
        checked = end + 1


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Refused(HTTPException):
    """An HTTPException, so a refusal raised while a route reads the body keeps its status."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(status, message, headers)
        self.status, self.message = status, message


class Guard:
    """Pure ASGI middleware, so it also covers streamed responses and the body stream."""

    def __init__(self, app, settings: Settings, loopback_only: bool = True):
        self.app = app
        self.token = settings.api_token.encode()
        self.limit = body_limit(settings)
        self.loopback_only = loopback_only  # False when listening beyond this machine

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            self._check(scope, headers)
        except Refused as refused:
            return await _refuse(send, refused)
        path = scope["path"]
        if scope["method"] in ("POST", "PUT", "PATCH") and is_api(path):
            try:
                body = await self._read_body(receive)
            except Refused as refused:
                return await _refuse(send, refused)
            if body is None:  # the client went away
                return
            receive = _replay(body, receive)
        else:
            receive = self._limited(receive)
        page = not is_api(path) and not path.startswith(
            ("/docs", "/openapi.json", "/static-offline-docs")
        )

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                extra = list(SAFE_HEADERS)
                if page:
                    extra.append((b"content-security-policy", PAGE_POLICY.encode()))
                message["headers"] = list(message.get("headers", [])) + extra
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Refused as refused:  # the body grew past the limit while being read
            await _refuse(send, refused)

    def _check(self, scope, headers: dict[str, str]) -> None:
        host = urlsplit("//" + headers.get("host", "")).hostname or ""
        if self.loopback_only and not is_loopback(host):
            raise Refused(403, f"host {host or '(none)'} is not served; use 127.0.0.1")
        origin = headers.get("origin")
        if origin and origin != "null":
            seen = urlsplit(origin)
            same_host = seen.netloc.lower() == headers.get("host", "").lower()
            if not same_host or seen.scheme.lower() != scope.get("scheme", "http"):
                raise Refused(403, f"cross-origin requests are refused ({origin})")
        elif origin == "null":
            raise Refused(403, "requests from sandboxed or file:// pages are refused")
        path = scope["path"]
        if self.token and is_api(path) and path not in PUBLIC:
            given = headers.get("authorization", "")
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                value.strip().encode(), self.token
            ):
                raise Refused(
                    401,
                    "a valid API token is needed: Authorization: Bearer <ASKMD_API_TOKEN>",
                    {"www-authenticate": "Bearer"},
                )
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                raise Refused(400, "Content-Length is not a number")
            if int(length) > self.limit:
                raise Refused(413, _too_large(self.limit))
        method = scope["method"]
        if method in ("POST", "PUT", "PATCH") and is_api(path):
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != "application/json":
                raise Refused(415, "send the body as JSON (Content-Type: application/json)")

    async def _read_body(self, receive) -> bytes | None:
        """The whole body (None if the client left), refused if too large or too busy to
        parse. How long a client may take to send it is the server's read deadline."""
        receive = self._limited(receive)
        chunks = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        problem = await anyio.to_thread.run_sync(json_shape_problem, body)
        if problem:
            raise Refused(413, problem)
        return body

    def _limited(self, receive):
        seen = 0
        limit = self.limit

        async def wrapped():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise Refused(413, _too_large(limit))
            return message

        return wrapped


def _replay(body: bytes, receive):
    """A receive() that hands the app the body already read, then waits on the client
    (for a disconnect) as the original would."""
    sent = False

    async def replayed():
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


async def _refuse(send, refused: Refused) -> None:
    body = json.dumps({"error": refused.message}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *SAFE_HEADERS,
    ]
    headers += [(k.encode(), v.encode()) for k, v in (refused.headers or {}).items()]
    await send({"type": "http.response.start", "status": refused.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
