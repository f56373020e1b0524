"""Indexing: Notes become chunks, keyword postings (the manifest) and vectors (the store),
kept in step with the folder; only what changed is redone."""
