"""`serve` answers MCP at /mcp over the SDK's streamable HTTP transport: the same tools
and resources as stdio, read-only unless --allow-write, behind the API's host rules and
token. Driven with the SDK's own HTTP client against a real `serve`."""

from __future__ import annotations

import asyncio

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import NOTES
from tests.serving import Server
from tests.test_mcp import READ_TOOLS

TOKEN = "a-secret-token-for-the-tests"


def over_http(url: str, use, **headers: str):
    async def main():
        http = create_mcp_http_client(headers=headers or None)
        async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            return await use(client)

    return asyncio.run(main())


async def tools_search_and_a_note(client: Client):
    tools = await client.list_tools()
    found = await client.call_tool(
        "search_notes", {"query": "which port does the API listen on", "k": 2}
    )
    listed = await client.list_resources()
    note = await client.read_resource("note://guides/ports.md")
    return [t.name for t in tools.tools], found, listed, note


def test_serve_answers_mcp_at_slash_mcp_read_only_by_default(tmp_path) -> None:
    with Server(tmp_path, NOTES) as server:
        names, found, listed, note = over_http(server.url, tools_search_and_a_note)
        assert names == READ_TOOLS
        assert not found.is_error
        assert found.structured_content["results"][0]["source"] == "guides/ports.md"
        assert "note://guides/ports.md" in {str(r.uri) for r in listed.resources}
        assert "8420" in note.contents[0].text
        # the page and the API are still there
        assert server.client().get("/api/v1/health").status_code == 200


def test_mcp_over_http_needs_the_token_and_writes_only_when_allowed(tmp_path) -> None:
    with Server(tmp_path, NOTES, "--allow-write", ASKMD_API_TOKEN=TOKEN) as server:
        refused = server.client().post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"accept": "application/json, text/event-stream"},
        )
        assert refused.status_code == 401
        assert "Authorization: Bearer" in refused.json()["error"]

        async def write(client: Client):
            names = [t.name for t in (await client.list_tools()).tools]
            added = await client.call_tool(
                "add_note", {"path": "new/fresh.md", "content": "# Fresh\n\nPort 7311.\n"}
            )
            return names, added

        names, added = over_http(server.url, write, authorization=f"Bearer {TOKEN}")
        assert names == [*READ_TOOLS, "add_note", "delete_note"]
        assert not added.is_error, added
        assert (server.kb / "new" / "fresh.md").is_file()
