"""Run `rag.py serve` as a real subprocess on 127.0.0.1, port 0, for API and page tests."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT, clean_env

URL = re.compile(r"http://127\.0\.0\.1:\d+")


class Served:
    """`with Served(kb, ix, **env) as server:` then use `server.url`."""

    def __init__(self, knowledge: Path, index_dir: Path, *args: str, **env: str):
        self.command = [
            sys.executable, str(ROOT / "rag.py"), "--knowledge", str(knowledge),
            "--index-dir", str(index_dir), "serve", "--port", "0", *args,
        ]  # fmt: skip
        self.cwd = index_dir.parent
        self.env = clean_env(**env)
        self.url = ""
        self.stderr = ""

    def __enter__(self) -> Served:
        self.process = subprocess.Popen(
            self.command,
            cwd=self.cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 90
        assert self.process.stdout is not None
        for line in self.process.stdout:
            found = URL.search(line)
            if found:
                self.url = found.group(0)
                return self
            if time.monotonic() > deadline:
                break
        self.__exit__()
        raise AssertionError(f"the server did not start: {self.stderr}")

    def __exit__(self, *exc_info: object) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.stderr = self.process.stderr.read() if self.process.stderr else ""
        for stream in (self.process.stdout, self.process.stderr):
            if stream:
                stream.close()
