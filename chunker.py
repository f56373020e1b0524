"""The card's chunker: split a note's Markdown body into chunks that keep their place in the
document (heading chain, `---` separators, 200-character overlap).

The code lives in the package (askmd/read/chunker.py and the two passes beside it); this
module keeps the card's file and its public names for scripts that `import chunker`.
"""

from askmd.read.chunker import VERSION, Chunk, pages_label, split, split_note
from askmd.read.note_layout import MAX_CHAIN_LEVEL
from askmd.read.section_cuts import HARD_CAP_FACTOR, hard_cap

__all__ = [
    "HARD_CAP_FACTOR",
    "MAX_CHAIN_LEVEL",
    "VERSION",
    "Chunk",
    "hard_cap",
    "pages_label",
    "split",
    "split_note",
]
