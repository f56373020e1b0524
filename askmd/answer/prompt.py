"""What the model is told: the rules and numbered sources of an answer, and the request
to rewrite a follow-up question so it stands alone."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from askmd.answer.citations import ONE_CITATION, neutralise_citations
from askmd.read.chunker import pages_label

if TYPE_CHECKING:
    from askmd.answer.result import Turn
    from askmd.search.hits import Hit

SYSTEM_PROMPT = """\
You answer questions about the user's notes. Use only the numbered sources given with \
the question, never outside knowledge.
- Cite every claim with the number of its source in square brackets, like [1] or [1][3], \
right after the sentence it supports.
- If the sources do not contain the answer, say plainly that the notes do not say, and \
do not guess.
- Answer in the language of the question, even when the sources are in another language.
- Be brief: a few sentences or a short list.

Example. Sources: [1] garden.md › Tomatoes: "The tomatoes were planted on 12 April in the \
south bed." [2] travel.md: "The train to Lyon leaves at 9:10." Question: When were the \
tomatoes planted? Answer: On 12 April, in the south bed [1]."""

REWRITE_PROMPT = """\
Rewrite the user's last question so that it can be understood without the conversation: \
replace words like "it", "that" or "they" with what they refer to. Keep the language of \
the question. Reply with the rewritten question only, on one line. If it already stands \
alone, repeat it unchanged."""


def build_messages(question: str, hits: list[Hit], query: str = "") -> list[dict]:
    """System rules, then the sources numbered [1]..[k] with file and heading chain."""
    sources = "\n\n".join(
        f"[{n}] {_label(hit)}\n{neutralise_citations(hit.text.strip())}"
        for n, hit in enumerate(hits, start=1)
    )
    asked = f"Question: {question}"
    described = {h.folder: h.folder_description for h in hits if h.folder}
    if described:  # several folders: what each holds, in its owner's words
        listed = "\n".join(
            f"- {label}: {text or '(no description)'}" for label, text in described.items()
        )
        sources += f"\n\nThe sources come from these folders of notes:\n{listed}"
    if query and query != question:
        asked += f"\n(In this conversation that means: {query})"
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"Sources:\n\n{sources}\n\n{asked}"},
    ]


def _label(hit: Hit) -> str:
    chain = f" › {hit.heading_chain}" if hit.heading_chain else ""
    pages = pages_label(hit.page_start, hit.page_end)
    if pages:
        return f"{hit.shown_source} {pages}{chain}"
    return f"{hit.shown_source}{chain} (lines {hit.line_start}–{hit.line_end})"


def rewrite_messages(question: str, history: list[Turn]) -> list[dict]:
    lines = []
    for turn in history[-3:]:
        said = " ".join(re.sub(rf"[ \t]*(?:{ONE_CITATION})", "", turn.answer, flags=re.I).split())
        lines += [f"User: {turn.question}", f"Assistant: {said[:400]}"]
    conversation = "\n".join(lines)
    return [
        {"role": "system", "content": REWRITE_PROMPT},
        {
            "role": "user",
            "content": f"Conversation:\n{conversation}\n\nLast question: {question}\n\n"
            "Rewritten question:",
        },
    ]
