"""names.py: the named things a question asks about, and the ones the notes never
mention, which make a question unanswerable however close its passages come in meaning.
The end-to-end cases use a real index and the real local models."""

from __future__ import annotations

import pytest

from askmd.answer import names
from askmd.answer.exchange import DECLINED, DECLINED_ZH
from askmd.terms import terms
from tests.conftest import synced_index


@pytest.mark.parametrize(
    ("question", "found"),
    [
        ("How do I connect my plugin to a MySQL server?", ["MySQL"]),
        ("Which method reads blocks from a Logseq graph?", ["Logseq"]),
        ("Is there an API for WebGPU or CUDA?", ["API", "WebGPU", "CUDA"]),
        ("what does k9s show", ["k9s"]),
        ("What does the `mise use` command do?", ["mise use"]),
        ("what is snake_case and where is config.yaml", ["snake_case", "config.yaml"]),
        ("hyperfine 的 --warmup 参数有什么用？", ["hyperfine", "--warmup"]),
        ("lazygit 里怎么一次暂存所有改动？", ["lazygit"]),
        # letters with accents are letters of the name
        ("Tomás 六月要搬去哪里？", ["Tomás"]),
        ("When did José join the team?", ["José"]),
        # a file extension written with its dot names a format
        ("how do I export the whole vault to a .docx file", [".docx"]),
        # not names: the first word of a sentence, "I", common words, hyphenated words
        ("Backups run at night. When do they run?", []),
        ("How can I see console output while my add-on runs on a phone", []),
        ("I want to know: Where are the logs?", []),
        # the calendar is read as dates, not names
        ("What did I cook on January 7, 2026, and on Sundays in March?", []),
        # Title Case capitalises every word: none of them is a name for that
        ("How Do I Hide The Properties Panel", []),
        ("How Do I Hide The Properties Panel In Obsidian 2", []),
        # a Chinese name cannot be told from the words around it, unless title marks
        # set it apart
        ("怎么把笔记同步到百度网盘？", []),
        ("《红楼梦》的作者是谁？", ["红楼梦"]),
        ("〈出师表〉和《三体》", ["出师表", "三体"]),
        # capitalised names side by side are one name
        ("How do I sync my vault to Google Drive?", ["Google Drive"]),
        (
            "Does Obsidian Publish support Google Analytics or Plausible?",
            ["Obsidian Publish", "Google Analytics", "Plausible"],
        ),  # fmt: skip
        ("怎么把笔记同步到 Google Drive？", ["Google Drive"]),
        # a Chinese question with long English names is still Chinese, not Title Case
        (
            "Kubernetes 和 Docker Swarm 哪个更适合部署 Lumen？",
            ["Kubernetes", "Docker Swarm", "Lumen"],
        ),  # fmt: skip
        ("How much storage does iCloud Drive give me?", ["iCloud Drive"]),
        # not joined: a word in capitals for emphasis, lower-case words of a Chinese question
        ("Is Sketch REALLY Mac-only?", ["Sketch", "REALLY", "Mac-only"]),
        ("用 Obsidian 写 daily notes 还是用 Notion 好？", ["Obsidian", "daily", "notes", "Notion"]),
        # identifiers side by side are names of their own
        ("UBC13 acts at PCNA K164 and SHP-2 MAPK", ["UBC13", "PCNA", "K164", "SHP-2", "MAPK"]),
        # a question asked twice, in English and in Chinese: each sentence is read in
        # its own script, so the English one's words are not names
        ("What time does the book club meet? 读书会几点开始？", []),
        ("读书会几点开始？What time does Marta's book club meet?", ["Marta"]),
        ("", []),
        ("?!", []),
    ],
)
def test_named(question: str, found: list[str]) -> None:
    assert names.named(question) == found


def test_a_name_is_mentioned_whole_as_a_prefix_or_by_all_of_its_parts() -> None:
    held = {"python3", "pre", "mirna", "lum", "e014", "config.yaml", "mise", "use"}

    def mentioned(terms: list[str]) -> set[str]:
        return {t for t in terms if any(h == t or h.startswith(t) and not h[len(t)].isalpha()
                                        for h in held)}  # fmt: skip

    assert names.unmentioned("Can I use Python here?", mentioned) == []  # python3
    assert names.unmentioned("What is a pre-miRNA?", mentioned) == []  # pre + mirna
    assert names.unmentioned("What does LUM-E014 mean?", mentioned) == []
    assert names.unmentioned("What does LUM-E013 mean?", mentioned) == ["LUM-E013"]
    assert names.unmentioned("What does `mise use` do?", mentioned) == []
    assert names.unmentioned("What does `mise run` do?", mentioned) == ["mise run"]
    assert names.unmentioned("Do I need MySQL or Python?", mentioned) == ["MySQL"]
    # names too short to look up say nothing: C, Go
    assert names.unmentioned("Who wrote C and Go?", mentioned) == []


def test_a_chinese_title_is_mentioned_when_the_notes_hold_each_of_its_pairs() -> None:
    held = {"红楼", "楼梦", "三体"}  # the keyword index keeps Chinese as pairs of characters

    def mentioned(terms: list[str]) -> set[str]:
        return {t for t in terms if t in held}

    assert names.unmentioned("《红楼梦》的作者是谁？", mentioned) == []
    assert names.unmentioned("《三体》讲了什么？", mentioned) == []
    assert names.unmentioned("《水浒传》讲了什么？", mentioned) == ["水浒传"]
    assert names.unmentioned("《楼梦红》讲了什么？", mentioned) == ["楼梦红"]

    # each pair held somewhere, never together: 时间 and 间简 of "时间简短", 简史 of 人类简史
    chunks = [{"时间", "间简", "简短"}, {"人类", "类简", "简史"}]

    def somewhere(terms: list[str]) -> set[str]:
        return {t for t in terms if any(t in chunk for chunk in chunks)}

    def together(terms: list[str]) -> bool:
        return any(set(terms) <= chunk for chunk in chunks)

    assert names.unmentioned("《时间简史》讲了什么？", somewhere, together) == ["时间简史"]
    assert names.unmentioned("《人类简史》讲了什么？", somewhere, together) == []
    # a joined word's parts may be written apart: "PPAR and RXR" for PPAR-RXRs
    chunks.append({"ppar", "ligand"})
    chunks.append({"rxr"})
    assert names.unmentioned("Are PPAR-RXRs inhibited?", somewhere, together) == []


def test_a_name_of_several_words_is_mentioned_when_one_chunk_holds_them_all() -> None:
    chunks = [{"google", "font"}, {"drive", "sync"}, {"obsidian", "sync"}]  # as terms() keeps them

    def mentioned(terms: list[str]) -> set[str]:
        return {t for t in terms if any(t in chunk for chunk in chunks)}

    def together(terms: list[str]) -> bool:
        return any(set(terms) <= chunk for chunk in chunks)

    ask = "How do I set up {} here?".format
    assert names.unmentioned(ask("Google Drive"), mentioned, together) == ["Google Drive"]
    assert names.unmentioned(ask("Google Fonts"), mentioned, together) == []
    assert names.unmentioned(ask("Obsidian Sync"), mentioned, together) == []
    # without a way to ask, each word held anywhere is enough
    assert names.unmentioned(ask("Google Drive"), mentioned) == []


def test_a_missing_name_offered_as_one_choice_of_several_is_an_alternative() -> None:
    """ "Zoom or Google Meet?" is answered by notes that say Zoom: the missing choice is
    reported, not a reason to decline; both missing, it is."""
    assert names.alternatives("Is the standup on Zoom or Google Meet?", ["Google Meet"]) == [
        "Google Meet"
    ]
    assert names.alternatives("周会用腾讯会议还是 Google Meet？", ["Google Meet"]) == [
        "Google Meet"
    ]
    assert names.alternatives("Google Meet 还是腾讯会议？", ["Google Meet"]) == ["Google Meet"]
    both = ["Dropbox", "Google Drive"]
    assert names.alternatives("Can I sync with Dropbox or Google Drive?", both) == []
    assert names.alternatives("How do I query MySQL from a plugin?", ["MySQL"]) == []


NOTES = {
    "日程.md": (
        "# 日程\n\n- 周会：每周一上午十点，腾讯会议，时间简短，控制在半小时内。\n"
        "- 健身：每周三晚上七点半。\n"
    ),
    "plugins/fonts.md": (
        "# Fonts\n\nA theme can load a web font from Google Fonts with an @import rule at "
        "the top of the theme's CSS file.\n"
    ),
    "plugins/files.md": (
        "# Files on disk\n\nA plugin reads files through the vault adapter, which works on "
        "the local drive and on mobile storage alike.\n"
    ),
    "plugins/database.md": (
        "# Databases from a plugin\n\nA plugin connects to a PostgreSQL server with the "
        "`pg` client: create a pool with the host, port, user and password, then run "
        "queries with `pool.query`.\n\nClose the pool in `onunload` so the connections "
        "end with the plugin.\n"
    ),
    "plugins/settings.md": (
        "# Plugin settings\n\nA plugin keeps its settings in data.json with loadData and "
        "saveData.\n"
    ),
    "plugins/commands.md": (
        "# Commands\n\nA plugin adds a command to the command palette with addCommand, "
        "giving it an id, a name and a callback.\n"
    ),
    "plugins/events.md": (
        "# Events\n\nA plugin listens to workspace events with registerEvent, so the "
        "listener is removed when the plugin unloads.\n"
    ),
    "工具/git.md": (
        "# git 暂存\n\n用 `git add -A` 一次暂存所有改动，用 `git add -p` 逐块选择要暂存的改动。\n"
    ),
    "工具/ssh.md": (
        "# ssh 密钥\n\n用 `ssh-keygen -t ed25519` 生成新的密钥，"
        "公钥放到服务器的 authorized_keys 里。\n"
    ),
    "工具/tmux.md": (
        "# tmux 会话\n\n用 `tmux new -s 名字` 新建会话，按前缀键加 d 离开会话，会话仍在后台运行。\n"
    ),
    "读书/红楼梦.md": (
        "# 读书笔记\n\n《红楼梦》是曹雪芹写的长篇小说，前八十回由他写成，"
        "后四十回一般认为是高鹗续写的。\n"
    ),
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    return synced_index(tmp_path_factory.mktemp("names"), NOTES)


def test_the_manifest_knows_which_terms_the_notes_hold(index) -> None:
    held = index.manifest.mentioned(["postgresql", "postgres", "mysql", "pool", "poo", "git", "ed"])
    # whole, or continued by a digit or joiner (ed25519, pool.query): not by letters (poo)
    assert held == {"postgresql", "pool", "git", "ed"}
    assert index.manifest.mentioned([]) == set()


def test_the_manifest_knows_which_terms_one_chunk_holds_together(index) -> None:
    def together(text: str) -> bool:  # the terms as the index keeps them ("fonts": font)
        return index.manifest.together(terms(text))

    assert together("Google fonts") and together("local drive")
    assert not together("Google drive")
    # continued by a digit or a joiner, as `mentioned` reads them: ed25519, pool.query
    assert together("ed authorized_keys") and together("pool onunload")
    assert not together("ed pool")
    assert index.manifest.together([]) is True


def test_a_question_about_a_thing_the_notes_never_name_is_declined_and_names_it(index) -> None:
    """Without the check this question is answered (confidence 0.75) with the PostgreSQL
    passage: it is about querying a database server from a plugin, as asked."""
    result = index.ask("How do I query a MySQL database from a plugin?", [], 5)

    assert result.answered is False
    assert result.text == DECLINED + " They never mention “MySQL”."
    assert result.unmentioned == ["MySQL"]
    assert result.to_json()["unmentioned"] == ["MySQL"]
    assert result.citations == [] and result.nearest
    assert result.nearest[0].source == "plugins/database.md"


def test_a_chinese_question_about_a_tool_the_notes_never_name_is_declined_in_chinese(
    index,
) -> None:
    result = index.ask("用 lazygit 怎么一次提交所有文件？", [], 5)

    assert result.answered is False
    assert result.text == DECLINED_ZH + "笔记里没有提到“lazygit”。"
    assert result.unmentioned == ["lazygit"]


def test_a_question_about_a_book_the_notes_never_name_is_declined(index) -> None:
    """Without title marks read as a name, "《三体》的作者是谁？" is answered from the note
    about another novel's author."""
    other = index.ask("《三体》的作者是谁？", [], 5)
    assert other.answered is False
    assert other.text == DECLINED_ZH + "笔记里没有提到“三体”。"

    same = index.ask("《红楼梦》的作者是谁？", [], 5)
    assert same.answered is True and same.unmentioned == []
    assert "曹雪芹" in same.text


def test_a_question_about_a_service_the_notes_name_only_in_parts_is_declined(index) -> None:
    """The notes say "Google" (Fonts) and "drive" (the local one), never "Google Drive"
    in one passage: without reading the two words as one name, it is answered."""
    result = index.ask("How do I sync my vault files to Google Drive?", [], 5)
    assert result.answered is False
    assert result.unmentioned == ["Google Drive"]
    assert result.text == DECLINED + " They never mention “Google Drive”."

    fonts = index.ask("How does a theme load a web font from Google Fonts?", [], 5)
    assert fonts.answered is True and fonts.unmentioned == []


def test_a_choice_the_notes_make_is_answered_though_they_never_name_the_other(index) -> None:
    result = index.ask("周会用腾讯会议还是 Google Meet？", [], 5)
    assert result.answered is True
    assert result.unmentioned == ["Google Meet"]
    assert "腾讯会议" in result.text


def test_a_passage_that_restates_the_question_answers_it_and_the_name_is_still_reported(
    index,
) -> None:
    """A sentence far above the line (checks/unmentioned.RESTATES) may name the thing otherwise
    (Aβ for AlphaBeta): it answers, and the answer says what the notes never name."""
    result = index.ask(
        "Does a plugin connect to a MySQL server with the pg client and a pool?", [], 5
    )

    assert result.answered is True
    assert result.unmentioned == ["MySQL"]
    assert result.references[0].source == "plugins/database.md"


def test_the_same_questions_about_what_the_notes_name_are_answered(index) -> None:
    english = index.ask("How do I connect my plugin to a PostgreSQL server and run queries?", [], 5)
    chinese = index.ask("git 里怎么一次暂存所有改动？", [], 5)

    assert english.answered is True and english.unmentioned == []
    assert english.references[0].source == "plugins/database.md"
    assert chinese.answered is True and chinese.unmentioned == []
    assert chinese.references[0].source == "工具/git.md"


def test_a_low_threshold_lets_such_questions_through(tmp_path) -> None:
    """ASKMD_MIN_CONFIDENCE moves this line too: at 0 nothing is declined, and the
    answer still says which names the notes never mention."""
    from askmd.pipeline import Index
    from askmd.settings import load_settings
    from tests.conftest import write_notes

    kb = write_notes(tmp_path / "kb", NOTES)
    overrides = {"knowledge_dir": kb, "index_dir": tmp_path / "ix"}
    index = Index(load_settings(environ={"ASKMD_MIN_CONFIDENCE": "0"}, dotenv_path=None,
                                overrides=overrides))  # fmt: skip
    index.sync()
    result = index.ask(
        "Does a plugin connect to a MySQL server with the pg client and a pool?", [], 5
    )

    assert result.answered is True
    assert result.unmentioned == ["MySQL"]


def test_ask_json_and_the_repl_debug_name_what_the_notes_never_mention(tmp_path) -> None:
    import json
    import subprocess
    import sys

    from tests.conftest import ROOT, clean_env, write_notes

    kb = write_notes(tmp_path / "kb", NOTES)
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]

    def rag(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(ROOT / "rag.py"), *where, *args],
            input=stdin, capture_output=True, text=True, env=clean_env(), cwd=tmp_path,
            timeout=120,
        )  # fmt: skip

    asked = rag("ask", "--json", "How do I query a MySQL database from a plugin?")
    assert asked.returncode == 0, asked.stderr
    found = json.loads(asked.stdout)
    assert found["answered"] is False and found["citations"] == []
    assert found["unmentioned"] == ["MySQL"]
    assert found["answer"].endswith("They never mention “MySQL”.")

    restated = rag("ask", "Does a plugin connect to a MySQL server with the pg client and a pool?")
    assert restated.returncode == 0, restated.stderr
    assert "[1]" in restated.stdout
    assert "warning: your notes never mention “MySQL”: check that the answer is about it" in (
        restated.stderr
    )

    repl = rag(stdin="/debug How do I query a MySQL database from a plugin?\n/quit\n")
    assert repl.returncode == 0, repl.stderr
    assert "declines: the notes don't seem to answer this" in repl.stdout
    assert "the notes never mention: MySQL" in repl.stdout


# --- a name the notes mention, but not where the question's answer would be -----------

FAMILY = {
    "family/birthdays.md": (
        "# Birthdays\n\n- Lena (partner): 14 August 1991\n- Sister Katja: 9 June 1988\n"
        "- Nephew Paul: 22 January 2017\n"
    ),
    "garden/houseplants.md": (
        "# Houseplants\n\nThe monstera was a housewarming gift from Jonas. It wants bright "
        "indirect light and water once the top soil is dry.\n"
    ),
    "home/car.md": "# Car\n\nThe car's inspection is due in April 2026.\n",
}


@pytest.fixture(scope="module")
def family(tmp_path_factory: pytest.TempPathFactory):
    return synced_index(tmp_path_factory.mktemp("family"), FAMILY)


def test_a_person_the_closest_passages_never_name_is_not_answered_about(family) -> None:
    """In a bigger folder the passage that names Jonas is not among those found for his
    birthday: the list of other people's birthdays is. Without the check it is quoted."""
    ground = family.answerer.grounding()
    question = "When is Jonas's birthday?"
    found = [h for h in family.search(question, 5) if h.source != "garden/houseplants.md"]

    verdict = ground.judge(question, found)

    assert verdict.answered is False, verdict.confidence
    assert verdict.absent == ["Jonas"] and verdict.unmentioned == []
    # named by a passage found, the same question is answered as before
    assert ground.judge("When is Katja's birthday?", found).answered is True
    assert names.absent("Who gave me the monstera, Jonas?", family.search("monstera", 5)) == []


def test_the_decline_says_the_closest_passages_never_name_it(family) -> None:
    from askmd.answer.exchange import decline
    from askmd.answer.reasons import Reason
    from askmd.answer.result import Answer

    question = "When is Jonas's birthday?"
    result = Answer(question, question, "extractive", hits=family.search(question, 5))
    decline(result, [Reason("absent", ("Jonas",))])
    chinese = Answer("Jonas 的生日是哪天？", "", "extractive", hits=result.hits)
    decline(chinese, [Reason("absent", ("Jonas",))])

    assert result.text == DECLINED + " The closest passages never mention “Jonas”."
    assert chinese.text == DECLINED_ZH + "最接近的段落都没有提到“Jonas”。"
    assert result.nearest and result.citations == []


@pytest.mark.parametrize(
    "question",
    [
        "How do I install the API?",  # an acronym: any passage may call it otherwise
        "Does the Obsidian API debounce?",  # a name of two words: written apart
        "How do I sync with iCloud?",  # not a plain capitalised word
    ],
)
def test_only_a_plain_capitalised_name_is_looked_for_in_the_passages(family, question) -> None:
    assert names.absent(question, family.search(question, 5)) == []
