"""Several knowledge folders answered as one: how they are named (`--knowledge` repeated,
or ASKMD_KNOWLEDGE_DIR a list joined by the system's path separator), the label a
reference names each by, the description each may carry, and the settings of each
folder's own index.

A folder is given as `PATH` (labelled by its name) or `LABEL=PATH`. Its description is
the `description` of a `.askmd.toml` at its top: one sentence saying what the folder
holds, shown in `stats`, returned with every hit, and given to MCP clients and the LLM.
Each folder keeps its own index, exactly as it would alone, so adding a folder to a
question never re-indexes another.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

CONFIG = ".askmd.toml"  # a folder's own description, at its top
MAX_DESCRIPTION = 500  # characters: a sentence or two, not a document
_LABEL = re.compile(r"\w[\w.-]{0,39}")


@dataclass(frozen=True)
class Folder:
    label: str
    path: Path


def split_listed(raw: str) -> list[str]:
    """ASKMD_KNOWLEDGE_DIR's folders: one, or several joined by os.pathsep (`:` on Linux
    and macOS, `;` on Windows)."""
    return [part.strip() for part in raw.split(os.pathsep) if part.strip()]


def parse(given: Iterable[str | Path]) -> tuple[Folder, ...]:
    """Folders from what was typed. `LABEL=PATH` labels one, unless the whole text is a
    path that exists (a folder may have `=` in its name); a folder's label is otherwise
    its name (always, for a Path). A label that is no label, or one given twice, is a
    ValueError naming it."""
    found: list[Folder] = []
    for text in given:
        if isinstance(text, Path):
            found.append(Folder(label_of(text), text))
            continue
        label, _, rest = text.partition("=")
        if rest and not Path(text).expanduser().exists():
            if not _LABEL.fullmatch(label.strip()):
                raise ValueError(
                    f"{text!r}: {label.strip()!r} is no label (letters, digits, '_', '.' "
                    "or '-', up to 40)"
                )
            found.append(Folder(label.strip(), Path(rest.strip()).expanduser()))
        else:
            path = Path(text.strip()).expanduser()
            found.append(Folder(label_of(path), path))
    labels = [f.label for f in found]
    if twice := next((label for label in labels if labels.count(label) > 1), None):
        raise ValueError(
            f"two folders are labelled {twice!r}: label one as LABEL=PATH "
            f"(--knowledge work={found[labels.index(twice)].path})"
        )
    return tuple(found)


def label_of(path: Path) -> str:
    """A folder's name, as a label (`notes` of ~/notes/, `root` of /)."""
    name = Path(os.path.realpath(path)).name
    return re.sub(r"[^\w.-]+", "-", name).strip("-.")[:40] or "root"


def description(path: Path) -> tuple[str, str]:
    """The folder's description from its `.askmd.toml`, and a one-line problem with that
    file ("" when it is fine or absent): a broken file never stops a question."""
    import tomllib  # only several folders read it: not on every command's start

    config = path / CONFIG
    try:
        data = tomllib.loads(config.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "", ""
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return "", f"{config}: not read ({_first_line(exc)}); no description for this folder"
    value = data.get("description", "")
    if not isinstance(value, str):
        return "", f"{config}: description is not text; no description for this folder"
    return " ".join(value.split())[:MAX_DESCRIPTION], ""


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
