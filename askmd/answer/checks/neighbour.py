"""A value given for a neighbour of the thing asked about.

"What port is Jellyfin listening on?" over a note of containers finds the note, close in
meaning, and in it "Audiobookshelf 2.17 on port 13378": a port, for another service.
Notes keep values in lists and tables of like things (services and their ports,
contacts and their numbers, a car's MOT and a bicycle's service), so the nearest value
is often the neighbour's. A question that asks for a value of a kind (answer_kinds,
values) is answered only by a unit (units.py: a sentence, a list item, a table row,
read with what governs it) that both gives a value of that kind and is about the thing
asked: it holds the question's own words (`Question.subject`), weighed by how rare each
is in the folder, in any of their forms (aliases.py: Osaka for 大阪, WiFi for Wi-Fi).
When the best such unit of the top passages holds less than COVERED of them, the value
is a neighbour's, and the decline says whose.

Words of one script are only looked for in units of that script, unless they are
names the other script writes too: an English question's "land" is not in a Chinese
sentence, and that says nothing. A unit with none of the words to look for is not
judged.
"""

from __future__ import annotations

import re

from askmd.answer import aliases, values
from askmd.answer.checks import Evidence, Simple
from askmd.answer.question import Word
from askmd.answer.reasons import Reason
from askmd.answer.units import Unit, units
from askmd.terms import content_terms, has_cjk, is_cjk, terms

# The share of the subject's weight (idf) the best value unit must hold more than: a
# unit missing half of it ("Osaka's hotel" of the Kyoto guesthouse under "Osaka") is
# about another thing.
COVERED = 0.5
NAMED = 2  # missing words named in the decline, rarest first
# A neighbour's value stands among others of its kind: the top passages give that kind
# of value for at least this many things (services and their ports, contacts and their
# numbers, two hotels' check-in times in a trip note's sections). One such value is prose
# about one thing, which a question may well word otherwise. Set a priori; dev and test
# figures in BENCHMARKS.md.
NEIGHBOURS = 2


def run(evidence: Evidence) -> Reason | None:
    question = evidence.question
    kinds = question.kinds
    subject = question.subject
    if not kinds or evidence.idf is None:
        return None
    weight = weights(subject, evidence)
    best: tuple[float, Read, list[Word]] | None = None
    unjudged = False
    giving = 0  # units of the top passages that give a value of the kind
    echoed = {w.written.lower() for w in subject}
    for rank, hit in enumerate(evidence.top):
        for unit in units(hit):
            if not any(gives(kind, unit, echoed) for kind in kinds):
                continue
            giving += 1
            if not subject:
                return None  # a value is given; whose, the question does not say
            read = Read(unit, rank)
            judged = [w for w in subject if read.judges(w)]
            if not judged:
                unjudged = True  # a value in a unit of the other script
                continue
            total = sum(weight[w.written] for w in judged)
            missing = [w for w in judged if not read.holds(w)]
            share = 1 - sum(weight[w.written] for w in missing) / total if total else 1.0
            if best is None or share > best[0]:
                best = (share, read, missing)
    if best is None:
        # no unit gives a value of the kinds only this check reads (a phone number…)
        lacking = [k.name for k in kinds if k.name in values.LABELS]
        if lacking and len(lacking) == len(kinds) and not unjudged:
            return Reason("lacking", tuple(lacking))
        return None
    if best[0] > COVERED or unjudged:
        return None
    if giving < NEIGHBOURS:
        return None  # the passage gives one such value: no neighbour's beside it
    _, read, missing = best
    missing.sort(key=lambda w: -weight[w.written])
    label = read.unit.label or _named(read.unit)
    value = next(k.name for k in kinds if gives(k, read.unit, echoed))
    return Reason(
        "neighbour",
        tuple(w.written for w in missing[:NAMED]),
        (label,) if label else (),
        value,
        first=read.rank == 0,
    )


def gives(kind, unit: Unit, echoed: set[str]) -> bool:
    """Whether the unit gives a value of the kind; an entry's day dates each of its units
    ("Finally bought the new bike." in the note of 2025-03-08)."""
    text = f"{unit.text} {unit.day}" if unit.day and kind.name in DATED else unit.text
    return values.gives(kind, text, unit.context, echoed)


DATED = frozenset({"date", "time", "when"})


def weights(subject: list[Word], evidence: Evidence) -> dict[str, float]:
    """Each word's idf in the folder (its rarest index term): a word no note holds weighs
    the most."""
    found = {}
    for word in subject:
        keys = terms(word.written) if word.cjk else content_terms(word.written)[:1]
        keys = [k for k in keys if len(k) > 1] or keys
        idf = evidence.idf(keys, word.cjk) if keys else {}
        found[word.written] = max(idf.values(), default=1.0)
    return found


class Read:
    """One unit as the check reads it, each reading made once for all the words."""

    def __init__(self, unit: Unit, rank: int) -> None:
        self.unit = unit
        self.rank = rank  # of its passage among the top ones
        self.context = unit.context
        self.flat = aliases.flat(self.context)
        self.terms = {_key(t) for t in content_terms(self.context)}
        self.script = _script(unit.text)
        self.chinese = has_cjk(self.context)
        self.latin = bool(_LATIN_LETTER.search(self.context))

    def judges(self, word: Word) -> bool:
        """Whether the unit is written in the word's script, or the word is a name it may
        write in its own."""
        if self.script is None or word.cjk == self.script:
            return True
        if not word.cjk and _NAME_LIKE.search(word.written):
            return True  # Chinese text writes a Latin name as it is ("customs-docs 的端口")
        return len(aliases.forms(word.written)) > 1

    def holds(self, word: Word) -> bool:
        """Whether the unit or what governs it writes the word, in any of its forms: as a
        term (stemmed: "listening" in "listens"), flat ("wifi" in "Wi-Fi"), or in the
        other script (大阪 for Osaka)."""
        wanted = content_terms(word.written)[:1]
        if not word.cjk and wanted and _key(wanted[0]) in self.terms:
            return True
        across = self.latin if word.cjk else self.chinese
        for form in aliases.forms(word.written, across):
            if has_cjk(form):
                if form in self.context or form in self.flat:
                    return True
            elif len(form) >= FLAT_LETTERS and form in self.flat:
                return True
        return False


def _key(term: str) -> str:
    """A term as compared: an irregular verb's past as its base ("fed" of "feed"), and no
    final e, as the index's stemmer leaves "release" but makes "releas" of "released"."""
    term = IRREGULAR.get(term, term)
    return term[:-1] if len(term) > KEY_LETTERS and term.endswith("e") else term


KEY_LETTERS = 3
# English verbs whose past is not made with -ed: a question asks "how often is the
# starter fed?" of "Feed the starter daily."
IRREGULAR = {
    past: base
    for base, *pasts in (
        line.split()
        for line in """be was were been; begin began begun; break broke broken; bring
        brought; build built; buy bought; catch caught; choose chose chosen; come came;
        cost; cut; do did done; draw drew drawn; drink drank drunk; drive drove driven;
        eat ate eaten; fall fell fallen; feed fed; feel felt; fight fought; find found;
        fly flew flown; forget forgot forgotten; get got gotten; give gave given; go went
        gone; grow grew grown; have had; hear heard; hide hid hidden; hold held; keep kept;
        know knew known; lay laid; lead led; leave left; lend lent; let; lie lay lain;
        lose lost; make made; mean meant; meet met; pay paid; put; read; ride rode ridden;
        ring rang rung; rise rose risen; run ran; say said; see saw seen; sell sold; send
        sent; set; shake shook shaken; shoot shot; show showed shown; shut; sing sang sung;
        sit sat; sleep slept; speak spoke spoken; spend spent; stand stood; steal stole
        stolen; stick stuck; swim swam swum; take took taken; teach taught; tear tore torn;
        tell told; think thought; throw threw thrown; understand understood; wake woke
        woken; wear wore worn; win won; write wrote written""".split(";")
    )
    for past in pasts
}


def _script(text: str) -> bool | None:
    """True for a Chinese or Japanese unit, False for a Latin one, None for one of figures
    alone ("2026-10-13", "| 3000 |"): read in either."""
    if is_cjk(text):
        return True
    return False if _LETTER.search(text) else None


_LETTER = re.compile(r"[^\W\d_]")
_LATIN_LETTER = re.compile(r"[A-Za-z]")
# A Latin word Chinese text writes as it is: a digit, a joiner or a capital inside it
# ("pve01", "customs-docs", "MOT"); "Mum" would be written 妈妈.
_NAME_LIKE = re.compile(r"\d|\w[-_.+]\w|\w[A-Z]")
FLAT_LETTERS = 4  # a shorter flat form ("tv") would be found inside other words


def _named(unit: Unit) -> str:
    from askmd.answer import names

    found = names.named(unit.text)
    return found[0] if found else ""


# Advice, not a decline: on every test half together (the held-out personal and work
# folders and the answer sets) declining for a neighbour's value, or for a kind of value
# only this check reads (a phone number, a port), cost more right answers than it won
# (BENCHMARKS.md). The answer stands, with a warning naming whose value it is.
CHECK = Simple("neighbour", run, None, advises=("neighbour", "lacking"))
