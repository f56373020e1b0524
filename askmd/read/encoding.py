"""The text of a file's bytes: UTF-8 (a BOM accepted), UTF-16 with its BOM, or a legacy
encoding only when charset-normalizer is sure of it, so a note is never read as the
wrong characters. Shared by Markdown notes and plain-text files."""

from __future__ import annotations

import codecs
import re

from askmd.read.unreadable import Unreadable

# A file that is not UTF-8 is read in the encoding charset-normalizer finds only when it is
# sure: its decoded text must be clean (the detector's "chaos" at most this), the file must
# hold enough non-ASCII bytes to tell encodings apart, and no other clean reading of it
# may fit the language about as well (its "coherence", within the margin).
MAX_CHAOS = 0.1
MIN_EVIDENCE = 8
COHERENCE_MARGIN = 0.02
# The encodings editors save notes in besides UTF-8 (Windows' code pages, the CJK ones):
# among all of Python's, the detector finds old DOS and Mac pages fitting Western text
# as well as Windows-1252 does.
LEGACY_ENCODINGS = [
    "cp1252", "cp1250", "cp1251", "cp1253", "cp1254", "cp1255", "cp1256", "cp1257",
    "cp932", "euc_jp", "gb18030", "big5", "cp949", "koi8_r",
]  # fmt: skip
_C1 = re.compile("[\x80-\x9f\u2028\u2029]")  # a wrong guess, and NEL would split lines


def decoded(data: bytes) -> tuple[str, str | None]:
    """The text of a note's bytes, and the encoding assumed when it was not UTF-8 (None
    when it was); raise Unreadable when it is not UTF-8 and its encoding is not certain."""
    for bom, codec in _MARKED:  # UTF-32's mark begins with UTF-16's: it is looked for first
        if data.startswith(bom):
            try:
                return data[len(bom) :].decode(codec), None
            except UnicodeDecodeError:
                name = codec[:6].upper()
                raise Unreadable(f"not valid {name} despite its byte-order mark") from None
    if b"\x00" in data:
        wide = _unmarked(data)
        if wide is None:
            raise Unreadable("binary (it contains NUL bytes), not a text note")
        return wide
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[skip:].decode("utf-8"), None
    except UnicodeDecodeError as exc:
        offset = skip + exc.start
        guess = None if skip else _guess(data)
        if guess is None:
            raise Unreadable(
                f"not UTF-8 (byte 0x{data[offset]:02x} at offset {offset}); re-save it as UTF-8"
            ) from None
        return guess


_MARKED = [
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
]


def _unmarked(data: bytes) -> tuple[str, str] | None:
    """(text, encoding) of UTF-16 or UTF-32 saved without a byte-order mark: the one
    reading whose every character is printable text. Binary data has none."""
    for codec in ("utf-32-le", "utf-32-be", "utf-16-le", "utf-16-be"):
        try:
            text = data.decode(codec)
        except UnicodeDecodeError:
            continue
        if text and all(c.isprintable() or c in "\n\r\t" for c in text):
            return text, codec.upper()
    return None


def _guess(data: bytes) -> tuple[str, str] | None:
    """(text, encoding) when charset-normalizer is sure of the bytes' encoding, else None."""
    if len(data.translate(None, bytes(range(128)))) < MIN_EVIDENCE:
        return None
    from charset_normalizer import from_bytes

    matches = from_bytes(data, cp_isolation=LEGACY_ENCODINGS)
    best = matches.best()
    if best is None or best.chaos > MAX_CHAOS or best.encoding.startswith("utf"):
        return None
    text = str(best)
    if _C1.search(text):
        return None
    for other in matches:
        near = other.chaos <= MAX_CHAOS and other.coherence >= best.coherence - COHERENCE_MARGIN
        if other is not best and near and str(other) != text:
            return None
    encoding = best.encoding
    if encoding != "cp1252" and data.decode("cp1252", errors="replace") == text:
        encoding = "cp1252"  # the same text: name the usual one (Western, Latin-1's superset)
    return text, _ENCODING_NAMES.get(encoding, encoding.replace("_", "-"))


_ENCODING_NAMES = {f"cp{n}": f"windows-{n}" for n in range(1250, 1259)} | {"cp932": "shift_jis"}


def guessed_warning(encoding: str) -> str:
    return f"not UTF-8, read as {encoding} (the encoding it most surely is); re-save it as UTF-8"
