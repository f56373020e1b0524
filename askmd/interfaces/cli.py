"""askmd's command line: what `python rag.py`, `python -m askmd` and `askmd` all run.

It parses the command line, builds Settings once, runs one command and is
the single error boundary (an AskmdError is one red line and exit 1; anything else is a
bug and shows its traceback).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from askmd import pipeline, wording
from askmd.errors import AskmdError
from askmd.index import index_home
from askmd.interfaces import answer_display, cli_common, console, found_display
from askmd.interfaces.cli_common import kept_on_ctrl_c, save, show_sync, stream_answer
from askmd.interfaces.live import LiveIndex
from askmd.pipeline import Index
from askmd.read import chunker, notes, vault
from askmd.search import retriever
from askmd.settings import Settings, load_settings
from askmd.version import __version__

DESCRIPTION = "Ask questions about a folder of Markdown notes, with cited answers."


def cmd_chunk(args: argparse.Namespace, settings: Settings) -> int:
    """Show how one file is chunked: for debugging notes and the chunker."""
    path = Path(args.path)
    if not path.is_file():
        what = "is not a file" if path.exists() else "does not exist"
        kinds = "Markdown, PDF, DOCX, HTML or TXT"
        raise AskmdError(f"{args.path} {what}: give the path of a {kinds} file")
    root, source = _source_of(path, settings.knowledge_dir)
    try:
        note = notes.read(root, source, settings.max_file_bytes)
    except notes.Unreadable as exc:
        raise AskmdError(f"{args.path}: {exc}") from None
    for warning in note.warnings:
        console.warning(f"{args.path}: {warning}")
    chunks = chunker.split_note(note, settings.chunk_size, settings.chunk_overlap)
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
        "page_start": c.page_start,
        "page_end": c.page_end,
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


def cmd_index(args: argparse.Namespace, settings: Settings) -> int:
    """Bring the index in step with the knowledge folder."""
    index = Index(settings)
    with kept_on_ctrl_c(index):
        report = index.sync(
            rebuild=args.rebuild,
            progress=console.SyncProgress(),
            on_wait=console.warning,
            vectors=not args.keyword_only,
            emptying=True,  # asked for by hand: a folder emptied on purpose empties the index
        )
    if args.json:
        console.print_json(report.to_json())
    else:
        show_sync(index, report)
    return 0


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    """Sync, then show the chunks nearest to a query."""
    if not args.query.strip():  # as `ask` and the API say: an empty query finds nothing
        raise AskmdError(f'the query is empty: {wording.command("search")} "metrics port"')
    pipeline.check_question(args.query, "the query")  # before any indexing, as below
    filters = _filters(args)  # a bad filter is reported before any indexing
    index = Index(settings)
    with kept_on_ctrl_c(index):
        report = index.keeper.sync_to_read(console.SyncProgress(), warn=console.warning)
    if not args.json:
        show_sync(index, report)
    hits = index.search(args.query, args.k or settings.top_k, filters=filters)
    if args.json:
        console.print_json(pipeline.search_json(args.query, hits))
    elif not hits and filters and filters.tags and _unknown_tag(index, filters.tags):
        console.notice(_unknown_tag(index, filters.tags))
    else:
        found_display.show_hits(hits, args.query)
    return 0


def _unknown_tag(index: Index, wanted: tuple[str, ...]) -> str:
    """Why a tag filter found nothing when no note has the tag: with the nearest tags (or
    those there are), as a misspelled tag is the likely cause."""
    have = index.manifest.tags()
    for tag in wanted:
        if not vault.tag_matches(tag, have):
            near = difflib.get_close_matches(tag, sorted(have), n=3, cutoff=0.6)
            listed = ", ".join(f"#{t}" for t in near or sorted(have)[:8])
            label = "nearest" if near else "tags in the notes"
            return f"no note has the tag #{tag}" + (f" ({label}: {listed})" if listed else "")
    return ""


def cmd_ask(args: argparse.Namespace, settings: Settings) -> int:
    """Sync, then answer one question with cited sources."""
    if not args.question.strip():
        raise AskmdError(
            f'the question is empty: {wording.command("ask")} "what port does the API use?"'
        )
    pipeline.check_question(args.question)
    filters = _filters(args)
    if args.save:
        from askmd.answer import saving

        saving.check_target(args.save)  # before the work, not after it
    index = Index(settings, loading=console.status)
    with kept_on_ctrl_c(index):
        report = index.keeper.sync_to_read(
            None if args.json else console.SyncProgress(), warn=console.warning
        )
    if not args.json:
        show_sync(index, report)
    k = args.k or settings.top_k
    show = None if args.json else stream_answer
    result = cli_common.ask(index, args.question, [], k, show, filters=filters)
    if args.json:
        console.print_json(result.to_json())
    else:
        answer_display.show_answer(result)
    if args.save:
        save(index, [result], args.save)
    return 130 if result.cancelled else 0


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    """Sync, then score retrieval on labelled queries (files ranked by their best chunk)."""
    from askmd import evaluate

    if args.files is not None and not 1 <= args.files <= 100:
        raise AskmdError(f"-k {args.files}: rank between 1 and 100 files per query")
    skipped: list[int] = []
    queries = evaluate.read_queries(Path(args.queries), skipped, answers=args.answers)
    if skipped:
        lines = ", ".join(str(n) for n in skipped[:5]) + (" …" if len(skipped) > 5 else "")
        console.warning(f"{args.queries}: skipped {len(skipped)} empty queries (line {lines})")
    index = Index(settings)
    with kept_on_ctrl_c(index):  # a read: a read-only or busy index is scored as it is
        progress = None if args.json else console.SyncProgress()
        report = index.keeper.sync_to_read(progress, warn=console.warning)
    if not args.json:
        show_sync(index, report)
    if args.answers:
        k = settings.top_k
        answered = evaluate.evaluate_answers(queries, lambda q: index.ask(q, [], k))
        if args.json:
            console.print_json(answered.to_json())
        else:
            found_display.show_answers_eval(answered, verbose=args.verbose)
        return 0
    unknown = evaluate.unknown_paths(queries, set(index.manifest.files()))
    if unknown:
        shown = ", ".join(unknown[:3]) + (" …" if len(unknown) > 3 else "")
        console.warning(
            f"{args.queries}: {console.plural(len(unknown), 'relevant path')} not in the index "
            f"({shown}; paths are relative to the knowledge folder): scored as misses"
        )
    result = evaluate.evaluate(
        queries, lambda q, n: index.search(q, n, mode=args.retriever), k=args.files or 10
    )
    if args.json:
        console.print_json(result.to_json())
    else:
        found_display.show_eval(result, verbose=args.verbose)
    return 0


def _filters(args: argparse.Namespace) -> retriever.Filters | None:
    source, level = getattr(args, "source", None), getattr(args, "heading_level", None)
    tags = getattr(args, "tag", None)
    since, until = getattr(args, "since", None), getattr(args, "until", None)
    return pipeline.filters(
        source, level, name="--heading-level", tags=tags, since=since, until=until
    )


def cmd_stats(args: argparse.Namespace, settings: Settings) -> int:
    """What is indexed, read from the manifest (fast: Chroma is not opened)."""
    if args.files:
        from askmd.index import status

        index = Index(settings)
        found = status.files(settings, index.manifest if index.has_index() else None)
        if args.json:
            console.print_json({"files": found})
        else:
            console.show_file_status(found)
        return 0
    stats = Index(settings).graph.stats()
    if args.json:
        console.print_json(stats)
    else:
        console.show_stats(stats)
    return 0


def cmd_links(args: argparse.Namespace, settings: Settings) -> int:
    """A note's outgoing links (broken ones marked) and the notes that link to it."""
    found = Index(settings).graph.links(args.note)
    if args.json:
        console.print_json(found)
        return 0
    print(found["note"])
    for k in found["links"]:
        where = f"#{k['heading']}" if k["heading"] else ""
        print(f"  -> {k['target']}{where} (line {k['line']}){' broken' if k['broken'] else ''}")
    for k in found["backlinks"]:
        print(f"  <- {k['source']} (line {k['line']})")
    return 0


def cmd_related(args: argparse.Namespace, settings: Settings) -> int:
    """Sync, then list the notes most related to one note, and why."""
    index = Index(settings)
    with kept_on_ctrl_c(index):
        report = index.keeper.sync_to_read(console.SyncProgress(), warn=console.warning)
    if not args.json:
        show_sync(index, report)
    found = index.graph.related(args.note, args.k or pipeline.RELATED_K)
    if args.json:
        console.print_json(found)
    else:
        found_display.show_related(found)
    return 0


def cmd_indexes(args: argparse.Namespace, settings: Settings) -> int:
    """List the indexes under the data home, or remove some: each folder tried keeps one."""
    if getattr(args, "indexes_action", None) == "remove":
        return _remove_indexes(args)
    found = index_home.list_indexes()
    if args.json:
        console.print_json({"indexes_dir": str(index_home.indexes_home()), "indexes": found})
        return 0
    home = index_home.indexes_home()
    if not found:
        print(f"no indexes in {home}")
        return 0
    print(f"indexes in {home}:")
    width = max(len(i["folder"] or i["index_dir"]) for i in found)
    for i in found:
        gone = "" if i["exists"] else "folder missing · "
        files, chunks = _plural(i["files"], "file"), _plural(i["chunks"], "chunk")
        used = (i["last_used"] or "?")[:16].replace("T", " ")
        print(f"  {i['folder'] or i['index_dir']:<{width}}  {gone}{files}, {chunks}, "
              f"{_megabytes(i['bytes'])}, last used {used}")  # fmt: skip
    missing = sum(not i["exists"] for i in found)
    total = _megabytes(sum(i["bytes"] for i in found))
    remove = wording.command("indexes remove --missing")
    hint = f"; {missing} of a missing folder ({remove})" if missing else ""
    print(f"{_plural(len(found), 'index', 'indexes')}, {total}{hint}")
    return 0


def _remove_indexes(args: argparse.Namespace) -> int:
    if args.missing:
        chosen = [i for i in index_home.list_indexes() if i["folder"] and not i["exists"]]
        if not chosen:
            print("no index of a missing folder")
            return 0
    else:
        chosen = index_home.find_indexes(Path(args.folder).expanduser())
        if not chosen:
            raise AskmdError(
                f"no index of {Path(args.folder).expanduser().resolve()} in "
                f"{index_home.indexes_home()} ({wording.command('indexes')} lists them)"
            )
    refused: AskmdError | None = None
    for i in chosen:
        try:
            index_home.remove_index(Path(i["index_dir"]))
        except AskmdError as exc:
            refused = refused or exc
            continue
        size = _megabytes(i["bytes"])
        print(f"removed the index of {i['folder'] or '?'} ({size}, {i['index_dir']})")
    if refused is not None:
        raise refused
    return 0


def _plural(n: int, word: str, plural: str = "") -> str:
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    """Serve the HTTP API and the web page over the same index."""
    from askmd.interfaces import server

    return server.serve(settings, args.host, args.port)


def cmd_watch(args: argparse.Namespace, settings: Settings) -> int:
    """Keep the index in step with the folder, in the foreground: one line per applied
    change (with --json, one JSON object per line), until Ctrl-C."""
    import json

    index = Index(settings)
    with kept_on_ctrl_c(index):
        report = index.sync(progress=console.SyncProgress(), on_wait=console.warning)
    if not args.json:
        show_sync(index, report)

    def changed(change) -> None:
        if args.json:
            sys.stdout.write(json.dumps(change.to_json()) + "\n")
        else:
            sys.stdout.write(f"{change.time[11:]} {change.line()}\n")
        sys.stdout.flush()

    folder = settings.knowledge_dir.resolve()

    def ready() -> None:
        sys.stderr.write(f"watching {folder}/ — Ctrl-C to stop\n")
        sys.stderr.flush()

    # A big note saved is searchable by keyword at once; its vectors are stored in the
    # background, a slice at a time, so the notes saved after it are not kept waiting.
    with LiveIndex(index, on_change=changed, on_notice=console.warning, watch=True) as live:
        index.keeper.fill_in_background(console.warning)
        live.watch_here(on_ready=ready)
    return 0


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    """Serve the notes to AI assistants over the Model Context Protocol, on stdio."""
    from askmd.interfaces import mcp_stdio

    return mcp_stdio.serve(settings, allow_write=args.allow_write)


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
    command.add_argument(
        "--since", metavar="DATE", help="only notes and entries dated DATE or later (YYYY-MM-DD)"
    )
    command.add_argument(
        "--until", metavar="DATE", help="only notes and entries dated DATE or earlier"
    )


def _add_global_options(parser: argparse.ArgumentParser, after_command: bool = False) -> None:
    """The options of every command, before it or after it. After it they default to
    nothing at all (SUPPRESS), so they override the ones before it only when given."""
    unset = {"default": argparse.SUPPRESS} if after_command else {}
    parser.add_argument(
        "--knowledge",
        metavar="DIR",
        help="folder of notes (default: ASKMD_KNOWLEDGE_DIR or knowledge/)",
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
    related.set_defaults(run=cmd_related)

    serve = commands.add_parser(
        "serve",
        help="serve the HTTP API and a web page (127.0.0.1 only unless a token is set)",
        description="Sync the index, then serve the JSON API under /api/v1 (docs at /docs) "
        "and a web page at /. Listening beyond 127.0.0.1 needs ASKMD_API_TOKEN; with it "
        "set, every API call but /api/v1/health needs 'Authorization: Bearer TOKEN'.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument(
        "--port", type=int, default=8000, help="port (8000); 0 picks a free one and prints it"
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
            "knowledge_dir": Path(args.knowledge) if args.knowledge else None,
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
        if run is not cmd_chunk:  # an index holding another folder's notes is never wiped
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
