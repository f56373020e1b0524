"""Word (.docx): Heading 1-4 styles become headings, lists `-`/`1.` items and tables
pipe tables. python-docx reads it, once zipbomb has checked the archive."""

from __future__ import annotations

import re
from pathlib import Path

from askmd.read.formats.common import SPACES, Budget, Converted, escape_line
from askmd.read.formats.zipbomb import check_zip

_LIST = re.compile(r"^ *(?:- |1\. )")
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def read_docx(path: Path, max_chars: int | None = None, started: float | None = None) -> Converted:
    """Heading 1-4 styles become headings; lists become `-`/`1.` items, tables pipe tables."""
    import docx
    from docx.table import Table

    budget = Budget(max_chars, started)
    check_zip(path)
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


def _is_default(style) -> bool:
    return style.element.get(f"{{{_W}}}default") in ("1", "true")


def _docx_paragraph(paragraph, styles: dict[str, str], default: str) -> str:
    text = SPACES.sub(" ", paragraph.text.replace("\n", " ")).strip()
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
        rows.append("| " + " | ".join(_cell(c.text) for c in row.cells) + " |")
    if rows:
        width = rows[0].count(" | ") + 1
        rows.insert(1, "|" + " --- |" * width)
    return rows


def _cell(text: str) -> str:
    return SPACES.sub(" ", text.replace("\n", " ")).strip().replace("|", "\\|")
