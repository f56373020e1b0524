"""The faces: CLI and REPL, HTTP API and page, MCP, the watcher. Only these talk to a
person or a client; everything below reports through what they pass in."""
