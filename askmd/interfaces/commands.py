"""What each command of the command line does: `index`, `search`, `ask`, `eval`, `stats`,
`links`, `related`, `indexes`, `serve`, `watch`, `mcp` and `chunk`, each given the parsed
arguments and the Settings (cli.py parses them and is the error boundary).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from askmd import pipeline, wording
from askmd.errors import AskmdError
from askmd.index import index_home
from askmd.interfaces import answer_display, cli_common, console, found_display
from askmd.interfaces.cli_common import kept_on_ctrl_c, save, show_sync, stream_answer
from askmd.pipeline import Index
from askmd.read import chunker, notes
from askmd.search import retriever
from askmd.search import where as where_conditions
from askmd.settings import Settings
from askmd.shelf import each_folder


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
    """Bring the index in step with the knowledge folder (each folder's, when several)."""
    opened = cli_common.open_notes(settings, rebuild=args.rebuild)
    shelved = (
        [(None, opened)] if isinstance(opened, Index) else [(f, f.index) for f in opened.folders]
    )
    reports = []
    for folder, index in shelved:
        with kept_on_ctrl_c(index):
            report = index.sync(
                rebuild=args.rebuild,
                progress=console.SyncProgress(),
                on_wait=console.warning,
                vectors=not args.keyword_only,
                emptying=True,  # asked for by hand: a folder emptied on purpose empties it
            )
        reports.append((folder, report))
    if isinstance(opened, Index):
        if args.json:
            console.print_json(reports[0][1].to_json())
        else:
            show_sync(opened, reports[0][1])
    elif args.json:
        console.print_json(
            {"folders": [{"label": f.label, **report.to_json()} for f, report in reports]}
        )
    else:
        show_sync(opened, reports)
    return 0


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    """Sync, then show the chunks nearest to a query."""
    if not args.query.strip():  # as `ask` and the API say: an empty query finds nothing
        raise AskmdError(f'the query is empty: {wording.command("search")} "metrics port"')
    pipeline.check_question(args.query, "the query")  # before any indexing, as below
    filters = _filters(args)  # a bad filter is reported before any indexing
    index = cli_common.open_notes(settings, filters)
    with kept_on_ctrl_c(index):
        report = cli_common.sync_to_read(index)
    if not args.json:
        show_sync(index, report)
    hits = index.search(args.query, args.k or settings.top_k, filters=filters)
    unknown = "" if hits else cli_common.unknown_filter(index, filters)
    if args.json:
        console.print_json(pipeline.search_json(args.query, hits))
        if unknown:
            console.warning(unknown)
    elif unknown:
        console.notice(unknown)
    else:
        found_display.show_hits(hits, args.query)
    return 0


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
    index = cli_common.open_notes(settings, filters, loading=console.status)
    with kept_on_ctrl_c(index):
        report = cli_common.sync_to_read(index, progress=not args.json)
    if not args.json:
        show_sync(index, report)
    k = args.k or settings.top_k
    show = None if args.json else stream_answer
    result = cli_common.ask(index, args.question, [], k, show, filters=filters)
    if args.json:
        console.print_json(result.to_json())
    else:
        answer_display.show_answer(result)
    if not result.references and (unknown := cli_common.unknown_filter(index, filters)):
        console.warning(unknown)
    if args.save:
        save(index, [result], args.save)
    return 130 if result.cancelled else 0


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    """Sync, then score retrieval on labelled queries (files ranked by their best chunk)."""
    from askmd import evaluate

    if args.files is not None and not 1 <= args.files <= 100:
        raise AskmdError(f"-k {args.files}: rank between 1 and 100 files per query")
    if settings.folders:  # its labels name files inside one folder
        raise AskmdError(
            "eval scores one folder: give one --knowledge (or one in ASKMD_KNOWLEDGE_DIR)"
        )
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
        source, level, name="--heading-level", tags=tags, since=since, until=until,
        where=getattr(args, "where", None), folders=getattr(args, "within", None),
    )  # fmt: skip


def cmd_stats(args: argparse.Namespace, settings: Settings) -> int:
    """What is indexed, read from the manifest (fast: Chroma is not opened)."""
    opened = cli_common.open_notes(settings)
    if args.files:
        from askmd.index import status

        found = []
        for label, index in each_folder(opened):
            rows = status.files(index.settings, index.manifest if index.has_index() else None)
            found += [{"folder": label, **row} if label else row for row in rows]
        if args.json:
            console.print_json({"files": found})
        else:
            console.show_file_status(found)
        return 0
    stats = opened.graph.stats() if isinstance(opened, Index) else opened.stats()
    if args.json:
        console.print_json(stats)
    else:
        console.show_stats(stats)
    return 0


def cmd_links(args: argparse.Namespace, settings: Settings) -> int:
    """A note's outgoing links (broken ones marked) and the notes that link to it."""
    found = cli_common.open_notes(settings).graph.links(args.note)
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
    where = where_conditions.parse_all(args.where)  # a bad condition before any indexing
    index = cli_common.open_notes(settings)
    with kept_on_ctrl_c(index):
        report = cli_common.sync_to_read(index)
    if not args.json:
        show_sync(index, report)
    found = index.graph.related(args.note, args.k or pipeline.RELATED_K, where=where)
    if args.json:
        console.print_json(found)
    else:
        found_display.show_related(found)
    if not found["related"] and (unknown := cli_common.unknown_key(index, where)):
        console.warning(unknown)
    return 0


def cmd_why(args: argparse.Namespace, settings: Settings) -> int:
    """Why a note is or is not found for a question: indexed or not, its ranks, the answer."""
    from askmd.search import why

    pipeline.check_question(args.question)
    filters = _filters(args)
    index = cli_common.open_notes(settings)
    with kept_on_ctrl_c(index):
        report = cli_common.sync_to_read(index)
    if not args.json:
        show_sync(index, report)
    note = args.note
    if not isinstance(index, Index):  # several folders: the note's own is asked
        shelved, note = index.graph.note(note)
        index = shelved.index
        filters = dataclasses.replace(filters, folders=()) if filters else None
    found = why.explain(index, note, args.question, filters)
    if args.json:
        console.print_json(found)
    else:
        found_display.show_why(found)
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

    return server.serve(settings, args.host, args.port, allow_write=args.allow_write)


def cmd_watch(args: argparse.Namespace, settings: Settings) -> int:
    """Keep the index in step with the folder, in the foreground: one line per applied
    change (with --json, one JSON object per line), until Ctrl-C."""
    import json

    index = cli_common.open_notes(settings)
    with kept_on_ctrl_c(index):
        report = index.sync(progress=cli_common.progress(index), on_wait=console.warning)
    if not args.json:
        show_sync(index, report)

    def changed(change) -> None:
        if args.json:
            sys.stdout.write(json.dumps(change.to_json()) + "\n")
        else:
            sys.stdout.write(f"{change.time[11:]} {change.line()}\n")
        sys.stdout.flush()

    folders = [f"{label}:" if label else "" for label, _ in each_folder(index)]
    watched = ", ".join(
        f"{shown}{each.settings.knowledge_dir.resolve()}/"
        for shown, (_, each) in zip(folders, each_folder(index), strict=True)
    )

    def ready() -> None:
        sys.stderr.write(f"watching {watched} — Ctrl-C to stop\n")
        sys.stderr.flush()

    # A big note saved is searchable by keyword at once; its vectors are stored in the
    # background, a slice at a time, so the notes saved after it are not kept waiting.
    live = cli_common.live(index, on_change=changed, on_notice=console.warning, watch=True)
    with live:
        for _, each in each_folder(index):
            each.keeper.fill_in_background(console.warning)
        live.watch_here(on_ready=ready)
    return 0


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    """Serve the notes to AI assistants over the Model Context Protocol, on stdio."""
    from askmd.interfaces import mcp_stdio

    return mcp_stdio.serve(settings, allow_write=args.allow_write)
