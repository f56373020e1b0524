"""askmd: ask questions about a folder of Markdown notes, with cited answers.

The stages, in data-flow order: notes and readers read a file, the chunker (chunker.py at
the top level) splits it, indexer/manifest/store keep the index, retriever searches it,
answer and grounding write and check the reply, and cli, api, mcp_server and watcher face
the user.
"""

from askmd.version import __version__

__all__ = ["__version__"]
