"""`python -m askmd` and the installed `askmd` command: the CLI of rag.py under their names."""

import sys
from pathlib import Path

from askmd.interfaces import cli


def main() -> int:
    """Run the CLI, its usage line naming the way it was started."""
    started_as = Path(sys.argv[0]).name
    return cli.main(prog="askmd" if started_as == "askmd" else "python -m askmd")


if __name__ == "__main__":
    sys.exit(main())
