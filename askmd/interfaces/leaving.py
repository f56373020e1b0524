"""Leaving while a background thread is still at work inside native code.

Python finalises the interpreter with daemon threads still running, and one that is inside
onnxruntime at that moment can take the process down with it ("terminate called without an
active exception", status 134) after a clean Ctrl-C. What askmd writes is committed a group
at a time and a kill at any point loses at most the group in flight (the next run repairs
it), so when the watcher, the vector filler or the MCP server's start-up sync has not
finished within the wait, the process leaves at once, as a kill would, with the status
it was going to have.
"""

from __future__ import annotations

import os
import sys
import threading

WORKERS = ("askmd-filler", "askmd-watch", "askmd-start")  # the threads that sync and embed


def exit_now_if_busy(status: int = 0) -> None:
    """Skip the interpreter's finalisation when a worker thread is still running."""
    if any(t.name in WORKERS and t.is_alive() for t in threading.enumerate()):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass  # a closed pipe: nothing more can be said anyway
        os._exit(status)
