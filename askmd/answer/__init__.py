"""Answering: ranked chunks become an answer whose every citation points at a passage that
says it, or an honest decline when none does."""
