"""Find the chunks that answer a question: dense nearest neighbours from the store.

Turns stored chunks into Hits with a similarity score (1 - cosine distance) and a rank.
It does not generate anything and never prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from embedder import Embedder
    from store import Store


@dataclass(frozen=True)
class Hit:
    rank: int
    score: float
    chunk_id: str
    source: str
    heading_chain: str
    line_start: int
    line_end: int
    text: str

    def to_json(self) -> dict:
        return {
            "rank": self.rank,
            "score": round(self.score, 4),
            "source": self.source,
            "heading_chain": self.heading_chain,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "chunk_id": self.chunk_id,
            "text": self.text,
        }


def search(query: str, embedder: Embedder, store: Store, k: int) -> list[Hit]:
    """The k chunks nearest to the query, best first."""
    if not query.strip():
        return []
    vector = embedder.embed_queries([query])[0]
    return [
        Hit(
            rank=rank,
            score=1.0 - s.distance,
            chunk_id=s.id,
            source=str(s.metadata.get("source", "")),
            heading_chain=str(s.metadata.get("heading_chain", "")),
            line_start=int(s.metadata.get("line_start", 0)),
            line_end=int(s.metadata.get("line_end", 0)),
            text=s.text,
        )
        for rank, s in enumerate(store.nearest(vector, k), start=1)
    ]
