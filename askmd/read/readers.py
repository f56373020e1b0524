"""Turn PDF, Word, HTML and plain-text files into the Markdown the chunker reads.

Each reader returns the Markdown body (headings where the format has them) and, for
paged formats, the body line each page starts on: the chunker stays format-blind, and a
chunk's line range maps back to its pages afterwards. A file that cannot be converted
raises notes.Unreadable with a one-line reason, so one bad file never stops a run.

pypdf (pure Python, BSD) reads PDFs: markitdown's PDF path was far slower with no
headings, and PyMuPDF is AGPL. python-docx reads Word, selectolax (lexbor) reads HTML.
"""

from __future__ import annotations

import logging
import re
import struct
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

# pypdf logs recoverable damage as warnings; the one-line skip reason is what users see,
# and a stray line on stderr or stdout would break the MCP transport and --json output.
logging.getLogger("pypdf").setLevel(logging.CRITICAL + 1)

SUFFIXES = {".pdf": "pdf", ".docx": "docx", ".html": "html", ".htm": "html", ".txt": "txt"}
# The size limit is on the text taken from these: images and markup weigh little.
BINARY = {"pdf", "docx", "html"}
RAW_FACTOR = 10  # such a file may be this many times ASKMD_MAX_FILE_MB on disk
DOCX_MAX_UNZIPPED = 256 * 1024 * 1024  # bounded decompression: a zip bomb stops here
DOCX_MAX_RATIO = 200  # a real document.xml compresses ~10x; a bomb, thousands of times
# One file's reading may hold the index's writer: past this it is skipped. A 2,000-page
# PDF of short pages reads in 4 s; this leaves room for long dense ones.
READ_SECONDS = 60.0
HTML_MAX_DEPTH = 256  # nested elements kept; the HTML parser's time grows with depth²
_LIST = re.compile(r"^ *(?:- |1\. )")
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
NO_TEXT = "no text layer: scanned? run OCR first"

# Lines of converted text that Markdown would read as structure: escaped, so a PDF line
# "# of items" or "-----" is text, not a heading, separator or fence.
_MARKDOWN_LINE = re.compile(
    r"^ {0,3}(?:#{1,6}(?:[ \t]|$)|(?:-{3,}|\*{3,}|_{3,}|=+)[ \t]*$|`{3,}|~{3,})"
)
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")
# Typographic ligatures (ﬁ, ﬂ) that PDF text keeps: "reﬁll" must match a search for "refill".
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi",
                            "\ufb04": "ffl", "\ufb05": "st", "\ufb06": "st"})  # fmt: skip


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


def kind(source: str) -> str | None:
    """The reader for a path by its suffix, or None for Markdown and everything else."""
    return SUFFIXES.get(Path(source).suffix.lower())


def convert(path: Path, fmt: str, max_chars: int | None = None) -> Converted:
    """Convert one file; raise notes.Unreadable with a one-line reason."""
    from askmd.read.notes import Unreadable

    started = time.monotonic()
    try:
        return {"pdf": read_pdf, "docx": read_docx, "html": read_html, "txt": read_txt}[fmt](
            path, max_chars, started
        )
    except TooSlow:
        raise Unreadable(f"too slow to read (over {READ_SECONDS:.4g} s)") from None
    except TooLong:
        limit = (max_chars or 0) / 1048576
        raise Unreadable(f"its text is over the {limit:.4g} MB limit (ASKMD_MAX_FILE_MB)") from None
    except (Unreadable, OSError):
        raise
    except RecursionError:
        raise Unreadable(f"not a readable {fmt.upper()} file (nested too deeply)") from None
    except Exception as exc:  # a damaged file can fail anywhere inside the parsers
        raise Unreadable(f"not a readable {fmt.upper()} file ({_first_line(exc)})") from None


def escape_line(line: str) -> str:
    return "\\" + line.lstrip(" ") if _MARKDOWN_LINE.match(line) else line


class _Budget:
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


# --- PDF ---------------------------------------------------------------------------------


def read_pdf(path: Path, max_chars: int | None = None, started: float | None = None) -> Converted:
    """Text page by page; outline entries become headings on the page they point to (with
    no outline, lines in bigger or bold type do), and wrapped lines are joined.

    Pages are extracted one at a time and the parsed objects are dropped every 50 pages,
    so a 2,000-page manual does not hold the whole document's objects in memory.
    """
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, PdfReadError

    from askmd.read.notes import Unreadable

    try:
        reader = PdfReader(path)
    except PdfReadError as exc:
        raise Unreadable(f"not a readable PDF ({_first_line(exc)})") from None
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
        raise Unreadable(f"not a readable PDF ({_first_line(exc)})") from None
    budget = _Budget(max_chars, started)
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
        page_lines = [escape_line(_SPACES.sub(" ", ln).strip()) for ln in text.split("\n")]
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
            title = _SPACES.sub(" ", str(getattr(item, "title", "") or "")).strip()
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
    title = _SPACES.sub(" ", str(title or "")).strip()
    return title or None


# --- DOCX --------------------------------------------------------------------------------


def read_docx(path: Path, max_chars: int | None = None, started: float | None = None) -> Converted:
    """Heading 1-4 styles become headings; lists become `-`/`1.` items, tables pipe tables."""
    import docx
    from docx.table import Table

    budget = _Budget(max_chars, started)
    _check_zip(path)
    document = docx.Document(str(path))
    budget.check()
    # Style names by id, looked up once: python-docx's paragraph.style scans every style
    # for each paragraph, which made a 300-page document take seconds.
    styles = {s.style_id: s.name or "" for s in document.styles}
    default = next((s.name for s in document.styles if s.type == 1 and _is_default(s)), "")
    lines: list[str] = []
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            lines.extend(budget.take(row) for row in _docx_table(block))
            lines.append("")
        else:
            line = _docx_paragraph(block, styles, default or "")
            if line:
                if _LIST.match(line) and len(lines) > 1 and _LIST.match(lines[-2]):
                    lines.pop()  # items of one list stay together
                lines.extend([budget.take(line), ""])
    title = (document.core_properties.title or "").strip() or None
    return Converted("\n".join(lines).rstrip("\n") + "\n", title)


def _check_zip(path: Path) -> None:
    """Refuse a .docx that is not a zip, or would unzip to far more than it weighs.

    The declared sizes are what Python's zipfile decompresses to at most, and python-docx
    reads through it: checking them before python-docx reads anything bounds the memory a
    zip bomb can take, once `_inflate_counted` has shown each member really is the size
    its header says (zipfile inflates a member whole before checking that).
    """
    from askmd.read.notes import Unreadable

    if not zipfile.is_zipfile(path):
        raise Unreadable("not a Word .docx file (it is not a zip archive)")
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
        total = sum(i.file_size for i in infos)
        worst = max((i.file_size / max(i.compress_size, 1) for i in infos), default=0)
        if total > DOCX_MAX_UNZIPPED or (total > 1048576 and worst > DOCX_MAX_RATIO):
            raise Unreadable(f"a zip bomb? (it would unzip to {total / 1048576:.0f} MB)")
        if "word/document.xml" not in {i.filename for i in infos}:
            raise Unreadable("not a Word .docx file (no word/document.xml inside)")
        with path.open("rb") as raw:
            for info in infos:
                _inflate_counted(raw, info)


ZIP_READ = 64 * 1024


def _inflate_counted(raw, info: zipfile.ZipInfo) -> None:
    """Inflate one member a block at a time, counting what comes out, and refuse it the
    moment it is larger than its header says (or ends up smaller): nothing more than one
    block past the declared size is ever produced."""
    from askmd.read.notes import Unreadable

    said = info.file_size
    lying = Unreadable(
        f"a damaged or hostile zip ({info.filename} does not unzip to the {said} bytes "
        "its header says)"
    )
    if info.flag_bits & 1:
        raise Unreadable(f"an encrypted zip ({info.filename})")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise Unreadable(f"not a Word .docx file ({info.filename} is compressed unusually)")
    raw.seek(info.header_offset)
    header = raw.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise lying
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    raw.seek(info.header_offset + 30 + name_length + extra_length)
    left = info.compress_size
    inflate = zlib.decompressobj(-15) if info.compress_type == zipfile.ZIP_DEFLATED else None
    out = 0
    while left > 0 and not (inflate and inflate.eof):
        block = raw.read(min(ZIP_READ, left))
        if not block:
            raise lying
        left -= len(block)
        while block:
            if inflate is None:
                out, block = out + len(block), b""
            else:
                out += len(inflate.decompress(block, ZIP_READ))
                block = inflate.unconsumed_tail
            if out > said:
                raise lying
    if inflate is not None:
        out += len(inflate.flush())
    if out != said:
        raise lying


def _is_default(style) -> bool:
    return style.element.get(f"{{{_W}}}default") in ("1", "true")


def _docx_paragraph(paragraph, styles: dict[str, str], default: str) -> str:
    text = _SPACES.sub(" ", paragraph.text.replace("\n", " ")).strip()
    if not text:
        return ""
    ppr = paragraph._p.pPr
    style_id = ppr.pStyle.val if ppr is not None and ppr.pStyle is not None else None
    style = styles.get(style_id, default) if style_id else default
    heading = re.fullmatch(r"Heading ([1-9])", style)
    if heading:
        return "#" * min(int(heading.group(1)), 6) + " " + text
    if style == "Title":
        return "# " + text
    numbered = "Number" in style
    listed = (
        style.startswith("List")
        or paragraph._p.pPr is not None
        and (paragraph._p.pPr.numPr is not None)
    )
    if listed:
        level = _list_level(paragraph)
        return "  " * level + ("1. " if numbered else "- ") + text
    return escape_line(text)


def _list_level(paragraph) -> int:
    try:
        return int(paragraph._p.pPr.numPr.ilvl.val)
    except (AttributeError, TypeError, ValueError):
        return 0


def _docx_table(table) -> list[str]:
    rows = []
    for row in table.rows:
        cells = [
            _SPACES.sub(" ", c.text.replace("\n", " ")).strip().replace("|", "\\|")
            for c in row.cells
        ]
        rows.append("| " + " | ".join(cells) + " |")
    if rows:
        width = rows[0].count(" | ") + 1
        rows.insert(1, "|" + " --- |" * width)
    return rows


def _cell(text: str) -> str:
    return _SPACES.sub(" ", text.replace("\n", " ")).strip().replace("|", "\\|")


# --- HTML --------------------------------------------------------------------------------

_DROP = ["nav", "header", "footer", "script", "style", "noscript", "template", "svg", "head"]
_BLOCKS = {
    "p", "div", "section", "article", "main", "aside", "blockquote", "ul", "ol", "dl",
    "dt", "dd", "figure", "figcaption", "form", "fieldset", "address", "details", "summary",
    "h5", "h6", "hr", "body", "center",
}  # fmt: skip
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4}
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.I)


def read_html(path: Path, max_chars: int | None = None, started: float | None = None) -> Converted:
    """h1-h4 become headings, `<pre>` a fence, lists and table rows stay one per line;
    navigation, headers, footers, scripts and styles are dropped."""
    from selectolax.lexbor import LexborHTMLParser

    budget = _Budget(max_chars, started)
    tree = LexborHTMLParser(_shallow(_html_text(path.read_bytes())))
    budget.check()
    title_node = tree.css_first("title")
    title = _SPACES.sub(" ", title_node.text()).strip() if title_node else ""
    tree.strip_tags(_DROP)
    walker = _HtmlWalker(budget)
    if tree.body is not None:
        walker.walk(tree.body)
    return Converted(walker.result(), title or None)


_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)[^>]*>")
# Elements that nest nothing (void) or whose end tag is usually left out: not counted.
_FLAT = {
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
    "source", "track", "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup",
    "thead", "tbody", "tfoot", "colgroup", "caption", "rp", "rt", "html", "head", "body",
}  # fmt: skip


def _shallow(html: str, limit: int = HTML_MAX_DEPTH) -> str:
    """The page with the tags nested deeper than `limit` dropped (their text kept): the
    parser's time grows with the square of the depth (100,000 nested <div>s took 23 s),
    and no real page nests a few hundred deep."""
    if html.count("<") <= limit:
        return html
    depth = 0

    def keep(tag: re.Match) -> str:
        nonlocal depth
        if tag.group(2).lower() in _FLAT or tag.group(0).endswith("/>"):
            return tag.group(0)
        if tag.group(1):  # an end tag: kept when its start tag was
            depth = max(depth - 1, 0)
            return tag.group(0) if depth < limit else " "
        depth += 1
        return tag.group(0) if depth <= limit else " "

    return _TAG.sub(keep, html)


def _html_text(data: bytes) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    found = _CHARSET.search(data[:4096])
    encoding = found.group(1).decode("ascii").lower() if found else "utf-8"
    try:
        return data.decode(encoding, errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")


class _HtmlWalker:
    """Depth-first over the DOM with an explicit stack: deep nesting cannot overflow."""

    def __init__(self, budget: _Budget):
        self.budget = budget
        self.lines: list[str] = []
        self.inline: list[str] = []
        self.prefix = ""
        self.depth = 0  # list nesting

    def walk(self, root) -> None:
        """Follow child, sibling and parent links: no list of a node's children is built,
        so a 50 MB page with half a million siblings costs no more than its DOM."""
        node = root
        seen = 0
        while node is not None:
            seen += 1
            if seen % 4096 == 0:
                self.budget.check()
            if self.enter(node) and node.child is not None:
                node = node.child
                continue
            while node is not None:
                self.leave(node)
                if node.mem_id == root.mem_id:
                    return
                if node.next is not None:
                    node = node.next
                    break
                node = node.parent

    def enter(self, node) -> bool:
        """Handle a node on the way down; whether to walk into its children."""
        tag = node.tag
        if tag == "-text":
            self.inline.append(node.text(deep=False))
            return False
        if not node.is_element_node:
            return False
        if tag in _HEADINGS:
            self.flush()
            self.emit("#" * _HEADINGS[tag] + " " + self.clean(node.text()))
            return False
        if tag == "pre":
            self.flush()
            code = node.text(deep=True).strip("\n")
            fence = "~~~~" if "```" in code else "```"
            self.emit(fence + "\n" + code + "\n" + fence)
            return False
        if tag == "tr":
            self.flush()
            self.row([self.clean(c.text()).replace("|", "\\|") for c in node.css("th, td")])
            return False
        if tag in ("ul", "ol"):
            self.depth += 1
        if tag in _BLOCKS or tag in ("li", "table", "ul", "ol", "br"):
            self.flush()
        if tag == "li":
            self.prefix = "  " * max(self.depth - 1, 0) + "- "
        elif tag == "table":
            self.header_done = False
        return True

    def leave(self, node) -> None:
        tag = node.tag
        if tag in _BLOCKS or tag in ("li", "table", "ul", "ol"):
            self.flush()
        if tag in ("ul", "ol"):
            self.depth -= 1

    def row(self, cells: list[str]) -> None:
        self.lines.append(self.budget.take("| " + " | ".join(cells) + " |"))
        if not getattr(self, "header_done", True):
            self.lines.append("|" + " --- |" * len(cells))
            self.header_done = True

    @staticmethod
    def clean(text: str) -> str:
        return _SPACES.sub(" ", text.replace("\n", " ")).strip()

    def emit(self, block: str) -> None:
        if self.lines and self.lines[-1] != "":
            self.lines.append("")
        self.lines.append(self.budget.take(block))
        self.lines.append("")

    def flush(self) -> None:
        text = self.clean("".join(self.inline))
        self.inline = []
        if text:
            prefix, self.prefix = self.prefix, ""
            line = prefix + text if prefix else escape_line(text)
            if prefix and len(self.lines) > 1 and self.lines[-2].lstrip().startswith("- "):
                self.lines[-1:] = [self.budget.take(line), ""]  # one list's items stay together
                return
            self.emit(line)

    def result(self) -> str:
        return "\n".join(self.lines).strip("\n") + "\n"


# --- TXT ---------------------------------------------------------------------------------


def read_txt(path: Path, max_chars: int | None = None, started: float | None = None) -> Converted:
    """Plain text: every line kept where it is, none read as Markdown structure."""
    from askmd.read.notes import decoded, guessed_warning

    text, encoding = decoded(path.read_bytes())
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    warnings = (guessed_warning(encoding),) if encoding else ()
    return Converted("\n".join(escape_line(ln) for ln in text.split("\n")), warnings=warnings)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:160]
