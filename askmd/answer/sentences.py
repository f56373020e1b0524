"""The prose sentences of a passage, verbatim: what an answer quotes and what grounding
checks a claim against. Headings, code, table rules and lines shaped like askmd's own
reference list are not sentences.
"""

from __future__ import annotations

import functools
import re

from askmd.terms import content_terms, has_cjk

FRAGMENT_CHARS = 240  # the longest quoted fragment

# Inline code is one piece: the "." of `du -ah . | sort` ends no sentence.
SENTENCE = re.compile(r"(?:`[^`\n]+`|[^\n])+?(?:[.!?](?=\s)|[。！？；]+|$)", re.M)
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
SKIP_LINE = re.compile(r"^\s*(?:#{1,6}\s|\|?\s*:?-{3,}|[-*_]{3,}\s*$|<!--)")
# A table's delimiter row: GitHub's needs one hyphen a cell ("|:-|-:|"); without a pipe,
# three (a bare "--" is not one).
TABLE_RULE = re.compile(r"^(?=.*(?:\||-{3}))\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+|^\s*>\s?")


# A line that only shows a picture or another note (`![[diagram.png]]`, `![alt](a.png)`):
# nothing to quote as an answer.
_EMBED_ONLY = re.compile(r"^(?:!\[\[[^\]]*\]\]|!\[[^\]]*\]\([^)]*\)|\s)+$")


# A line shaped like askmd's own reference line ("[1] notes/a.md › Heading (lines 3–5)",
# or "(1) …", as a note's own brackets are shown), and the quoted fragment under it: a
# note holding them mimics an answer; quoting them would pass its words off as cited.
# A saved answer (answer/saving.py) lists them as "- [1] [a.md](a.md) › Heading (lines 3–5)"
# with "  > the fragment" under each.
_REFERENCE_LINE = re.compile(
    r"^\s*(?:[-*+]\s+)?[\[(（［【]\s*\d+\s*[\])）］】]\s+\S.*?"
    r"(?:›|\((?:lines?|p\.)\s*\d+[^)]*\))"
)
_FRAGMENT_LINE = re.compile(r'^\s*(?:["“「『].*["”」』]|>\s.*)\s*$')

# Lines that point rather than say: a note's tags ("tags: #bread", "#incident #postgres")
# and its links onward ("See also [[Budget]].", "相关笔记：[[预算]]、[[税]]"). Quoted as an
# answer they cite the note for nothing; read as evidence they make any question on the
# note's topic look answered.
_SEP = r"[\s,，、;；.。]|\band\b|和|及"
_TAG = r"#[^\s#,，、;；.。]+"
_TAG_LINE = re.compile(
    rf"^(?:(?:tags?|标签)\s*[:：]\s*)?{_TAG}(?:(?:{_SEP})+{_TAG})*(?:{_SEP})*$", re.I
)
_LINK = r"!?\[\[[^\]\n]+\]\]|!?\[[^\]\n]*\]\([^)\n]*\)"
_LINKS_LINE = re.compile(
    rf"^(?:see also|related(?: notes)?|参见|另见|相关(?:笔记)?)\s*[:：]?\s*"
    rf"(?:{_LINK})(?:(?:{_SEP})*(?:{_LINK}))*(?:{_SEP})*$",
    re.I,
)


def sentences(text: str) -> list[str]:
    """The prose sentences of a passage, verbatim but for the line breaks of a hard-wrapped
    paragraph (`logical_lines`); headings, code, tag and see-also lines, and lines shaped
    like askmd's own reference list are left out."""
    out: list[str] = []
    fence = ""  # the open fence's marker; a closer is the same character, at least as long
    lines = logical_lines(text)
    after_reference = False
    for i, line in enumerate(lines):
        marker = FENCE.match(line)
        if marker and not fence:
            fence = marker.group(1)
            continue
        if fence:
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence):
                if not line.strip().strip(fence[0]):
                    fence = ""
            continue
        if not line.strip() or SKIP_LINE.match(line):
            continue
        if _REFERENCE_LINE.match(line) or (after_reference and _FRAGMENT_LINE.match(line)):
            after_reference = True
            continue
        after_reference = False
        if i + 1 < len(lines) and TABLE_RULE.match(lines[i + 1]):
            continue  # a table's header row says nothing by itself
        mark = LIST_MARK.match(line)
        said = line[mark.end() if mark else 0 :].strip()
        if _TAG_LINE.match(said) or _LINKS_LINE.match(said):
            continue
        start = None  # where a sentence began that an initial or a title did not end
        for m in SENTENCE.finditer(line, mark.end() if mark else 0):
            start = m.start() if start is None else start
            if m.end() < len(line) and _goes_on(line[start : m.end()], line[m.end() :]):
                continue
            sentence = line[start : m.end()].strip()
            start = None
            if content_terms(sentence) and not _EMBED_ONLY.match(sentence):
                out.append(sentence)
    return out


# A line that ends with a hard break: two spaces or a backslash.
_HARD_BREAK = re.compile(r"(?: {2,}|\\)$")
# A line that ends its sentence, or introduces what follows ("Emergency numbers:").
_ENDED = re.compile(r"[.!?:。！？：；…]['\"”’)*_~]*$")
# What continues a sentence: a small word, a number, a closing or joining mark.
_GOES_ON = re.compile(r"^(?:[a-z]|\d|[,;:.)\]}%–—-]|[，、；：。）」』])")
_STARTS_CJK = re.compile(r"^[\u3000-\u9fff\uff00-\uffef]")
# A line at least this share of its paragraph's widest line, in a paragraph at least
# WIDE columns wide, was wrapped where the writer's editor ran out of room.
WRAPPED_SHARE = 0.6
WIDE = 60


def logical_lines(text: str) -> list[str]:
    """See `_logical`: the same passage is read by the judgement, the extractive answer
    and its references, and each candidate sentence looks up what it introduces."""
    return list(_logical(text))


@functools.lru_cache(maxsize=512)
def _logical(text: str) -> tuple[str, ...]:
    """The lines of a passage as Markdown shows them: a paragraph's hard-wrapped lines are
    one line, and so are a list item's (or a quote's) continuation lines. Code, tables,
    headings and hard breaks keep their lines. Where nothing shows a wrap, a line is left
    alone: a short line without an end mark, then one with a capital, is a list written
    without marks ("Woke up late" / "Went to the gym"), as Obsidian shows it.
    """
    lines = text.splitlines()
    out: list[str] = []
    fence = ""
    joinable = False  # whether the last line out may take the next one
    widest = _widths(lines)
    for i, line in enumerate(lines):
        marker = FENCE.match(line)
        if fence or marker:
            if fence and marker and marker.group(1)[0] == fence[0]:
                fence = "" if len(marker.group(1)) >= len(fence) else fence
            elif not fence:
                fence = marker.group(1)
            out.append(line)
            joinable = False
            continue
        plain = line.strip()
        structural = (
            not plain
            or SKIP_LINE.match(line)
            or plain.startswith("|")
            or TABLE_RULE.match(line)
            or (i + 1 < len(lines) and TABLE_RULE.match(lines[i + 1]))
            or _REFERENCE_LINE.match(line)
        )
        if structural:
            out.append(line)
            joinable = False
            continue
        item = LIST_MARK.match(line)
        quoted = item is not None and item.group().strip() == ">"
        if joinable and (not item or (quoted and out[-1].lstrip().startswith(">"))):
            said = line[item.end() :].strip() if item else plain
            indented = line[: len(line) - len(line.lstrip())] != ""
            if _continues(lines[i - 1], said, widest[i - 1], indented):
                out[-1] = _joined(out[-1], _HARD_BREAK.sub("", said))
                joinable = not _HARD_BREAK.search(line)
                continue
        out.append(_HARD_BREAK.sub("", line))
        joinable = not _HARD_BREAK.search(line) and not _EMBED_ONLY.match(line)
    return tuple(out)


@functools.lru_cache(maxsize=512)
def unwrapped(text: str) -> str:
    """The passage with its wrapped lines joined: where a sentence `sentences` gave can be
    found again."""
    return "\n".join(logical_lines(text))


def _widths(lines: list[str]) -> list[int]:
    """For each line, the width of the widest line of its paragraph (CJK counts two)."""
    widths = [len(line.rstrip()) + sum(1 for c in line if _STARTS_CJK.match(c)) for line in lines]
    out = [0] * len(lines)
    start = 0
    for i in range(len(lines) + 1):
        if i == len(lines) or not lines[i].strip():
            block = widths[start:i]
            out[start:i] = [max(block, default=0)] * len(block)
            start = i + 1
    return out


def _continues(before: str, line: str, widest: int, indented: bool) -> bool:
    """Whether `line` goes on with the sentence the line `before` it (as written) left
    open: after an end mark only a small word does ("incl.\nbreakfast")."""
    before = before.rstrip()
    if _ENDED.search(before):
        return line[:1].islower()
    if indented or _GOES_ON.match(line) or before.endswith((",", "，", "、", "(")):
        return True
    width = len(before) + sum(1 for c in before if _STARTS_CJK.match(c))
    return widest >= WIDE and width >= WRAPPED_SHARE * widest


def _joined(before: str, line: str) -> str:
    """Two wrapped lines as one: a space between words, none between CJK characters."""
    before = before.rstrip()
    if _STARTS_CJK.match(before[-1:]) and _STARTS_CJK.match(line):
        return before + line
    return f"{before} {line}"


# A "." that ends no sentence: an initial after a name or another initial ("Ursula K. Le
# Guin", "J. R. R. Tolkien"), a title ("Dr. Okafor"), "e.g.", "i.e." ("option A." ends one).
_NOT_AN_END = re.compile(
    r"(?:\b[A-Z][a-z]+|\b[A-Z]\.)\s+[A-Z]\.$"
    r"|\b(?:Dr|Mr|Mrs|Ms|Mx|Prof|Sr|Jr|St|vs|cf|e\.g|i\.e)\.$"
)


def _goes_on(said: str, rest: str) -> bool:
    """Whether the "." that ends `said` is an abbreviation's, as what follows shows: a
    small word ("total incl. breakfast"), a number after "no." ("Policy no. HP-448120"),
    or the name after an initial or a title; or an end inside brackets the line closes
    later ("（偏热，150 度正好；别的用 160 度）": the "；" ends no sentence)."""
    if _NOT_AN_END.search(said) or _inside_brackets(said, rest):
        return True
    if not said.endswith("."):
        return False
    after = _NEXT_WORD.match(rest)
    if after is None:
        return False
    word = after.group(1)
    return word[0].islower() or bool(_NUMBER_SIGN.search(said) and any(c.isdigit() for c in word))


_BRACKETS = ("()", "（）", "[]", "［］", "【】", "「」", "『』")


def _inside_brackets(said: str, rest: str) -> bool:
    return any(said.count(o) > said.count(c) and c in rest for o, c in _BRACKETS)


_NEXT_WORD = re.compile(r"\s+([^\W\d_]\S*|\S*\d\S*)")
_NUMBER_SIGN = re.compile(r"\b(?:[Nn]o|[Nn]r|[Nn]os)\.$")


def trim(sentence: str, limit: int = FRAGMENT_CHARS) -> str:
    """Cut at a word boundary (or anywhere in CJK), keeping a verbatim prefix."""
    if len(sentence) <= limit:
        return sentence
    cut = sentence[:limit]
    if not has_cjk(cut) and " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:")
