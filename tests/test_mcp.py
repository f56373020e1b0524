"""`python rag.py mcp`: the notes over the Model Context Protocol, tested with the SDK's own
clients: in-process against the server object, and over stdio against the real command
(one shared process for most tests), plus a raw client that reads stdout line by line and
fails on anything that is not a JSON-RPC message."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import re
import select
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError, StdioServerParameters

from askmd import pipeline, version
from askmd.interfaces import mcp_server, mcp_stdio
from askmd.settings import load_settings
from tests.conftest import NOTES, ROOT, clean_env, index_once, write_notes
from tests.openai_server import ChatScript, OpenAIServer

READ_TOOLS = ["search_notes", "ask", "read_note", "list_notes", "index_status", "related_notes"]
LONG_LINES = 3000  # long.md: 3,000 lines of 40 characters (and 2), over MAX_READ_CHARS
FOLDER = {
    **NOTES,
    "long.md": "# Long\n\n" + "".join(f"line {n:05d} of the long note, padded.\n" for n in range(LONG_LINES)),  # noqa: E501
    ".obsidian/hidden.md": "# Hidden\n\nnot a note\n",
    "script.py": "print('not a note either')\n",
}  # fmt: skip


def make_folder(root: Path) -> Path:
    """The notes, a hidden folder, a non-note, and a symlink to a note outside the folder."""
    kb = write_notes(root / "kb", FOLDER)
    (root / "outside.md").write_text("# Outside\n\nsecret 7311\n", encoding="utf-8")
    (kb / "escape.md").symlink_to(root / "outside.md")
    return kb


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> tuple[Path, Path]:
    kb = make_folder(tmp_path_factory.mktemp("mcp"))
    return kb, index_once(kb, clean_env())


def refused_paths(kb: Path) -> dict[str, str]:
    """A path of every kind a client must not read, and a word its refusal says."""
    return {
        "../outside.md": "..",
        "guides/../../outside.md": "..",
        str(kb.parent / "outside.md"): "not inside the knowledge folder",
        "/etc/passwd": "not inside the knowledge folder",
        "escape.md": "symlink leads outside",
        ".obsidian/hidden.md": "hidden",
        "script.py": "not a file askmd reads",
        "missing.md": "no such note",
        "guides\\ports.md": "use /",
        "a\x00b.md": "control characters",
        "a\ud800.md": "lone surrogate",
        "": "empty",
    }


# --- in-process: the server object ---------------------------------------------------------


def run(server: mcp_server.NotesServer, use: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with Client(server) as client:
            return await use(client)

    return asyncio.run(main())


@pytest.fixture(scope="module")
def index(indexed) -> pipeline.Index:
    kb, ix = indexed
    settings = load_settings({}, None, {"knowledge_dir": kb, "index_dir": ix})
    return pipeline.Index(settings)


def server_over(index: pipeline.Index, allow_write: bool = False) -> mcp_server.NotesServer:
    server = mcp_server.build(index, allow_write, watch=False)
    server.notes.start().join(30)
    return server


def test_in_process_search_returns_the_search_json_as_structured_content(index) -> None:
    result = run(
        server_over(index),
        lambda c: c.call_tool(
            "search_notes", {"query": "which port does the API listen on", "k": 2}
        ),
    )
    assert not result.is_error
    found = result.structured_content
    hits = index.search("which port does the API listen on", 2)
    assert found == {
        "query": "which port does the API listen on",
        "retriever": "hybrid",
        "results": [h.to_json() for h in hits],
    }
    assert {
        "rank",
        "score",
        "source",
        "heading_chain",
        "line_start",
        "line_end",
        "chunk_id",
        "text",
    } <= set(found["results"][0])
    assert found["results"][0]["source"] == "guides/ports.md"
    assert json.loads(result.content[0].text) == found


def test_in_process_tags_filter_search_and_ask(tmp_path) -> None:
    kb = write_notes(
        tmp_path / "kb",
        {
            "alpha.md": "---\ntags: [project/alpha]\n---\n# Alpha\n\nThe deploy window: Monday.\n",
            "beta.md": "# Beta\n\nThe deploy window is Friday. #project/beta\n",
            "home.md": "# Home\n\nThe deploy window for the garden is spring.\n",
        },
    )
    settings = load_settings({}, None, {"knowledge_dir": kb, "index_dir": tmp_path / "ix"})
    server = server_over(pipeline.Index(settings))

    def sources(result) -> set[str]:
        return {r["source"] for r in result.structured_content["results"]}

    query = {"query": "deploy window", "k": 5}
    everything = run(server, lambda c: c.call_tool("search_notes", query))
    assert sources(everything) == {"alpha.md", "beta.md", "home.md"}
    project = run(server, lambda c: c.call_tool("search_notes", {**query, "tags": ["#project"]}))
    assert sources(project) == {"alpha.md", "beta.md"}
    beta = run(server, lambda c: c.call_tool("search_notes", {**query, "tags": ["project/beta"]}))
    assert sources(beta) == {"beta.md"}
    asked = run(
        server,
        lambda c: c.call_tool(
            "ask", {"question": "when is the deploy window?", "tags": ["project/alpha"]}
        ),
    )
    assert {r["source"] for r in asked.structured_content["references"]} == {"alpha.md"}
    empty = run(server, lambda c: c.call_tool("search_notes", {**query, "tags": [""]}))
    assert empty.is_error and "empty tag" in empty.content[0].text


def test_in_process_read_note_of_a_pdf_gives_the_lines_its_citations_name(tmp_path) -> None:
    import shutil

    kb = write_notes(tmp_path / "kb", NOTES)
    shutil.copy(ROOT / "tests" / "fixtures" / "manual.pdf", kb / "manual.pdf")
    settings = load_settings({}, None, {"knowledge_dir": kb, "index_dir": tmp_path / "ix"})
    server = server_over(pipeline.Index(settings))
    found = run(server, lambda c: c.call_tool("search_notes", {"query": "error E7", "k": 1}))
    hit = found.structured_content["results"][0]
    assert hit["source"] == "manual.pdf"
    span = {"path": "manual.pdf", "line_start": hit["line_start"], "line_end": hit["line_end"]}
    read = run(server, lambda c: c.call_tool("read_note", span))
    assert not read.is_error, read.content
    # The text read out of the PDF, lines numbered as the citation numbers them.
    assert read.structured_content["text"].split()[:3] == hit["text"].split()[:3]
    assert "%PDF" not in read.structured_content["text"]


def test_in_process_read_note_gives_lines_as_the_index_numbers_them(index) -> None:
    server = server_over(index)
    hit = run(server, lambda c: c.call_tool("search_notes", {"query": "metrics port", "k": 1}))
    first = hit.structured_content["results"][0]
    assert first["chunk_id"] == "guides/ports.md#1"
    args = {
        "path": first["source"],
        "line_start": first["line_start"],
        "line_end": first["line_end"],
    }
    result = run(server, lambda c: c.call_tool("read_note", args))
    assert result.structured_content["text"] == "## Metrics\n\nMetrics are on 9420."
    assert result.content[0].text == "## Metrics\n\nMetrics are on 9420."
    whole = run(server, lambda c: c.call_tool("read_note", {"path": "guides/ports.md"}))
    assert whole.structured_content["total_lines"] == 7
    assert whole.content[0].text == NOTES["guides/ports.md"].rstrip("\n")


def test_in_process_a_long_note_is_cut_at_the_stated_limit(index) -> None:
    server = server_over(index)
    result = run(server, lambda c: c.call_tool("read_note", {"path": "long.md"}))
    note = result.structured_content
    assert note["truncated"] and note["total_lines"] == LONG_LINES + 2
    assert len(note["text"]) <= mcp_server.MAX_READ_CHARS
    assert f"read on with line_start={note['line_end'] + 1}" in result.content[0].text
    rest = {"path": "long.md", "line_start": note["line_end"] + 1}
    after = run(server, lambda c: c.call_tool("read_note", rest)).structured_content
    assert after["text"].startswith(f"line {note['line_end'] - 2:05d}")
    past = run(server, lambda c: c.call_tool("read_note", {"path": "long.md", "line_start": 9999}))
    assert past.is_error and "has 3002 lines" in past.content[0].text


def test_in_process_every_refused_path_is_one_clear_line(index, indexed) -> None:
    server = server_over(index)
    for path, said in refused_paths(indexed[0]).items():
        result = run(server, lambda c, p=path: c.call_tool("read_note", {"path": p}))
        text = result.content[0].text
        assert result.is_error and said in text and "\n" not in text, (path, text)
        assert "secret 7311" not in text


def test_in_process_add_note_refuses_bidi_and_invisible_characters_in_names(tmp_path) -> None:
    kb = write_notes(tmp_path / "kb", {"a.md": "# A\n\nhello\n"})
    settings = load_settings({}, None, {"knowledge_dir": kb, "index_dir": tmp_path / "ix"})
    server = server_over(pipeline.Index(settings), allow_write=True)
    for char in ("\u202e", "\u200b", "\u2028", "\u2069"):
        arguments = {"path": f"evil{char}gnp.md", "content": "# X\n"}
        result = run(server, lambda c, a=arguments: c.call_tool("add_note", a))
        text = result.content[0].text
        assert result.is_error and f"U+{ord(char):04X}" in text and "\n" not in text, text
    assert sorted(p.name for p in kb.iterdir()) == ["a.md"]


def test_in_process_a_symlink_loop_is_refused_in_one_line(tmp_path) -> None:
    kb = write_notes(tmp_path / "kb", {"a.md": "# A\n\nhello\n"})
    (kb / "loop").symlink_to("loop")
    settings = load_settings({}, None, {"knowledge_dir": kb, "index_dir": tmp_path / "ix"})
    index = pipeline.Index(settings)
    index.sync(["loop", "loop/x.md"])  # as the watcher syncs a link made while it runs
    server = server_over(index, allow_write=True)
    calls = [
        ("read_note", {"path": "loop/x.md"}),
        ("add_note", {"path": "loop/x.md", "content": "# X\n"}),
        ("delete_note", {"path": "loop/x.md"}),
    ]
    for tool, arguments in calls:
        result = run(server, lambda c, t=tool, a=arguments: c.call_tool(t, a))
        text = result.content[0].text
        assert result.is_error and "symlink loop" in text and "\n" not in text, (tool, text)


def test_in_process_no_change_goes_through_a_symlinked_folder(tmp_path) -> None:
    """`sub/g -> ../guides`: a write there landed in guides/ and was reported as not
    indexed, a delete trashed the real note and reported 0 chunks. Refused, unchanged."""
    kb = write_notes(tmp_path / "kb", {"guides/deploy.md": "# Deploy\n\nhelm install\n"})
    (kb / "sub").mkdir()
    (kb / "sub" / "g").symlink_to("../guides", target_is_directory=True)
    (kb / "alias.md").symlink_to("guides/deploy.md")
    settings = load_settings({}, None, {"knowledge_dir": kb, "index_dir": tmp_path / "ix"})
    index = pipeline.Index(settings)
    server = server_over(index, allow_write=True)
    before = index.manifest.files()
    calls = [
        ("add_note", {"path": "sub/g/new.md", "content": "# New\n"}, "guides/new.md"),
        ("add_note", {"path": "sub/g/deploy.md", "content": "# Deploy\n\nv2\n"}, "guides/"),
        ("add_note", {"path": "alias.md", "content": "# Alias\n"}, "guides/deploy.md"),
        ("delete_note", {"path": "sub/g/deploy.md"}, "guides/deploy.md"),
        ("delete_note", {"path": "alias.md"}, "guides/deploy.md"),
    ]
    for tool, arguments, real in calls:
        result = run(server, lambda c, t=tool, a=arguments: c.call_tool(t, a))
        text = result.content[0].text
        assert result.is_error and "symlink" in text and real in text, (tool, text)
        assert "\n" not in text
    assert sorted(p.relative_to(kb).as_posix() for p in kb.rglob("*")) == [
        "alias.md", "guides", "guides/deploy.md", "sub", "sub/g",
    ]  # fmt: skip
    assert (kb / "guides" / "deploy.md").read_text() == "# Deploy\n\nhelm install\n"
    assert (kb / "alias.md").is_symlink()
    assert index.manifest.files() == before
    assert not (tmp_path / "ix" / "trash").exists()


def test_in_process_list_notes_has_chunk_counts_and_titles(index) -> None:
    server = server_over(index)
    listed = run(server, lambda c: c.call_tool("list_notes", {})).structured_content
    by_path = {n["path"]: n for n in listed["notes"]}
    assert sorted(by_path) == ["bread.md", "guides/ports.md", "long.md"]  # no link out, no hidden
    assert by_path["guides/ports.md"] == {"path": "guides/ports.md", "chunks": 2, "title": "Ports"}
    some = run(server, lambda c: c.call_tool("list_notes", {"glob": "guides/**"}))
    assert [n["path"] for n in some.structured_content["notes"]] == ["guides/ports.md"]


def test_in_process_stop_waits_for_the_start_up_sync_and_starts_no_watcher_after(
    tmp_path,
) -> None:
    """Leaving (the client closed stdin) while the start-up sync still runs: `stop` waits
    for it, and the watcher it would have started afterwards is never started. A sync
    left running inside Chroma's or onnxruntime's native code as the interpreter shuts
    down aborts the process ("terminate called without an active exception", status
    -6) instead of exiting 0."""
    kb = write_notes(tmp_path / "kb", {f"n{i}.md": f"# N{i}\n\nnote {i} text\n" for i in range(40)})
    settings = load_settings({}, None, {"knowledge_dir": kb, "index_dir": tmp_path / "ix"})
    server = mcp_server.build(pipeline.Index(settings), watch=True)
    started = server.notes.start()
    server.notes.stop()
    assert not started.is_alive()
    assert server.notes.watcher is None
    assert not any(t.name == "askmd-watch" and t.is_alive() for t in threading.enumerate())


def test_in_process_write_tools_exist_only_when_allowed(index) -> None:
    read_only = run(server_over(index), lambda c: c.list_tools())
    assert [t.name for t in read_only.tools] == READ_TOOLS
    refused = run(
        server_over(index), lambda c: c.call_tool("add_note", {"path": "x.md", "content": "x"})
    )
    assert refused.is_error and "Unknown tool: add_note" in refused.content[0].text
    both = run(server_over(index, allow_write=True), lambda c: c.list_tools())
    assert [t.name for t in both.tools] == READ_TOOLS + ["add_note", "delete_note"]
    annotations = {t.name: t.annotations for t in both.tools}
    assert (
        annotations["search_notes"].read_only_hint and annotations["delete_note"].destructive_hint
    )


# --- over stdio: the real command ----------------------------------------------------------


class Session:
    """One `python rag.py mcp` process and the SDK's stdio client, held open in a thread
    of its own so that several tests share it."""

    def __init__(self, params: StdioServerParameters) -> None:
        self.params = params
        self.loop = asyncio.new_event_loop()
        self.jobs: asyncio.Queue | None = None
        self.opened = concurrent.futures.Future()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._run(),))
        self.thread.start()
        self.opened.result(timeout=60)

    async def _run(self) -> None:
        self.jobs = asyncio.Queue()
        try:
            async with Client(self.params, read_timeout_seconds=60) as client:
                self.opened.set_result(True)
                while (job := await self.jobs.get()) is not None:
                    use, done = job
                    try:
                        done.set_result(await use(client))
                    except Exception as exc:  # noqa: BLE001 - handed to the test
                        done.set_exception(exc)
        except BaseException as exc:
            if not self.opened.done():
                self.opened.set_exception(exc)
            raise

    def do(self, use: Callable[[Client], Awaitable[Any]], timeout: float = 60) -> Any:
        done: concurrent.futures.Future = concurrent.futures.Future()
        self.loop.call_soon_threadsafe(self.jobs.put_nowait, (use, done))
        return done.result(timeout=timeout)

    def tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return self.do(lambda c: c.call_tool(name, arguments))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.jobs.put_nowait, None)
        self.thread.join(30)


def stdio_params(kb: Path, ix: Path, *flags: str, **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(ix), "mcp", *flags],
        env=clean_env(**env),
        cwd=str(kb.parent),
    )


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> Iterator[tuple[Session, Path]]:
    """A read-only server over its own copy of the folder (a test edits a note)."""
    kb = make_folder(tmp_path_factory.mktemp("mcp-stdio"))
    session = Session(stdio_params(kb, index_once(kb, clean_env())))
    yield session, kb
    session.close()


def test_stdio_lists_tools_and_note_resources(shared) -> None:
    session, _ = shared
    tools = session.do(lambda c: c.list_tools()).tools
    assert [t.name for t in tools] == READ_TOOLS
    search = next(t for t in tools if t.name == "search_notes")
    assert search.input_schema["properties"]["k"]["maximum"] == mcp_server.MAX_K
    assert list(search.output_schema["properties"]) == ["query", "retriever", "results"]
    resources = session.do(lambda c: c.list_resources()).resources
    uris = [str(r.uri) for r in resources]
    assert uris == ["notes://list", "note://bread.md", "note://guides/ports.md", "note://long.md"]
    assert {r.mime_type for r in resources[1:]} == {"text/markdown"}
    note = session.do(lambda c: c.read_resource("note://guides/ports.md")).contents[0]
    assert note.text == NOTES["guides/ports.md"].rstrip("\n")
    listing = json.loads(session.do(lambda c: c.read_resource("notes://list")).contents[0].text)
    assert listing["count"] == 3
    templates = session.do(lambda c: c.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["note://{+path}"]


def test_stdio_search_ask_read_and_status(shared) -> None:
    session, _ = shared
    found = session.tool("search_notes", {"query": "feed the starter", "k": 1}).structured_content
    assert found["results"][0]["source"] == "bread.md"
    answer = session.tool("ask", {"question": "What port does the API listen on?"})
    assert answer.structured_content["mode"] == "extractive"
    assert answer.structured_content["references"][0]["source"] == "guides/ports.md"
    assert "8420" in answer.structured_content["answer"]
    lines = session.tool("read_note", {"path": "guides/ports.md", "line_start": 3, "line_end": 3})
    assert lines.content[0].text == "The API listens on port 8420."
    status = session.tool("index_status", {}).structured_content
    assert status["files"] == 3 and status["watching"] is True and status["syncing"] is False
    assert list(status) == [  # the `stats --json` object, then the server's two fields
        "knowledge_dir", "files", "chunks", "embedder", "dimension", "index_dir", "last_sync",
        "links", "broken_links", "chunks_embedded", "keyword_ready", "collection", "filler",
        "properties", "syncing", "watching",
    ]  # fmt: skip


def test_stdio_refuses_every_path_and_keeps_serving(shared) -> None:
    session, kb = shared
    for path, said in refused_paths(kb).items():
        if "\ud800" in path:
            continue  # the SDK's client cannot send it: the raw client below does
        result = session.tool("read_note", {"path": path})
        assert result.is_error and said in result.content[0].text, (path, result.content)
    for path in ("../outside.md", "escape.md", ".obsidian/hidden.md", "script.py", "missing.md"):
        with pytest.raises(MCPError, match=refused_paths(kb)[path]):
            session.do(lambda c, p=path: c.read_resource(f"note://{p}"))
    assert not session.tool("read_note", {"path": "bread.md"}).is_error


def test_stdio_bad_input_is_a_clear_tool_error(shared) -> None:
    session, _ = shared
    cases = [
        ("no_such_tool", {}, "Unknown tool: no_such_tool"),
        ("search_notes", {"query": 42}, "query: input should be a valid string"),
        ("search_notes", {"query": "port", "k": "many"}, "k: input should be a valid integer"),
        ("read_note", {"path": ["a.md"]}, "path: input should be a valid string"),
        ("search_notes", {}, "query: field required"),
        ("search_notes", {"query": "   "}, "the query is empty"),
        ("ask", {"question": ""}, "the question is empty"),
        ("search_notes", {"query": "port", "k": 0}, "greater than or equal to 1"),
        (
            "search_notes",
            {"query": "port", "k": 10_000},
            f"less than or equal to {mcp_server.MAX_K}",
        ),
        ("ask", {"question": "port?", "k": 10_000}, f"less than or equal to {mcp_server.MAX_K}"),
        ("search_notes", {"query": "x" * 1_000_000}, "at most 4000 characters"),
        ("search_notes", {"query": "port", "heading_level": 9}, "heading_level 9: give 1 to 4"),
        ("read_note", {"path": "bread.md", "line_start": 0}, "greater than or equal to 1"),
        ("read_note", {"path": "bread.md", "line_start": 3, "line_end": 2}, "before line_start"),
    ]
    for name, arguments, said in cases:
        result = session.tool(name, arguments)
        text = result.content[0].text
        assert result.is_error and said in text and "\n" not in text, (name, text[:300])
    assert not session.tool("search_notes", {"query": "port", "k": 1}).is_error


def test_stdio_a_note_edited_during_the_session_is_found_by_the_next_search(shared) -> None:
    session, kb = shared
    (kb / "bread.md").write_text("# Bread\n\nThe oven runs at 250 degrees zanzibar.\n")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        found = session.tool("search_notes", {"query": "zanzibar oven", "k": 1})
        if "zanzibar" in found.structured_content["results"][0]["text"]:
            break
        time.sleep(0.3)
    else:
        pytest.fail("the edited note was never found")


def test_stdio_write_tools_with_allow_write_and_a_generated_answer(tmp_path) -> None:
    kb = make_folder(tmp_path)
    ix = index_once(kb, clean_env())
    script = ChatScript(["The API listens on port 8420 [1]."])
    with OpenAIServer() as llm:
        llm.routes["/v1/chat/completions"] = script
        llm_env = {"OPENAI_BASE_URL": llm.url, "OPENAI_API_KEY": "k", "ASKMD_LLM_MODEL": "m"}
        session = Session(stdio_params(kb, ix, "--allow-write", ASKMD_WATCH="0", **llm_env))
        try:
            names = [t.name for t in session.do(lambda c: c.list_tools()).tools]
            assert names == READ_TOOLS + ["add_note", "delete_note"]
            answer = session.tool("ask", {"question": "What port does the API listen on?"})
            assert answer.structured_content["mode"] == "llm"
            assert answer.structured_content["citations"] == [1]
            added = session.tool(
                "add_note", {"path": "new/vpn.md", "content": "# VPN\n\nUse wg0.\n"}
            )
            assert added.structured_content == {
                "status": "created",
                "file": "new/vpn.md",
                "chunks": 1,
            }
            assert (kb / "new/vpn.md").read_text() == "# VPN\n\nUse wg0.\n"
            hits = session.tool("search_notes", {"query": "wg0 vpn", "k": 1}).structured_content
            assert hits["results"][0]["source"] == "new/vpn.md"
            for path in ("../x.md", ".hidden/x.md", "x.py", "/tmp/x.md"):
                refused = session.tool("add_note", {"path": path, "content": "# X\n"})
                assert refused.is_error and "\n" not in refused.content[0].text
            assert not (kb.parent / "x.md").exists()
            gone = session.tool("delete_note", {"path": "new/vpn.md"}).structured_content
            assert gone["status"] == "deleted" and gone["chunks"] == 1
            assert Path(gone["trash"]).read_text() == "# VPN\n\nUse wg0.\n"
            assert not (kb / "new").exists()
            again = session.tool("delete_note", {"path": "new/vpn.md"})
            assert again.is_error and "no such note" in again.content[0].text
            listed = session.tool("list_notes", {}).structured_content
            assert "new/vpn.md" not in [n["path"] for n in listed["notes"]]
        finally:
            session.close()


# --- stdout: protocol bytes only -------------------------------------------------------------


def test_stdout_carries_only_protocol_messages_and_closing_stdin_exits_0(tmp_path) -> None:
    """A whole session on a fresh index (the start-up sync embeds, warns and reports while
    the client talks), read by a client that fails on any stdout line that is not JSON-RPC;
    then stdin closes and the server ends with status 0 and no traceback."""
    kb = make_folder(tmp_path)
    (kb / "bad.md").write_bytes(b"# Bad\n\n\xc3\x28 not utf-8\n")  # a warning during the sync
    args = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix"), "mcp"]
    log = (tmp_path / "stderr.log").open("wb")  # a pipe nobody reads could fill up and block
    server = subprocess.Popen(
        [sys.executable, "-W", "always", str(ROOT / "rag.py"), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        cwd=tmp_path,
        env=clean_env(),
        bufsize=0,  # unbuffered: a reply read ahead into a buffer would hide from select()
    )
    calls = [
        ("tools/list", {}),
        ("resources/list", {}),
        ("resources/read", {"uri": "note://guides/ports.md"}),
        ("resources/read", {"uri": "note://../outside.md"}),
        ("tools/call", {"name": "search_notes", "arguments": {"query": "metrics port"}}),
        ("tools/call", {"name": "ask", "arguments": {"question": "What port is it?"}}),
        ("tools/call", {"name": "read_note", "arguments": {"path": "guides/ports.md"}}),
        ("tools/call", {"name": "list_notes", "arguments": {}}),
        ("tools/call", {"name": "index_status", "arguments": {}}),
        ("tools/call", {"name": "nope", "arguments": {}}),
        ("no/such/method", {}),
    ]
    try:
        send(server, "initialize", 0, {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        })  # fmt: skip
        info = receive(server, 0)["result"]["serverInfo"]
        assert (info["name"], info["version"]) == ("askmd", version.__version__)
        assert re.fullmatch(r"\d+\.\d+\.\d+", info["version"])
        server.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        for n, (method, params) in enumerate(calls, start=1):
            send(server, method, n, params)
            receive(server, n)
        # a lone surrogate: valid JSON, refused in one line, and the server goes on
        server.stdin.write(
            b'{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"read_note",'
            b'"arguments":{"path":"a\\ud800.md"}}}\n'
            b'{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"search_notes",'
            b'"arguments":{"query":"port \\udc00"}}}\n'
        )
        server.stdin.flush()
        surrogate = receive(server, 99)["result"]
        assert surrogate["isError"] and "lone surrogate" in surrogate["content"][0]["text"]
        said = receive(server, 100)["result"]["content"][0]["text"]
        assert "unicode" in said.lower() and "\n" not in said
        server.stdin.close()
        assert server.wait(timeout=30) == 0
        assert server.stdout.read() == b""
    finally:
        if server.poll() is None:
            server.kill()
    log.close()
    stderr = (tmp_path / "stderr.log").read_text()
    assert "Traceback" not in stderr
    assert "bad.md: not UTF-8" in stderr and "indexed:" in stderr  # the sync spoke, on stderr


def send(server: subprocess.Popen, method: str, n: int, params: dict) -> None:
    message = {"jsonrpc": "2.0", "id": n, "method": method, "params": params}
    server.stdin.write(json.dumps(message).encode() + b"\n")
    server.stdin.flush()


def receive(server: subprocess.Popen, n: int) -> dict:
    """The reply to request `n`; every line before it must be a JSON-RPC message too.
    Requests sent together are answered in any order (a quick refusal can overtake a read),
    so a reply to another request is kept for when that one is awaited."""
    early: dict = server.__dict__.setdefault("early_replies", {})
    if n in early:
        return early.pop(n)
    deadline = time.monotonic() + 60
    while True:
        ready, _, _ = select.select([server.stdout], [], [], deadline - time.monotonic())
        assert ready, f"no reply to request {n} within 60 s"
        line = server.stdout.readline()
        assert line, "the server closed stdout"
        try:
            message = json.loads(line)
        except ValueError:
            pytest.fail(f"not a JSON-RPC message on stdout: {line[:200]!r}")
        assert message.get("jsonrpc") == "2.0", line[:200]
        if message.get("id") == n:
            return message
        if "id" in message and "method" not in message:  # a reply to another request
            early[message["id"]] = message


def test_rag_mcp_is_in_the_help(run_rag) -> None:
    shown = run_rag("--help")
    assert "mcp" in shown.stdout and "--allow-write" in run_rag("mcp", "--help").stdout


def receive_error(server: subprocess.Popen) -> dict:
    """The next error reply that answers no request id (a line the server could not read)."""
    deadline = time.monotonic() + 60
    while True:
        ready, _, _ = select.select([server.stdout], [], [], deadline - time.monotonic())
        assert ready, "no error reply within 60 s"
        message = json.loads(server.stdout.readline() or b"null")
        assert message is not None, "the server closed stdout"
        if "error" in message and message.get("id") is None:
            return message


def _raw_server(tmp_path) -> tuple[subprocess.Popen, Any]:
    """`rag.py mcp` over one note, spoken to line by line; its stderr kept in a file."""
    kb = write_notes(tmp_path / "kb", {"a.md": "# A\n\nhello\n"})
    log = (tmp_path / "stderr.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "rag.py"), "--knowledge", str(kb),
         "--index-dir", str(tmp_path / "ix"), "mcp"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, cwd=tmp_path,
        env=clean_env(), bufsize=0,
    )  # fmt: skip
    return server, log


def _initialize(server: subprocess.Popen) -> None:
    send(server, "initialize", 0, {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    })  # fmt: skip
    assert "serverInfo" in receive(server, 0)["result"]


def test_a_line_the_server_cannot_parse_is_answered_with_an_error_and_it_goes_on(
    tmp_path,
) -> None:
    """Nesting past Python's recursion limit, bytes that are not JSON, and a line over the
    cap (first with no newline at all: answered before the line ends, so it is not held
    whole) each get a -32700 error, and the next request is answered."""
    server, log = _raw_server(tmp_path)
    deep = '{"a": ' * 1100 + "1" + "}" * 1100
    try:
        _initialize(server)
        server.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        server.stdin.write(
            b'{"jsonrpc":"2.0","id":1,"method":"ping","params":' + deep.encode() + b"}\n"
        )
        assert receive_error(server)["error"]["code"] == -32700
        send(server, "ping", 2, {})
        assert receive(server, 2)["result"] == {}
        server.stdin.write(b"not json at all\n")
        assert receive_error(server)["error"]["code"] == -32700
        server.stdin.write(b'{"jsonrpc": "2.0", "id": 7, "params": []}\n')  # JSON, no message
        assert receive(server, 7)["error"]["code"] == -32600
        server.stdin.write(b'{"jsonrpc": "2.0", "id": null, "method": "ping"}\n')  # MCP: no null
        assert receive_error(server)["error"]["code"] == -32600
        server.stdin.write(b"x" * (mcp_stdio.MAX_LINE_BYTES + 1))  # no newline yet
        refused = receive_error(server)["error"]
        assert refused["code"] == -32700 and "MB" in refused["message"]
        server.stdin.write(b"y" * 100_000 + b"\n")  # the rest of the long line is skipped
        send(server, "ping", 3, {})
        assert receive(server, 3)["result"] == {}
        server.stdin.close()
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
    log.close()
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()


def test_a_client_that_stops_reading_ends_the_server_quietly(tmp_path) -> None:
    """The client closes its end of stdout but not stdin: the next reply cannot be
    written, and the server leaves at once with status 0 and no traceback."""
    server, log = _raw_server(tmp_path)
    try:
        _initialize(server)
        server.stdout.close()
        for n in range(1, 4):  # the first reply may still fit in the pipe
            send(server, "ping", n, {})
            time.sleep(0.2)
        assert server.wait(timeout=20) == 0
    finally:
        if server.poll() is None:
            server.kill()
    log.close()
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()
