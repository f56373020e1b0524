"""The openai embedding backend against a real HTTP server that takes time per request and
serves a limited number at once: batches in flight, returned in order, retried on 429 and
5xx without losing or repeating a text, split to fit the token cap."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from askmd.errors import AskmdError
from askmd.index.embedder_openai import (
    MAX_BATCH_TOKENS,
    OpenAIEmbedder,
    default_concurrency,
    plan_batches,
)
from tests.openai_server import OpenAIServer, Request, error_body, vector

EMBEDDINGS = "/v1/embeddings"


def unit(texts: list[str], dimension: int = 8) -> np.ndarray:
    rows = np.array([vector(t, dimension) for t in texts], dtype=np.float64)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def answered(server: OpenAIServer) -> list[Request]:
    return [r for r in server.requests if r.path == EMBEDDINGS and r.status == 200]


def embedded_once(server: OpenAIServer, texts: list[str]) -> bool:
    """Every text was in exactly one successful request, and nothing else was."""
    sent = Counter(t for r in answered(server) for t in r.body["input"])
    return sent == Counter(texts)


@pytest.mark.parametrize("concurrency", [1, 3, 4])
def test_batches_in_flight_come_back_in_input_order(concurrency: int) -> None:
    texts = [f"passage {i}" for i in range(64)]
    with OpenAIServer(latency=0.15, shuffle=True) as server:
        client = OpenAIEmbedder(server.url, None, "m", batch_size=8, concurrency=concurrency)
        started = time.monotonic()
        vectors = client.embed(texts)
        took = time.monotonic() - started
    np.testing.assert_allclose(vectors, unit(texts), atol=1e-6)
    assert server.peak == concurrency
    assert embedded_once(server, texts) and len(server.requests) == 8
    waves = -(-8 // concurrency)  # 8 batches, `concurrency` at a time
    assert waves * 0.15 <= took < waves * 0.15 + 0.5


def test_429_with_retry_after_pauses_then_retries_every_refused_batch() -> None:
    texts = [f"note {i}" for i in range(32)]
    with OpenAIServer(latency=0.1, max_concurrent=2, retry_after="1") as server:
        client = OpenAIEmbedder(server.url, None, "m", batch_size=4, concurrency=4)
        vectors = client.embed(texts)
    np.testing.assert_allclose(vectors, unit(texts), atol=1e-6)
    assert server.refused >= 1
    assert embedded_once(server, texts)
    refused = [r for r in server.requests if r.status == 429]
    for request in refused:  # the same batch again, no sooner than the server asked
        again = [
            r.at
            for r in answered(server)
            if r.body["input"] == request.body["input"] and r.at > request.at
        ]
        assert again and min(again) - request.at >= 1.0 - 0.05


def test_a_transient_500_is_retried_without_losing_or_repeating_a_text() -> None:
    texts = [f"chunk {i}" for i in range(40)]
    with OpenAIServer(latency=0.05) as server:
        server.force(EMBEDDINGS, 500, headers={"retry-after-ms": "50"})
        client = OpenAIEmbedder(server.url, None, "m", batch_size=10, concurrency=4)
        vectors = client.embed(texts)
    np.testing.assert_allclose(vectors, unit(texts), atol=1e-6)
    assert [r.status for r in server.requests].count(500) == 1
    assert len(server.requests) == 5
    assert embedded_once(server, texts)


def test_a_permanent_error_is_one_clear_line_and_stops_the_other_batches() -> None:
    texts = [f"chunk {i}" for i in range(80)]
    with OpenAIServer(latency=0.1) as server:
        server.force(EMBEDDINGS, 400, error_body(400, "input is\ntoo long"))
        client = OpenAIEmbedder(server.url, None, "m", batch_size=10, concurrency=2)
        with pytest.raises(AskmdError) as caught:
            client.embed(texts)
        time.sleep(0.3)  # a batch still running when it failed has finished by now
        sent = len(server.requests)
    assert str(caught.value) == (
        f"the embeddings server at {server.url} failed (400): input is too long. "
        "Check the server's log."
    )
    assert sent <= 4  # of 8 batches: the queued ones never started


def test_a_server_failing_on_every_try_says_how_often_it_was_tried() -> None:
    with OpenAIServer() as server:
        server.force(EMBEDDINGS, 503, times=8, headers={"retry-after-ms": "10"})
        client = OpenAIEmbedder(server.url, None, "m", batch_size=2, concurrency=4, max_retries=1)
        with pytest.raises(AskmdError) as caught:
            client.embed(["a", "b", "c", "d"])
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(
        f"the embeddings server at {server.url} failed (503) and still did after 1 retry"
    )


def test_long_texts_split_a_batch_under_the_token_cap() -> None:
    long = [f"{i:04} " + "word " * 199 for i in range(64)]  # 1,000 bytes: ~251 tokens each
    with OpenAIServer() as server:
        client = OpenAIEmbedder(server.url, None, "m", batch_size=64, concurrency=2)
        vectors = client.embed(long)
    sizes = [len(r.body["input"]) for r in server.requests]
    per_batch = MAX_BATCH_TOKENS // (1000 // 4 + 1)  # 32 of these fit under the cap
    assert sorted(sizes) == [per_batch, 64 - per_batch]
    sent = [sum(len(t) for t in r.body["input"]) for r in server.requests]
    assert max(sent) <= MAX_BATCH_TOKENS * 4
    np.testing.assert_allclose(vectors, unit(long), atol=1e-6)


def test_batches_cover_every_text_once_and_a_text_over_the_cap_goes_alone() -> None:
    texts = ["a" * 40, "b" * 40, "c" * 400, "d" * 40, "e" * 40, "f" * 40, "g"]
    batches = plan_batches(texts, batch_size=3, max_tokens=25)
    assert [list(b) for b in batches] == [[0, 1], [2], [3, 4], [5, 6]]
    assert [list(b) for b in plan_batches(texts, batch_size=3, max_tokens=10_000)] == [
        [0, 1, 2],
        [3, 4, 5],
        [6],
    ]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (None, 4),  # api.openai.com
        ("https://gpu-box.lan:8080/v1", 4),
        ("http://localhost:11434/v1", 2),  # Ollama
        ("http://127.0.0.1:8080/v1", 2),  # llama-server
        ("http://[::1]:8080/v1", 2),
    ],
)
def test_the_default_concurrency_fits_the_server(url: str | None, expected: int) -> None:
    client = OpenAIEmbedder(url, None, "m", concurrency=0)
    assert client.concurrency == expected
    assert default_concurrency(client.url) == expected


def test_slice_size_keeps_every_batch_slot_busy_for_a_few_rounds() -> None:
    def slice_size(batch_size: int, concurrency: int) -> int:
        return OpenAIEmbedder(None, None, "m", batch_size, concurrency=concurrency).slice_size

    assert slice_size(64, 4) == 64 * 4 * 4
    assert slice_size(16, 2) == 16 * 2 * 4
    assert slice_size(4, 2) == 64  # never fewer than the indexer's own 64
    assert slice_size(512, 4) == 4096  # at most 4,096 texts a call...
    assert slice_size(4096, 2) == 8192  # ...unless one round of batches is more


def test_the_embeddings_server_can_be_another_than_the_chat_server(tmp_path: Path, run_rag) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    texts = {
        f"n{i}.md": f"# Note {i}\n\nThe backup of system {i} runs at {i} am.\n" for i in range(6)
    }
    for name, text in texts.items():
        (kb / name).write_text(text, encoding="utf-8")
    with OpenAIServer() as chat, OpenAIServer() as embeddings:
        env = {
            "ASKMD_KNOWLEDGE_DIR": str(kb),
            "ASKMD_INDEX_DIR": str(tmp_path / "ix"),
            "ASKMD_EMBEDDING_BACKEND": "openai",
            "ASKMD_EMBEDDING_MODEL": "e",
            "OPENAI_BASE_URL": chat.url,
            "OPENAI_API_KEY": "sk-chat",
            "ASKMD_EMBEDDING_BASE_URL": embeddings.url,
            "ASKMD_EMBEDDING_API_KEY": "sk-embeddings",
            "ASKMD_EMBED_BATCH": "2",
            "ASKMD_EMBED_CONCURRENCY": "3",
        }
        done = run_rag("index", **env)
        assert done.returncode == 0, done.stderr
        assert chat.requests == []
        assert embeddings.requests
        keys = {r.headers["authorization"] for r in embeddings.requests}
        assert keys == {"Bearer sk-embeddings"}
        assert max(len(r.body["input"]) for r in embeddings.requests) == 2

        env.pop("ASKMD_EMBEDDING_BASE_URL")  # empty: the chat server's URL and key
        env.pop("ASKMD_EMBEDDING_API_KEY")
        env["ASKMD_EMBEDDING_MODEL"] = "other"  # a new model, so everything is embedded again
        again = run_rag("index", **env)
        assert again.returncode == 0, again.stderr
        assert {r.headers["authorization"] for r in chat.requests} == {"Bearer sk-chat"}


def test_a_bad_concurrency_is_one_clear_line(tmp_path: Path, run_rag) -> None:
    (tmp_path / "kb").mkdir()
    done = run_rag("index", ASKMD_KNOWLEDGE_DIR=str(tmp_path / "kb"), ASKMD_EMBED_CONCURRENCY="-1")
    assert done.returncode != 0
    assert "ASKMD_EMBED_CONCURRENCY='-1' (from environment): batches in flight must be" in (
        done.stderr
    )


def test_failures_name_the_variables_the_embeddings_server_was_set_by(
    tmp_path: Path, run_rag
) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("# A\n\nSome text.\n")
    with OpenAIServer() as chat, OpenAIServer() as embeddings:
        embeddings.force(EMBEDDINGS, 401)
        env = {
            "ASKMD_KNOWLEDGE_DIR": str(kb),
            "ASKMD_INDEX_DIR": str(tmp_path / "ix"),
            "ASKMD_EMBEDDING_BACKEND": "openai",
            "OPENAI_BASE_URL": chat.url,
            "ASKMD_EMBEDDING_BASE_URL": embeddings.url,
            "ASKMD_EMBEDDING_API_KEY": "sk-wrong",
        }
        refused = run_rag("index", **env)
        embeddings.force(EMBEDDINGS, 200, {"object": "list", "data": []})
        wrong = run_rag("index", **env)
    assert refused.returncode != 0
    assert refused.stderr.strip().endswith(
        f"the embeddings server at {embeddings.url} refused the API key (401). "
        "Check ASKMD_EMBEDDING_API_KEY."
    )
    assert wrong.returncode != 0
    assert "Check that ASKMD_EMBEDDING_BASE_URL points at an OpenAI-compatible server." in (
        wrong.stderr
    )
