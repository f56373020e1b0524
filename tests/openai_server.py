"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests, run in a daemon thread.

POST /v1/embeddings answers with deterministic, *unnormalised* vectors (see `vector`). Every
request is recorded; `force` queues scripted replies per path (an error status, a body, a
delay). More endpoints are added by putting a function in `routes`: it gets the JSON body and
returns a JSON object, or an iterable of objects to stream as server-sent events (chat); a
`bytes` item in that iterable is written to the stream as it is (to send a broken line).

Like a real embeddings server, /v1/embeddings can take `latency` seconds per request and
serve at most `max_concurrent` requests at once, answering any beyond that 429 with a
Retry-After of `retry_after`; `peak` is the most requests it ever had in flight.
"""

from __future__ import annotations

import argparse
import array
import base64
import functools
import json
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

JSON = dict[str, Any]
Route = Callable[[Any], JSON | Iterable[JSON]]


@dataclass
class Request:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any
    at: float = 0.0  # time.monotonic() when it arrived
    status: int = 0  # the status it was answered with, once decided


@dataclass
class Forced:
    status: int = 200
    body: JSON | None = None  # None with status 200: the normal answer, after `delay`
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@functools.lru_cache(maxsize=100_000)  # a benchmark's server must not be slowed by making them
def vector(text: str, dimension: int) -> list[float]:
    """The server's vector for `text`: the same in every run, and not of length 1."""
    rng = random.Random(text)  # a str seed is hashed with sha512, not Python's salted hash()
    return [rng.uniform(-3.0, 3.0) for _ in range(dimension)]


def error_body(status: int, message: str | None = None) -> JSON:
    """An error reply shaped like OpenAI's."""
    return {"error": {"message": message or f"forced {status}", "type": "test", "code": status}}


class _Server(ThreadingHTTPServer):
    request_queue_size = 64  # many clients' batches connect at once; 5 would drop some


class OpenAIServer:
    """`with OpenAIServer() as server:` then point a client at `server.url`."""

    def __init__(
        self,
        dimension: int = 8,
        shuffle: bool = False,
        *,
        latency: float = 0.0,
        max_concurrent: int | None = None,
        retry_after: str = "1",
    ) -> None:
        self.dimension = dimension
        self.shuffle = shuffle  # answer embeddings out of order, to test ordering by `index`
        self.latency = latency  # seconds each embeddings request takes
        self.max_concurrent = max_concurrent  # more embeddings requests at once get a 429
        self.retry_after = retry_after  # the Retry-After header of that 429
        self.in_flight = 0
        self.peak = 0  # the most embeddings requests in flight at once, refused ones included
        self.refused = 0  # 429s for going over max_concurrent
        self.requests: list[Request] = []
        self.routes: dict[str, Route] = {"/v1/embeddings": self.embeddings}
        self._forced: dict[str, deque[Forced]] = {}
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False  # a reply still sleeping must not hold up close()
        self.url = f"http://127.0.0.1:{self._httpd.server_port}/v1"

    def __enter__(self) -> OpenAIServer:
        # A short poll interval, because shutdown() waits for the loop's next look (0.5 s default).
        poll = {"poll_interval": 0.01}
        threading.Thread(target=self._httpd.serve_forever, kwargs=poll, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def force(
        self,
        path: str,
        status: int = 200,
        body: JSON | None = None,
        *,
        delay: float = 0.0,
        times: int = 1,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Answer the next `times` requests to `path` like this; errors get an OpenAI body."""
        if body is None and status != 200:
            body = error_body(status)
        with self._lock:
            queue = self._forced.setdefault(path, deque())
            queue.extend(Forced(status, body, delay, headers or {}) for _ in range(times))

    def reset(self) -> None:
        """Forget recorded requests, scripted replies and added routes: a shared server afresh."""
        with self._lock:
            self.requests.clear()
            self._forced.clear()
            self.peak = self.refused = 0
        self.routes = {"/v1/embeddings": self.embeddings}

    def embeddings(self, body: JSON) -> JSON:
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        data = []
        for i, text in enumerate(texts):
            values: list[float] | str = vector(text, self.dimension)
            if body.get("encoding_format") == "base64":  # what the openai client asks by default
                values = base64.b64encode(array.array("f", values).tobytes()).decode()
            data.append({"object": "embedding", "index": i, "embedding": values})
        if self.shuffle:
            random.Random(len(data)).shuffle(data)
        usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
        return {"object": "list", "data": data, "model": body.get("model"), "usage": usage}

    def enter(self, path: str) -> Forced | None:
        """Count an embeddings request in; a 429 when that is more than `max_concurrent`."""
        if path != "/v1/embeddings":
            return None
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            if self.max_concurrent is None or self.in_flight <= self.max_concurrent:
                return None
            self.refused += 1
        message = f"more than {self.max_concurrent} requests at once"
        return Forced(429, error_body(429, message), 0.0, {"Retry-After": self.retry_after})

    def leave(self, path: str) -> None:
        # Before the reply is written: a client that has its answer may send the next
        # request at once, and must not find this one still counted.
        if path == "/v1/embeddings":
            with self._lock:
                self.in_flight -= 1

    def _next(self, path: str) -> Forced:
        with self._lock:
            queue = self._forced.get(path)
            return queue.popleft() if queue else Forced()


def _handler(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.loads(raw) if raw else None
            headers = {name.lower(): value for name, value in self.headers.items()}
            request = Request(self.path, headers, body, time.monotonic())
            with server._lock:
                server.requests.append(request)
            refused = server.enter(self.path)
            forced = refused or server._next(self.path)
            if refused is None and self.path == "/v1/embeddings":
                time.sleep(server.latency)
            time.sleep(forced.delay)
            try:
                if forced.body is not None or forced.status != 200:
                    reply: JSON | Iterable[JSON] = forced.body or {}
                    status, headers = forced.status, forced.headers
                elif self.path in server.routes:
                    reply, status, headers = server.routes[self.path](body), 200, {}
                else:
                    reply, status, headers = error_body(404, f"no route {self.path}"), 404, {}
            finally:
                server.leave(self.path)
            request.status = status
            try:
                self._send(status, reply, headers)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (a timeout test)

        do_GET = do_POST

        def _send(
            self, status: int, reply: JSON | Iterable[JSON | bytes], headers: dict[str, str]
        ) -> None:
            stream = not isinstance(reply, dict)
            payload = b"" if stream else json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/event-stream" if stream else "application/json")
            if not stream:
                self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            if not stream:
                self.wfile.write(payload)
                return
            for chunk in reply:
                if isinstance(chunk, bytes):  # raw stream text, sent as it is
                    self.wfile.write(chunk)
                else:
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean; `requests` has everything

    return Handler


def chunk(text: str) -> dict:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "test-chat",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
    }


class ChatScript:
    """A chat route for askmd: a rewrite gets the question back; an answer streams `pieces`."""

    def __init__(self, pieces: list[str], delay: float = 0.0) -> None:
        self.pieces = pieces
        self.delay = delay
        self.questions: list[str] = []  # the question of every answer request, in order
        self.sent = 0  # pieces written by the last answer
        self.ended = threading.Event()  # the last answer's generator has finished or closed

    def __call__(self, body: dict) -> Iterator[dict]:
        said = body["messages"][-1]["content"]
        if said.endswith("Rewritten question:"):
            question = said.split("Last question: ", 1)[1].split("\n", 1)[0]
            return iter([chunk(question)])
        self.questions.append(said.rsplit("Question: ", 1)[1].split("\n", 1)[0])
        self.sent = 0
        self.ended.clear()
        return self._answer()

    def _answer(self) -> Iterator[dict]:
        try:
            for piece in self.pieces:
                yield chunk(piece)
                self.sent += 1
                time.sleep(self.delay)
        finally:
            self.ended.set()


def main() -> None:
    """Run the server in its own process (a benchmark's, so that it does not share the
    client's interpreter): print its URL, serve until stdin closes."""
    import sys

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--dimension", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--max-concurrent", type=int, default=None)
    parser.add_argument("--retry-after", default="1")
    args = parser.parse_args()
    with OpenAIServer(
        args.dimension,
        latency=args.latency,
        max_concurrent=args.max_concurrent,
        retry_after=args.retry_after,
    ) as server:
        print(server.url, flush=True)
        sys.stdin.read()
        print(f"peak {server.peak} refused {server.refused}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
