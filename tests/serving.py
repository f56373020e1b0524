"""`rag.py serve` as a real subprocess on 127.0.0.1, port 0, for the API and page tests."""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from tests.conftest import ROOT, clean_env, write_notes

URL = re.compile(r"http://127\.0\.0\.1:\d+")


class Server:
    """`rag.py serve` on 127.0.0.1, port 0, run from `base` (no .env there)."""

    def __init__(self, base: Path, notes: dict[str, str], *args: str, **env: str) -> None:
        self.base = base
        self.kb = write_notes(base / "kb", notes)
        self.ix = base / "ix"
        self.log = base / "server-stderr.log"
        self.env = clean_env(**env)
        self.url = ""
        self.port = 0
        self.clients: list[httpx.Client] = []
        self.args = args  # after `serve --host 127.0.0.1 --port 0`

    def __enter__(self) -> Server:
        command = [
            sys.executable, str(ROOT / "rag.py"), "--knowledge", str(self.kb),
            "--index-dir", str(self.ix), "serve", "--host", "127.0.0.1", "--port", "0",
            *self.args,
        ]  # fmt: skip
        with open(self.log, "wb") as stderr:
            self.process = subprocess.Popen(
                command,
                cwd=self.base,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        lines: queue.Queue[str | None] = queue.Queue()

        def drain() -> None:  # keeps reading, so the server never blocks on a full pipe
            assert self.process.stdout is not None
            for line in self.process.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=drain, daemon=True).start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if line is None:
                break
            found = URL.search(line)
            if found:
                self.url = found.group(0)
                self.port = int(self.url.rsplit(":", 1)[1])
                return self
        self.__exit__()
        raise AssertionError(f"the server did not start:\n{self.log.read_text()[-3000:]}")

    def __exit__(self, *exc_info: object) -> None:
        for client in self.clients:
            client.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def client(self, **headers: str) -> httpx.Client:
        client = httpx.Client(base_url=self.url, timeout=60, headers=headers)
        self.clients.append(client)
        return client
