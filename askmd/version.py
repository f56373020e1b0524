"""askmd's version: the one place it is written (the MCP server's initialize reply
says it; packaging reads it from here)."""

__version__ = "0.1.0"
