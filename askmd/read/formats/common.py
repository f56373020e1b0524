"""What every format's reader shares: the Converted result it returns, the budget it
reads within (characters and READ_SECONDS), and escaping a line of text that Markdown
would read as structure. A reader raises Unreadable, TooLong or TooSlow; readers.convert
turns the last two into Unreadable with the limit that was passed.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

# One file's reading may hold the index's writer: past this it is skipped. A 2,000-page
# PDF of short pages reads in 4 s; this leaves room for long dense ones.
READ_SECONDS = 60.0

# Lines of converted text that Markdown would read as structure: escaped, so a PDF line
# "# of items" or "-----" is text, not a heading, separator or fence.
_MARKDOWN_LINE = re.compile(
    r"^ {0,3}(?:#{1,6}(?:[ \t]|$)|(?:-{3,}|\*{3,}|_{3,}|=+)[ \t]*$|`{3,}|~{3,})"
)
SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")


@dataclass(frozen=True)
class Converted:
    text: str  # Markdown, newlines \n
    title: str | None = None
    pages: tuple[int, ...] = ()  # 1-based body line each page starts on; () if unpaged
    warnings: tuple[str, ...] = ()  # what did not stop the file from being read


class TooLong(Exception):
    """Extracted text over the size limit."""


class TooSlow(Exception):
    """Reading took longer than READ_SECONDS."""


def escape_line(line: str) -> str:
    return "\\" + line.lstrip(" ") if _MARKDOWN_LINE.match(line) else line


class Budget:
    """What a reader may still produce (characters) and for how long (READ_SECONDS from
    `started`): checked as it goes, so one file cannot hold the index for long."""

    def __init__(self, max_chars: int | None, started: float | None = None):
        self.left = max_chars
        self.deadline = (started or time.monotonic()) + READ_SECONDS

    def take(self, text: str) -> str:
        if self.left is not None:
            self.left -= len(text)
            if self.left < 0:
                raise TooLong
        self.check()
        return text

    def check(self) -> None:
        if time.monotonic() > self.deadline:
            raise TooSlow


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:160]
