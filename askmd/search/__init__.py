"""Searching: a question becomes a ranked list of chunks (keyword and dense, blended;
exact identifiers first; an optional reranker)."""
