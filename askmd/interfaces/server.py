"""`python rag.py serve`: sync, load the models, then serve the API, MCP and the page.

The socket is bound here, before uvicorn starts, so port 0 can be resolved to the port
the system picked and printed as the URL to use (tests and scripts read that line).
Listening beyond this machine needs a token: without one, anyone on the network could
read and change the notes.
"""

from __future__ import annotations

import logging
import signal
import socket
import sys

from askmd.errors import AskmdError, BadRequest, first_line
from askmd.interfaces import cli_common
from askmd.interfaces.guard import is_loopback
from askmd.settings import Settings
from askmd.shelf import each_folder

KEEP_ALIVE_SECONDS = 5  # an idle connection is closed after this
LEAVE_WAIT_SECONDS = 10  # on Ctrl-C or SIGTERM: the watcher's and filler's work in hand
HEAD_SECONDS = 5  # for a request's head to arrive, and its body to begin
MIN_BYTES_PER_SECOND = 64 * 1024  # the slowest body accepted, after HEAD_SECONDS
_SLOW = b'{"error": "the request arrived too slowly; send it again"}'
TOO_SLOW = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(_SLOW), _SLOW)
)


def serve(settings: Settings, host: str, port: int, allow_write: bool = False) -> int:
    import uvicorn  # only the serve command needs the web stack

    from askmd.interfaces import api, console, mcp_server

    loopback = _loopback(host)
    if not loopback and not settings.api_token:
        raise BadRequest(
            f"--host {host} would let other machines read your notes; set ASKMD_API_TOKEN "
            "to a secret (python3 -c 'import secrets; print(secrets.token_urlsafe())') "
            "or serve on 127.0.0.1"
        )
    if not 0 <= port <= 65535:
        raise BadRequest(f"--port {port}: give a port from 1 to 65535, or 0 for any free one")
    sock = _bind(host, port)
    index = cli_common.open_notes(settings)
    log = logging.getLogger("askmd.server")
    # Notes saved on disk while serving are applied (ASKMD_WATCH), each change a log line.
    live = cli_common.live(
        index,
        warn=console.warning,
        on_change=lambda c: log.warning("%s", c.line()),
        on_notice=log.warning,
        leave_wait=LEAVE_WAIT_SECONDS,
    )
    with live:
        # A read-only index folder is served as it is (ingest and DELETE then refuse).
        cli_common.show_sync(index, live.sync(cli_common.progress(index)))
        with console.status("loading the models"):
            index.search("warm up", 1)  # loads the embedder and opens Chroma before any request
            _ = index.answerer.chat  # and a local LLM, if one is configured
        logging.basicConfig(format="askmd: %(message)s", level=logging.WARNING, stream=sys.stderr)
        live.watch()
        bound_host, bound_port = sock.getsockname()[:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        url = f"http://{shown}:{bound_port}"
        served = ", ".join(
            f"{label}={each.settings.knowledge_dir}" if label else str(each.settings.knowledge_dir)
            for label, each in each_folder(index)
        )
        print(f"askmd serving {served} at {url}", flush=True)
        console.notice("API docs at /docs · MCP at /mcp · Ctrl-C to stop")
        # MCP at /mcp reads the index this process keeps in step (`live`)
        mcp = mcp_server.build(index, allow_write, live=live)
        config = uvicorn.Config(
            api.create_app(index, loopback_only=loopback, mcp=mcp),
            http=_protocol(),
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=3,
            server_header=False,
        )
        # uvicorn passes a SIGTERM it caught on to the handler before it once it has shut
        # down: exit normally then, so what is cleaned up at exit (a read-only index's
        # private copy) is, instead of dying by the signal.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        uvicorn.Server(config).run(sockets=[sock])
    return 0


def _protocol() -> type:
    """uvicorn's HTTP protocol with a read deadline. Neither of its parsers limits how
    long a client may take to send a request: one that sends a byte now and then holds
    a connection (and its buffers) for ever, and a few hundred of them exhaust the
    server. Here a request's head must arrive within HEAD_SECONDS, and its body at
    MIN_BYTES_PER_SECOND after that; a late one is answered 408 and closed."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class Deadline(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._restart()
            self._tick = self.loop.call_later(1, self._check)

        def connection_lost(self, exc: Exception | None) -> None:
            self._tick.cancel()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            self._bytes += len(data)
            super().data_received(data)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._restart()  # the clock starts again for the next request

        def _restart(self) -> None:
            self._since, self._bytes = self.loop.time(), 0

        def _reading(self) -> bool:
            """True while the server waits on the client for a request or its body."""
            cycle = self.cycle
            if cycle is None or cycle.response_complete:
                return True
            return cycle.more_body and not cycle.response_started

        def _check(self) -> None:
            if self.transport.is_closing():
                return
            allowed = HEAD_SECONDS + self._bytes / MIN_BYTES_PER_SECOND
            if self._reading() and self.loop.time() - self._since > allowed:
                if self._bytes:  # part of a request came (an idle connection just closes)
                    self.transport.write(TOO_SLOW)
                self.transport.close()
                return
            self._tick = self.loop.call_later(1, self._check)

    return Deadline


def _loopback(host: str) -> bool:
    """True when every address the host name stands for is this machine's loopback."""
    if is_loopback(host):
        return True
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return bool(infos) and all(is_loopback(info[4][0]) for info in infos)


def _bind(host: str, port: int) -> socket.socket:
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise AskmdError(f"--host {host}: {first_line(exc)}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        why = "is in use" if exc.errno == 98 else f"cannot be used ({exc.strerror or exc})"
        raise AskmdError(
            f"{host}:{port} {why}; pick another with --port, or --port 0 for any free one"
        ) from None
    sock.set_inheritable(True)
    return sock
