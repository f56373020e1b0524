"""A note's properties (front matter, Logseq's page properties) as the manifest keeps
them for `--where`: one row per item, a list's items apart, a nested mapping's keys
joined by dots; keys and text in lower case, with the number and the day an item reads
as, so that conditions compare numbers as numbers and days as days."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
MAX_ITEMS = 200  # of one note: a property that lists thousands is no filter
MAX_TEXT = 200  # characters of an item kept


@dataclass(frozen=True)
class Item:
    """One value of a property as the manifest keeps it: its text in lower case and,
    where it reads as one, its number and its day."""

    text: str
    number: float | None
    day: str | None


def rows(meta: dict) -> tuple[tuple[str, str, float | None, str | None], ...]:
    """(key, text, number, day) for every item of every property, at most MAX_ITEMS."""
    found = []
    for key, value in flattened(meta):
        for item in items(value):
            if item.text:
                found.append((key, item.text[:MAX_TEXT], item.number, item.day))
    return tuple(dict.fromkeys(found))[:MAX_ITEMS]


def items(value: object) -> list[Item]:
    """The items of one front matter value: a list's scalars, or the value itself."""
    values = value if isinstance(value, (list, tuple, set)) else [value]
    return [_item(v) for v in values if v is not None and not isinstance(v, (dict, list))]


def flattened(meta: dict, prefix: str = "") -> list[tuple[str, object]]:
    """(key, value) for every property, a nested mapping's keys joined by dots
    (`project.name`); keys in lower case."""
    found = []
    for key, value in meta.items():
        name = f"{prefix}{str(key).strip().lower()}"
        if isinstance(value, dict):
            found.extend(flattened(value, name + "."))
        elif name:
            found.append((name, value))
    return found


def _item(value: object) -> Item:
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (dt.date, dt.datetime)):
        text = value.isoformat()
    else:
        text = str(value).strip()
    number = (
        float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    )
    return Item(text.casefold(), number if number is not None else number_of(text), day_of(text))


def number_of(text: str) -> float | None:
    text = text.strip()
    if not _NUMBER.fullmatch(text):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def day_of(text: str) -> str | None:
    try:
        return dt.date.fromisoformat(text.strip()[:10]).isoformat()
    except ValueError:
        return None


def operand(op: str, value: str) -> tuple[str, object]:
    """How a condition's value compares: ("number", float), ("day", ISO) or ("text",
    lower case); `~` (contains) always as text."""
    if op != "~":
        number = number_of(value)
        if number is not None:
            return "number", number
        day = day_of(value)
        if day is not None:
            return "day", day
    return "text", value.casefold()
