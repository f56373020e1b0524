"""The named things a question asks about, such as products, tools, flags and identifiers.

A question about something the notes never name cannot be answered from them. "How do I
connect my plugin to a MySQL server?" over notes that never say MySQL still finds
passages about connecting plugins to things. Those passages are close in meaning, and
no cosine threshold tells them from an answer. The name missing from the whole folder
does tell them apart. Only what is written as a name counts:

- a word with a capital letter inside it (`MySQL`, `iPhone`) or in capitals (`GPU`);
- a capitalised word that does not start a sentence (`Logseq`, `Outlook`);
- a word with a digit (`k9s`), an inner `_`, `.` or `/`, or a leading `--` (a flag);
- a file extension written with its dot (`.docx`, `.epub`): a format;
- anything in backticks;
- any Latin word in a Chinese or Japanese question (`lazygit 里怎么…`).

Common words are never names, nor is a name in brackets after the words it
abbreviates or renames (`yellow mottle virus (ComYMV)`). A question written in Title
Case (every word that is not a stop word capitalised) has no capitalised names. Chinese
names (`微信`) are not found: without spaces, a name cannot be told from the words
around it, unless title marks set it apart (`《三体》`, `〈出师表〉`: a book, an essay, a
film). The keyword index keeps Chinese as pairs of characters, so such a name is
mentioned when the notes hold each of its pairs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from askmd.terms import CJK_CLASS, STOPWORDS, cjk_share, has_cjk, is_cjk, terms

if TYPE_CHECKING:
    from askmd.search.hits import Hit

ACRONYM = 4  # letters; a longer word in capitals is emphasis ("REALLY"), not a name to join
SHORTEST = 3  # letters; shorter names (`C`, `Go`, `UI`) are too often part of other words

# A letter of a spaced script, accents included (Tomás, José), and a letter or digit.
_LETTER = rf"(?:(?!{CJK_CLASS})[^\W\d_])"
_ALNUM = rf"(?:{_LETTER}|\d)"
_WORD = re.compile(
    rf"`[^`\n]+`|(?:(?<![\w-])--?|(?<![\w.])\.)?{_LETTER}{_ALNUM}*(?:[_./+#-]{_ALNUM}+)*\+*"
)
# Chinese title marks around a name: 《书名》, 〈篇名〉.
_TITLE = re.compile(r"《\s*([^《》\n]{1,40}?)\s*》|〈\s*([^〈〉\n]{1,40}?)\s*〉")
_INNER_CAPITAL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}")
_IDENTIFIER = re.compile(r"\d|[A-Za-z0-9][_./][A-Za-z0-9]|^--?[A-Za-z]|^\.[A-Za-z]")
_SENTENCE_END = ".!?:;。！？：；\n"  # what a word after it starts (quotes and brackets between)
# Words a question capitalises without naming anything.
_NOT_NAMES = frozenset(
    {"i", "i'm", "i've", "ok", "okay", "please", "thanks", "hi", "hello"}
    # the calendar: dates in questions are read as dates (search/dates_in_query.py)
    | set(
        """january february march april may june july august september october november
    december jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday
    thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun""".split()
    )
)


def named(question: str) -> list[str]:
    """The names in a question, as written, in order, each once."""
    cjk = _scripts(question)
    words = [m.group() for m in _WORD.finditer(question) if not m.group().startswith("`")]
    content = [w for w in words if w.lower() not in STOPWORDS and w.isalpha()]
    title_case = len(content) >= 3 and all(w[:1].isupper() for w in content)
    titles = [(m.start(), m.end(), m.group(1) or m.group(2)) for m in _TITLE.finditer(question)]
    found: list[str] = []
    joined: tuple[str, int] | None = None  # the last name, if another may join it
    spans: list[tuple[int, int, str | re.Match[str]]] = [*titles]
    spans += [(m.start(), m.end(), m) for m in _WORD.finditer(question)]
    for start, end, match in sorted(spans, key=lambda span: span[:2]):
        if isinstance(match, str):
            if match not in found:
                found.append(match)
            continue
        if any(s <= start and end <= e for s, e, _ in titles):
            continue  # a word inside a title is part of that name
        word = match.group()
        if question[: match.start()].endswith("(") and question[match.end() :].startswith(")"):
            continue  # "Commelina yellow mottle virus (ComYMV)": the words before say it
        if word.startswith("`"):
            name = word.strip("`").strip()
        elif _is_name(word, question[: match.start()], cjk(match.start()), title_case):
            name = word.strip("+#") if word.endswith("+") else word
        else:
            continue
        # capitalised plain words join ("Google Drive", "iCloud Drive"), not identifiers
        # ("PCNA K164" and "SHP-2 MAPK" are two names each), nor a word in capitals for
        # emphasis ("Sketch REALLY")
        joins = (
            name.isalpha()
            and (name[:1].isupper() or bool(_INNER_CAPITAL.search(name)))
            and not (name.isupper() and len(name) > ACRONYM)
        )
        if joins and joined and found[-1:] == [joined[0]] and question[joined[1] : start] == " ":
            name = f"{found.pop()} {name}"  # "Google Drive": one name of two words
        joined = (name, end) if joins else None
        if name and name not in found:
            found.append(name)
    return found


def _scripts(question: str) -> Callable[[int], bool]:
    """Whether the sentence at each offset is Chinese or Japanese: a question asked twice,
    in English and in Chinese ("What time does the book club meet? 读书会几点开始？"), has
    English words that are not names."""
    parts = [(m.start(), m.end()) for m in _ASKED.finditer(question)]
    if len(parts) < 2:
        whole = _chinese(question)
        return lambda at: whole
    chinese = [_chinese(question[start:end]) for start, end in parts]
    if len(set(chinese)) == 1:
        return lambda at: chinese[0]
    return lambda at: next(c for (_, end), c in zip(parts, chinese, strict=True) if at < end)


# A sentence of a question, with the mark that ends it; the last one may have none.
_ASKED = re.compile(r"[^?!？！。]+[?!？！。]*|[?!？！。]+")


def _chinese(question: str) -> bool:
    """Whether a question is written in Chinese or Japanese: by its letters, or by its
    words, as a Chinese question may name long English things ("Kubernetes 和 Docker
    Swarm 哪个更适合…": a quarter of its letters, but most of its words, are CJK)."""
    if is_cjk(question):
        return True
    han = len(_CJK_CHAR.findall(question))
    return han > 0 and han >= len(_LATIN_WORD.findall(question))


_CJK_CHAR = re.compile(CJK_CLASS)
_LATIN_WORD = re.compile(rf"{_LETTER}{_ALNUM}*")


def _is_name(word: str, before: str, cjk: bool, title_case: bool) -> bool:
    bare = word.lstrip("-")
    lower = bare.lower()
    if lower in STOPWORDS or lower in _NOT_NAMES or lower[-1:] == "s" and lower[:-1] in _NOT_NAMES:
        return False
    if cjk or _IDENTIFIER.search(word):
        return True
    if _INNER_CAPITAL.search(bare):
        return True
    rest = before.rstrip(" \t\r\"'“‘([")
    starts_sentence = not rest or rest[-1] in _SENTENCE_END
    return bare[:1].isupper() and not starts_sentence and not title_case


def unmentioned(
    question: str,
    mentioned: Callable[[list[str]], set[str]],
    together: Callable[[list[str]], bool] | None = None,
    chinese_notes: bool = True,
) -> list[str]:
    """The question's names the notes never mention. `mentioned(terms)` gives the terms
    the folder holds, whole or continued by a digit or a joiner, so `python` is found in
    `python3`. A joined name is also mentioned when each of its parts is: the notes may
    write `anti-interleukin 2` for `anti-interleukin-2`. A name of several words or parts
    (`Google Drive`, `mise use`, the pairs of `时间简史`) is mentioned when each is and,
    given `together`, one chunk holds them all: notes that say "Google Fonts" and "the
    local drive" never mention Google Drive. Words and parts under SHORTEST letters are
    not checked. A name the notes write another way is mentioned (`_written_otherwise`;
    in the other script only where the notes hold `chinese_notes`)."""
    names = {name: words(name) for name in named(question)}
    asked = sorted({t for kept in names.values() for w, parts in kept for t in (w, *parts)})
    if not asked:
        return []
    held = mentioned(asked)

    def apart(kept: list[tuple[str, tuple[str, ...]]]) -> bool:
        # several words, or a Chinese name's pairs; not a joined word's parts, which the
        # notes may write apart ("PPAR and RXR" for PPAR-RXRs: SciFact)
        several = len(kept) > 1 or any(cjk_share(w) > 0 for w, _ in kept)
        needed = [t for w, parts in kept for t in ([w] if w in held else parts)]
        return together is not None and several and len(needed) > 1 and not together(needed)

    missing = [
        name for name, kept in names.items() if kept and (not all_held(kept, held) or apart(kept))
    ]
    return [
        name
        for name in missing
        if not _written_otherwise(name, mentioned, together, chinese_notes or has_cjk(name))
    ]


def _written_otherwise(
    name: str,
    mentioned: Callable[[list[str]], set[str]],
    together: Callable[[list[str]], bool] | None,
    across: bool,
) -> bool:
    """Whether the notes write the name another way (aliases.py): with other joiners or
    none ("Wi-Fi": wifi, wi-fi), or in the other script (Osaka: 大阪; 里斯本: Lisbon)."""
    from askmd.answer import aliases

    for form in aliases.forms(name, across):
        if cjk_share(form) > 0:
            pairs = [t for t in terms(form) if len(t) > 1]
            if pairs and mentioned(pairs) == set(pairs) and (together is None or together(pairs)):
                return True
            continue
        if len(form) < SHORTEST:
            continue
        joined = [form] + [f"{form[:i]}-{form[i:]}" for i in range(1, len(form))][:JOINED]
        if mentioned(joined):
            return True
    return False


JOINED = 12  # places a joiner is tried in a flat name ("wifi": w-ifi, wi-fi, wif-i)


def all_held(kept: list[tuple[str, tuple[str, ...]]], held: set[str]) -> bool:
    """Whether every word of a name (`words`) is held: whole, or each of its parts."""
    return all(w in held or bool(parts) and all(p in held for p in parts) for w, parts in kept)


def alternatives(question: str, missing: list[str]) -> list[str]:
    """The missing names offered as one choice of several ("Zoom or Google Meet?",
    "腾讯会议还是 Google Meet？") whose other choice is not missing too: the notes may
    answer with the other one, so such a name is reported but is no reason to decline."""
    found = []
    for name in missing:
        at = question.find(name)
        if at < 0:
            continue
        before = _CHOICE_BEFORE.search(question[:at])
        after = _CHOICE_AFTER.match(question[at + len(name) :])
        others = [m.group("other") for m in (before, after) if m]
        if any(not any(o.startswith(n) or n.startswith(o) for n in missing) for o in others):
            found.append(name)
    return found


# "X or " before a name, " or Y" after it: the other choice is X or Y
_CHOICE = r"(?:\bor\b|还是|或者|或是|或)"
_OTHER = r"[\w+#.-]+"
_CHOICE_BEFORE = re.compile(rf"(?P<other>{_OTHER})\s*{_CHOICE}\s*(?:the\s+|a\s+|an\s+|用)?$")
_CHOICE_AFTER = re.compile(rf"\s*{_CHOICE}\s*(?:the\s+|a\s+|an\s+|用)?(?P<other>{_OTHER})")


def words(name: str) -> list[tuple[str, tuple[str, ...]]]:
    """Each word of a name as the index keeps it: the whole token, and its parts when it
    joins several (`pre-miRNA`: `pre-mirna`, and `pre`, `mirna`). A Chinese word's parts
    are its pairs of characters (`红楼梦`: `红楼`, `楼梦`), each checked however short."""
    found = []
    for token in name.split():
        if cjk_share(token) > 0:
            pairs = [t for t in terms(token) if len(t) > 1]
            if len(pairs) > 1:
                found.append((token.lower(), tuple(pairs)))
            elif pairs:
                found.append((pairs[0], ()))
            continue
        whole, *parts = terms(token) or [""]
        if len(whole) >= SHORTEST:
            found.append((whole, tuple(p for p in parts if len(p) >= SHORTEST)))
    return found


def absent(question: str, hits: Sequence[Hit]) -> list[str]:
    """The question's names that none of these passages holds (text, heading chain or file
    name), though the notes may: "When is Jonas's birthday?" over a list of the others'
    birthdays. Only a plain capitalised word, a person's or a place's name, is looked
    for: an acronym or an identifier may be written otherwise in the very passage that
    answers ("the API", `pg`), and a name of several words may be written apart."""
    wanted = [n for n in named(question) if _plain_name(n)]
    if not wanted:
        return []
    held = {t for hit in hits for t in terms(f"{hit.source} {hit.heading_chain} {hit.text}")}

    def has(term: str) -> bool:  # whole, or continued: "Japan" in "Japanese"
        return term in held or any(h.startswith(term) for h in held)

    return [name for name in wanted if not all(has(w) for w, _ in words(name))]


def _plain_name(name: str) -> bool:
    """A capitalised word of letters, its other letters small: Jonas, Kyoto, Tomás."""
    return len(name) >= SHORTEST and name.isalpha() and name[0].isupper() and name[1:].islower()
