"""answer_kinds.py: a question that asks for a kind of value (a price, a date, a key…)
is not answered by passages that give none, however close they come in meaning. The
end-to-end cases use a real index and the real local models."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from askmd.answer import answer_kinds, values
from askmd.answer.exchange import DECLINED, DECLINED_ZH
from tests.conftest import ROOT, clean_env, synced_index, write_notes


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("How much does Obsidian Sync cost per month?", ["price"]),
        ("What's the price of a commercial licence?", ["price"]),
        ("Obsidian 同步服务一年要多少钱？", ["price"]),
        ("When is version 2.0 coming out?", ["date"]),
        ("When was the removeCommand method added?", ["date"]),
        ("Which version added canvas files?", ["date"]),
        ("Linus 是哪一年发布第一版内核的？", ["date"]),
        ("这个接口什么时候被弃用的？", ["date"]),
        ("What's the keyboard shortcut for the graph view?", ["shortcut"]),
        ("在 tmux 里离开会话按哪个键？", ["shortcut"]),
        ("How many plugins can a vault hold?", ["number"]),
        ("What is the maximum file size for an attachment?", ["number"]),
        ("默认端口是多少？", ["number"]),
        ("How much does Sync cost, and when was it released?", ["price", "date"]),
        ("How much did the Fritz!Box router cost?", ["price"]),
        ("When did Ines join the team?", ["date"]),
        ("When did the company start?", ["date"]),
        # the product may stand between "which" and the release it asks for
        ("Up to which Lucide release can I pick built-in icons?", ["date"]),
        ("From which Obsidian version are views deferred?", ["date"]),
        ("Which TypeScript version is the minimum for Svelte?", ["date"]),
        ("What time is the weekly standup?", ["time"]),
        ("周会几点开始？", ["time"]),
        ("明天几点出发？", ["time"]),
        # who made something: a maker, named with the verb of making
        ("Who created the C programming language?", ["creator"]),
        ("Who wrote the onboarding guide?", ["creator"]),
        ("Who is the author of this plugin?", ["creator"]),
        ("Obsidian 是谁开发的？", ["creator"]),
        ("Unix 最早是谁写出来的？", ["creator"]),
        ("《红楼梦》的作者是谁？", ["creator"]),
        # other questions about people ask for no kind a pattern can see: notes name
        # people by a first name ("Lena owns the design system")
        ("Who owns the design system?", []),
        ("Who performed Mum's hip surgery?", []),
        ("谁负责周会？", []),
        # which company: answered by a name alone ("Google 的代理式开发平台")
        ("Which company makes Obsidian?", []),
        ("sips 图片处理脚本系统是哪家公司的？", []),
        ("When does onload run?", []),
        ("When should I add a settings tab?", []),
        ("Who can see my published notes?", []),
        ("How do I sync my vault to another device?", []),
        ("插件什么时候加载？", []),
        ("这个方案有几点好处？", []),  # 几点 here counts points, not hours
        ("《原则》的五步流程是哪几点？", []),
        ("我现在用什么时间管理方法？", []),  # time management, not a time
        ("What time zone is the Berlin team in?", []),
        ("What time tracking tool do we use?", []),
        ("", []),
    ],
)
def test_the_kinds_a_question_asks_for(question: str, kinds: list[str]) -> None:
    assert sorted(k.name for k in answer_kinds.asked(question)) == sorted(kinds)


def test_what_gives_a_value_of_each_kind() -> None:
    def lacking(question: str, *sentences: str) -> list[str]:
        return answer_kinds.lacking(question, sentences)

    assert lacking("How much does Publish cost?", "Publish costs $8 per month.") == []
    assert lacking("How much does Publish cost?", "Publish hosts your notes.") == ["price"]
    assert lacking("Which version added canvas?", "Canvas came in v1.1.0.") == []
    assert lacking("退出 picocom 按什么键？", "`<Ctrl a><Ctrl x>`") == []
    assert lacking("What's the shortcut for search?", "Press Ctrl+Shift+F.") == []
    assert lacking("What's the shortcut for search?", "Search finds text.") == ["shortcut"]
    assert lacking("How many backups are kept?", "Old backups stay on disk.") == ["number"]
    assert lacking("How many backups are kept?", "The last 30 backups are kept.") == []
    assert lacking("How many backups are kept?", "Thirty backups are kept.") == []
    # how often and how long are answered by a frequency or a span as well as a figure
    assert lacking("How often to feed the starter?", "Feed the starter daily.") == []
    assert lacking("How long are snapshots kept?", "Snapshots are kept for a week.") == []
    assert lacking("猫粮多久买一次？", "每月买一袋猫粮。") == []
    # ... but a size or a count is not: "always" and "while" give no maximum
    assert lacking("What's the maximum vault size?", "Always use a separate vault.") == ["number"]
    assert lacking("How many plugins ship with it?", "While you wait, add more.") == ["number"]
    assert lacking("默认端口是多少？", "每天都会检查一次。") == []  # 一 is a numeral
    assert lacking("默认端口是多少？", "每天都会检查端口。") == ["number"]
    assert lacking("How many days are backups kept?", "Backups are kept for a week.") == []
    # the number of a step or a chapter counts nothing
    assert lacking("What's the maximum vault size?", "## Step 1: Download the plugin") == ["number"]
    assert lacking("最多能建几个库？", "第一步：下载插件。") == ["number"]
    assert lacking("How many steps are there?", "There are 5 steps; step 1 is easy.") == []
    # a value made of the question's own words is no answer to it
    assert lacking("When is Obsidian 2.0 coming out?", "Obsidian 2.0 is big.") == ["date"]
    # a version is a date for a question about versions or changes, not for "what year"
    assert lacking("When was Obsidian first released?", "Obsidian 1.13.0+ only.") == ["date"]
    assert lacking("Since which version is secretStorage there?", "Since 1.11.4.") == []
    assert lacking("Up to which Lucide release are icons supported?", "Up to v0.446.0.") == []
    assert lacking("When was the fileManager property added?", "0.11.0") == []
    # a figure in a name, a version or a colour is no quantity; an address is a value
    assert lacking("How many users are there?", "Store it in S3 (LUM-E001).") == ["number"]
    assert lacking("How many users are there?", "Colour #1e1e1e, version 1.13.0.") == ["number"]
    assert lacking("路由器的管理地址是多少？", "在浏览器打开 192.168.1.1 登录。") == []
    # words that only look like values
    assert lacking("How much does Sync cost?", "Feel free to open an issue.") == ["price"]
    assert lacking("How much does Sync cost?", "It is 20 GB per user.") == ["price"]
    assert lacking("When was Sync released?", "You may sync any vault.") == ["date"]
    assert lacking("宽带是哪一年开通的？", "一年续费一次。") == ["date"]
    assert lacking("What's the shortcut for the graph?", "See [`x`](Point/x).") == ["shortcut"]
    # the question's "a" is not the key of Ctrl+a
    shortcut = "What's the keyboard shortcut to split a tmux pane side by side?"
    assert lacking(shortcut, "Split vertically with Ctrl+a then `|`.") == []
    # a time of day, or a date, answers "what time"
    assert lacking("What time is the standup?", "Standup is at 9:30 in room 4.") == []
    assert lacking("What time is the standup?", "We meet at 10am sharp.") == []
    assert lacking("What time is the standup?", "Standup moved to March 3.") == []
    assert lacking("What time is the standup?", "Standup is in the big room.") == ["time"]
    assert lacking("周会几点开始？", "周会每周一上午十点开始。") == []
    assert lacking("周会几点开始？", "周会在三楼会议室。") == ["time"]
    # any figure may be a time of day: "2–4", "9 sharp", "16.00 CET"; and a meal
    assert lacking("What time are office hours?", "Thursdays, 2–4 in room 3.") == []
    assert lacking("What time is the standup?", "It starts at 9 sharp.") == []
    assert lacking("What time is the review?", "Every other Thursday after lunch.") == []
    # a maker is given with the verb of making, or a word for the one who made it
    c = "Who created the C programming language?"
    assert lacking(c, "C was created by Dennis Ritchie at Bell Labs.") == []
    assert lacking(c, "Dennis Ritchie designed C in 1972.") == []
    assert lacking(c, "GCC compiles C and C++ source files.") == ["creator"]
    assert lacking(c, "Run `cc file.c` to build it. Plugin developers use it.") == ["creator"]
    assert lacking("Who wrote the onboarding guide?", "Priya wrote it last spring.") == []
    # a name and its verb of making, in the past: "Marcus built the first version"
    built = "Who built the first version of the payments service?"
    assert lacking(built, "Marcus built the first version in March 2022.") == []
    assert lacking(built, "The worker built the image from the cache.") == ["creator"]
    # a person as a reading list names one
    assert lacking("Who wrote The Pragmatic Programmer?", "- *Pragmatic*, by Hunt.") == []
    assert lacking("Who wrote ripgrep?", "rg is Andrew Gallant's grep.") == []
    assert lacking("Who wrote Sapiens?", "*Sapiens*, Yuval Noah Harari. Read twice.") == []
    # a maker in Chinese notes: the verb alone, without a name a pattern can see
    assert lacking("周报是谁写的？", "陈思远的个人周报，每周五下午写。") == []
    assert lacking("备份文档的初稿是谁写的？", "写完了备份文档的初稿。") == []
    # ... but two capitalised words about something else are no maker of it
    assert lacking(c, "GCC (GNU Compiler Collection) 项目的组件之一。") == ["creator"]
    # ... nor is the title asked about, written in capitals of its own
    jest = "Who wrote Infinite Jest?"
    assert lacking(jest, 'Abandoned: "Infinite Jest" at page 210.') == ["creator"]
    assert lacking(jest, "*Infinite Jest*, David Foster Wallace. Abandoned.") == []
    assert lacking("Who made Obsidian?", "Obsidian is made by Dynalist Inc.") == []
    assert lacking("Obsidian 是谁开发的？", "Obsidian 由 Dynalist 开发。") == []
    # the routine verbs of a how-to say nothing of a maker
    assert lacking(c, "The output file is created next to the source.") == ["creator"]
    assert lacking(c, "The flag is designed to catch C bugs early.") == ["creator"]
    assert lacking("Unix 最早是谁写出来的？", "使用 Unix 样式的行尾创建副本：") == ["creator"]
    assert lacking("《红楼梦》的作者是谁？", "《红楼梦》，作者曹雪芹。") == []
    assert lacking("Unix 最早是谁写出来的？", "显示当前日期和时间。") == ["creator"]


def test_figure_asks_for_digits() -> None:
    """The extractive answer prefers a sentence that gives the value in digits: "at once"
    and "every keystroke" are words a number question may be answered by, but seldom
    are."""
    number = answer_kinds.asked("How long is the save delayed?")[0]
    assert answer_kinds.gives(number, "It is written at once.")
    assert not answer_kinds.gives(number, "It is written at once.", figure=True)
    assert answer_kinds.gives(number, "It waits 2 seconds.", figure=True)


def test_the_kinds_are_named_in_the_question_language() -> None:
    assert values.described(["price"], cjk=False) == "price"
    assert values.described(["price", "date", "number"], cjk=False) == ("price, date or number")
    assert values.described(["price", "date"], cjk=True) == "价格或日期"
    assert values.described(["time"], cjk=False) == "time of day"
    assert values.described(["time"], cjk=True) == "时间"
    assert values.described(["creator"], cjk=False) == "creator"


NOTES = {
    "sync.md": (
        "# Sync\n\nSync keeps a vault the same on every device. Turn it on in Settings, "
        "choose a remote vault and sign in with your account. Conflicts are merged line "
        "by line.\n"
    ),
    "coffee.md": (
        "# Coffee\n\nThe roastery by the station sells single-origin beans. A bag of "
        "beans costs $14 and lasts about two weeks.\n"
    ),
    "meetings.md": (
        "# Meetings\n\nThe weekly sync is on Tuesdays in room B. It begins at 10:30 and "
        "ends at 11:15.\n"
    ),
    "compilers.md": (
        "# Compilers\n\nGCC compiles C and C++ source files into executables. Pass -O2 "
        "to optimise and -g to keep debugging symbols.\n"
    ),
    "onboarding.md": (
        "# Onboarding guide\n\nPriya wrote the onboarding guide last spring. New people "
        "read it in their first week.\n"
    ),
    "reading.md": (
        "# Reading list 2024\n\n## Finished\n\n"
        "- *The Left Hand of Darkness* by Ursula K. Le Guin — ★★★★★. Reread for book club.\n"
        "- Ted Chiang's *Exhalation* — short stories, the title story is the best one.\n"
        "- *Piranesi* — Susanna Clarke. Odd and lovely; took me two weekends.\n"
    ),
    "备份.md": ("# 备份\n\n每天晚上自动把笔记库备份到外接硬盘，保留最近三十份备份。\n"),
    "journal/2025-03.md": (
        "# March 2025\n\n## 2025-03-08\n\nFinally bought the new bike, a blue city bike "
        "with a rack.\n\n## 2025-03-15\n\nRain all day; fixed the leaking kitchen tap.\n"
    ),
    "工具/tmux.md": (
        "# tmux\n\n> 终端复用器。\n\n- 新建一个会话：\n\n`tmux new`\n\n"
        "- 离开当前会话，会话仍在后台运行：\n\n`<Ctrl b><d>`\n"
    ),
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    return synced_index(tmp_path_factory.mktemp("kinds"), NOTES)


def test_a_question_for_a_price_the_notes_never_give_is_declined_and_says_so(index) -> None:
    """Without the check this question is answered from the Sync note, which is about
    the Sync it asks of and says nothing of what it costs."""
    result = index.ask("How much does Sync cost per month?", [], 5)

    assert result.answered is False
    assert result.text == DECLINED + " The closest passages give no price."
    assert result.lacking == ["price"]
    assert result.to_json()["lacking"] == ["price"]
    assert result.citations == [] and result.nearest
    assert result.nearest[0].source == "sync.md"


def test_the_value_may_be_in_the_sentence_after_the_closest(index) -> None:
    """The time is in the sentence after the one that names the meeting."""
    result = index.ask("What time do I need to dial in for the weekly sync?", [], 5)
    assert result.answered is True and result.lacking == []
    assert "10:30" in result.text


def test_a_chinese_question_for_a_price_is_declined_in_chinese(index) -> None:
    result = index.ask("买一块外接硬盘要多少钱？", [], 5)

    assert result.answered is False
    assert result.text == DECLINED_ZH + "最接近的段落里没有给出价格。"
    assert result.lacking == ["price"]


def test_questions_whose_value_the_notes_give_are_answered(index) -> None:
    price = index.ask("How much does a bag of coffee beans cost?", [], 5)
    count = index.ask("备份会保留多少份？", [], 5)

    assert price.answered is True and price.lacking == []
    assert price.references[0].source == "coffee.md"
    assert count.answered is True and count.lacking == []
    assert count.references[0].source == "备份.md"


def test_who_made_something_the_notes_never_say_is_declined(index) -> None:
    """The compilers note comes close to the question and says nothing of who made C."""
    result = index.ask("Who created the C programming language?", [], 5)
    assert result.answered is False and result.lacking == ["creator"]
    assert result.text == DECLINED + " The closest passages give no creator."

    made = index.ask("Who wrote the onboarding guide?", [], 5)
    assert made.answered is True and made.lacking == []
    assert "Priya" in made.text


def test_a_value_about_something_else_is_not_preferred_in_the_answer(index) -> None:
    """Every line of a reading list names an author; only the one about the book asked
    about is the answer. The line about another book gave a creator too, and was quoted
    first."""
    result = index.ask("Who is the author of Exhalation?", [], 5)
    assert result.answered is True
    assert "Ted Chiang" in result.text and "Left Hand" not in result.text, result.text
    assert "Le Guin" in index.ask("Who wrote The Left Hand of Darkness?", [], 5).text


def test_a_date_in_the_heading_of_the_passage_answers(index) -> None:
    """A journal gives the day in its heading, not in the entry's sentences."""
    result = index.ask("What date did I buy the new bike?", [], 5)

    assert result.answered is True and result.lacking == []
    assert result.references[0].source == "journal/2025-03.md"


def test_a_key_on_the_line_a_colon_introduces_answers(index) -> None:
    """tldr-style notes give the key on the line after "…:", which is no sentence."""
    result = index.ask("在 tmux 里离开会话要按什么键？", [], 5)

    assert result.answered is True and result.lacking == []
    assert result.references[0].source == "工具/tmux.md"


def test_ask_json_the_warning_and_debug_say_what_kind_is_missing(tmp_path) -> None:
    kb = write_notes(tmp_path / "kb", NOTES)
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]

    def rag(*args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(ROOT / "rag.py"), *where, *args],
            input=stdin, capture_output=True, text=True, env={**clean_env(), **env},
            cwd=tmp_path, timeout=120,
        )  # fmt: skip

    asked = rag("ask", "--json", "How much does Sync cost per month?")
    assert asked.returncode == 0, asked.stderr
    found = json.loads(asked.stdout)
    assert found["answered"] is False and found["citations"] == []
    assert found["lacking"] == ["price"]
    assert found["answer"].endswith("The closest passages give no price.")

    # a user who lowers the line gets the answer, and is told what it lacks
    let_through = rag("ask", "How much does Sync cost per month?", ASKMD_MIN_CONFIDENCE="0.3")
    assert let_through.returncode == 0, let_through.stderr
    assert "[1]" in let_through.stdout
    assert "warning: the closest passages give no price: check that the answer says it" in (
        let_through.stderr
    )

    queries = tmp_path / "q.jsonl"
    lines = [
        {"id": "u1", "query": "How much does Sync cost per month?", "unanswerable": True},
        {"id": "a1", "query": "How much does a bag of coffee beans cost?",
         "answers": ["A bag of beans costs $14"]},
    ]  # fmt: skip
    queries.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    evaluated = rag("eval", "--answers", str(queries), "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    assert [a["lacking"] for a in json.loads(evaluated.stdout)["asked"]] == [["price"], []]
    shown = rag("eval", "--answers", str(queries), "--verbose")
    assert "u1: declined" in shown.stdout and "no close sentence gives: price" in shown.stdout

    repl = rag(stdin="/debug How much does Sync cost per month?\n/quit\n")
    assert repl.returncode == 0, repl.stderr
    assert "declines: the notes don't seem to answer this" in repl.stdout
    assert "asks for price; no close sentence gives one" in repl.stdout
