"""Turn PDF, Word, HTML and plain-text files into the Markdown the chunker reads: which
reader a file takes by its suffix, and converting it with the limits every reader shares.

Each reader (formats/) returns the Markdown body (headings where the format has them)
and, for paged formats, the body line each page starts on: the chunker stays
format-blind, and a chunk's line range maps back to its pages afterwards. A file that
cannot be converted raises Unreadable with a one-line reason, so one bad file never
stops a run.
"""

from __future__ import annotations

import importlib
import time
from pathlib import Path

from askmd.read.formats import common
from askmd.read.formats.common import Converted, TooLong, TooSlow, first_line
from askmd.read.unreadable import Unreadable

SUFFIXES = {".pdf": "pdf", ".docx": "docx", ".html": "html", ".htm": "html", ".txt": "txt"}
# The size limit is on the text taken from these: images and markup weigh little.
BINARY = {"pdf", "docx", "html"}
RAW_FACTOR = 10  # such a file may be this many times ASKMD_MAX_FILE_MB on disk
# Each format's reader, imported when a file of it is first read: a folder of Markdown
# (and a start that finds nothing changed) never pays for them.
READERS = {
    "pdf": ("pdf", "read_pdf"),
    "docx": ("docx", "read_docx"),
    "html": ("html", "read_html"),
    "txt": ("text", "read_txt"),
}


def kind(source: str) -> str | None:
    """The reader for a path by its suffix, or None for Markdown and everything else."""
    return SUFFIXES.get(Path(source).suffix.lower())


def convert(path: Path, fmt: str, max_chars: int | None = None) -> Converted:
    """Convert one file; raise Unreadable with a one-line reason."""
    started = time.monotonic()
    try:
        module, function = READERS[fmt]
        reader = getattr(importlib.import_module(f"askmd.read.formats.{module}"), function)
        return reader(path, max_chars, started)
    except TooSlow:
        raise Unreadable(f"too slow to read (over {common.READ_SECONDS:.4g} s)") from None
    except TooLong:
        limit = (max_chars or 0) / 1048576
        raise Unreadable(f"its text is over the {limit:.4g} MB limit (ASKMD_MAX_FILE_MB)") from None
    except (Unreadable, OSError):
        raise
    except RecursionError:
        raise Unreadable(f"not a readable {fmt.upper()} file (nested too deeply)") from None
    except Exception as exc:  # a damaged file can fail anywhere inside the parsers
        raise Unreadable(f"not a readable {fmt.upper()} file ({first_line(exc)})") from None
