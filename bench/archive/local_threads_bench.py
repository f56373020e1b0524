"""Time one short answer from a local GGUF model with a given thread count.

    python bench/local_threads_bench.py MODEL.gguf THREADS

Loads the model with llama.cpp (xllamacpp), asks one question over one source with
max_tokens 48, and prints the seconds to the first token and to the end. Run it under
a whole-process timer, 1 thread against 2, to choose ASKMD_LOCAL_THREADS' default.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from askmd.answer import local_llm
from askmd.answer.chat import Chat  # noqa: E402
from askmd.answer.prompt import build_messages  # noqa: E402
from askmd.search.retriever import Hit  # noqa: E402

SOURCE = Hit(1, 1.0, "c1", "ports.md", "Ports", 1, 4, "The API listens on port 8420.")


def main() -> None:
    model, threads = Path(sys.argv[1]), int(sys.argv[2])
    server = local_llm.start(model, threads=threads, context=2048)
    chat = Chat(server.url, server.api_key, server.model, max_tokens=48, temperature=0)
    began = time.perf_counter()
    first = None
    for _ in chat.stream(build_messages("Which port does the API use?", [SOURCE])):
        first = first or time.perf_counter()
    end = time.perf_counter()
    print(f"threads={threads} first_token_s={(first or end) - began:.2f} total_s={end - began:.2f}")
    server.close()


if __name__ == "__main__":
    main()
