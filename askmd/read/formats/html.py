"""HTML: headings, lists, tables and <pre> kept as Markdown; navigation, headers,
footers, scripts and styles dropped. selectolax (lexbor) parses it, after tags nested
past HTML_MAX_DEPTH are dropped, and the DOM is walked without recursion."""

from __future__ import annotations

import re
from pathlib import Path

from askmd.read.formats.common import SPACES, Budget, Converted, escape_line

HTML_MAX_DEPTH = 256  # nested elements kept; the HTML parser's time grows with depth²
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

    budget = Budget(max_chars, started)
    tree = LexborHTMLParser(_shallow(_html_text(path.read_bytes())))
    budget.check()
    title_node = tree.css_first("title")
    title = SPACES.sub(" ", title_node.text()).strip() if title_node else ""
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

    def __init__(self, budget: Budget):
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
        return SPACES.sub(" ", text.replace("\n", " ")).strip()

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
