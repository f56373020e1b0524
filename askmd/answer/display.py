"""How a quoted sentence is shown in an extractive answer: a table row under its
column names, the list or code block a sentence ending in a colon introduces, and link
syntax as a reader sees it. References keep quoting the file verbatim."""

from __future__ import annotations

import re

from askmd.answer.citations import CODE, neutralise_citations
from askmd.answer.sentences import FENCE, SKIP_LINE, TABLE_RULE, unwrapped

_INTRODUCES = re.compile(r"[:：]\s*(?:\*\*|__)?\s*$")
BLOCK_LINES = 12  # an introduced list or code block is shown up to this many lines
BLOCK_CHARS = 800


def introduced_block(text: str, sentence: str) -> str:
    """The list, steps, code block or paragraph that a sentence ending in a colon
    introduces (none when a heading follows it), or the code block a short label right
    after the sentence introduces.

    "To embed a note:" says nothing alone; the answer is what follows it. A reference
    page says what a function does, then "**Signature:**" (or "Usage:", "Example:") and
    its code: the code is what the sentence describes. The block is taken verbatim, up to
    BLOCK_LINES lines and BLOCK_CHARS characters (a cut code block is closed again, so
    what follows it is not shown as code).
    """
    lines = _after(text, sentence)
    if lines is None:
        return ""
    if not _INTRODUCES.search(sentence):
        if len(lines) < 2 or not _LABEL.match(lines[0]):
            return ""
        lines = lines[1:]
        while lines and not lines[0].strip():
            lines.pop(0)
        return _fenced(lines) if lines and FENCE.match(lines[0]) else ""
    if not lines:
        return ""
    if FENCE.match(lines[0]):
        return _fenced(lines)
    if SKIP_LINE.match(lines[0]):
        return ""  # a heading or a rule: the section ends at the colon
    steps = bool(_STEP.match(lines[0]))
    block = []
    for line in lines:
        if not line.strip() or SKIP_LINE.match(line) and not TABLE_RULE.match(line):
            break
        if steps and not (_STEP.match(line) or line[:1].isspace()):
            break  # the list ended
        block.append(line)
    return _capped(block, "")


def introduces_nothing(text: str, sentence: str) -> bool:
    """A sentence ending in a colon whose list, code or paragraph is not in the passage
    ("要点：" before a heading, "Key points:" at a chunk's end): it says nothing alone."""
    return bool(_INTRODUCES.search(sentence)) and not introduced_block(text, sentence)


def _after(text: str, sentence: str) -> list[str] | None:
    """The lines after the sentence's own, from the first that is not blank; None when
    something else follows the sentence on its line (it does not end it)."""
    text = unwrapped(text)
    at = text.find(sentence)
    end = text.find("\n", at + len(sentence)) if at >= 0 else -1
    if at < 0 or end < 0 or text[at + len(sentence) : end].strip():
        return None
    lines = text[end + 1 :].splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    return lines


def _fenced(lines: list[str]) -> str:
    """The fenced code block the lines open with, to its closing fence (capped)."""
    marker = FENCE.match(lines[0]).group(1)
    block = [lines[0]]
    for line in lines[1:]:
        block.append(line)
        if line.strip().startswith(marker) and not line.strip().strip(marker[0]):
            break
    return _capped(block, marker)


# A label alone on its line, a word or two ending in a colon: "**Signature:**", "Usage:",
# "示例：". A sentence that ends in a colon introduces its own block instead.
_LABEL = re.compile(r"^\s*(?:\*\*|__)?[^\s:：*_][^:：\n]{0,23}[:：]\s*(?:\*\*|__)?\s*$")


_STEP = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+")
_CELL_BORDER = re.compile(r"(?<!\\)\|")


def labelled_row(sentence: str, passage: str = "") -> str:
    """A table row quoted as an answer, each cell under its column's name when the
    passage holds the header: "| staging | 2 |" -> "env: staging — replicas: 2" (the row
    alone says nothing of what 2 counts); without one, the cells: "`a` — b"."""
    if not sentence.startswith("|") or sentence.count("|") < 2:
        return sentence
    cells = _row(sentence)
    names = _header_of(passage, sentence)
    shown = [
        f"{names[i]}: {c}" if i < len(names) and names[i] else c for i, c in enumerate(cells) if c
    ]
    return " — ".join(shown) or sentence


def _row(line: str) -> list[str]:
    return [c.strip() for c in _CELL_BORDER.split(line.strip().strip("|"))]


def _header_of(passage: str, sentence: str) -> list[str]:
    """The column names of the table a row quoted from `passage` belongs to, if the
    passage holds its header row (a long table's rows can be chunked without it)."""
    lines = passage.splitlines()
    at = next((i for i, line in enumerate(lines) if sentence in line), None)
    if at is None:
        return []
    for i in range(at - 1, 0, -1):
        if TABLE_RULE.match(lines[i]):
            return _row(lines[i - 1]) if lines[i - 1].lstrip().startswith("|") else []
        if not lines[i].lstrip().startswith("|"):
            return []
    return []


def _capped(block: list[str], fence: str) -> str:
    kept: list[str] = []
    size = 0
    for line in block:
        if len(kept) == BLOCK_LINES or size + len(line) > BLOCK_CHARS:
            kept.append("…")
            if fence:
                kept.append(fence)
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept)


def indent(block: str) -> str:
    """A block shown under its bullet: indented to belong to it."""
    return "\n".join(f"  {line}" if line.strip() else "" for line in block.splitlines())


def display_block(block: str) -> str:
    """A list's link syntax becomes its display text; a code block stays exactly as written."""
    if FENCE.match(block):
        return block
    return display_text(neutralise_citations(block))


def balanced_emphasis(sentence: str) -> str:
    """A quoted sentence without a lone `**` or `__`: a sentence that ends (or starts)
    inside a bold span ("**最近 7 天可以恢复；再往前…**。" split at "；") would show its
    marker bare. The last unpaired marker outside code goes."""
    code = [m.span() for m in CODE.finditer(sentence)]
    for marker in ("**", "__"):
        at = [
            m.start()
            for m in re.finditer(re.escape(marker), sentence)
            if not any(start <= m.start() < end for start, end in code)
        ]
        if len(at) % 2:
            sentence = sentence[: at[-1]] + sentence[at[-1] + 2 :]
    return sentence


_WIKI = re.compile(r"(!?)\[\[([^\]|\n]+?)(?:\|([^\]\n]+))?\]\]")
_MD_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\s]+(?:\s+\"[^\"]*\")?\)")


# A task list item's box, at the start of a line (after its list mark, if the line has
# one): "- [x] Paid" reads "- ☑ Paid"; "[ ]" (not done) stays visible as "☐".
_TASK_BOX = re.compile(r"^(\s*(?:(?:[-*+]|\d{1,9}[.)])\s+)?)\[([ xX])\](?=\s)", re.M)


def display_text(text: str) -> str:
    """Link syntax and task boxes as a reader sees them, outside code: `[[Daily notes]]`
    → Daily notes, `[[Internal links#Link to a heading|headings]]` → headings,
    `[[Page#Part]]` → Page › Part, `[text](url)` → text, `[x]` → ☑, `[ ]` → ☐.
    References keep quoting the file verbatim."""
    text = _TASK_BOX.sub(lambda m: m.group(1) + ("☐" if m.group(2) == " " else "☑"), text)
    code = [m.span() for m in CODE.finditer(text)]

    def outside(match: re.Match) -> bool:
        return not any(start <= match.start() < end for start, end in code)

    def wiki(match: re.Match) -> str:
        if not outside(match):
            return match.group()
        target, alias = match.group(2), match.group(3)
        if alias:
            return alias.strip()
        page, _, part = target.partition("#")
        part = part.lstrip("^")
        return (
            f"{page.strip()} › {part.strip()}" if page.strip() and part else (page or part).strip()
        )

    def markdown(match: re.Match) -> str:
        return match.group(1) if outside(match) else match.group()

    text = _WIKI.sub(wiki, text)
    code = [m.span() for m in CODE.finditer(text)]
    return _MD_LINK.sub(markdown, text)
