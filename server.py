"""`python rag.py serve`: sync, load the models, then serve the API and the page.

The socket is bound here, before uvicorn starts, so port 0 can be resolved to the port
the system picked and printed as the URL to use (tests and scripts read that line).
Listening beyond this machine needs a token: without one, anyone on the network could
read and change the notes.
"""

from __future__ import annotations

import logging
import socket
import sys

from errors import AskmdError, BadRequest, first_line
from guard import is_loopback
from pipeline import Index
from settings import Settings


def serve(settings: Settings, host: str, port: int) -> int:
    import uvicorn  # only the serve command needs the web stack

    import api
    import console

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
    index = Index(settings)
    index.show(index.sync())
    with console.status("loading the models"):
        index.search("warm up", 1)  # loads the embedder and opens Chroma before any request
        _ = index.chat  # and a local LLM, if one is configured
    logging.basicConfig(format="askmd: %(message)s", level=logging.WARNING, stream=sys.stderr)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    url = f"http://{shown}:{bound_port}"
    print(f"askmd serving {settings.knowledge_dir} at {url}", flush=True)
    console.notice("API docs at /docs · Ctrl-C to stop")
    config = uvicorn.Config(
        api.create_app(index, loopback_only=loopback),
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=3,
        server_header=False,
    )
    uvicorn.Server(config).run(sockets=[sock])
    return 0


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
