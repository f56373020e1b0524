"""A conversation kept as a Markdown file (`/save`, `ask --save`).

Each answer is written with its reference list, the references as relative links to the
notes, so the file opens in any Markdown editor (Obsidian, VS Code, GitHub) with the
sources a click away, wherever the file and the notes are moved together.

By default the file goes to `askmd-answers/` in the folder askmd runs from, which is
where a user looks for what a command wrote, and not into the knowledge folder: a
saved answer there would be indexed and quoted back as a source for the next answers,
an answer citing an answer. When askmd runs from inside the knowledge folder, that
folder would be inside it too, so the answers go to `askmd-answers/` under the data
home instead (next to the indexes, never in them: removing an index keeps them). A file
named by hand goes where it is named, inside the knowledge folder too: its front matter
tags it askmd-answer, which search finds and answers leave out (retriever.Filters), so
the notes it quotes stay the sources. A name ending in / is a folder to save into.

A file is never overwritten: a name taken gets -2, -3, ... (created exclusively, so two
saves at once cannot pick the same one).
"""

from __future__ import annotations

import datetime
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from askmd.answer.result import Answer
from askmd.errors import AskmdError
from askmd.index import index_home
from askmd.read import chunker, notes
from askmd.search.hits import SAVED_ANSWER
from askmd.settings import Settings

FOLDER = "askmd-answers"
SLUG_CHARS = 60
SLUG_BYTES = 150  # of a name's 255 (NAME_BYTES): room for the date, "-9999" and ".md"
NAME_BYTES = 255  # the longest file name ext4, APFS and NTFS take (in bytes, for ext4)


@dataclass(frozen=True)
class Saved:
    path: Path
    indexed: bool  # inside the knowledge folder, matched by the include globs


def default_folder(knowledge_dir: Path, cwd: Path | None = None) -> Path:
    """askmd-answers/ where askmd runs, unless that is inside the knowledge folder."""
    here = Path.cwd() if cwd is None else cwd
    if _inside(here / FOLDER, knowledge_dir):
        return index_home.data_home(os.environ) / FOLDER
    return here / FOLDER


def slug(question: str) -> str:
    """A file name's words: letters and digits of any script (Chinese kept as it is),
    lower-cased, joined by -."""
    words = re.findall(r"\w+", question.lower())
    text = "-".join(words).replace("_", "-")[:SLUG_CHARS]
    while len(text.encode("utf-8")) > SLUG_BYTES:  # a Chinese character is three bytes
        text = text[:-1]
    return text.strip("-") or "answer"


def check_target(target: str | Path) -> None:
    """Refuse a target no file can be written at, before any work is done for it: a NUL
    byte, a name longer than the file system's NAME_BYTES, a folder named without its
    trailing "/" (with it, the answer is saved into the folder)."""
    raw = str(target)
    if "\0" in raw:
        raise AskmdError("cannot save: a file name cannot hold a NUL byte")
    path = Path(raw).expanduser()
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > NAME_BYTES:
            raise AskmdError(
                f"cannot save to {part[:40]}…: the name is {size} bytes long, and a file "
                f"name may have at most {NAME_BYTES}"
            )
    try:
        folder, exists = path.is_dir(), path.exists()
    except (OSError, ValueError) as exc:
        raise AskmdError(f"cannot save to {path} ({exc})") from None
    if _names_folder(raw):
        if exists and not folder:
            raise AskmdError(f"cannot save into {path}/: it is a file, not a folder")
    elif folder:
        raise AskmdError(
            f"{path} is a folder: name a file to save to ({path}/answer.md), or end it "
            f"with / to save into it"
        )


def _names_folder(raw: str) -> bool:
    return raw.endswith(("/", os.sep))


def save(
    answers: list[Answer],
    target: str | Path | None,
    settings: Settings,
    model: str | None = None,
    folder: Path | None = None,
    when: datetime.datetime | None = None,
) -> Saved:
    """Write `answers` (a conversation, oldest first) to `target`, or to a new file named
    from the date and the first question in `folder` (default_folder when None).
    `model` is the chat model's name, for the front matter when an answer used it."""
    if not answers:
        raise AskmdError("nothing to save yet: ask a question first")
    when = when or datetime.datetime.now().astimezone()
    raw = None if target is None else str(target)
    if raw is not None:
        check_target(raw)
    if raw is None or _names_folder(raw):
        folder = Path(raw).expanduser() if raw else folder or default_folder(settings.knowledge_dir)
        path = folder / f"{when:%Y-%m-%d}-{slug(answers[0].question)}.md"
    else:
        path = Path(raw).expanduser()
    path = _create(path, lambda p: transcript(answers, settings, p, model, when))
    inside = _inside(path, settings.knowledge_dir)
    return Saved(path, inside and _is_note(path, settings))


def _create(target: Path, text_for) -> Path:
    """Write a new file at `target`, or at the first free `-2`, `-3`, ... beside it."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file stands where a folder on the way should be
        raise AskmdError(f"cannot write {target}: a file stands in the way of its folder") from None
    except OSError as exc:
        raise AskmdError(f"cannot write {target} ({exc.strerror or exc})") from None
    try:
        for n in range(1, 10_000):
            path = target if n == 1 else target.with_name(_numbered(target, n))
            try:
                with path.open("x", encoding="utf-8") as f:
                    f.write(text_for(path))
            except FileExistsError:
                continue
            return path
    except OSError as exc:
        raise AskmdError(f"cannot write {target} ({exc.strerror or exc})") from None
    raise AskmdError(f"cannot write {target}: every name up to -9999 is taken")


def _numbered(target: Path, n: int) -> str:
    """`name-n.md`, the name cut (at a character) so that it stays within NAME_BYTES."""
    stem, end = target.stem, f"-{n}{target.suffix}"
    while stem and len(os.fsencode(stem + end)) > NAME_BYTES:
        stem = stem[:-1]
    return stem + end


def transcript(
    answers: list[Answer],
    settings: Settings,
    path: Path,
    model: str | None = None,
    when: datetime.datetime | None = None,
) -> str:
    """The Markdown of a conversation saved at `path` (links are relative to it)."""
    when = when or datetime.datetime.now().astimezone()
    used = model if model and any(a.mode == "llm" for a in answers) else "extractive"
    knowledge = settings.knowledge_dir.resolve()
    roots = {f.label: f.path.resolve() for f in settings.folders}  # several: each its own
    # the tag keeps it out of answers, were it saved among the notes (retriever.Filters)
    matter = {"date": when.isoformat(timespec="seconds"), "model": used,
              "knowledge_folder": str(knowledge), "tags": [SAVED_ANSWER]}  # fmt: skip
    lines = ["---", *(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in matter.items())]
    lines += ["---", "", f"# {_one_line(answers[0].question)}", ""]
    for a in answers:
        lines += [f"## {_one_line(a.question)}", ""]
        if a.llm_error:
            lines += [f"*The model failed ({a.llm_error}); quoted from the notes instead.*", ""]
        if not a.answered:
            said = "" if a.confidence is None else f" (confidence {a.confidence:.2f})"
            lines += [f"*Declined{said}: the notes do not seem to answer this.*", ""]
        lines += [a.text.strip() or "(no answer)", ""]
        if a.cancelled:
            lines += ["*(cut off)*", ""]
        if a.answered and a.references:
            lines += ["References:", ""]
            for r in a.references:
                where = _where(r, roots.get(r.folder, knowledge), path)
                lines.append(f"- [{r.n}] {where}")
                if r.text:
                    lines.append(f"  > {_one_line(r.text)}")
            lines.append("")
        elif not a.answered and a.nearest:
            lines += ["Closest in your notes:", ""]
            lines += [f"- {_where(h, roots.get(h.folder, knowledge), path)}" for h in a.nearest]
            lines.append("")
    return "\n".join(lines)


def _where(passage, knowledge: Path, path: Path) -> str:
    """`[file](relative link) › heading chain (lines a–b)`; the path as text when the note
    cannot be reached from the saved file (gone, or on another drive)."""
    note = knowledge / passage.source
    shown = _escape(passage.shown_source)
    try:
        link = os.path.relpath(note, path.resolve().parent)
    except ValueError:
        link = ""
    name = f"[{shown}]({quote(Path(link).as_posix())})" if link and note.is_file() else shown
    chain = f" › {_one_line(passage.heading_chain)}" if passage.heading_chain else ""
    pages = chunker.pages_label(passage.page_start, passage.page_end)
    place = f" {pages}" if pages else f" (lines {passage.line_start}–{passage.line_end})"
    return f"{name}{chain}{place}"


def _escape(text: str) -> str:
    return re.sub(r"([\[\]\\])", r"\\\1", text)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _inside(path: Path, folder: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))


def _is_note(path: Path, settings: Settings) -> bool:
    """Whether a sync would take this file as a note (the include and exclude globs)."""
    source = Path(os.path.realpath(path)).relative_to(os.path.realpath(settings.knowledge_dir))
    rel = source.as_posix()
    hidden = any(part.startswith(".") for part in source.parts)
    return (
        not hidden
        and notes.matches(rel, settings.include)
        and not notes.matches(rel, settings.exclude)
    )
