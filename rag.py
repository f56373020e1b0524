"""askmd: ask questions about a folder of Markdown notes, from the terminal.

The entry point: `python rag.py` opens the REPL, `python rag.py ask "…"` answers once.
The command line itself lives in askmd/interfaces/cli.py, so the installed `askmd`
command and `python -m askmd` run exactly the same program.
"""

import sys

from askmd.interfaces.cli import main

if __name__ == "__main__":
    sys.exit(main())
