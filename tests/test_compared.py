"""compared.py: a question that weighs named things against each other is answered only
by a passage that names them together. The end-to-end cases use a real index and the
real local models."""

from __future__ import annotations

import pytest

from askmd.answer import compared
from askmd.answer.exchange import DECLINED, DECLINED_ZH
from askmd.search.hits import Hit
from tests.conftest import synced_index


@pytest.mark.parametrize(
    ("question", "weighed"),
    [
        ("Vim 和 Emacs 到底哪个更好用？", ["Vim", "Emacs"]),
        ("Should a complete beginner learn Python or JavaScript first?", ["Python", "JavaScript"]),
        ("Is Obsidian Sync better than Dropbox?", ["Obsidian Sync", "Dropbox"]),
        ("Is Zellij vs GNU Screen a close call?", ["Zellij", "GNU Screen"]),
        ("Which is faster for big vaults, Dataview or Omnisearch?", ["Dataview", "Omnisearch"]),
        ("Python 和 Go 相比，哪个更适合写命令行工具？", ["Python", "Go"]),
        ("Which editor, Vim vs Emacs?", ["Vim", "Emacs"]),
        # the first word of the question is a name when it is weighed against one
        ("Notion vs Logseq?", ["Notion", "Logseq"]),
        ("Notion or Logseq, which is better for a team wiki?", ["Notion", "Logseq"]),
        ("Should I use Notion or Logseq?", ["Notion", "Logseq"]),
        # "VS Code" is a name, 更好地 "better" as in "make better use of"
        ("How do I open VS Code from Obsidian?", []),
        ("如何更好地使用 Obsidian Sync 和 Git？", []),
        # only the names on either side of "or", "than", 和…: not the place or team
        ("Should our Berlin designers use Figma or Sketch?", ["Figma", "Sketch"]),
        ("Is Linear better than Jira for the Berlin team?", ["Linear", "Jira"]),
        ("What's the best way to share Figma files with the Berlin office?", []),
        # a choice between two ways of doing one thing weighs nothing
        ("How do I switch between Reading view or Live Preview?", []),
        ("Can I use Dropbox or iCloud to sync?", []),
        # one name, or none, is not a comparison of named things
        ("Which Linux distribution is best for beginners?", []),
        ("Which is better?", []),
        ("", []),
    ],
)
def test_the_names_a_question_weighs(question: str, weighed: list[str]) -> None:
    assert compared.weighed(question) == weighed


def _hit(text: str, heading: str = "", source: str = "notes.md") -> Hit:
    return Hit(1, 1.0, source, source, heading, 1, 1, text)


def test_names_are_compared_only_by_a_passage_that_names_them_all() -> None:
    vim = _hit("Vim is a modal editor.", "Vim", "editors/vim.md")
    emacs = _hit("Emacs is extensible in Lisp.", "Emacs", "editors/emacs.md")
    both = _hit("Vim starts faster than Emacs.", "Editors", "editors/choice.md")
    question = "Vim 和 Emacs 哪个更好用？"

    assert compared.apart(question, [vim, emacs]) == ["Vim", "Emacs"]
    assert compared.apart(question, [vim, emacs, both]) == []
    # the heading chain and the file name name things too
    assert compared.apart(question, [_hit("It starts faster than Emacs.", "Vim")]) == []
    assert compared.apart("How do I quit Vim or Emacs?", [vim, emacs]) == []


NOTES = {
    "editors/vim.md": (
        "# Vim\n\nVim is a modal text editor: you press i to insert text and Esc to go back "
        "to normal mode, and :wq writes the file and quits.\n"
    ),
    "editors/emacs.md": (
        "# Emacs\n\nEmacs is a text editor extended in Emacs Lisp; C-x C-s saves the file "
        "and C-x C-c quits.\n"
    ),
    "terminal/multiplexers.md": (
        "# Multiplexers\n\nZellij is better than GNU Screen for split panes: Screen needs a "
        "patch for vertical splits, while Zellij splits a window both ways out of the box.\n"
    ),
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    return synced_index(tmp_path_factory.mktemp("compared"), NOTES)


def test_a_comparison_the_notes_never_make_is_declined_and_says_so(index) -> None:
    """Without the check, both questions quote what each note says of one editor."""
    english = index.ask("Is Vim better than Emacs for editing text?", [], 5)
    assert english.answered is False
    assert english.uncompared == ["Vim", "Emacs"]
    assert english.text == DECLINED + " No passage compares “Vim” and “Emacs”."
    assert english.to_json()["uncompared"] == ["Vim", "Emacs"]
    assert english.citations == [] and english.nearest

    chinese = index.ask("Vim 和 Emacs 哪个编辑器更好用？", [], 5)
    assert chinese.answered is False
    assert chinese.text == DECLINED_ZH + "笔记里没有一段同时讲到“Vim”和“Emacs”。"


def test_a_comparison_the_notes_make_is_answered(index) -> None:
    result = index.ask("Is Zellij better than GNU Screen for split panes?", [], 5)
    assert result.answered is True and result.uncompared == []
    assert result.references[0].source == "terminal/multiplexers.md"
