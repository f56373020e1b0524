"""Keeping answers: `/save` in the REPL and `ask --save FILE` write the exchange as
Markdown, its references as links to the notes, outside the knowledge folder by default."""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from askmd.answer import exchange, saving
from tests.conftest import NOTES, synced_index, write_notes
from tests.openai_server import ChatScript
from tests.test_repl_pty import (  # noqa: F401 - the REPL's fixtures, reused
    ANSWER,
    PROMPT,
    built_index,
    kb,
    repl,
    server,
)

LINK = re.compile(r"\]\(([^)]+)\)")


def front_matter(text: str) -> dict[str, str]:
    assert text.startswith("---\n"), text
    head = text.split("\n---\n", 1)[0].splitlines()[1:]
    return {k: json.loads(v) for k, v in (line.split(": ", 1) for line in head)}


def links(path: Path) -> list[Path]:
    """Where the saved file's links lead, as real paths."""
    return [(path.parent / unquote(t)).resolve() for t in LINK.findall(path.read_text("utf-8"))]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    notes = {
        **NOTES,
        "ops/backups.md": "# Backups\n\nA snapshot of the database is taken every night at "
        "02:00 and kept for 30 days.\n",
        "my notes/端口.md": "# 端口\n\n服务监听 8420 端口。\n",
    }
    return synced_index(tmp_path_factory.mktemp("save"), notes)


# --- the REPL ------------------------------------------------------------------------------


def test_repl_save_writes_the_conversation(repl, tmp_path: Path, kb: Path) -> None:  # noqa: F811
    term = repl(ChatScript(ANSWER))
    term.ask("Which port does the API listen on?")
    term.ask("And the metrics?")
    shown = term.ask("/save")
    folder = tmp_path / "askmd-answers"
    (saved,) = folder.iterdir()
    assert f"saved to {saved}" in shown.replace("\n", "")
    day = datetime.date.today().isoformat()
    assert saved.name == f"{day}-which-port-does-the-api-listen-on.md"
    text = saved.read_text(encoding="utf-8")
    matter = front_matter(text)
    assert matter["model"] == "test-chat"
    assert matter["knowledge_folder"] == str(kb.resolve())
    assert matter["date"].startswith(day)
    assert "## Which port does the API listen on?" in text and "## And the metrics?" in text
    assert text.count("The API listens on port 8420 [1].") == 2
    assert "› Ports" in text and "(lines " in text
    assert set(links(saved)) == {(kb / "guides/ports.md").resolve()}

    # Again: a second file beside it; the first is never overwritten.
    assert "saved to" in term.ask("/save")
    assert {p.name for p in folder.iterdir()} == {saved.name, saved.stem + "-2.md"}
    assert saved.read_text(encoding="utf-8") == text

    # A file named by hand, relative to where askmd runs; a folder is refused in one line.
    assert "saved to" in term.ask("/save kept/ports.md")
    assert links(tmp_path / "kept/ports.md") == links(saved)
    assert "error: " in term.ask(f"/save {folder}")
    term.ask("/clear")
    assert "nothing to save" in term.ask("/save")
    term.quit_with_eof()


# --- ask --save ----------------------------------------------------------------------------


def test_ask_save_with_json_writes_the_file_and_keeps_stdout_json(tmp_path: Path, run_rag) -> None:
    notes = write_notes(tmp_path / "notes", NOTES)
    target = tmp_path / "out" / "port.md"
    shown = run_rag("--knowledge", str(notes), "ask", "Which port does the API listen on?",
                    "--json", "--save", str(target))  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["answered"] is True  # stdout is the JSON alone
    assert shown.stderr.strip().splitlines()[-1] == f"saved to {target}"
    text = target.read_text(encoding="utf-8")
    assert front_matter(text)["model"] == "extractive"
    assert "8420" in text
    assert links(target) == [(notes / "guides/ports.md").resolve()]


def test_ask_save_inside_the_knowledge_folder_says_it_will_be_indexed(
    tmp_path: Path, run_rag
) -> None:
    notes = write_notes(tmp_path / "notes", NOTES)
    shown = run_rag("--knowledge", str(notes), "ask", "Which port?", "--save", "notes/answers/p.md")
    assert shown.returncode == 0, shown.stderr
    assert f"saved to {Path('notes/answers/p.md')}" in shown.stderr
    assert "inside the knowledge folder: it will be indexed and searched" in shown.stderr
    assert set(links(notes / "answers/p.md")) == {(notes / "guides/ports.md").resolve()}


@pytest.mark.parametrize(
    "target, said",
    [
        (".", "is a folder"),
        ("a-file/answer.md", "cannot write"),
        ("a-file/", "it is a file, not a folder"),
        ("x" * 300 + ".md", "at most 255"),
    ],
)
def test_ask_save_where_it_cannot_write_is_one_line_and_exit_1(
    tmp_path: Path, run_rag, target: str, said: str
) -> None:
    notes = write_notes(tmp_path / "notes", NOTES)
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    shown = run_rag("--knowledge", str(notes), "ask", "Which port?", "--save", target)
    assert shown.returncode == 1
    (line,) = [x for x in shown.stderr.splitlines() if x.startswith("error:")]
    assert said in line


# --- the file ------------------------------------------------------------------------------


def test_by_default_answers_go_outside_the_knowledge_folder(tmp_path: Path) -> None:
    notes = tmp_path / "kb"
    (notes / "sub").mkdir(parents=True)
    assert saving.default_folder(notes, cwd=tmp_path) == tmp_path / "askmd-answers"
    for inside in (notes, notes / "sub"):  # askmd run from within the notes
        folder = saving.default_folder(notes, cwd=inside)
        assert not folder.resolve().is_relative_to(notes.resolve())


def test_names_no_file_can_have_are_refused_in_one_line(index, tmp_path: Path) -> None:
    result = index.ask("服务监听哪个端口？", [], 5)
    for target, said in (("a\0b.md", "NUL byte"), ("答" * 90 + ".md", "at most 255")):
        with pytest.raises(saving.AskmdError, match=said) as raised:
            saving.save([result], str(tmp_path / target), index.settings)
        assert "\n" not in str(raised.value)
    assert list(tmp_path.iterdir()) == []


def test_a_long_chinese_question_saves_again_and_a_slash_names_a_folder(
    index, tmp_path: Path
) -> None:
    result = index.ask("服务监听哪个端口" * 12 + "？", [], 5)
    kept = [saving.save([result], None, index.settings, folder=tmp_path).path for _ in range(2)]
    assert kept[0] != kept[1] and all(p.is_file() for p in kept)
    assert all(len(p.name.encode()) <= saving.NAME_BYTES for p in kept)
    into = saving.save([result], f"{tmp_path}/newdir/", index.settings).path
    assert into.parent == tmp_path / "newdir" and into.suffix == ".md"


def test_a_saved_answer_never_overwrites_and_names_chinese_questions(index, tmp_path: Path) -> None:
    result = index.ask("服务监听哪个端口？", [], 5)
    when = datetime.datetime(2026, 5, 4, 9, 30)
    kept = [
        saving.save([result], None, index.settings, folder=tmp_path, when=when).path
        for _ in range(3)
    ]
    assert [p.name for p in kept] == [
        "2026-05-04-服务监听哪个端口.md", "2026-05-04-服务监听哪个端口-2.md",
        "2026-05-04-服务监听哪个端口-3.md",
    ]  # fmt: skip
    text = kept[0].read_text(encoding="utf-8")
    assert "端口" in text and front_matter(text)["date"].startswith("2026-05-04T09:30")
    # A path with a space and Chinese: the link is encoded and still leads to the note.
    assert (index.settings.knowledge_dir / "my notes/端口.md").resolve() in links(kept[0])
    assert saving.slug("  What's the API's port?! ") == "what-s-the-api-s-port"
    assert saving.slug("???") == "answer"


def test_a_declined_answer_is_saved_as_declined_with_the_closest_passages(
    index, tmp_path: Path
) -> None:
    result = index.ask("What is the capital of Australia?", [], 5)
    assert result.answered is False and result.nearest
    path = saving.save([result], None, index.settings, folder=tmp_path).path
    text = path.read_text(encoding="utf-8")
    assert exchange.DECLINED in text
    assert "Declined" in text and "Closest in your notes" in text
    notes = index.settings.knowledge_dir.resolve()
    assert links(path) == [(notes / h.source).resolve() for h in result.nearest]


def test_a_note_out_of_reach_is_named_as_text(index, tmp_path: Path) -> None:
    result = index.ask("When is the database snapshot taken?", [], 5)
    (index.settings.knowledge_dir / "ops/backups.md").rename(tmp_path / "moved.md")
    try:
        path = saving.save([result], None, index.settings, folder=tmp_path).path
    finally:
        (tmp_path / "moved.md").rename(index.settings.knowledge_dir / "ops/backups.md")
    text = path.read_text(encoding="utf-8")
    assert "ops/backups.md" in text
    assert all("backups" not in str(p) for p in links(path))


def test_an_answer_saved_among_the_notes_is_searched_but_not_answered_from(
    tmp_path: Path,
) -> None:
    """Saved into the notes folder, an answer is tagged askmd-answer: asked again, the
    notes it came from are cited, not it (nor a line of its reference list); search and
    a question with its tag still find it."""
    from askmd.answer.sentences import sentences
    from askmd.search.hits import Filters

    index = synced_index(tmp_path, {
        "ops/backups.md": "# Backups\n\nA snapshot of the database is taken every night at "
        "02:00 and kept for 30 days.\n",
        "bread.md": "# Bread\n\nFeed the starter daily.\n",
    })  # fmt: skip
    notes = index.settings.knowledge_dir
    question = "How long are database snapshots kept?"
    first = index.ask(question, [], 5)
    saved = saving.save([first], str(notes / "answers/snapshots.md"), index.settings)
    assert saved.indexed
    body = saved.path.read_text("utf-8").split("\n---\n", 1)[1]
    assert "References:" in body
    assert not any("›" in s or "(lines" in s for s in sentences(body))
    index.sync()
    again = index.ask(question, [], 5)
    assert [r.source for r in again.references] == ["ops/backups.md"]
    assert "answers/snapshots.md" in {h.source for h in index.search(question, 5)}
    tagged = index.ask(question, [], 5, filters=Filters(tags=("askmd-answer",)))
    assert {r.source for r in tagged.references} == {"answers/snapshots.md"}
