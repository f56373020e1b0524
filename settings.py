"""Settings: one frozen object, loaded once, from four layers.

defaults < .env (read with dotenv_values, so os.environ is never touched) < environment
< command-line flags. Every problem is reported at once, one line each, naming where the
bad value came from. Nothing else in askmd reads the environment.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from dotenv import dotenv_values

from errors import AskmdError

MIN_CHUNK_SIZE = 100


@dataclass(frozen=True)
class Settings:
    knowledge_dir: Path = Path("knowledge")
    chunk_size: int = 1000
    chunk_overlap: int = 200
    include: tuple[str, ...] = ("*.md", "*.markdown")
    exclude: tuple[str, ...] = ()
    max_file_mb: float = 10.0

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * 1024 * 1024)


# Field -> (environment variable, one-line meaning). The order is the order of .env.example.
DOCS: dict[str, tuple[str, str]] = {
    "knowledge_dir": ("ASKMD_KNOWLEDGE_DIR", "folder of Markdown notes to answer from"),
    "chunk_size": ("ASKMD_CHUNK_SIZE", "target chunk length in characters (hard cap 1.5x)"),
    "chunk_overlap": (
        "ASKMD_CHUNK_OVERLAP",
        "characters repeated between pieces of one long section; smaller than the size",
    ),
    "include": ("ASKMD_INCLUDE", "comma-separated globs of files to read"),
    "exclude": ("ASKMD_EXCLUDE", "comma-separated globs of files or folders to skip"),
    "max_file_mb": ("ASKMD_MAX_FILE_MB", "files larger than this many MB are skipped"),
}


# The command-line flag that sets a field, for messages about a bad value.
FLAGS = {"knowledge_dir": "--knowledge", "chunk_size": "--size", "chunk_overlap": "--overlap"}


def env_name(field_name: str) -> str:
    return DOCS[field_name][0]


def _globs(value: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in value.split(",") if p.strip())


def _whole(value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise ValueError("is not a whole number") from None


def _number(value: str) -> float:
    try:
        number = float(value.strip())
    except ValueError:
        raise ValueError("is not a number") from None
    if not math.isfinite(number):
        raise ValueError("is not a finite number")
    return number


_PARSERS: dict[str, Callable[[str], Any]] = {
    "knowledge_dir": lambda v: Path(v.strip()).expanduser(),
    "chunk_size": _whole,
    "chunk_overlap": _whole,
    "include": _globs,
    "exclude": _globs,
    "max_file_mb": _number,
}


def default_text(field_name: str) -> str:
    """A default as it is written in .env.example and the README."""
    value = getattr(Settings(), field_name)
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def load_settings(
    environ: Mapping[str, str] | None = None,
    dotenv_path: Path | None = Path(".env"),
    overrides: Mapping[str, Any] | None = None,
    *,
    need_knowledge_dir: bool = True,
) -> Settings:
    """Merge the layers and validate once. `overrides` are already-typed values from flags."""
    environ = os.environ if environ is None else environ
    layers: list[tuple[str, Mapping[str, str | None]]] = []
    if dotenv_path is not None and dotenv_path.is_file():
        layers.append((str(dotenv_path), dotenv_values(dotenv_path)))
    layers.append(("environment", environ))

    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    problems: list[str] = []
    for f in fields(Settings):
        name = env_name(f.name)
        for layer_name, layer in reversed(layers):  # the highest layer that sets it wins
            raw = layer.get(name)
            if raw is None or (raw.strip() == "" and f.name != "exclude"):
                continue
            try:
                values[f.name] = _PARSERS[f.name](raw)
                origin[f.name] = f"{name}={raw!r} (from {layer_name})"
            except ValueError as exc:
                problems.append(f"{name}={raw!r} (from {layer_name}) {exc}")
            break
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = value
            shown = ",".join(value) if isinstance(value, tuple) else value
            origin[key] = f"{FLAGS.get(key, '--' + key.replace('_', '-'))} {shown}"
    settings = Settings(**values)
    problems += _validate(settings, origin, need_knowledge_dir)
    if problems:
        raise AskmdError("\n".join(problems))
    return settings


def _validate(s: Settings, origin: dict[str, str], need_knowledge_dir: bool) -> list[str]:
    def where(name: str) -> str:
        return origin.get(name, f"{env_name(name)} (default {default_text(name)})")

    problems = []
    if s.chunk_size < MIN_CHUNK_SIZE:
        problems.append(f"{where('chunk_size')}: the chunk size must be at least {MIN_CHUNK_SIZE}")
    if s.chunk_overlap < 0:
        problems.append(f"{where('chunk_overlap')}: the overlap cannot be negative")
    elif s.chunk_overlap >= s.chunk_size:
        problems.append(
            f"{where('chunk_overlap')}: the overlap must be smaller than the chunk size "
            f"({s.chunk_size}); the default is {default_text('chunk_overlap')}"
        )
    if not s.include:
        problems.append(f"{where('include')}: at least one include glob is needed, e.g. *.md")
    if not s.max_file_mb > 0:
        problems.append(f"{where('max_file_mb')}: the size limit must be above 0")
    if need_knowledge_dir and not s.knowledge_dir.is_dir():
        exists = s.knowledge_dir.exists()
        what = "is not a folder" if exists else "does not exist"
        todo = "point" if exists else "create it, or point"
        said = (
            f"{origin['knowledge_dir']}: the knowledge folder"
            if "knowledge_dir" in origin
            else (f"the knowledge folder {s.knowledge_dir}")
        )
        problems.append(
            f"{said} {what}: {todo} {env_name('knowledge_dir')} or --knowledge at your notes"
        )
    return problems
