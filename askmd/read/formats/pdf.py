"""PDF: text page by page, with headings from the outline (or from bigger and bold
type) and printed line wraps joined, and the body line each page starts on.

pypdf (pure Python, BSD) reads PDFs: markitdown's PDF path was far slower with no
headings, and PyMuPDF is AGPL.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from askmd.read.formats.common import SPACES, Budget, Converted, escape_line, first_line
from askmd.read.unreadable import Unreadable

# pypdf logs recoverable damage as warnings; the one-line skip reason is what users see,
# and a stray line on stderr or stdout would break the MCP transport and --json output.
logging.getLogger("pypdf").setLevel(logging.CRITICAL + 1)

NO_TEXT = "no text layer: scanned? run OCR first"
# Typographic ligatures (ﬁ, ﬂ) that PDF text keeps: "reﬁll" must match a search for "refill".
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi",
                            "\ufb04": "ffl", "\ufb05": "st", "\ufb06": "st"})  # fmt: skip


def read_pdf(path: Path, max_chars: int | None = None, started: float | None = None) -> Converted:
    """Text page by page; outline entries become headings on the page they point to (with
    no outline, lines in bigger or bold type do), and wrapped lines are joined.

    Pages are extracted one at a time and the parsed objects are dropped every 50 pages,
    so a 2,000-page manual does not hold the whole document's objects in memory.
    """
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PdfReadError

    try:
        reader = PdfReader(path)
    except PdfReadError as exc:
        raise Unreadable(f"not a readable PDF ({first_line(exc)})") from None
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")  # owner-password-only PDFs open with an empty one
        except Exception:
            opened = 0
        if not opened:
            raise Unreadable("an encrypted PDF (password-protected); save an unprotected copy")
    try:
        count = len(reader.pages)
    except (PdfReadError, FileNotDecryptedError) as exc:
        raise Unreadable(f"not a readable PDF ({first_line(exc)})") from None
    budget = Budget(max_chars, started)
    budget.check()
    headings = _outline(reader)
    lines: list[str] = []
    pages: list[int] = []
    any_text = False
    for number in range(count):
        pages.append(len(lines) + 1)
        text, styles = _page_text(reader.pages[number])
        text = text.translate(_LIGATURES)
        budget.check()
        if number % 50 == 49:
            _forget(reader)  # every 50 pages: fonts shared by pages stay cached between
        page_lines = [escape_line(SPACES.sub(" ", ln).strip()) for ln in text.split("\n")]
        any_text = any_text or any(page_lines)
        if not headings and styles:  # no outline: bigger or bold type is the headings
            page_lines = _type_headings(page_lines, styles)
        page_lines = _place_headings(page_lines, headings.get(number, []))
        page_lines = _join_cjk(_join_wrapped(page_lines))
        lines.extend(budget.take(ln) for ln in page_lines)
        lines.append("")
    if count and not any_text:
        raise Unreadable(NO_TEXT)
    title = _pdf_title(reader)
    return Converted("\n".join(lines), title, tuple(pages))


def _page_text(page) -> tuple[str, list[tuple[float, bool]] | None]:
    """The page's text, and each of its lines' type: (biggest font size, all bold).

    The type comes from pypdf's pieces of text as it extracts them; when they do not add
    up to the text it returns, the type is unknown (None) and the text is all there is.
    """
    pieces: list[tuple[str, float, bool]] = []

    def visit(text: str, cm, tm, font, size) -> None:
        x, y = tm[2] * cm[0] + tm[3] * cm[2], tm[2] * cm[1] + tm[3] * cm[3]
        scale = (x * x + y * y) ** 0.5  # the text matrix's vertical scale
        name = str((font or {}).get("/BaseFont", ""))
        pieces.append((text, round(size * (scale or 1.0), 1), bool(_BOLD.search(name))))

    text = page.extract_text(visitor_text=visit) or ""
    if "".join(piece[0] for piece in pieces) != text:
        return text, None
    styles: list[tuple[float, bool]] = [(0.0, True)]
    for piece, size, bold in pieces:
        for i, part in enumerate(piece.split("\n")):
            if i:
                styles.append((0.0, True))
            if part.strip():
                biggest, all_bold = styles[-1]
                styles[-1] = (max(biggest, size), all_bold and bold)
    return text, styles


_BOLD = re.compile(r"bold|black|heavy", re.I)
_SENTENCE_END = re.compile(r"[.!?:;,。！？；：]$")


def _type_headings(lines: list[str], styles: list[tuple[float, bool]]) -> list[str]:
    """Turn lines set in bigger type than the page's body text, or short lines all in
    bold, into Markdown headings: without them a title is quoted as if it were a sentence,
    and chunks have no heading chain. Levels follow a browser's sizes (h1 2x, h2 1.5x, h3
    1.17x, h4 bold); a heading printed over two lines is one heading."""
    body: dict[float, int] = {}  # characters set in each size
    for line, (size, _) in zip(lines, styles, strict=False):
        body[size] = body.get(size, 0) + len(line)
    normal = max(body, key=body.__getitem__, default=0.0)
    out: list[str] = []
    previous = 0  # the level of the heading on the line before, 0: not a heading
    for line, (size, bold) in zip(lines, styles, strict=False):
        level = _heading_level(line, size, bold, normal)
        if level and level == previous:
            out[-2] += " " + line  # its second printed line
            continue
        out += ["", "#" * level + " " + line.lstrip("\\"), ""] if level else [line]
        previous = level
    return out + lines[len(styles) :]


def _heading_level(line: str, size: float, bold: bool, normal: float) -> int:
    if not line or normal <= 0 or len(line) > 120 or _SENTENCE_END.search(line):
        return 0
    ratio = size / normal
    if ratio >= 1.75:
        return 1
    if ratio >= 1.3:
        return 2
    if ratio >= 1.1:
        return 3
    return 4 if bold and ratio > 0.95 and len(line) <= 80 else 0


_LIST_LINE = re.compile(r"^(?:[-*+•◦▪]\s|\d{1,3}[.)]\s)")


def _join_wrapped(lines: list[str]) -> list[str]:
    """Join a line of Latin-script text that wrapped to the next printed line onto it, so
    a sentence is one line again (the answer quotes sentences line by line: a cut one read
    "below 1.5 mm of"). It wrapped when the next line goes on in lower case, or when it
    is about as long as the page's longest line and ends in no punctuation; a heading, a
    list item or a blank line is never joined. Pages are read one by one, so a line never
    joins the next page's and page numbers stay right."""
    full = 0.8 * max((len(ln) for ln in lines if not ln.startswith("#")), default=0)
    out: list[str] = []
    for line in lines:
        prev = out[-1] if out else ""
        if prev and line and _continues(prev, line, full):
            out[-1] = prev + " " + line
        else:
            out.append(line)
    return out


def _continues(prev: str, line: str, full: float) -> bool:
    if prev.startswith("#") or line.startswith("#") or _LIST_LINE.match(line):
        return False
    if _CJK.match(prev[-1]) or _CJK.match(line[0]):
        return False  # Chinese and Japanese lines are joined without a space, below
    if line[0].islower():
        return True
    return len(prev) >= full and not _SENTENCE_END.search(prev)


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff01-\uff5e，、]")
_CJK_END = "。！？；：」』）”"


def _join_cjk(lines: list[str]) -> list[str]:
    """Join a line that wrapped in the middle of Chinese or Japanese text to the next one:
    a printed line break inside `重新启动` would split the word for search and reading.
    Only a line about as long as the page's longest wrapped: a short one (a heading, the
    end of a paragraph) keeps its line break."""
    full = 0.8 * max((len(ln) for ln in lines), default=0)
    out: list[str] = []
    wrapped = False  # the last line appended ended a full-width printed line
    for line in lines:
        prev = out[-1] if out else ""
        joins = (
            wrapped and line and not line.startswith("#") and _CJK.match(line[0])
            and _CJK.match(prev[-1]) and prev[-1] not in _CJK_END
        )  # fmt: skip
        if joins:
            out[-1] = prev + line
        else:
            out.append(line)
        wrapped = bool(line) and len(line) >= full and not line.startswith("#")
    return out


def _forget(reader) -> None:
    """Drop the objects pypdf has parsed and cached so far (fonts, content streams)."""
    cache = getattr(reader, "resolved_objects", None)
    if isinstance(cache, dict):
        cache.clear()


def _outline(reader) -> dict[int, list[tuple[int, str]]]:
    """{0-based page: [(level, title)]} from the bookmarks; a broken outline is no outline."""
    found: dict[int, list[tuple[int, str]]] = {}

    def walk(items, level: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            title = SPACES.sub(" ", str(getattr(item, "title", "") or "")).strip()
            try:
                page = reader.get_destination_page_number(item)
            except Exception:
                continue
            if title and page is not None and page >= 0:
                found.setdefault(page, []).append((min(level, 4), title))

    try:
        walk(reader.outline, 1)
    except Exception:
        return {}
    return found


def _place_headings(lines: list[str], headings: list[tuple[int, str]]) -> list[str]:
    """Put each heading where its title is printed on the page, else at the page's top."""
    top: list[str] = []
    for level, title in headings:
        heading = "#" * level + " " + title
        wanted = _fold(title)
        at = next((i for i, ln in enumerate(lines) if ln and _fold(ln) == wanted), None)
        if at is None:
            top += [heading, ""]
        else:
            lines = lines[:at] + ["", heading, ""] + lines[at + 1 :]
    return top + lines


def _fold(text: str) -> str:
    return re.sub(r"\W+", "", text.lstrip("\\")).casefold()


def _pdf_title(reader) -> str | None:
    try:
        title = (reader.metadata or {}).get("/Title")
    except Exception:
        return None
    title = SPACES.sub(" ", str(title or "")).strip()
    return title or None
