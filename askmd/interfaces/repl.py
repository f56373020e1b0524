"""The REPL: `python rag.py` (or `askmd`) with no command. Sync first (the MD5 check),
then questions, follow-ups and slash commands, until Ctrl-D; notes saved on disk reach
the index while it waits (the watcher), never in the middle of an answer."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from askmd import pipeline
from askmd.answer import followup
from askmd.answer.result import Answer, Turn
from askmd.errors import AskmdError
from askmd.interfaces import answer_display, cli_common, console, found_display
from askmd.interfaces.cli_common import kept_on_ctrl_c, save, show_sync, stream_answer
from askmd.interfaces.live import LiveIndex
from askmd.pipeline import Index
from askmd.search import retriever
from askmd.search import where as where_conditions
from askmd.settings import Settings

REPL_HELP = """\
Type a question, or a command:
  /debug QUESTION   show the retrieved chunks with their scores (no LLM)
  /sources          everything retrieved for the last answer
  /related NOTE     the notes most related to a note
  /why NOTE QUESTION  why a note is or is not found for a question
  /since DATE       answer only from notes dated DATE or later (/since alone: any date)
  /until DATE       answer only from notes dated DATE or earlier (/until alone: any date)
  /where COND ...   answer only from notes whose properties meet every COND, e.g.
                    /where type=meeting "project=Project Atlas" rating>=4 (/where alone: all)
  /in LABEL ...     with several folders, answer only from these (/in alone: all)
  /clear            forget the conversation (follow-ups start afresh)
  /save [FILE]      keep the conversation as Markdown (default: askmd-answers/)
  /reindex          rebuild the index from scratch
  /stats            what is indexed
  /help             this text
  /quit             leave (Ctrl-D, or quit or exit typed alone)
  Ctrl-C            cancel a running answer"""


@dataclass
class Conversation:
    """What the REPL remembers between questions."""

    turns: list[Turn]
    last: Answer | None = None
    answers: list[Answer] = field(default_factory=list)  # all shown, for /save
    since: str = ""  # /since and /until: the days every question is limited to
    until: str = ""
    where: tuple[str, ...] = ()  # /where: the conditions every question is limited to
    within: tuple[str, ...] = ()  # /in: the folders every question is limited to
    # what /sources shows: the passages of the last answer or /debug, whichever came last
    sources: tuple[str, list] | None = None

    def filters(self) -> retriever.Filters | None:
        return pipeline.filters(
            None, None, since=self.since, until=self.until, where=self.where, where_name="/where",
            folders=self.within,
        )  # fmt: skip


def cmd_repl(args: argparse.Namespace, settings: Settings) -> int:
    """The interactive loop: sync first (the MD5 check), then questions."""
    index = cli_common.open_notes(settings, loading=console.status)
    notices: list[str] = []  # what the watcher has to say, said before the next answer
    with cli_common.live(index, warn=console.warning, on_notice=notices.append) as live:
        with kept_on_ctrl_c(index):
            # At a terminal the prompt comes once every note is searchable by keyword, and
            # the vectors follow in the background; piped lines get the vectors first.
            first = 0 if sys.stdin.isatty() else None
            show_sync(index, live.sync(cli_common.progress(index), foreground=first))
        live.watch()
        return _loop(index, settings, lambda: _say(live, notices))


def _loop(index: Index, settings: Settings, say) -> int:
    talk = Conversation([])
    interactive = sys.stdin.isatty()
    if interactive:
        _enable_history(settings.index_dir / "history")
        filling = index.keeper.filling()  # read first: the prompt follows the banner at once
        console.notice(f"askmd over {_over(index)} — /help for commands, /quit to leave")
        console.show_filling(filling)
    while True:
        try:
            line = input("› " if interactive else "").strip()
        except EOFError:
            return 0
        except KeyboardInterrupt:
            console.notice("")
            continue
        if not line:
            continue
        say()  # what changed on disk since the last answer, never during one
        try:
            if _repl_command(index, talk, line) is False:
                return 0
        except AskmdError as exc:
            console.error(str(exc))
        except KeyboardInterrupt:
            answer_display.cancelled()


def _over(index) -> str:
    """What the REPL answers from: the folder and its index, or the folders' labels."""
    if isinstance(index, Index):
        return f"{index.settings.knowledge_dir.resolve()}/ (index in {index.settings.index_dir}/)"
    return ", ".join(f"{f.label} ({f.path.resolve()}/)" for f in index.folders)


def _say(live: LiveIndex, notices: list[str]) -> None:
    """What the watcher did since the last answer, in one line, and what it had to say."""
    if live.watcher is None:
        return
    for line in notices[:]:
        notices.remove(line)
        console.warning(line)
    updated = live.watcher.take_updated()
    if updated:
        console.notice(f"{console.plural(len(updated), 'note')} updated")


# Typed alone, these leave (as Python's REPL hints): no one asks their notes "exit".
LEAVE_WORDS = frozenset({"quit", "exit", "quit()", "exit()", ":q", ":q!", ":wq", "退出"})


def _repl_command(index: Index, talk: Conversation, line: str) -> bool | None:
    """Run one REPL line; False means leave."""
    word, _, rest = line.partition(" ")
    if word in ("/quit", "/exit", "/q") or line.strip().lower() in LEAVE_WORDS:
        return False
    if word == "/help":
        console.notice(REPL_HELP)
    elif word == "/reindex":
        with kept_on_ctrl_c(index):
            report = index.sync(
                rebuild=True, progress=cli_common.progress(index), on_wait=console.warning
            )
            show_sync(index, report)
    elif word == "/stats":
        console.show_stats(index.graph.stats())
    elif word == "/debug":
        console.show_filling(index.keeper.filling())
        if not rest.strip():
            raise AskmdError("/debug needs a question, e.g. /debug how do I rotate the keys?")
        filters = talk.filters()
        query, hits = followup.resolve(  # as a question here would be searched, without a model
            rest, talk.turns, lambda q: index.search(q, index.settings.top_k, filters=filters), None
        )
        _show_dates(index.searcher.dates_in(query), filters)
        found_display.show_debug(hits, query, index.graph.backlinks())
        talk.sources = (query, hits)
        if hits:
            found_display.show_verdict(index.answerer.grounding().judge(query, hits))
    elif word == "/related":
        if not rest.strip():
            raise AskmdError("/related needs a note, e.g. /related Ideas/Garden.md")
        found_display.show_related(index.graph.related(rest.strip()))
    elif word == "/sources":
        if talk.sources is None:
            raise AskmdError("no answer yet: ask a question first")
        found_display.show_hits(talk.sources[1], talk.sources[0], full=True)
    elif word in ("/since", "/until"):
        _limit_dates(talk, word[1:], rest.strip())
    elif word == "/why":
        _why(index, talk, rest.strip())
    elif word == "/where":
        _limit_properties(index, talk, rest.strip())
    elif word == "/in":
        _limit_folders(index, talk, rest.split())
    elif word == "/clear":
        talk.turns.clear()
        talk.answers.clear()
        talk.last = talk.sources = None
        console.notice("conversation cleared")
    elif word == "/save":
        save(index, talk.answers, rest.strip() or None)
    elif word.startswith("/"):
        raise AskmdError(f"unknown command {word}; /help lists the commands")
    else:
        console.show_filling(index.keeper.filling())
        result = _ask_in_repl(index, talk, line)
        answer_display.show_answer(result, hint=talk.last is None)
        talk.last = result
        talk.sources = (result.query, result.hits)
        talk.answers.append(result)
        if result.cancelled:  # a cut-off answer is shown, not built upon
            return None
        talk.turns.append(Turn(line, result.query, result.text))
        del talk.turns[: -followup.MAX_TURNS]
    return None


def _limit_dates(talk: Conversation, end: str, day: str) -> None:
    """/since DATE or /until DATE: every question from now on is limited to those days;
    the command alone lifts that limit."""
    before = (talk.since, talk.until)
    setattr(talk, end, day)
    try:
        filters = talk.filters()
    except AskmdError:
        talk.since, talk.until = before
        raise
    shown = filters.dates() if filters else None
    if shown is None:
        console.notice("questions are no longer limited by date")
    else:
        since, until = shown["since"] or "any date", shown["until"] or "any date"
        console.notice(f"questions are limited to notes dated {since} to {until}")
    if filters:  # stored as read (2026/1/7 -> 2026-01-07)
        talk.since, talk.until = filters.since, filters.until


def _why(index: Index, talk: Conversation, text: str) -> None:
    """/why NOTE QUESTION: the note's status, ranks and fate for that question, under the
    limits /since, /until and /where set."""
    from askmd.search import why

    note, _, question = text.partition(" ")
    if not note or not question.strip():
        raise AskmdError(
            '/why needs a note and a question, e.g. /why Ideas/Garden.md "when do I sow?"'
        )
    filters = talk.filters()
    if not isinstance(index, Index):  # several folders: the note's own is asked
        shelved, note = index.graph.note(note)
        index = shelved.index
        filters = replace(filters, folders=()) if filters else None
    found_display.show_why(why.explain(index, note, question.strip().strip('"'), filters))


def _limit_folders(index, talk: Conversation, labels: list[str]) -> None:
    """/in LABEL ...: every question from now on reads only those folders; /in alone
    lifts that limit."""
    if isinstance(index, Index):
        raise AskmdError("/in narrows several folders; this REPL reads one")
    for label in labels:
        index.folder(label)  # an unknown label changes nothing
    talk.within = tuple(dict.fromkeys(labels))
    if talk.within:
        console.notice(f"questions read only {', '.join(talk.within)}")
    else:
        console.notice(f"questions read every folder: {', '.join(index.labels)}")


def _limit_properties(index: Index, talk: Conversation, text: str) -> None:
    """/where COND ...: every question from now on is limited to the notes whose
    properties meet them all; the command alone lifts that limit."""
    try:
        wanted = tuple(shlex.split(text))
    except ValueError as exc:
        raise AskmdError(f"/where {text}: {exc}") from None
    where = where_conditions.parse_all(wanted, "/where")  # a bad one changes nothing
    talk.where = wanted
    if not where:
        console.notice("questions are no longer limited by properties")
        return
    console.notice(f"questions are limited to notes where {' and '.join(map(str, where))}")
    unknown = cli_common.unknown_key(index, where)
    if unknown:
        console.warning(unknown)


def _show_dates(named, filters: retriever.Filters | None) -> None:
    """/debug: the days the question names and those /since and /until set."""
    if named is not None:
        console.notice(f"dates in the question: {named.since} to {named.until}")
    asked = filters.dates() if filters else None
    if asked is not None:
        console.notice(f"dates set: {asked['since'] or 'any'} to {asked['until'] or 'any'}")


def _ask_in_repl(index: Index, talk: Conversation, line: str) -> Answer:
    """Answer a question; one that is read with the one before says so before its answer
    (before the model's stream starts, when there is one)."""
    searched: list[str] = []
    told: list[bool] = []

    def tell() -> None:
        if searched and searched[-1] != line and not told:
            console.show_read_as(searched[-1])
            told.append(True)

    def show(pieces: Iterator[str], sources: int) -> str:
        tell()
        return stream_answer(pieces, sources)

    result = cli_common.ask(
        index, line, talk.turns, index.settings.top_k, show, filters=talk.filters(),
        searched=lambda query, _hits: searched.append(query),
    )  # fmt: skip
    searched.append(result.query)
    tell()
    return result


def _enable_history(path: Path) -> None:
    """Line editing and history kept across sessions, where readline exists."""
    try:
        import atexit
        import readline
    except ImportError:
        return
    try:  # saved only once the index folder exists: a folder with no notes gets none
        if path.exists():
            readline.read_history_file(path)
        readline.set_history_length(1000)
        atexit.register(_save_history, readline, path)
    except OSError:
        pass


def _save_history(readline, path: Path) -> None:
    """At exit; an index folder that cannot be written (read-only) keeps no history."""
    try:
        readline.write_history_file(path)
    except OSError:
        pass
