"""MCP over HTTP: `serve` answers the MCP tools and resources at /mcp with the SDK's
streamable HTTP transport, beside the API, over the same index.

The route sits behind the API's guard (guard.py: host rules, the token, sizes), so the
SDK's own DNS-rebinding check is left off: the guard's is the one that knows whether
the server listens beyond this machine. Stateless: each request stands alone, so a
client needs no session that a restart would lose.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from askmd.interfaces.guard import MCP_PATH

if TYPE_CHECKING:
    from fastapi import FastAPI

    from askmd.interfaces.mcp_server import NotesServer


def mount(app: FastAPI, server: NotesServer) -> None:
    """Add the /mcp route of `server`'s streamable HTTP app to `app`."""
    from mcp.server.transport_security import TransportSecuritySettings

    http = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    app.router.routes.extend(http.routes)


def lifespan(server: NotesServer | None):
    """The app's lifespan: the SDK's session manager runs while the app does."""

    @contextlib.asynccontextmanager
    async def running(_app) -> AsyncIterator[None]:
        if server is None:
            yield
            return
        async with server.session_manager.run():
            yield

    return running
