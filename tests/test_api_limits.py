"""One request must not stall the server: costly bodies are refused before they are parsed,
notes sent as content are size-capped, and slow clients are cut off. Checked against the
real server with its default limits, while /health is polled beside the bad request.
"""

from __future__ import annotations

import json
import socket
import statistics
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import NOTES
from tests.serving import Server
from tests.test_api import JSON_TYPE, error_of

NOTE_CAP = 1024 * 1024  # notes sent as content
BODY_LIMIT = 3 * NOTE_CAP + 64 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with Server(tmp_path_factory.mktemp("limits"), NOTES) as running:
        yield running


def health_latency(client: httpx.Client) -> float:
    started = time.monotonic()
    assert client.get("/api/v1/health").status_code == 200
    return time.monotonic() - started


class HealthWatch:
    """Polls /health on its own connection while a request is in flight."""

    def __init__(self, server: Server) -> None:
        self.client = server.client()
        self.samples: list[float] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self.stop.is_set():
            self.samples.append(health_latency(self.client))
            time.sleep(0.02)

    def __enter__(self) -> HealthWatch:
        self.normal = statistics.median(health_latency(self.client) for _ in range(10))
        self.thread.start()
        time.sleep(0.1)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop.set()
        self.thread.join(timeout=120)

    def worst(self) -> float:
        return max(self.samples)


def unknown_keys(count: int) -> bytes:
    return b'{"query": "x", ' + b", ".join(b'"k%d": 1' % n for n in range(count)) + b"}"


BAD_BODIES = {
    # a million unknown keys: once 54 s to reject, holding /health all along
    "million-keys": ("/api/v1/search", unknown_keys(1_000_000)),
    # under the size limit, but 200,000 keys to parse and report
    "200k-keys": ("/api/v1/search", unknown_keys(200_000)),
    "huge-history": ("/api/v1/ask", b'{"question": "x", "history": [' + b"{}," * 900_000 + b"{}]}"),
    "deep-nesting": ("/api/v1/search", b'{"query": ' + b"[" * 500_000 + b"]" * 500_000 + b"}"),
}


@pytest.mark.parametrize("case", list(BAD_BODIES))
def test_a_costly_body_is_refused_413_while_health_keeps_answering(
    server: Server, case: str
) -> None:
    path, body = BAD_BODIES[case]
    with HealthWatch(server) as watch:
        started = time.monotonic()
        reply = server.client().post(path, content=body, headers=JSON_TYPE)
        took = time.monotonic() - started
    # /health stayed as quick as it normally is, give or take a second of noise
    assert watch.worst() < 1.0 + 20 * watch.normal, (watch.worst(), watch.normal)
    message = error_of(reply, 413)
    assert "MB" in message or "keys, items or values" in message
    assert took < 10, took


def test_an_ordinary_ask_with_a_full_history_is_still_accepted(server: Server) -> None:
    history = [{"question": f"q{n}, with: commas", "answer": "a [1], {b}"} for n in range(50)]
    reply = server.client().post("/api/v1/ask", json={"question": "port?", "history": history})
    assert reply.status_code == 200, reply.text


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"hello", "the body is not valid JSON"),
        (b'{"query": "port",', "the body is not valid JSON"),
        (b'{"query": "caf\xe9"}', "the body is not valid JSON (not UTF-8)"),
    ],
    ids=["not-json", "cut-short", "latin-1"],
)
def test_a_body_that_is_not_json_is_422_saying_why(server: Server, body: bytes, said: str) -> None:
    """Every body that is not JSON gets the same status, 422 (a Latin-1 one was 400 with
    "There was an error parsing the body")."""
    reply = server.client().post("/api/v1/search", content=body, headers=JSON_TYPE)
    assert error_of(reply, 422) == said


def test_a_note_over_the_content_cap_is_413_and_not_written(server: Server) -> None:
    content = "# Big\n\n" + "word, and [more] {words}. " * (NOTE_CAP // 25 + 10)
    assert NOTE_CAP < len(content) < BODY_LIMIT // 2  # within the body limit
    reply = server.client().post(
        "/api/v1/ingest", json={"content": content, "file_name": "big.md"}, timeout=60
    )
    message = error_of(reply, 413)
    assert "big.md" in message and "1 MB" in message and "file_path" in message
    assert not (server.kb / "big.md").exists()


def test_a_note_full_of_quotes_and_commas_under_the_cap_is_accepted(server: Server) -> None:
    line = 'He said "yes, no: [maybe] {x}" \\ and left.\n'
    content = "# Quotes\n\n" + line * 2000  # 90 KB, 8,000 commas, colons and brackets
    reply = server.client().post(
        "/api/v1/ingest", json={"content": content, "file_name": "quotes.md"}, timeout=120
    )
    assert reply.status_code == 200, reply.text
    assert (server.kb / "quotes.md").read_text(encoding="utf-8") == content
    server.client().delete("/api/v1/documents/quotes.md")


def closed_within(sock: socket.socket, seconds: float) -> tuple[float, bytes]:
    """Trickle a byte a second until the server closes; (seconds taken, what it sent)."""
    started = time.monotonic()
    sock.settimeout(1)
    received = b""
    while time.monotonic() - started < seconds:
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            try:
                sock.sendall(b"x")
            except OSError:
                break
            continue
        except OSError:
            break
        if not chunk:
            break
        received += chunk
    return time.monotonic() - started, received


def test_slow_clients_are_cut_off_and_health_keeps_answering(server: Server) -> None:
    head = (
        b"POST /api/v1/search HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
        b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n" % server.port
    )
    partial_head = head[:40]
    sockets = []
    for n in range(40):  # half stall in the head, half in the body
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.sendall(partial_head if n % 2 else head + b'{"query": "')
        sockets.append(sock)
    results: list[tuple[float, bytes]] = [(0.0, b"")] * len(sockets)

    def watch(n: int) -> None:
        results[n] = closed_within(sockets[n], 20)

    threads = [threading.Thread(target=watch, args=(n,)) for n in range(len(sockets))]
    for thread in threads:
        thread.start()
    assert health_latency(server.client()) < 1.0
    for thread in threads:
        thread.join()
    for sock in sockets:
        sock.close()
    for n, (took, _) in enumerate(results):
        assert took < 12, (n, took)  # the read deadline is 5 s; closing takes under 7 more
    body_stalls = [received for n, (_, received) in enumerate(results) if n % 2 == 0]
    for received in body_stalls:
        assert received.startswith(b"HTTP/1.1 408")
        assert list(json.loads(received.split(b"\r\n\r\n", 1)[1])) == ["error"]
