"""askmd's command line: what `python rag.py`, `python -m askmd` and `askmd` all run.

It parses the command line, builds Settings once, runs one command and is
the single error boundary (an AskmdError is one red line and exit 1; anything else is a
bug and shows its traceback).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from askmd import pipeline, wording
from askmd.errors import AskmdError
from askmd.index import index_home
from askmd.interfaces import console
from askmd.interfaces.commands import (
    cmd_ask,
    cmd_chunk,
    cmd_eval,
    cmd_index,
    cmd_indexes,
    cmd_links,
    cmd_mcp,
    cmd_related,
    cmd_search,
    cmd_serve,
    cmd_stats,
    cmd_watch,
    cmd_why,
)
from askmd.search import retriever
from askmd.settings import load_settings
from askmd.version import __version__

DESCRIPTION = "Ask questions about a folder of Markdown notes, with cited answers."


def _add_filters(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--source", metavar="GLOB", help="only notes whose path matches, e.g. 'guides/**'"
    )
    command.add_argument(
        "--heading-level",
        type=int,
        metavar="N",
        help="only chunks under headings of level N or higher (1 = H1)",
    )
    command.add_argument(
        "--tag",
        action="append",
        metavar="TAG",
        help="only chunks tagged TAG (front matter or inline; #project takes #project/alpha); "
        "repeat to require several",
    )
    _add_where(command)
    command.add_argument(
        "--in",
        dest="within",
        action="append",
        metavar="LABEL",
        help="only the notes of the folder labelled LABEL, when several are given; repeat for more",
    )
    command.add_argument(
        "--since", metavar="DATE", help="only notes and entries dated DATE or later (YYYY-MM-DD)"
    )
    command.add_argument(
        "--until", metavar="DATE", help="only notes and entries dated DATE or earlier"
    )


def _add_where(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--where",
        action="append",
        metavar="COND",
        help="only notes whose properties meet COND: KEY=VALUE, KEY!=VALUE, KEY>=VALUE, "
        "KEY<=VALUE or KEY~TEXT (contains); repeat to require several",
    )


def _add_global_options(parser: argparse.ArgumentParser, after_command: bool = False) -> None:
    """The options of every command, before it or after it. After it they default to
    nothing at all (SUPPRESS), so they override the ones before it only when given."""
    unset = {"default": argparse.SUPPRESS} if after_command else {}
    parser.add_argument(
        "--knowledge",
        action="append",
        metavar="DIR",
        help="folder of notes; repeat it to answer from several, each DIR or LABEL=DIR "
        "(default: ASKMD_KNOWLEDGE_DIR or knowledge/)",
        **unset,
    )
    parser.add_argument(
        "--index-dir",
        metavar="DIR",
        help="where the index is kept (default: one per knowledge folder, under "
        "~/.local/share/askmd/)",
        **unset,
    )
    parser.add_argument(
        "--traceback", action="store_true", help="show the full traceback on errors", **unset
    )
    parser.add_argument(
        "--no-watch",
        action="store_true",
        help="do not apply notes saved on disk while the REPL or `serve` runs (ASKMD_WATCH=0)",
        **unset,
    )


def build_parser(prog: str = "rag.py") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"askmd {__version__}")
    _add_global_options(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    chunk = commands.add_parser(
        "chunk",
        help="show how one file is split into chunks",
        description="Show how one file (Markdown, PDF, DOCX, HTML, TXT) is split into chunks: "
        "mode, heading chain, lines, pages and text of each chunk.",
    )
    chunk.add_argument("path", metavar="PATH", help="a Markdown, PDF, DOCX, HTML or TXT file")
    chunk.add_argument("--json", action="store_true", help="print JSON instead of panels")
    chunk.add_argument("--size", type=int, metavar="N", help="target chunk size (ASKMD_CHUNK_SIZE)")
    chunk.add_argument(
        "--overlap", type=int, metavar="N", help="overlap in characters (ASKMD_CHUNK_OVERLAP)"
    )
    chunk.set_defaults(run=cmd_chunk, need_knowledge_dir=False)

    index = commands.add_parser(
        "index",
        help="bring the index in step with the notes (only what changed)",
        description="Hash every note, then re-chunk and re-embed only new and changed "
        "files; deleted files leave the index.",
    )
    index.add_argument("--rebuild", action="store_true", help="rebuild from scratch")
    index.add_argument(
        "--keyword-only",
        action="store_true",
        help="stop once every note is searchable by keyword; the vectors are stored later",
    )
    index.add_argument("--json", action="store_true", help="print the report as JSON")
    index.set_defaults(run=cmd_index)

    search = commands.add_parser(
        "search",
        help="show the chunks that best match a query",
        description="Sync the index, then show the chunks nearest to QUERY.",
    )
    search.add_argument("query", metavar="QUERY")
    search.add_argument("-k", type=int, metavar="N", help="how many results (ASKMD_TOP_K)")
    _add_filters(search)
    search.add_argument("--json", action="store_true", help="print JSON")
    search.set_defaults(run=cmd_search)

    ask = commands.add_parser(
        "ask",
        help="answer a question from the notes, with [n] citations",
        description="Sync the index, retrieve the passages that match QUESTION and answer "
        "from them with [n] citations and a reference list: generated by the LLM when one is "
        "configured (OPENAI_API_KEY, OPENAI_BASE_URL or ASKMD_LOCAL_MODEL), otherwise "
        "quoted from the notes.",
    )
    ask.add_argument("question", metavar="QUESTION")
    ask.add_argument("-k", type=int, metavar="N", help="how many passages to use (ASKMD_TOP_K)")
    _add_filters(ask)
    ask.add_argument("--json", action="store_true", help="print JSON")
    ask.add_argument(
        "--save",
        metavar="FILE",
        help="also write the answer and its references to FILE as Markdown (never "
        "overwritten: a name taken gets -2)",
    )
    ask.set_defaults(run=cmd_ask)

    evaluation = commands.add_parser(
        "eval",
        help="score retrieval on labelled queries (hit@k, recall@10, MRR@10)",
        description="Sync the index, run every query of QUERIES.jsonl (lines of "
        '{"id", "query", "relevant": [paths relative to the knowledge folder]}) and rank '
        "files by their best chunk. Reports hit@1, hit@5, hit@10, recall@10 and MRR@10.",
    )
    evaluation.add_argument("queries", metavar="QUERIES.jsonl")
    evaluation.add_argument(
        "-k", dest="files", type=int, metavar="N", help="a miss unless among the first N (10)"
    )
    evaluation.add_argument(
        "--retriever",
        choices=retriever.MODES,
        default="hybrid",
        help="hybrid (default), dense or keyword only: to compare them",
    )
    evaluation.add_argument(
        "--answers",
        action="store_true",
        help='score answers: lines with "answers": [gold text] or "unanswerable": true '
        "(declined share, gold recall)",
    )
    evaluation.add_argument("--verbose", action="store_true", help="list the misses")
    evaluation.add_argument("--json", action="store_true", help="print JSON")
    evaluation.set_defaults(run=cmd_eval)

    stats = commands.add_parser(
        "stats", help="what is indexed", description="Files, chunks and embedder of the index."
    )
    stats.add_argument("--json", action="store_true", help="print JSON")
    stats.add_argument(
        "--files",
        action="store_true",
        help="each file the include globs match: indexed, waiting for vectors, skipped (and "
        "why) or not indexed yet, with its chunks and when it was indexed",
    )
    stats.set_defaults(run=cmd_stats)

    links = commands.add_parser(
        "links",
        help="a note's links and backlinks",
        description="The links written in a note (broken ones marked) and the notes that "
        "link to it, from the index.",
    )
    links.add_argument("note", help="the note: its path, or its name as a link gives it")
    links.add_argument("--json", action="store_true", help="print JSON")
    links.set_defaults(run=cmd_links)

    related = commands.add_parser(
        "related",
        help="the notes most related to a note",
        description="The notes most like a note, by meaning, links and shared tags, each "
        "with why and whether it is already linked.",
    )
    related.add_argument("note", help="the note: its path, or its name as a link gives it")
    related.add_argument("-k", type=int, metavar="N", help=f"how many notes ({pipeline.RELATED_K})")
    related.add_argument("--json", action="store_true", help="print JSON")
    _add_where(related)
    related.set_defaults(run=cmd_related)

    why = commands.add_parser(
        "why",
        help="why a note is or is not found for a question",
        description="Whether the note is indexed (or skipped, waiting for vectors, left out "
        "by a filter, never seen), where keyword and dense search ranked its best chunks, "
        "what ranked above, and whether the answer read and quoted it.",
    )
    why.add_argument("note", help="the note: its path, or its name")
    why.add_argument("question", help="the question it was expected to answer")
    why.add_argument("--json", action="store_true", help="print JSON")
    _add_filters(why)
    why.set_defaults(run=cmd_why)

    serve = commands.add_parser(
        "serve",
        help="serve the HTTP API and a web page (127.0.0.1 only unless a token is set)",
        description="Sync the index, then serve the JSON API under /api/v1 (docs at /docs), "
        "MCP over HTTP at /mcp and a web page at /. Listening beyond 127.0.0.1 needs "
        "ASKMD_API_TOKEN; with it set, every API call but /api/v1/health, and /mcp, need "
        "'Authorization: Bearer TOKEN'.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument(
        "--port", type=int, default=8000, help="port (8000); 0 picks a free one and prints it"
    )
    serve.add_argument(
        "--allow-write",
        action="store_true",
        help="give MCP clients at /mcp the tools that add and delete notes (the API has them)",
    )
    serve.set_defaults(run=cmd_serve)

    watch = commands.add_parser(
        "watch",
        help="keep the index in step with the notes as they are saved, in the foreground",
        description="Sync the index, then apply every change saved to the notes within a "
        "second (inotify; polling where it is unavailable or ASKMD_WATCH_POLL is set): one "
        "line per change, until Ctrl-C.",
    )
    watch.add_argument(
        "--json",
        action="store_true",
        help='one JSON object per change: {"time", "added", "changed", "deleted", '
        '"chunks_embedded", "seconds", "errors"}',
    )
    watch.set_defaults(run=cmd_watch)

    mcp = commands.add_parser(
        "mcp",
        help="serve the notes to AI assistants (MCP over stdio; read-only unless --allow-write)",
        description="Sync the index, watch the folder, and serve the Model Context Protocol "
        "on stdin/stdout for a client that starts this command (Claude Desktop, Claude Code, "
        "Cursor, VS Code): tools search_notes, ask, read_note, list_notes, index_status, "
        "related_notes, and each note as a note:// resource.",
    )
    mcp.add_argument(
        "--allow-write",
        action="store_true",
        help="add the tools add_note and delete_note (the HTTP API's rules; deleted notes go "
        "to the trash)",
    )
    mcp.set_defaults(run=cmd_mcp)
    _add_indexes_command(commands)
    for command in commands.choices.values():  # `ask "…" --knowledge DIR` works too
        _add_global_options(command, after_command=True)
    return parser


def _add_indexes_command(commands) -> None:
    indexes = commands.add_parser(
        "indexes",
        help="list the indexes kept for the folders askmd was used on, or remove some",
        description="List the indexes under ~/.local/share/askmd/ ($XDG_DATA_HOME/askmd): "
        "each one's folder, whether it still exists, files, chunks, size on disk and last "
        "use. 'indexes remove FOLDER' deletes a folder's index (never its notes); "
        "'indexes remove --missing' those of folders that no longer exist.",
    )
    indexes.add_argument(
        "--json",
        action="store_true",
        help='print {"indexes_dir", "indexes": [{"folder", "exists", "files", "chunks", '
        '"bytes", "last_used", "index_dir"}]}',
    )
    indexes.set_defaults(run=cmd_indexes, need_knowledge_dir=False)
    actions = indexes.add_subparsers(dest="indexes_action", metavar="ACTION")
    remove = actions.add_parser(
        "remove",
        help="delete the index of FOLDER, or of every folder that no longer exists",
        description="Delete an index folder (the notes are never touched). An index another "
        "askmd process is writing is left alone, with one line saying which.",
    )
    which = remove.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "folder", nargs="?", metavar="FOLDER", help="the notes folder (or the index folder)"
    )
    which.add_argument("--missing", action="store_true", help="every index whose folder is gone")
    remove.set_defaults(json=False)


def main(argv: list[str] | None = None, prog: str = "rag.py") -> int:
    args = build_parser(prog).parse_args(argv)
    wording.started_as = "python rag.py" if prog == "rag.py" else prog
    try:
        overrides = {
            "knowledge_dir": tuple(args.knowledge) if args.knowledge else None,
            "index_dir": Path(args.index_dir) if args.index_dir else None,
            "top_k": getattr(args, "k", None),
            "chunk_size": getattr(args, "size", None),
            "chunk_overlap": getattr(args, "overlap", None),
            "watch": False if getattr(args, "no_watch", False) else None,
        }
        settings = load_settings(
            overrides=overrides,
            need_knowledge_dir=getattr(args, "need_knowledge_dir", True),
            warn=console.warning,
        )
        run = getattr(args, "run", None) or _repl()
        if run is not cmd_chunk and not settings.folders:  # (several: checked as each opens)
            # an index holding another folder's notes is never wiped
            rebuild = getattr(args, "rebuild", False)
            index_home.check_owner(settings.index_dir, settings.knowledge_dir, rebuild)
        return run(args, settings)
    except AskmdError as exc:
        if args.traceback:
            raise
        console.error(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _reader_left()


def _reader_left() -> int:
    """The reader of stdout left (`stats --files | head`): end quietly, with the status
    of a command SIGPIPE ended. Python would otherwise report the failed flush of its
    stdout again on the way out, so stdout points at /dev/null from here."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 128 + 13


def _repl():
    """The REPL's command: its module loads only when it runs."""
    from askmd.interfaces import repl

    return repl.cmd_repl


if __name__ == "__main__":
    sys.exit(main())
