"""Answers from an LLM: the chat client against a scripted OpenAI-compatible server, and
`ask` / the REPL through the real program, with the citations checked on the way out."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from askmd.answer.chat import Chat
from askmd.answer.extractive import ENABLE_GENERATION
from askmd.answer.prompt import REWRITE_PROMPT, SYSTEM_PROMPT
from askmd.errors import AskmdError
from tests.conftest import ASK_JSON_FIELDS, NOTES, ROOT, clean_env, write_notes
from tests.openai_server import OpenAIServer, Request

CHAT = "/v1/chat/completions"
MODELS = "/v1/models"
FAST_RETRY = {"retry-after-ms": "10"}  # with an error: the client waits this long to try again
USER = [{"role": "user", "content": "What port does the API use?"}]


# --- a scripted chat model -----------------------------------------------------------------


def pieces_of(text: str, size: int = 4) -> list[str]:
    """The text cut into small pieces, so that a citation like [12] straddles two of them."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse_chunks(text: str, model: str, size: int = 4) -> list[dict]:
    """A streamed reply as OpenAI sends it: one chunk per piece, then an empty `stop` chunk."""

    def chunk(delta: dict, finish: str | None) -> dict:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [choice],
        }

    return [chunk({"content": p}, None) for p in pieces_of(text, size)] + [chunk({}, "stop")]


def reply_with(server: OpenAIServer, text: str, size: int = 4) -> None:
    """Make the server's chat model stream `text` to every request."""
    server.routes[CHAT] = lambda body: sse_chunks(text, body["model"], size)


def converse(server: OpenAIServer, rewrite: str, answer: str) -> None:
    """Rewrite requests get `rewrite`, every other chat request is answered with `answer`."""

    def route(body: dict) -> list[dict]:
        asks_rewrite = body["messages"][0]["content"] == REWRITE_PROMPT
        return sse_chunks(rewrite if asks_rewrite else answer, body["model"])

    server.routes[CHAT] = route


def serve_models(server: OpenAIServer, *names: str) -> None:
    listing = [{"id": n, "object": "model", "created": 0, "owned_by": "x"} for n in names]
    server.routes[MODELS] = lambda body: {"object": "list", "data": listing}


def chat_requests(server: OpenAIServer) -> list[Request]:
    return [r for r in server.requests if r.path == CHAT]


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (it was free a moment ago)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def shared_server() -> Iterable[OpenAIServer]:
    with OpenAIServer(dimension=16) as server:
        yield server


@pytest.fixture
def server(shared_server: OpenAIServer) -> OpenAIServer:
    """The module's server with no routes but embeddings, no scripted errors, no requests."""
    shared_server.reset()
    return shared_server


def chat_for(server: OpenAIServer, **options: Any) -> Chat:
    options = {"max_retries": 0, **options}
    return Chat(server.url, "sk-test", options.pop("model", "m1"), **options)


# --- 1. streaming and completing ---------------------------------------------------------


def test_stream_yields_the_pieces_in_order_and_sends_the_settings(server: OpenAIServer) -> None:
    text = "The API listens on port 8420 [1]. Metrics are on 9420 [2]."
    reply_with(server, text, size=3)
    chat = chat_for(server, temperature=0.3, max_tokens=123)

    assert list(chat.stream(USER)) == pieces_of(text, 3)

    (request,) = chat_requests(server)
    assert request.body["stream"] is True
    assert request.body["model"] == "m1"
    assert request.body["temperature"] == 0.3
    assert request.body["max_tokens"] == 123
    assert request.body["messages"] == USER
    assert request.headers["authorization"] == "Bearer sk-test"


def test_complete_returns_the_whole_reply_stripped(server: OpenAIServer) -> None:
    reply_with(server, "  \nWhich port does the API listen on?  \n", size=5)
    chat = chat_for(server)
    assert chat.complete(USER) == "Which port does the API listen on?"
    (request,) = chat_requests(server)
    assert request.body["max_tokens"] == 100 and request.body["stream"] is True


def test_stream_max_tokens_argument_overrides_the_setting(server: OpenAIServer) -> None:
    reply_with(server, "ok")
    list(chat_for(server, max_tokens=800).stream(USER, max_tokens=7))
    assert chat_requests(server)[0].body["max_tokens"] == 7


# --- 2. which model ----------------------------------------------------------------------


def test_the_only_model_a_server_lists_is_used(server: OpenAIServer) -> None:
    serve_models(server, "llama3.2:3b")
    reply_with(server, "Yes.")
    chat = chat_for(server, model="")
    assert chat.complete(USER) == "Yes."
    assert chat.model == "llama3.2:3b"
    assert [r.path for r in server.requests] == [MODELS, CHAT]
    assert chat_requests(server)[0].body["model"] == "llama3.2:3b"


def test_two_listed_models_ask_for_askmd_llm_model(server: OpenAIServer) -> None:
    serve_models(server, "qwen", "llama")
    reply_with(server, "never sent")
    chat = chat_for(server, model="")
    with pytest.raises(AskmdError) as caught:
        list(chat.stream(USER))
    message = str(caught.value)
    assert "\n" not in message
    assert "ASKMD_LLM_MODEL" in message
    assert message.endswith("It serves: llama, qwen.")
    assert chat_requests(server) == []


def test_a_server_without_a_model_list_asks_for_askmd_llm_model(server: OpenAIServer) -> None:
    chat = chat_for(server, model="")  # no /v1/models route: 404
    with pytest.raises(AskmdError, match="Set ASKMD_LLM_MODEL to a model the server"):
        list(chat.stream(USER))


# --- 3. every failure is one line --------------------------------------------------------


def _error_of(chat: Chat) -> str:
    with pytest.raises(AskmdError) as caught:
        list(chat.stream(USER))
    message = str(caught.value)
    assert "\n" not in message, message
    assert message == message.strip() and message
    return message


LLAMA_CPP_CONTEXT = (
    "request (5031 tokens) exceeds the available context size (4096 tokens), try increasing it"
)


@pytest.mark.parametrize(
    ("status", "body", "words"),
    [
        (401, None, ["refused the API key (401)", "OPENAI_API_KEY"]),
        (403, None, ["denied access (403)", "OPENAI_API_KEY", "'m1'"]),
        (404, None, ["does not know the model 'm1' (404)", "ASKMD_LLM_MODEL"]),
        (429, None, ["rate-limiting", "(429)", "Wait a minute"]),
        (500, None, ["failed (500)", "forced 500", "Try again"]),
        (503, None, ["failed (503)", "Try again"]),
        (400, {"error": {"message": "bad temperature", "code": None}}, ["rejected", "(400)"]),
        (
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 8192 tokens.",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            },
            ["do not fit the model's context (400", "ASKMD_TOP_K"],
        ),
        (
            400,
            {
                "error": {
                    "code": 400,
                    "message": LLAMA_CPP_CONTEXT,
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 5031,
                    "n_ctx": 4096,
                }
            },
            ["do not fit the model's context (400", "5031 tokens", "ASKMD_TOP_K"],
        ),
    ],
    ids=[
        "401",
        "403",
        "404",
        "429",
        "500",
        "503",
        "400",
        "openai-context",
        "llamacpp-context",
    ],
)
def test_an_error_status_is_one_line(
    server: OpenAIServer, status: int, body: dict | None, words: list[str]
) -> None:
    reply_with(server, "never shown")
    server.force(CHAT, status, body)
    message = _error_of(chat_for(server))
    assert message.startswith(("the LLM server at " + server.url, "the question and its sources"))
    for word in words:
        assert word in message, message
    assert "tried" not in message  # max_retries=0: one try
    assert len(chat_requests(server)) == 1


def test_a_rate_limit_then_success_is_retried_before_any_token(server: OpenAIServer) -> None:
    reply_with(server, "Port 8420 [1].")
    server.force(CHAT, 429, headers=FAST_RETRY)
    chat = chat_for(server, max_retries=1)
    assert "".join(chat.stream(USER)) == "Port 8420 [1]."
    assert len(chat_requests(server)) == 2


def test_rate_limited_on_every_try_says_how_many(server: OpenAIServer) -> None:
    server.force(CHAT, 429, times=2, headers=FAST_RETRY)
    message = _error_of(chat_for(server, max_retries=1))
    assert "(429) (tried 2 times)" in message
    assert len(chat_requests(server)) == 2


def test_a_silent_server_is_a_timeout(server: OpenAIServer) -> None:
    reply_with(server, "too late")
    server.force(CHAT, delay=2.0)
    started = time.perf_counter()
    message = _error_of(chat_for(server, timeout=0.3))
    assert time.perf_counter() - started < 1.5  # it gave up, well before the reply came
    assert message.startswith(f"the LLM server at {server.url} did not answer within 0.3 s.")
    assert "ASKMD_LLM_TIMEOUT" in message


def test_a_stream_that_stalls_after_some_tokens_is_a_timeout(server: OpenAIServer) -> None:
    def stalling(body: dict) -> Iterable[dict]:
        chunks = sse_chunks("Hello there", body["model"])
        yield chunks[0]
        time.sleep(1.0)
        yield from chunks[1:]

    server.routes[CHAT] = stalling
    got: list[str] = []
    with pytest.raises(AskmdError, match="did not answer within 0.3 s"):
        for piece in chat_for(server, timeout=0.3, max_retries=2).stream(USER):
            got.append(piece)
    assert got == ["Hell"]
    assert len(chat_requests(server)) == 1  # nothing is resent once a token was shown


def test_connection_refused_is_one_line() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    message = _error_of(Chat(url, "k", "m1", max_retries=0))
    assert message == f"cannot reach the LLM server at {url}. Is it running? Check OPENAI_BASE_URL."


def test_a_stream_line_that_is_not_json_is_one_line(server: OpenAIServer) -> None:
    def broken(body: dict) -> Iterable[dict | bytes]:
        yield sse_chunks("Port", body["model"])[0]
        yield b"data: <html>502 Bad Gateway</html>\n\n"

    server.routes[CHAT] = broken
    got: list[str] = []
    with pytest.raises(AskmdError) as caught:
        for piece in chat_for(server, max_retries=2).stream(USER):
            got.append(piece)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"the LLM server at {server.url} sent a reply that is not an")
    assert "OpenAI-style stream" in message and message.endswith("Check OPENAI_BASE_URL.")
    assert got == ["Port"]
    assert len(chat_requests(server)) == 1


def test_a_server_that_does_not_stream_is_not_an_empty_answer(server: OpenAIServer) -> None:
    server.routes[CHAT] = lambda body: {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Port 8420 [1]."},
                "finish_reason": "stop",
            }
        ],
    }
    try:
        text = chat_for(server).complete(USER)
    except AskmdError as exc:  # saying so is as good as using the reply
        assert "\n" not in str(exc)
    else:
        assert text == "Port 8420 [1]."  # today: ""


# --- the real program: a tiny knowledge folder, embeddings from the same server ----------

K = ("-k", "3")  # every chunk of NOTES: which one ranks first is up to the scripted vectors
SYNC_LINE = re.compile(r"^(indexed: .* chunks? in the index|index up to date: .* chunks?) \(")


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Indexed once for the module; the chat route changes from test to test."""
    return write_notes(tmp_path_factory.mktemp("ask") / "kb", NOTES)


def llm_env(server: OpenAIServer, **extra: str) -> dict[str, str]:
    return {
        "ASKMD_EMBEDDING_BACKEND": "openai",
        "ASKMD_EMBEDDING_MODEL": "test-embed",
        "OPENAI_BASE_URL": server.url,
        "OPENAI_API_KEY": "k",
        "ASKMD_LLM_MODEL": "m1",
        **extra,
    }


def where(kb: Path) -> tuple[str, ...]:
    return ("--knowledge", str(kb), "--index-dir", str(kb.parent / "ix"))


def label(ref: dict) -> str:
    """How a source is named in the prompt and in the reference list."""
    chain = f" › {ref['heading_chain']}" if ref["heading_chain"] else ""
    return f"{ref['source']}{chain} (lines {ref['line_start']}–{ref['line_end']})"


_SOURCE_HEAD = re.compile(r"^\[(\d+)\] (.+ \(lines \d+–\d+\))$", re.M)


def prompt_sources(request: Request) -> dict[int, tuple[str, str]]:
    """{n: (label, passage)} of the numbered sources in an answer request."""
    user = request.body["messages"][1]["content"]
    assert user.startswith("Sources:\n\n")
    sources = user[len("Sources:\n\n") : user.rindex("\n\nQuestion: ")]
    heads = list(_SOURCE_HEAD.finditer(sources))
    out = {}
    for head, following in zip(heads, heads[1:] + [None], strict=True):
        end = following.start() if following else len(sources)
        out[int(head.group(1))] = (head.group(2), sources[head.end() + 1 : end].strip())
    return out


def only_sentence(passage: str) -> str:
    """The one prose line of a NOTES passage (the rest is its heading)."""
    (line,) = [ln for ln in passage.splitlines() if ln.strip() and not ln.startswith("#")]
    return line


def ask_json(run_rag, kb: Path, server: OpenAIServer, question: str) -> dict:
    result = run_rag(*where(kb), "ask", question, *K, "--json", **llm_env(server))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def assert_references_are_real(data: dict, kb: Path, request: Request) -> None:
    """Each reference names the [n] source of the prompt and quotes its file verbatim."""
    sources = prompt_sources(request)
    assert [r["n"] for r in data["references"]] == data["citations"]
    for ref in data["references"]:
        assert set(ref) == {
            "n", "source", "heading_chain", "line_start", "line_end", "page_start", "page_end",
            "text", "supported",
        }  # fmt: skip
        assert label(ref) == sources[ref["n"]][0]
        on_disk = (kb / ref["source"]).read_text(encoding="utf-8")
        assert ref["text"] and ref["text"] in on_disk
        lines = on_disk.split("\n")[ref["line_start"] - 1 : ref["line_end"]]
        assert ref["text"] in "\n".join(lines)


# --- 4. ask --json -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "answer", "citations", "invalid"),
    [
        ("Port 8420 [1]. Metrics on 9420 [2].", "Port 8420 [1]. Metrics on 9420 [2].", [1, 2], []),
        ("Port 8420 [1][9]. Daily [9].", "Port 8420 [1]. Daily.", [1], [9]),
        ("Port 8420 [1][1]. Still 8420 [1].", "Port 8420 [1]. Still 8420 [1].", [1], []),
        ("Metrics 【2】. Port 【1】.", "Metrics [2]. Port [1].", [2, 1], []),
        ("Both ports [1-2].", "Both ports [1][2].", [1, 2], []),
        ("The notes do not say.", "The notes do not say.", [], []),
    ],
    ids=["valid", "out-of-range", "repeated", "full-width", "range", "uncited"],
)
def test_ask_json_checks_the_citations(
    run_rag, kb: Path, server: OpenAIServer, reply, answer, citations, invalid
) -> None:
    reply_with(server, reply)
    data = ask_json(run_rag, kb, server, "Which ports are used?")

    assert list(data) == ASK_JSON_FIELDS
    assert data["question"] == "Which ports are used?"
    assert data["mode"] == "llm"
    assert data["answer"] == answer
    assert data["citations"] == citations
    assert data["invalid_citations"] == invalid
    assert data["retrieval_ms"] >= 0 and data["generation_ms"] >= 0
    (request,) = chat_requests(server)
    assert_references_are_real(data, kb, request)
    if not citations:
        assert data["references"] == []


def test_ask_sends_the_system_prompt_the_numbered_sources_and_the_question(
    run_rag, kb: Path, server: OpenAIServer
) -> None:
    reply_with(server, "Port 8420 [1].")
    ask_json(run_rag, kb, server, "What port does the API use?")
    (request,) = chat_requests(server)
    system, user = request.body["messages"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert user["role"] == "user"
    assert user["content"].endswith("\n\nQuestion: What port does the API use?")
    assert "In this conversation" not in user["content"]
    sources = prompt_sources(request)
    assert sorted(sources) == [1, 2, 3]
    assert {only_sentence(text) for _, text in sources.values()} == {
        "The API listens on port 8420.",
        "Metrics are on 9420.",
        "Feed the starter daily.",
    }
    for source_label, text in sources.values():
        source = source_label.split(" › ")[0]
        assert text in NOTES[source]
    # The question was embedded as it was asked: no conversation, no rewrite.
    queries = [r.body["input"] for r in server.requests if r.path == "/v1/embeddings"]
    assert queries[-1] == ["What port does the API use?"]
    assert request.body["model"] == "m1" and request.body["stream"] is True


def test_the_quoted_fragment_is_verbatim_also_for_a_code_only_section(
    run_rag, tmp_path: Path, server: OpenAIServer
) -> None:
    notes = {
        "setup.md": "# Setup\n\nRun the installer once.\n",
        "install.md": "# Install\n\n```\npip install askmd\n```\n",  # no prose sentence
    }
    folder = write_notes(tmp_path / "kb", notes)
    reply_with(server, "Run the installer [1]. Install it with pip [2].")
    result = run_rag(
        *where(folder), "ask", "How to install?", "-k", "2", "--json", **llm_env(server)
    )
    assert result.returncode == 0, result.stderr
    refs = {r["source"]: r["text"] for r in json.loads(result.stdout)["references"]}
    assert refs == {
        "setup.md": "Run the installer once.",
        "install.md": "# Install\n\n```\npip install askmd\n```",  # the passage itself
    }


# --- 5. ask, human output ----------------------------------------------------------------


def test_ask_prints_the_checked_answer_and_the_references(
    run_rag, kb: Path, server: OpenAIServer
) -> None:
    reply_with(server, "Port 8420 [1]. Metrics on 9420 [2][9].")
    result = run_rag(*where(kb), "ask", "Which ports?", *K, **llm_env(server))
    assert result.returncode == 0, result.stderr

    sources = prompt_sources(chat_requests(server)[0])
    assert result.stdout.splitlines() == [
        "Port 8420 [1]. Metrics on 9420 [2].",
        "",
        f"[1] {sources[1][0]}",
        f'    "{only_sentence(sources[1][1])}"',
        f"[2] {sources[2][0]}",
        f'    "{only_sentence(sources[2][1])}"',
    ]
    sync, *rest = result.stderr.splitlines()
    assert SYNC_LINE.match(sync), sync
    assert rest == ["warning: the answer cited [9], but there were only 3 sources; removed"]


def test_ask_warns_when_the_answer_cites_nothing(run_rag, kb: Path, server: OpenAIServer) -> None:
    reply_with(server, "The API uses port 8420.")
    result = run_rag(*where(kb), "ask", "Which port does the API use?", *K, **llm_env(server))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The API uses port 8420.\n"
    assert result.stderr.splitlines()[1:] == [
        "warning: the answer cites none of the sources; check it against them (/sources)"
    ]


# --- 6. ask fails in one line ------------------------------------------------------------


def assert_error_then_quotes(result: subprocess.CompletedProcess, start: str) -> str:
    """The LLM failed: one error line above the notes' own sentences and their references."""
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    sync, *rest = result.stderr.splitlines()
    assert SYNC_LINE.match(sync), sync
    assert len(rest) == 1, result.stderr  # no "No LLM is configured" hint: one is
    (line,) = rest
    assert line.startswith("error: " + start) and line.endswith(" Quoting your notes instead.")
    answer_lines = result.stdout.split("\n\n")[0].splitlines()
    assert answer_lines and all(re.fullmatch(r"- .+ \[\d+\]", x) for x in answer_lines)
    assert _SOURCE_HEAD.search(result.stdout), result.stdout  # the references follow
    return line


@pytest.mark.parametrize(
    ("status", "times", "words"),
    [
        (401, 1, ["refused the API key (401)", "OPENAI_API_KEY"]),
        (500, 3, ["failed (500) (tried 3 times): forced 500", "Try again"]),
    ],
    ids=["401", "500"],
)
def test_ask_with_a_failing_llm_falls_back_to_quotes(
    run_rag, kb: Path, server: OpenAIServer, status: int, times: int, words: list[str]
) -> None:
    reply_with(server, "never shown")
    server.force(CHAT, status, times=times, headers=FAST_RETRY)
    result = run_rag(*where(kb), "ask", "Which ports?", *K, **llm_env(server))
    line = assert_error_then_quotes(result, f"the LLM server at {server.url} ")
    for word in words:
        assert word in line
    assert len(chat_requests(server)) == times


def test_ask_json_with_a_failing_llm_is_extractive_with_the_error(
    run_rag, kb: Path, server: OpenAIServer
) -> None:
    server.force(CHAT, 401)
    result = run_rag(*where(kb), "ask", "Which port does the API use?", *K, "--json",
                     **llm_env(server))  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert list(data) == ASK_JSON_FIELDS
    assert data["mode"] == "extractive"
    assert data["llm_error"].startswith(f"the LLM server at {server.url} refused the API key")
    assert "\n" not in data["llm_error"]
    assert data["references"] and data["citations"] == [r["n"] for r in data["references"]]
    assert data["answer"].startswith("- ")


@pytest.mark.parametrize("reply", ["", " \n\n "], ids=["nothing", "whitespace"])
def test_an_llm_reply_with_no_text_falls_back_to_quotes(
    run_rag, kb: Path, server: OpenAIServer, reply: str
) -> None:
    """A reasoning model that spent its tokens thinking streams no text and stops: that is
    a failure said in one line, not an empty answer citing nothing."""
    reply_with(server, reply)
    result = run_rag(*where(kb), "ask", "Which ports?", *K, **llm_env(server))
    line = assert_error_then_quotes(result, "the LLM replied with no text")
    assert "ASKMD_LLM_MAX_TOKENS" in line
    result = run_rag(*where(kb), "ask", "Which ports?", *K, "--json", **llm_env(server))
    data = json.loads(result.stdout)
    assert data["mode"] == "extractive" and data["answer"].startswith("- ")
    assert data["llm_error"].startswith("the LLM replied with no text")
    assert data["references"] and data["citations"] == [r["n"] for r in data["references"]]


def test_ask_json_without_an_error_has_a_null_llm_error(
    run_rag, kb: Path, server: OpenAIServer
) -> None:
    reply_with(server, ANSWER)
    result = run_rag(*where(kb), "ask", "Which ports?", *K, "--json", **llm_env(server))
    data = json.loads(result.stdout)
    assert data["mode"] == "llm" and data["llm_error"] is None
    assert data["query"] == "Which ports?"


def test_ask_with_an_unreachable_llm_falls_back_to_quotes(run_rag, tmp_path: Path) -> None:
    # Local embeddings, so that only the chat model is unreachable.
    folder = write_notes(tmp_path / "kb", {"bread.md": NOTES["bread.md"]})
    url = f"http://127.0.0.1:{closed_port()}/v1"
    env = {"OPENAI_BASE_URL": url, "ASKMD_LLM_MODEL": "m1"}
    result = run_rag(*where(folder), "ask", "How often to feed the starter?", **env)
    line = assert_error_then_quotes(
        result, f"cannot reach the LLM server at {url} (tried 3 times)."
    )
    assert "Check OPENAI_BASE_URL." in line
    assert "Feed the starter daily. [1]" in result.stdout


def test_unreachable_api_openai_com_says_there_is_no_route() -> None:
    """No URL set: the client's real connection error, raised through a proxy that is not
    there (no network is needed), names api.openai.com and not OPENAI_BASE_URL."""
    import httpx
    import openai

    chat = Chat(None, "sk-test", "gpt-4o-mini", max_retries=0)
    chat._client = openai.OpenAI(
        api_key="sk-test",
        max_retries=0,
        http_client=httpx.Client(proxy=f"http://127.0.0.1:{closed_port()}", timeout=2),
    )
    message = _error_of(chat)
    assert message.startswith("no network route to api.openai.com. Check the internet")
    assert "Check OPENAI_BASE_URL" not in message


# --- 7. no LLM: quoted from the notes ----------------------------------------------------

LOCAL_NOTES = {
    "ports.md": "# Ports\n\nThe API listens on port 8420.\n\nMetrics are served on port 9420.\n",
    "bread.md": "# Bread\n\nFeed the sourdough starter daily.\n",
}


@pytest.fixture(scope="module")
def local_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_notes(tmp_path_factory.mktemp("local") / "kb", LOCAL_NOTES)


def test_extractive_json_quotes_the_notes(run_rag, local_kb: Path) -> None:
    result = run_rag(*where(local_kb), "ask", "Which port does the API listen on?", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["mode"] == "extractive"
    assert data["invalid_citations"] == []
    assert data["citations"] == [r["n"] for r in data["references"]]
    assert data["citations"]
    lines = data["answer"].splitlines()
    assert lines and all(re.fullmatch(r"- .+ \[\d+\]", line) for line in lines), lines
    cited_in_text = [int(n) for line in lines for n in re.findall(r"\[(\d+)\]$", line)]
    assert list(dict.fromkeys(cited_in_text)) == data["citations"]
    assert "- The API listens on port 8420. [" in data["answer"]
    for ref in data["references"]:
        assert ref["text"] in LOCAL_NOTES[ref["source"]]
        assert f"- {ref['text']} [{ref['n']}]" in lines


def test_extractive_human_output_ends_with_the_hint(run_rag, local_kb: Path) -> None:
    result = run_rag(*where(local_kb), "ask", "Which port does the API listen on?")
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[0].startswith("- ") and "" in out
    references = out[out.index("") + 1 :]
    assert references and re.fullmatch(r"\[\d+\] \S+\.md › .+ \(lines \d+–\d+\)", references[0])
    hint = result.stderr.splitlines()[-1]
    assert hint == ENABLE_GENERATION
    assert "OPENAI_API_KEY" in hint and "http://localhost:11434/v1" in hint


FOLLOW_NOTES = {
    "upload.md": "# Uploads\n\nThe maximum upload size is 50 MB per photo.\n",
    "ops.md": "# Operations\n\n## Metrics\n\nThe metrics port is 9420, scraped by Prometheus.\n",
    "bread.md": "# Bread\n\nFeed the sourdough starter daily.\n",
}


def test_repl_searches_a_new_short_question_on_its_own(tmp_path: Path) -> None:
    """No LLM: "and the metrics port?" after the upload question is not the upload answer
    again, and /debug shows which query it searched."""
    kb = write_notes(tmp_path / "kb", FOLLOW_NOTES)
    stdin = (
        "what is the maximum upload size?\n/debug and is that per photo?\n"
        "/debug and the metrics port?\nand the metrics port?\n"
    )
    result = subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), *where(kb)],
        input=stdin, capture_output=True, text=True, env={**clean_env(), "COLUMNS": "200"},
        cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    upload, follow_up, metrics = result.stdout.split("retrieved for ")
    assert "- The maximum upload size is 50 MB per photo. [1]" in upload
    # a real follow-up is read with the question before it ...
    assert follow_up.startswith("'what is the maximum upload size? and is that per photo?'")
    # ... a new question on its own, and answered from its own passage
    assert metrics.startswith("'and the metrics port?'")
    assert "- The metrics port is 9420, scraped by Prometheus. [1]" in metrics
    assert "50 MB" not in metrics.split("\n- ", 1)[1]


def test_repl_says_when_it_reads_a_question_as_a_follow_up(tmp_path: Path) -> None:
    """A merged question is shown as searched, one dim line before its answer; a new one is
    not (and a short question with its own subject is new)."""
    kb = write_notes(tmp_path / "kb", FOLLOW_NOTES)
    stdin = "what is the maximum upload size?\nand is that per photo?\nwhat is the metrics port?\n"
    result = subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), *where(kb)],
        input=stdin, capture_output=True, text=True, env={**clean_env(), "COLUMNS": "200"},
        cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    said = '(read as a follow-up: "what is the maximum upload size? and is that per photo?")'
    assert result.stdout.count("(read as a follow-up") == 1, result.stdout
    before, after = result.stdout.split(said + "\n")
    assert "50 MB per photo" in after.split("metrics", 1)[0]  # the answer comes after it
    assert "9420" in after


def test_repl_sources_shows_each_passage_in_full(tmp_path: Path) -> None:
    """README promises /sources "in full": a passage of 900 characters is not cut at 600."""
    body = " ".join(f"Upload rule {i} applies to photos." for i in range(26))
    kb = write_notes(tmp_path / "kb", {"upload.md": f"# Uploads\n\n{body} Lastword here.\n"})
    result = subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), *where(kb)],
        input="which upload rules apply to photos?\n/sources\n", capture_output=True,
        text=True, env={**clean_env(), "COLUMNS": "200"}, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    sources = result.stdout.split("[1] ")[-1]
    assert "Lastword here." in sources and " …" not in sources


def test_the_sample_folder_answers_the_metrics_port_not_the_upload_size_again(
    tmp_path: Path,
) -> None:
    """The case as reported on knowledge/: README's service table names uploads and the
    metrics port in one row, which once kept "and the metrics port?" merged with the upload
    question, and the upload answer came back word for word."""
    stdin = "what is the maximum upload size?\nand the metrics port?\n"
    result = subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), "--knowledge", str(ROOT / "knowledge"),
         "--index-dir", str(tmp_path / "ix")],
        input=stdin, capture_output=True, text=True, env={**clean_env(), "COLUMNS": "200"},
        cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # The second answer's first bullet follows the first answer's last quoted reference.
    cut = next(
        i for i in range(1, len(lines)) if lines[i].startswith("- ") and lines[i - 1][:5] == '    "'
    )
    first, second = "\n".join(lines[:cut]), "\n".join(lines[cut:])
    assert "50 MB per photo" in first
    assert "9420" in second and "50 MB per photo" not in second, second


# --- 8. the REPL, piped ------------------------------------------------------------------

REWRITE = "On which port are the metrics served?"
UNSUPPORTED = "warning: the answer cites [1] for what the passage does not say"
ANSWER = "Port 8420 [1]."


def repl(kb: Path, server: OpenAIServer, stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), *where(kb)],
        input=stdin,
        capture_output=True,
        text=True,
        env=clean_env(**llm_env(server, ASKMD_TOP_K="3")),
        cwd=kb.parent,
        timeout=60,
    )


def systems(server: OpenAIServer) -> list[str]:
    return [r.body["messages"][0]["content"] for r in chat_requests(server)]


def answer_block(request: Request, answer: str = ANSWER) -> list[str]:
    """What the REPL prints for ANSWER given the sources of its request: "Port 8420 [1]"
    cited to a passage that does not say 8420 is marked so, and the answer, none of whose
    claims holds, opens by saying it is unsupported."""
    from askmd.answer import exchange

    source_label, passage = prompt_sources(request)[1]
    mark = "" if answer != ANSWER or "8420" in passage else " (this passage does not say this)"
    said = [exchange.UNSUPPORTED, "", answer] if mark else [answer]  # not one claim holds
    return [*said, "", f"[1] {source_label}{mark}", f'    "{only_sentence(passage)}"']


def test_repl_rewrites_a_follow_up_and_answers_with_it(kb: Path, server: OpenAIServer) -> None:
    converse(server, f'"{REWRITE}"', ANSWER)
    stdin = "What port does the API use?\nAnd the metrics?\n/sources\n/quit\n"
    result = repl(kb, server, stdin)
    assert result.returncode == 0, result.stderr
    # "Port 8420" is the scripted answer to both: cited to the metrics passage, it is
    # flagged as not what that passage says.
    said = [line for line in result.stderr.splitlines() if not line.startswith(UNSUPPORTED)]
    assert [SYNC_LINE.match(line) is not None for line in said] == [True]

    first, rewrite, second = chat_requests(server)
    assert systems(server) == [SYSTEM_PROMPT, REWRITE_PROMPT, SYSTEM_PROMPT]
    asked = rewrite.body["messages"][1]["content"]
    conversation, last, prompt = asked.split("\n\n")
    said = conversation.splitlines()
    assert said[:2] == ["Conversation:", "User: What port does the API use?"]
    assert said[2].startswith("Assistant: Port 8420") and "[1]" not in said[2]  # citations cut
    assert (last, prompt) == ("Last question: And the metrics?", "Rewritten question:")
    assert rewrite.body["max_tokens"] == 100
    assert first.body["messages"][1]["content"].endswith("Question: What port does the API use?")
    assert second.body["messages"][1]["content"].endswith(
        f"Question: And the metrics?\n(In this conversation that means: {REWRITE})"
    )
    # The follow-up was searched with the rewrite, not with its own words.
    queries = [r.body["input"] for r in server.requests if r.path == "/v1/embeddings"]
    assert queries[-2:] == [["What port does the API use?"], [REWRITE]]

    out = result.stdout.splitlines()
    read_as = f'(read as a follow-up: "{REWRITE}")'  # the rewrite, before its answer
    shown = answer_block(first) + [read_as] + answer_block(second)
    assert out[: len(shown)] == shown
    # /sources: every chunk retrieved for the last answer, best first, as in its prompt.
    listed = [m.groups() for m in map(re.compile(r"^\[(\d)\] -?\d\.\d{3} (.+)$").match, out) if m]
    labels = {n: source_label for n, (source_label, _) in prompt_sources(second).items()}
    assert [(int(n), name) for n, name in listed] == sorted(labels.items())
    for _, passage in prompt_sources(second).values():
        assert any(only_sentence(passage) in line for line in out[8:])


def test_repl_clear_forgets_the_conversation(kb: Path, server: OpenAIServer) -> None:
    converse(server, REWRITE, ANSWER)
    stdin = "What port does the API use?\n/clear\nAnd the metrics?\n"
    result = repl(kb, server, stdin)
    assert result.returncode == 0, result.stderr
    assert systems(server) == [SYSTEM_PROMPT, SYSTEM_PROMPT]  # no rewrite after /clear
    first, second = chat_requests(server)
    assert second.body["messages"][1]["content"].endswith("\n\nQuestion: And the metrics?")
    queries = [r.body["input"] for r in server.requests if r.path == "/v1/embeddings"]
    assert queries[-1] == ["And the metrics?"]
    assert result.stdout.splitlines() == [
        *answer_block(first),
        "conversation cleared",
        *answer_block(second),
    ]


def test_repl_sources_before_any_answer_is_an_error_line(kb: Path, server: OpenAIServer) -> None:
    result = repl(kb, server, "/sources\n")
    assert result.returncode == 0
    assert result.stderr.splitlines()[1:] == ["error: no answer yet: ask a question first"]
    assert chat_requests(server) == []


def test_repl_quotes_the_notes_after_an_llm_error(kb: Path, server: OpenAIServer) -> None:
    converse(server, REWRITE, ANSWER)
    server.force(CHAT, 500, times=3, headers=FAST_RETRY)  # the client tries three times
    stdin = "What port does the API use?\n/sources\nWhat port does the API use?\n"
    result = repl(kb, server, stdin)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    sync, *rest = result.stderr.splitlines()
    assert SYNC_LINE.match(sync)
    assert rest == [
        f"error: the LLM server at {server.url} failed (500) (tried 3 times): forced 500. "
        "Try again; if it persists, check the server's log. Quoting your notes instead."
    ]
    # The passages were kept: quoted, and listed by /sources (not "no answer yet").
    out = result.stdout
    assert re.match(r"- .+ \[\d+\]\n", out), out
    assert out.count("The API listens on port 8420.") >= 2
    # The next question stands alone: answered by the model, not rewritten.
    assert systems(server) == [SYSTEM_PROMPT] * 4
    assert out.splitlines()[-len(answer_block(chat_requests(server)[-1])) :] == answer_block(
        chat_requests(server)[-1]
    )


# --- 9. a model that loops or takes too long ---------------------------------------------

ASKED = [{"role": "user", "content": "Sources: none\n\nQuestion: What port?"}]


def test_a_streamed_answer_that_repeats_itself_is_stopped(server: OpenAIServer) -> None:
    from askmd.answer.chat import REPEATING
    from tests.openai_server import ChatScript

    script = ChatScript(["The notes say the port is 8420. "] + ["It is the port. "] * 400)
    server.routes[CHAT] = script
    got = list(chat_for(server).stream(ASKED))
    assert got[-1] == REPEATING
    assert len(got) < 20  # stopped within a few repeats, not after 400
    assert script.ended.wait(5)  # the request was ended, so the server stops too


def test_a_loop_of_short_pieces_is_caught_across_pieces(server: OpenAIServer) -> None:
    from askmd.answer.chat import REPEATING

    reply_with(server, "Answer: " + "the sky is blue and " * 200, size=3)
    got = list(chat_for(server).stream(USER))
    assert got[-1] == REPEATING and len("".join(got)) < 200


def test_varied_text_is_not_taken_for_a_loop(server: OpenAIServer) -> None:
    text = " ".join(f"Step {i}: run job {i * 7} on host {i % 5}." for i in range(60))
    reply_with(server, text)
    assert "".join(chat_for(server).stream(USER)) == text


def test_an_answer_over_its_time_budget_is_cut_with_a_notice(server: OpenAIServer) -> None:
    from tests.openai_server import ChatScript

    script = ChatScript([f"word{i} " for i in range(200)], delay=0.02)
    server.routes[CHAT] = script
    began = time.monotonic()
    got = list(chat_for(server, budget=0.5).stream(ASKED))
    assert time.monotonic() - began < 2.5
    assert got[-1].startswith("\n\n(cut: the answer took longer than 0.5 s")
    assert "ASKMD_LLM_BUDGET" in got[-1]
    assert script.ended.wait(5) and script.sent < 200


def test_extra_sampling_options_reach_the_server(server: OpenAIServer) -> None:
    reply_with(server, "ok")
    list(chat_for(server, extra_body={"repeat_penalty": 1.1}).stream(USER))
    assert chat_requests(server)[0].body["repeat_penalty"] == 1.1
