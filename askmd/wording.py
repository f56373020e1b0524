"""Words and characters as a person reads them, for the core and the terminal alike.

The core never imports `console` (it prints; the MCP transport is stdout itself), yet it
words counts and refuses names too: what both need lives here.
"""

from __future__ import annotations

# Characters that reorder text or show nothing (bidi marks, embeddings, overrides and
# isolates, zero-width space, word joiners, the BOM, line and paragraph separators): a
# file named "evil\u202egnp.md" reads as "evildm.png". Zero-width joiners are left out:
# scripts and emoji need them.
INVISIBLE = "\u061c\u200b\u200e\u200f\u202a-\u202e\u2028\u2029\u2060-\u2064\u2066-\u206f\ufeff"


def plural(count: int, word: str, words: str | None = None) -> str:
    """The count with the word in the right number: "1 chunk", "2 chunks"."""
    return f"{count:,} {word if count == 1 else words or word + 's'}"


# How the user started askmd ("python rag.py", "askmd", "python -m askmd"): messages that
# name a command to run name it the same way. Set once by the command line.
started_as = "python rag.py"


def command(rest: str) -> str:
    """A command to run, as the user would type it here: command("index --rebuild")."""
    return f"{started_as} {rest}"
