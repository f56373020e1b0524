"""askmd: ask questions about a folder of Markdown notes, with cited answers.

The stages, in data-flow order, one folder each: `read` turns a file into a Note and
splits it into chunks (read/chunker.py; the card's chunker.py at the repository's top
level keeps its public names), `index` keeps postings and
vectors in step with the folder, `search` ranks chunks for a question, `answer` writes and
checks the reply, and `interfaces` face the user (CLI, REPL, HTTP, MCP, watcher).
`pipeline.Index` wires them together; settings, errors, terms and wording are shared by all.
See docs/architecture.md.
"""

from askmd.version import __version__

__all__ = ["__version__"]
