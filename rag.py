"""askmd: ask questions about a folder of Markdown notes, from the terminal.

The entry point: parses the command line, builds Settings once, runs one command and is
the single error boundary (an AskmdError is one red line and exit 1; anything else is a
bug and shows its traceback).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import chunker
import console
import notes
from errors import AskmdError
from settings import Settings, load_settings

DESCRIPTION = "Ask questions about a folder of Markdown notes, with cited answers."


def cmd_chunk(args: argparse.Namespace, settings: Settings) -> int:
    """Show how one file is chunked: for debugging notes and the chunker."""
    path = Path(args.path)
    if not path.is_file():
        what = "is not a file" if path.exists() else "does not exist"
        raise AskmdError(f"{args.path} {what}: give the path of a Markdown file")
    root, source = _source_of(path, settings.knowledge_dir)
    try:
        note = notes.read(root, source, settings.max_file_bytes)
    except notes.Unreadable as exc:
        raise AskmdError(f"{args.path} is {exc}") from None
    for warning in note.warnings:
        console.warning(f"{args.path}: {warning}")
    chunks = chunker.split(
        note.text,
        source=note.source,
        title=note.title,
        first_line=note.first_line,
        size=settings.chunk_size,
        overlap=settings.chunk_overlap,
    )
    mode = chunks[0].mode if chunks else "heading"
    if args.json:
        console.print_json(
            {
                "file": note.source,
                "mode": mode,
                "title": chunks[0].title if chunks else note.title,
                "tags": list(note.tags),
                "chunk_size": settings.chunk_size,
                "chunk_overlap": settings.chunk_overlap,
                "chunks": [_chunk_json(c) for c in chunks],
            }
        )
    else:
        console.show_chunks(note.source, mode, chunks, settings.chunk_size)
    return 0


def _chunk_json(c: chunker.Chunk) -> dict:
    return {
        "id": c.id,
        "chunk_index": c.chunk_index,
        "heading_chain": c.chain_text,
        "heading_level": c.heading_level,
        "line_start": c.line_start,
        "line_end": c.line_end,
        "chars": len(c.text),
        "overlap": c.overlap,
        "text": c.text,
    }


def _source_of(path: Path, knowledge_dir: Path) -> tuple[Path, str]:
    """(root, relative source): relative to the knowledge folder when the file is inside it."""
    resolved, knowledge = path.resolve(), knowledge_dir.resolve()
    if resolved.is_relative_to(knowledge):
        return knowledge, resolved.relative_to(knowledge).as_posix()
    return resolved.parent, resolved.name


def cmd_repl(args: argparse.Namespace, settings: Settings) -> int:
    raise AskmdError(
        "asking questions is not available yet: this version has no index or answers. "
        "`python rag.py chunk FILE` shows how a note is chunked."
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rag.py", description=DESCRIPTION)
    parser.add_argument(
        "--knowledge",
        metavar="DIR",
        help="folder of notes (default: ASKMD_KNOWLEDGE_DIR or knowledge/)",
    )
    parser.add_argument(
        "--traceback", action="store_true", help="show the full traceback on errors"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    chunk = commands.add_parser(
        "chunk",
        help="show how one Markdown file is split into chunks",
        description="Show how one Markdown file is split into chunks: mode, heading chain, "
        "lines and text of each chunk.",
    )
    chunk.add_argument("path", metavar="PATH", help="a Markdown file")
    chunk.add_argument("--json", action="store_true", help="print JSON instead of panels")
    chunk.add_argument("--size", type=int, metavar="N", help="target chunk size (ASKMD_CHUNK_SIZE)")
    chunk.add_argument(
        "--overlap", type=int, metavar="N", help="overlap in characters (ASKMD_CHUNK_OVERLAP)"
    )
    chunk.set_defaults(run=cmd_chunk, need_knowledge_dir=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        overrides = {
            "knowledge_dir": Path(args.knowledge) if args.knowledge else None,
            "chunk_size": getattr(args, "size", None),
            "chunk_overlap": getattr(args, "overlap", None),
        }
        settings = load_settings(
            overrides=overrides, need_knowledge_dir=getattr(args, "need_knowledge_dir", True)
        )
        run = getattr(args, "run", cmd_repl)
        return run(args, settings)
    except AskmdError as exc:
        if args.traceback:
            raise
        console.error(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
