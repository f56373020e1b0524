"""Plain text (.txt): every line kept where it is, none read as Markdown structure."""

from __future__ import annotations

from pathlib import Path

from askmd.read.encoding import decoded, guessed_warning
from askmd.read.formats.common import Converted, escape_line


def read_txt(path: Path, max_chars: int | None = None, started: float | None = None) -> Converted:
    """Plain text: every line kept where it is, none read as Markdown structure."""
    text, encoding = decoded(path.read_bytes())
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    warnings = (guessed_warning(encoding),) if encoding else ()
    return Converted("\n".join(escape_line(ln) for ln in text.split("\n")), warnings=warnings)
