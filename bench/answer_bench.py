"""Answer latency: question -> first streamed token, with and without the LLM.

    python -m bench.answer_bench                       # knowledge/, default questions
    python -m bench.answer_bench --gguf PATH.gguf      # plus end to end with llama.cpp
    python -m bench.answer_bench --knowledge DIR --questions FILE   # one question a line

1. *askmd's own part* of the time to the first token, in-process on a warm index: the
   search (query embedding + Chroma) and building the prompt, per question.
2. The same through a real HTTP round trip: an OpenAI-compatible server on 127.0.0.1
   that streams a canned reply at once, so what is measured is everything but the model
   (search, prompt, the openai client, HTTP, SSE parsing) up to the first piece.
3. With --gguf: end to end with that model served in-process by llama.cpp (--threads):
   time to first token and to the whole answer, and the answer's length.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

from askmd.answer.chat import Chat
from askmd.answer.prompt import build_messages
from askmd.pipeline import Index
from bench.common import ROOT, InstantLLM, open_index, summary, tiny_folder

QUESTIONS = [
    "What port does the API listen on?",
    "How do I rotate the S3 access keys?",
    "What is the maximum upload size?",
    "Who is on call and for how long?",
    "How long are database backups kept?",
    "数据库备份保留多久？",
    "How do I start the local development stack?",
    "What happened in the thumbnail incident?",
    "Lumen API 监听哪个端口？",
    "How do I restore the database to a point in time?",
]


def first_piece_ms(index: Index, chat: Chat, question: str, k: int) -> tuple[float, float]:
    """(ms to the first streamed piece, ms to the whole reply), search included."""
    start = time.perf_counter()
    hits = index.search(question, k)
    pieces = chat.stream(build_messages(question, hits))
    first = None
    for _ in pieces:
        if first is None:
            first = time.perf_counter()
    end = time.perf_counter()
    return ((first or end) - start) * 1000, (end - start) * 1000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--knowledge", default=str(ROOT / "knowledge"))
    parser.add_argument("--index-dir", help="default: a temporary folder")
    parser.add_argument("--questions", help="a file with one question a line")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the questions")
    parser.add_argument("--gguf", help="also measure end to end with this model")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads")
    args = parser.parse_args(argv)
    questions = QUESTIONS
    if args.questions:
        questions = [q for q in Path(args.questions).read_text().splitlines() if q.strip()]
    index_dir = Path(args.index_dir or tempfile.mkdtemp(prefix="askmd-bench-"))
    index = open_index(Path(args.knowledge), index_dir)
    index.search("warm-up", args.k)

    own = []
    for _ in range(args.rounds):
        for q in questions:
            start = time.perf_counter()
            build_messages(q, index.search(q, args.k))
            own.append((time.perf_counter() - start) * 1000)
    summary("search + prompt (in-process)", own)

    server = ThreadingHTTPServer(("127.0.0.1", 0), InstantLLM)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    chat = Chat(f"http://127.0.0.1:{server.server_port}/v1", "k", "stub")
    first_piece_ms(index, chat, "warm-up", args.k)
    rounds = range(args.rounds)
    http = [first_piece_ms(index, chat, q, args.k)[0] for _ in rounds for q in questions]
    summary("to first token, instant LLM over HTTP", http)
    server.shutdown()

    if args.gguf:
        from askmd.answer import local_llm

        started = time.perf_counter()
        local = local_llm.start(Path(args.gguf), threads=args.threads, context=4096)
        print(f"# model loaded in {time.perf_counter() - started:.2f} s", flush=True)
        chat = Chat(local.url, local.api_key, local.model, temperature=0, max_tokens=200)
        firsts, totals = [], []
        for q in questions:
            first, total = first_piece_ms(index, chat, q, args.k)
            firsts.append(first)
            totals.append(total)
        summary(f"to first token, {Path(args.gguf).name}", firsts)
        summary(f"whole answer, {Path(args.gguf).name}", totals)
        local.close()


def smoke(tmp: Path) -> None:
    """Two questions, one round, over the tiny folder."""
    (tmp / "questions.txt").write_text("\n".join(QUESTIONS[:2]), encoding="utf-8")
    kb = tiny_folder(tmp / "kb")
    main(["--knowledge", str(kb), "--index-dir", str(tmp / "ix"), "--rounds", "1",
          "--questions", str(tmp / "questions.txt")])  # fmt: skip


if __name__ == "__main__":
    main()
