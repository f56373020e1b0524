"""A question, read once: its script, the names it asks about, the kinds of value it asks
for, the thing it asks them of, the dates it spells and its words without them.

Every check of the judgement reads the same `Question`, so none of them parses the
question again; each reading is made the first time a check asks for it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from askmd.terms import CJK_CLASS, STOPWORDS, has_cjk, is_cjk

if TYPE_CHECKING:
    from askmd.answer.answer_kinds import Kind


# A Latin word as a question writes a thing: letters and digits with inner joiners
# ("pve01", "Wi-Fi", "Disney+", "node.js"); a possessive is not part of it.
_LATIN = re.compile(
    r"(?:(?!" + CJK_CLASS + r")[^\W_])(?:(?!" + CJK_CLASS + r")[\w.+#'’-])*(?<![.'’-])"
)
_POSSESSIVE = re.compile(r"(?:'s|’s|'|’)$", re.I)
# Words that say what is done with the thing, not which thing: "What port does X listen
# on?", "When does our contract renew?", "ADR-004 是哪天通过的？". A value is given of the
# thing; the unit that gives it rarely repeats the verb ("port 8080").
_RELATION_EN = """listen run running host serve serves expire renew renewal due start begin
    end finish open close arrive land depart leave happen release come ship launch publish
    cost costs pay paid charge spend spent take took book booked call reach contact use
    used live sit store stored keep kept back deploy deployed set need have has had get
    make made go went see meet met check pass approve approved sign signed book send sent
    come came buy bought purchase""".split()
_RELATION_ZH = frozenset(
    """通过 发布 开始 结束 到期 续费 续约 需要 使用 运行 部署 入住 退房 出发 到达 抵达 起飞
    降落 花费 支付 付款 交 缴 办理 联系 预订 预约 住 在 用 跑 监听 开放 开门 关门 上线
    发生 举行 举办""".split()
)


@dataclass(frozen=True)
class Word:
    """A word of the question that may name the thing asked about."""

    written: str  # as the question writes it
    cjk: bool


class Question:
    """One question's readings, each made once."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Question({self.text!r})"

    @cached_property
    def cjk(self) -> bool:
        """Whether it is written in Chinese or Japanese (its reply is)."""
        return has_cjk(self.text)

    @cached_property
    def mostly_cjk(self) -> bool:
        return is_cjk(self.text)

    @cached_property
    def names(self) -> list[str]:
        from askmd.answer import names

        return names.named(self.text)

    @cached_property
    def kinds(self) -> list[Kind]:
        """The kinds of value it asks for (answer_kinds), then the attributes (values)."""
        from askmd.answer import answer_kinds, values

        kinds = answer_kinds.asked(self.text)
        attributes = values.asked(self.text)
        if attributes:  # "what's the phone number": a phone number, not any figure
            kinds = [k for k in kinds if k.name != "number"]
        return [*kinds, *attributes]

    @cached_property
    def not_days(self) -> list[str]:
        from askmd.search import dates_in_query

        return dates_in_query.not_days(self.text, dates_in_query.today())

    @cached_property
    def undated(self) -> str:
        from askmd.search import dates_in_query

        return dates_in_query.without_dates(self.text, dates_in_query.today())

    @cached_property
    def subject(self) -> list[Word]:
        """The words that name the thing asked about: the question without its dates, the
        words that ask for its kinds of value, question words and stop words ("What port
        is Jellyfin listening on?": Jellyfin, listening; "大阪那家酒店几点可以办入住？":
        大阪, 酒店, 入住)."""
        text = self.undated or self.text
        # the words of a short way of asking ("what time", "phone number", 多少钱) ask; a
        # long match ("when was … released") holds the thing itself
        asking = [
            m.span()
            for kind in self.kinds
            for m in kind.asks.finditer(text)
            if len(m.group().split()) <= ASKING_WORDS and len(m.group()) <= ASKING_CHARS
        ]

        def asks(at: int, end: int) -> bool:
            return any(s <= at and end <= e for s, e in asking)

        found: list[Word] = []
        for match in _LATIN.finditer(text):
            word = _POSSESSIVE.sub("", match.group())
            lower = word.lower()
            if len(lower) < 2 or lower in STOPWORDS or lower.isdigit():
                continue
            if asks(*match.span()) or _relation(word) or _kind_word(word):
                continue
            found.append(Word(word, False))
        if has_cjk(text):
            from askmd.terms import QUESTION_WORD_ZH

            at = 0
            for word in words_of(text):
                at = text.find(word, at)
                end = at + len(word)
                if len(word) < 2 or QUESTION_WORD_ZH.search(word):
                    continue
                if word in _RELATION_ZH or asks(at, end):
                    continue
                found.append(Word(word, True))
        return list({w.written.lower(): w for w in found}.values())


def words_of(text: str) -> list[str]:
    """The Chinese words of a text's character runs, by CC-CEDICT: matched longest first
    from the left and from the right, keeping the reading with fewer words, then fewer
    single characters, else the one from the right (bidirectional maximum matching: from
    the left alone, "3班期中英语" reads 班期 and 中英)."""
    from askmd.search.query_translation import _HAN_RUN, LONGEST, _dictionary, segment

    words = _dictionary()
    found: list[str] = []
    for run in _HAN_RUN.findall(text):
        forward = segment(run)
        backward: list[str] = []
        end = len(run)
        while end > 0:
            n = next((n for n in range(min(LONGEST, end), 1, -1) if run[end - n : end] in words), 1)
            backward.insert(0, run[end - n : end])
            end -= n
        found += min(
            (backward, forward),
            key=lambda read: (len(read), sum(len(w) == 1 for w in read)),
        )
    return found


ASKING_WORDS = 3
ASKING_CHARS = 16
# Words that name the kind of value asked for, however the question asks for it.
_KIND_EN = """price cost fee fees much many long often time times date day year month week
    number numbers phone mobile port ports address email password code size weight dose
    version versions author creator founder inventor developer maker designer writer""".split()


def _kind_word(word: str) -> bool:
    from askmd.terms import content_terms

    said = content_terms(word)
    return bool(said) and said[0] in _kind_stems()


@functools.cache
def _kind_stems() -> frozenset[str]:
    from askmd.terms import content_terms

    return frozenset(t for w in _KIND_EN for t in content_terms(w)[:1])


def _relation(word: str) -> bool:
    """Whether a Latin word is a verb of what is done with a thing (`_RELATION_EN`, any
    of its forms: "listening", "renews")."""
    from askmd.terms import content_terms

    lower = word.lower()
    forms = {lower, *(lower[: -len(end)] for end in _ENDINGS if lower.endswith(end))}
    return any(t in _relation_stems() for f in forms for t in content_terms(f)[:1])


_ENDINGS = ("s", "es", "ed", "d", "ing")


@functools.cache
def _relation_stems() -> frozenset[str]:
    from askmd.terms import content_terms

    return frozenset(t for w in _RELATION_EN for t in content_terms(w)[:1])
