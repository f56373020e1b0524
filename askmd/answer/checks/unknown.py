"""The notes say the value is not known: "don't have his extension yet", "我没有他们电话".

People note what they lack as well as what they have ("Brown bin -- no idea, ask Mrs
Patel", "B12 result still not back"). Such a unit is about the thing asked and close in
meaning, so the answer quoted it as if it gave the value. A question that asks for a
value of a kind (answer_kinds, values) is declined when the units about the thing (the
neighbour check's reading: more than its COVERED share of the question's own words)
give no value of that kind and one of them says it is not known; the decline quotes it.
"""

from __future__ import annotations

import re

from askmd.answer import values
from askmd.answer.checks import Evidence, Simple
from askmd.answer.checks import neighbour as by_thing
from askmd.answer.reasons import Reason
from askmd.answer.units import Unit, units

# Ways notes say a thing is not known, missing or not decided yet.
UNKNOWN = re.compile(
    r"\b(?:don'?t|do not|doesn'?t|didn'?t|haven'?t|have not|never) (?:have|know|got|had)\b"
    r"|\bno idea\b|\bnot sure\b|\bunknown\b|\bnot (?:known|decided|covered|set up)\b"
    r"|\b(?:TBD|TBC|TODO)\b|\bpending\b|\bstill (?:waiting|not back)\b|\bforgot\b"
    # 还没 alone is "not yet" of anything (芦苇还没全白): only of knowing, asking, keeping
    r"|我没有|还没有?(?:存|问|记|定|答复|回复|确定|收到|拿到|查)|不知道|不清楚|不记得|忘了"
    r"|待定|未知|没存|没问|没记|不确定|没定",
    re.IGNORECASE,
)
QUOTED_CHARS = 80  # of the unit, in the decline
TIED = 1e-9


# A question that asks for something (a value of a kind, or what, which, who, where…),
# not whether: "Did I renew it?" is answered by "not yet".
ASKS_FOR = re.compile(
    r"^\s*(?:what|which|who|whose|when|where|how (?:much|many|long|often|old|far|big))\b"
    r"|什么|哪|谁|几|多少|多久|多大|多长",
    re.IGNORECASE,
)


def run(evidence: Evidence) -> Reason | None:
    question = evidence.question
    kinds, subject = question.kinds, question.subject
    if not subject or evidence.idf is None:
        return None
    if not kinds and not ASKS_FOR.search(question.text):
        return None
    weight = by_thing.weights(subject, evidence)
    echoed = {w.written.lower() for w in subject}
    about: list[tuple[float, Unit, bool]] = []  # the units about the thing: share, unit, unknown
    for rank, hit in enumerate(evidence.top):
        for unit in units(hit):
            read = by_thing.Read(unit, rank)
            judged = [w for w in subject if read.judges(w)]
            total = sum(weight[w.written] for w in judged)
            held = sum(weight[w.written] for w in judged if read.holds(w))
            if not total or held / total <= by_thing.COVERED:
                continue  # about another thing, or read in another script
            unknown = bool(UNKNOWN.search(unit.text))
            # a unit saying it is not known gives no value by its entry's day alone
            gives = by_thing.gives if not unknown else _gives_itself
            if any(gives(kind, unit, echoed) for kind in kinds):
                return None  # the notes give a value for it
            if not unit.heading:  # a heading read with its section stands for its units
                about.append((held / total, unit, unknown))
    best = max((share for share, _, _ in about), default=0.0)
    closest = [(unit, unknown) for share, unit, unknown in about if share >= best - TIED]
    said = next((unit for unit, unknown in closest if unknown), None)
    # without a kind of value to look for, every unit most about the thing must say it is
    # not known ("the ward clerk's extension" is in the clerk's line, not the matron's)
    if said is None or (not kinds and not all(unknown for _, unknown in closest)):
        return None
    return Reason("unknown", (_quoted(said.text),))


def _gives_itself(kind, unit: Unit, echoed: set[str]) -> bool:
    return values.gives(kind, unit.text, unit.context, echoed)


def _quoted(text: str) -> str:
    """The unit, cut at a word near QUOTED_CHARS around what says it is not known."""
    text = " ".join(text.split()).rstrip("。.！!；;")  # the decline ends the sentence
    if len(text) <= QUOTED_CHARS:
        return text
    found = UNKNOWN.search(text)
    start = max(0, (found.start() if found else 0) - QUOTED_CHARS // 2)
    end = min(len(text), start + QUOTED_CHARS)
    if start and " " in text[start:end]:
        start = text.index(" ", start) + 1  # Chinese has no spaces: cut where it falls
    if end < len(text) and " " in text[start:end]:
        end = text.rindex(" ", start, end)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


CHECK = Simple("unknown", run, None)
