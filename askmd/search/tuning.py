"""The search's measured choices, in one frozen object.

The defaults are what ships; each was chosen on the sets docs/benchmarks/ describes
(retrieval-english.md, retrieval-chinese.md, answers.md for dates), where the figures
are. A bench measures a variant by building one (`dataclasses.replace(SHIPPED, windows=
False)`) into the settings it opens its index with (`Settings.tuning`): nothing flips a
module's globals, and the variant holds for that index alone.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SearchTuning:
    # The dense share of the blend for (Latin-script, CJK) questions; None: the one
    # measured for the model that ranks them (embedding_models.MODELS).
    dense_share: tuple[float, float] | None = None
    # A Latin-script question matches a CJK chunk by keyword only through the Latin words
    # in it (commands, options, paths): such a match counts this share of its scaled
    # keyword score in the blend (retriever._other_script).
    other_script_keyword: float = 0.5
    # A Chinese question's English translation counts at most this share of a match (0:
    # not searched), times the share of non-CJK chunks among the dense top
    # `translated_by` (retriever._translation).
    translated: float = 1.0
    translated_by: int = 10
    # When an English-only model ranks a Chinese question's dense side, it reads only the
    # translation: its dense share then moves from its CJK share towards its Latin-script
    # one by the translation's weight (retriever._translated_share).
    translated_share: bool = True
    # A Latin-script question's dense score of a chunk is the better of its cosine and
    # its best window's less `window_margin` (windows.py): without a margin, windows
    # that only echo the question outrank whole answers.
    windows: bool = True
    window_margin: float = 0.02
    # The same for a CJK question ranked by the multilingual model's windows: shorter
    # windows, whose best cosine runs higher, hence the larger margin.
    cjk_windows: bool = True
    cjk_window_margin: float = 0.06
    # A query's rare identifier-shaped words (identifiers.py) put the chunks that hold
    # them word for word first.
    exact_identifiers: bool = True
    # A question that names a day or a period ranks the chunks of that date: "filter"
    # drops the chunks dated otherwise (undated ones stay), "boost" keeps them; either
    # way `date_boost` is added to the blended score of those in the period.
    dated: str = "filter"
    date_boost: float = 0.25
    # The chunks of the period are candidates even when neither retriever found them (a
    # year of daily notes, and a question whose only clue is "yesterday"): up to this many.
    dated_candidates: int = 1000
    # Embeds of embeds are followed this deep; a cycle ends sooner, at the first note
    # already listed.
    embed_depth: int = 3
    # While the store fills, this many of the keyword ranking's first candidates that
    # have no stored vector get a cosine computed for the question (dense.filled_in), so
    # the blend ranks them as it will once filled; 0: keyword ranking alone until done.
    filling_candidates: int = 20


SHIPPED = SearchTuning()
