"""Conditions on a note's properties (`--where status=done`): read from what a user
typed, and matched against the items the manifest keeps of each note's front matter.

A condition is KEY=VALUE, KEY!=VALUE, KEY>=VALUE, KEY<=VALUE or KEY~TEXT (contains).
A list property matches when any of its items does; `!=` when none equals. A value
that reads as a number compares as a number and one that reads as a day as a day;
other text compares without regard to case. A note without the key matches no
condition on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from askmd.errors import BadRequest

OPERATORS = ("!=", ">=", "<=", "~", "=")
_OPERATOR = re.compile(r"!=|>=|<=|~|=")
_STRICT = re.compile(r"[<>](?!=)")  # KEY>VALUE: only >= and <= are offered
MAX_CONDITIONS = 20
MAX_CHARS = 500


@dataclass(frozen=True)
class Condition:
    key: str  # lower case, as the manifest keeps keys
    op: str
    value: str

    def __str__(self) -> str:
        return f"{self.key}{self.op}{self.value}"


def parse(text: str, name: str = "--where") -> Condition:
    """One condition, or a one-line error naming the part that could not be read."""
    if len(text) > MAX_CHARS:
        raise BadRequest(f"{name} is longer than {MAX_CHARS} characters")
    found = _OPERATOR.search(text)
    strict = _STRICT.search(text)
    if strict is not None and (found is None or strict.start() < found.start()):
        raise BadRequest(
            f"{name} {text!r}: {strict.group()!r} is no operator; give {strict.group()}= "
            "(KEY>=VALUE, KEY<=VALUE)"
        )
    if found is None:
        raise BadRequest(
            f"{name} {text!r}: no operator; give KEY=VALUE, KEY!=VALUE, KEY>=VALUE, "
            "KEY<=VALUE or KEY~TEXT"
        )
    key, value = text[: found.start()].strip(), _unquoted(text[found.end() :].strip())
    if not key:
        raise BadRequest(f"{name} {text!r}: no property name before {found.group()!r}")
    if not value:
        raise BadRequest(f"{name} {text!r}: no value after {found.group()!r}")
    if found.group() in ("=", "~") and _OPERATOR.match(value):  # "a==b", "a=>b"
        raise BadRequest(f"{name} {text!r}: {found.group() + value[0]!r} is no operator")
    return Condition(key.lower(), found.group(), value)


def parse_all(texts, name: str = "--where") -> tuple[Condition, ...]:
    texts = [t for t in texts or () if t is not None]
    if len(texts) > MAX_CONDITIONS:
        raise BadRequest(f"{name}: at most {MAX_CONDITIONS} conditions")
    return tuple(dict.fromkeys(parse(t, name) for t in texts))


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value
