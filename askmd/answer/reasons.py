"""Why the notes do not answer a question, as data, and the one table that words it.

Each check of the judgement (askmd/answer/checks/) returns a `Reason`: its kind, the
things it names (`items`: the names never mentioned, the day asked about…) and, for a
neighbour's value, what the closest passages give the value for and which kind of value
it is. The terminal, /debug, `ask --json`, the API and MCP all word a reason from
`TEXTS`, so an answer says the same thing wherever it is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Reason:
    kind: str  # a key of TEXTS
    items: tuple[str, ...]
    # for "neighbour": what the closest passages give the value for, and its kind
    given_for: tuple[str, ...] = ()
    value: str = ""
    # "neighbour": whether the value is in the first passage (one below it is no
    # neighbour the question came near; a decline then says what the close sentences
    # lack, when they do)
    first: bool = True

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "items": list(self.items),
            "given_for": list(self.given_for),
            "value": self.value,
        }


@dataclass(frozen=True)
class Text:
    """How one kind of reason is said: in a decline, English and Chinese, with `{items}`
    (and `{given_for}`, `{value}`) and the word that joins the last item; as a warning
    over an answer given all the same; in /debug, its items unquoted."""

    en: str
    zh: str
    warn: str
    debug: str
    join_en: str = "or"
    join_zh: str = "、"
    en_many: str = ""  # for several items, when the sentence changes ("are no days")


# In the order a decline names them: the first reason found is the one said.
TEXTS: dict[str, Text] = {
    "unmentioned": Text(
        "They never mention {items}.",
        "笔记里没有提到{items}。",
        "your notes never mention {items}: check that the answer is about it",
        "the notes never mention: {items}",
    ),
    "uncompared": Text(
        "No passage compares {items}.",
        "笔记里没有一段同时讲到{items}。",
        "no passage compares {items}: check that the answer weighs them",
        "weighs {items}; no passage names them together",
        "and",
        "和",
    ),
    "absent": Text(
        "The closest passages never mention {items}.",
        "最接近的段落都没有提到{items}。",
        "the closest passages never mention {items}: check that the answer is about it",
        "the closest passages never mention: {items}",
    ),
    "not_days": Text(
        "{items} is no day of the calendar.",
        "{items}不是日历上有的日子。",
        "{items} is no day of the calendar: check the answer's date",
        "names no day of the calendar: {items}",
        "and",
        "和",
        en_many="{items} are no days of the calendar.",
    ),
    "other_days": Text(
        "The closest passages are of other days than {items}.",
        "最接近的段落都不是 {items} 的记录。",
        "the closest passages are of other days than {items}: check the answer's day",
        "asks about {items}; the closest sentences are of other days",
    ),
    "unknown": Text(
        "They say it isn't known: {items}.",
        "笔记里写着还不知道：{items}。",
        "your notes say it isn't known ({items}): check the answer",
        "the notes say it isn't known: {items}",
    ),
    "neighbour": Text(
        "The closest passages give {value} for {given_for}, not for {items}.",
        "最接近的段落给的是{given_for}的{value}，不是{items}的。",
        "the closest passages give {value} for {given_for}, not for {items}: check that "
        "the answer is about it",
        "the closest passages give {value} for {given_for}, not for {items}",
    ),
    "lacking": Text(
        "The closest passages give no {items}.",
        "最接近的段落里没有给出{items}。",
        "the closest passages give no {items}: check that the answer says it",
        "asks for {items}; no close sentence gives one",
    ),
}
ORDER = tuple(TEXTS)


def said(reasons: Sequence[Reason], cjk: bool) -> str:
    """The sentence a decline adds for the first reason (in ORDER), or ""."""
    lacking = any(r.kind == "lacking" for r in reasons)
    told = [r for r in reasons if not (r.kind == "neighbour" and not r.first and lacking)]
    first = min(told, key=lambda r: ORDER.index(r.kind), default=None)
    return render(first, cjk) if first is not None else ""


def render(reason: Reason, cjk: bool = False, form: str = "decline") -> str:
    """One reason in words: `form` "decline" (in the question's language), "warn" or
    "debug" (English)."""
    text = TEXTS[reason.kind]
    if form == "decline":
        template = text.zh if cjk else text.en
        if not cjk and len(reason.items) > 1 and text.en_many:
            template = text.en_many
    else:
        template, cjk = (text.warn if form == "warn" else text.debug), False
    quoted = form != "debug"
    return template.format(
        items=_items(reason, cjk, text, quoted),
        given_for=listed(reason.given_for, cjk, "、" if cjk else "and", quoted),
        value=_value(reason.value, cjk),
    )


def _items(reason: Reason, cjk: bool, text: Text, quoted: bool) -> str:
    if reason.kind == "lacking":
        from askmd.answer.values import described

        return described(list(reason.items), cjk)
    if reason.kind == "other_days":
        return reason.items[0] if reason.items else ""
    if not quoted:
        return ", ".join(reason.items)
    return listed(reason.items, cjk, text.join_zh if cjk else text.join_en)


def _value(value: str, cjk: bool) -> str:
    from askmd.answer.answer_kinds import LABELS
    from askmd.answer.values import LABELS as VALUES

    labels = {**LABELS, **VALUES}.get(value, (value, value))
    if cjk:
        return labels[1]
    label = labels[0]
    return f"an {label}" if label[:1] in "aeiouAEIOU" else f"a {label}"


def listed(names: Sequence[str], cjk: bool, last: str, quoted: bool = True) -> str:
    """Names quoted and listed: “A”, “B” or “C”; “A”、“B”、“C”; “A”、“B”和“C”."""
    quoted_names = [f"“{n}”" if quoted else n for n in names]
    if len(quoted_names) <= 1:
        return "".join(quoted_names)
    if cjk:
        return "、".join(quoted_names[:-1]) + last + quoted_names[-1]
    return ", ".join(quoted_names[:-1]) + f" {last} " + quoted_names[-1]


def items_of(reasons: Sequence[Reason], kind: str) -> list[str]:
    """The items of the reasons of one kind."""
    return [item for r in reasons if r.kind == kind for item in r.items]


class ReasonViews:
    """The reasons of a judgement seen one kind at a time, as the JSON has carried them
    since before reasons were data (`unmentioned`, `lacking`…); a class with a `reasons`
    list gets them."""

    reasons: list[Reason]

    def of(self, kind: str) -> list[str]:
        return items_of(self.reasons, kind)

    @property
    def unmentioned(self) -> list[str]:
        """The names the question asks about that the notes never mention."""
        return self.of("unmentioned")

    @property
    def lacking(self) -> list[str]:
        """The kinds of value asked for (a date, a price…) no close sentence gives."""
        return self.of("lacking")

    @property
    def uncompared(self) -> list[str]:
        """The names the question weighs that no passage names together."""
        return self.of("uncompared")

    @property
    def absent(self) -> list[str]:
        """The people and places the notes mention but no passage found names."""
        return self.of("absent")

    @property
    def other_days(self) -> str:
        """The period asked about when the closest sentences are of other days, or ""."""
        return next(iter(self.of("other_days")), "")

    @property
    def not_days(self) -> list[str]:
        """The dates the question spells that no calendar has, as written."""
        return self.of("not_days")
