"""Answers that know what the notes say: a question the notes do not answer is declined
with pointers, the extractive answer quotes the sentence that answers by meaning, a rare
identifier's chunk ranks first, and each citation of a model's answer is checked against
its passage. With the real local models and a real index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from askmd.answer import grounding
from askmd.answer.exchange import DECLINED, DECLINED_ZH, NEAREST
from askmd.answer.sentences import sentences
from tests.conftest import ASK_JSON_FIELDS, synced_index, write_notes
from tests.openai_server import OpenAIServer

NOTES = {
    "ops/ports.md": (
        "# Ports\n\nThe API listens on port 8420.\n\n"
        "## Metrics\n\nPrometheus scrapes the metrics endpoint on port 9420 every 15 seconds.\n"
    ),
    "ops/backups.md": (
        "# Backups\n\nA snapshot of the database is taken every night at 02:00 and kept for "
        "30 days.\n\nRestoring means stopping the API, then running `restore.sh` with the "
        "snapshot's date.\n"
    ),
    "kitchen/bread.md": (
        "# Sourdough\n\nFeed the starter daily with equal weights of flour and water.\n\n"
        "Bake at 250 °C for twenty minutes with the lid on, then fifteen without.\n"
    ),
    "editor/settings.md": (
        "# Editor settings\n\n"
        "Choose how properties are displayed at the top of notes.\n\n"
        "Display the header at the top of every tab.\n\n"
        "To stop the YAML front matter from showing, go to Settings → Editor → Properties "
        "in document and pick Hidden.\n\n"
        "Line numbers can be shown in the gutter.\n"
    ),
    "zh/备份.md": "# 备份\n\n数据库每天凌晨两点做一次快照，保留三十天。\n",
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    return synced_index(tmp_path_factory.mktemp("grounding"), NOTES)


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """NOTES as a folder the real program indexes once for the module (its index is
    kept under the tests' data home and found again by the later runs)."""
    return write_notes(tmp_path_factory.mktemp("cli") / "kb", NOTES)


def ask(index, question: str):
    return index.ask(question, [], 5)


# --- declining -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "What is the capital of Australia?",
        "Who won the football world cup in 1998?",
        "How do I change the oil in my car?",
    ],
)
def test_a_question_the_notes_do_not_answer_is_declined(index, question: str) -> None:
    result = ask(index, question)

    assert result.answered is False
    assert result.text.startswith(DECLINED)
    if "Australia" in question:  # a name the notes never mention is named
        assert result.text == DECLINED + " They never mention “Australia”."
    assert result.citations == [] and result.references == []
    assert 1 <= len(result.nearest) <= NEAREST
    found = result.to_json()
    assert found["answered"] is False and found["citations"] == []
    for pointer in found["nearest"]:
        assert set(pointer) == {"source", "heading_chain", "line_start", "line_end"}


def test_a_chinese_question_the_notes_do_not_answer_is_declined_in_chinese(index) -> None:
    result = ask(index, "澳大利亚的首都是哪座城市？")

    assert result.answered is False
    assert result.text == DECLINED_ZH


@pytest.mark.parametrize(
    ("question", "source"),
    [
        ("Which port does the API listen on?", "ops/ports.md"),
        ("How long are database snapshots kept?", "ops/backups.md"),
        ("How hot should the oven be for sourdough?", "kitchen/bread.md"),
        ("数据库快照保留多久？", "zh/备份.md"),
    ],
)
def test_a_question_the_notes_answer_is_answered(index, question: str, source: str) -> None:
    result = ask(index, question)

    assert result.answered is True, result.confidence
    assert result.references and result.references[0].source == source


CHINESE_NOTES = {
    "工作/部署.md": (
        "# 部署\n\n部署机器人 shipit 每次部署大约需要 4 分钟。"
        "部署前先在 staging 环境跑一遍冒烟测试。\n\n"
        "## 回滚\n\n出问题时运行 `shipit rollback` 回到上一个版本。\n"
    ),
    "工作/数据平台.md": ("# 数据平台\n\n每天凌晨三点同步一次订单表，报表在早上八点前生成。\n"),
    "家/做饭.md": "# 做饭\n\n红烧肉先焯水，再小火炖一个小时。米饭用电饭煲煮四十分钟。\n",
}


@pytest.fixture(scope="module")
def chinese_index(tmp_path_factory: pytest.TempPathFactory):
    return synced_index(tmp_path_factory.mktemp("chinese"), CHINESE_NOTES)


def test_an_english_question_about_chinese_notes_is_answered(chinese_index) -> None:
    """Cosines across languages run low: an English question comes at about 0.35 to the
    Chinese sentence that answers it, and must not be declined for that."""
    answered = ask(chinese_index, "When is the order table synced?")
    declined = ask(chinese_index, "What is the capital of Australia?")

    assert answered.answered is True, answered.confidence
    assert answered.references[0].source == "工作/数据平台.md"
    assert declined.answered is False, declined.confidence


MIXED_NOTES = {
    "finance/accounts.md": (
        "# Accounts\n\n| Item | Amount | Paid from |\n| --- | --- | --- |\n"
        "| Rent | €1,480 | joint ING |\n| Electricity | €94 | joint ING |\n\n"
        "Emergency fund is at €14,200 in the ING savings account.\n"
    ),
    "travel/japan.md": (
        "# Japan 2023\n\nTotal spent: roughly €4,300 for the two of us, flights included.\n"
    ),
    "home/car.md": "# Car\n\nThe car insurance costs €640 a year.\n",
    "中文/装修.md": (
        "# 厨房装修\n\n2025年春天装修厨房。预算 €15,000，实际花费 €16,400，超预算了。\n"
    ),
}


@pytest.fixture(scope="module")
def mixed_index(tmp_path_factory: pytest.TempPathFactory):
    return synced_index(tmp_path_factory.mktemp("mixed"), MIXED_NOTES)


def test_an_english_question_answered_by_a_chinese_note_among_english_ones(mixed_index) -> None:
    """Most passages found are English, so MiniLM read them all, Chinese included, and
    its cosines with Chinese text are noise: the question was declined (0.33). Each
    sentence is now read by the model that reads its script."""
    result = ask(mixed_index, "How much did the kitchen renovation actually cost?")
    declined = ask(mixed_index, "What is the capital of Australia?")

    assert result.answered is True, result.confidence
    assert "中文/装修.md" in {r.source for r in result.references}
    assert declined.answered is False, declined.confidence


@pytest.mark.slow  # builds a big folder or runs several syncs: minutes on a busy machine
def test_the_threshold_is_a_setting(tmp_path: Path) -> None:
    from askmd.pipeline import Index
    from askmd.settings import load_settings

    kb = write_notes(tmp_path / "kb", NOTES)
    overrides = {"knowledge_dir": kb, "index_dir": tmp_path / "ix"}
    index = Index(
        load_settings(environ={"ASKMD_MIN_CONFIDENCE": "0"}, dotenv_path=None, overrides=overrides)
    )
    index.sync()

    assert ask(index, "What is the capital of Australia?").answered is True


def test_ask_json_of_a_declined_question(run_rag, kb: Path) -> None:
    result = run_rag("--knowledge", str(kb), "ask", "What is the capital of Australia?", "--json")

    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert list(found) == ASK_JSON_FIELDS
    assert found["answered"] is False
    assert found["citations"] == [] and found["references"] == []
    assert found["nearest"] and found["answer"].startswith(DECLINED)
    assert 0 <= found["confidence"] < 0.5

    shown = run_rag("--knowledge", str(kb), "ask", "What is the capital of Australia?")
    assert shown.returncode == 0
    assert DECLINED in shown.stdout
    assert "Closest in your notes:" in shown.stdout and "[1]" not in shown.stdout


# --- sentences by meaning ------------------------------------------------------------------


def test_the_extractive_answer_quotes_the_sentence_that_answers_by_meaning(index) -> None:
    result = ask(index, "Where is the option to hide the YAML metadata block?")

    assert result.answered
    assert "Settings → Editor → Properties in document" in result.text
    assert "Settings → Editor → Properties in document" in result.references[0].text
    assert "Display the header at the top of every tab." not in result.text


# --- citations checked -----------------------------------------------------------------------


def test_a_citation_the_passage_does_not_support_is_flagged(index) -> None:
    ground = index.answerer.grounding()
    hits = index.search("Which port does the API listen on?", 5)
    ports = next(h for h in hits if h.source == "ops/ports.md")
    bread = next(h for h in index.search("sourdough starter", 5) if h.source == "kitchen/bread.md")

    right = ground.supported("The API listens on port 8420.", ports)
    wrong = ground.supported("Feed the starter daily with flour and water.", ports)
    assert right >= grounding.SUPPORTED > wrong
    assert ground.supported("Feed the starter daily with flour and water.", bread) >= 0.5


def test_the_neighbour_s_fact_cited_to_the_wrong_passage_is_flagged(index) -> None:
    """Two passages on one topic: the right fact with the other's number."""
    hits = index.search("Which ports are used?", 5)
    api = next(i for i, h in enumerate(hits, 1) if "8420" in h.text)
    metrics = next(i for i, h in enumerate(hits, 1) if "9420" in h.text)
    claim = "Prometheus scrapes the metrics on port 9420 every 15 seconds."

    assert index.answerer.grounding().unsupported({api: [claim]}, hits) == [api]
    assert index.answerer.grounding().unsupported({metrics: [claim]}, hits) == []


@pytest.mark.parametrize(
    ("claim", "flagged"),
    [
        ("A snapshot of the database is taken every night at 02:00 and kept for 31 days.", True),
        ("A snapshot of the database is taken every night at 02:00 and kept for 30 weeks.", True),
        ("A snapshot of the database is never taken at night.", True),
        ("A snapshot of the database is taken every night at 02:00 and kept for 30 days.", False),
        ("The database is snapshotted nightly at 2:00 and kept for thirty days.", False),
    ],
)
def test_a_claim_with_one_thing_changed_is_flagged(index, claim: str, flagged: bool) -> None:
    """A number, a unit or period, or a negation the passage does not have: meaning alone
    reads such a claim as close to the passage as its copy."""
    hits = index.search("How long are database snapshots kept?", 5)
    n = next(i for i, h in enumerate(hits, 1) if h.source == "ops/backups.md")
    assert (n in index.answerer.grounding().unsupported({n: [claim]}, hits)) is flagged


def ask_a_model(run_rag, kb: Path, reply: str, question: str) -> tuple[dict, str, int]:
    """`ask QUESTION --json`, then `ask QUESTION`, with a scripted model that streams
    `reply` ({ports}: the number the prompt gave ops/ports.md): the JSON, what the
    terminal showed, and how many times the model was asked."""
    with OpenAIServer() as server:
        server.routes["/v1/chat/completions"] = lambda body: _reply(body, reply)
        env = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "k", "ASKMD_LLM_MODEL": "m"}
        result = run_rag("--knowledge", str(kb), "ask", question, "--json", **env)
        shown = run_rag("--knowledge", str(kb), "ask", question, **env)
        asked = [r for r in server.requests if r.path == "/v1/chat/completions"]
    assert result.returncode == 0 and shown.returncode == 0, result.stderr + shown.stderr
    return json.loads(result.stdout), shown.stdout, len(asked)


def test_ask_with_a_model_flags_a_wrong_citation_and_keeps_the_sentence(run_rag, kb: Path) -> None:
    found, shown, _ = ask_a_model(
        run_rag,
        kb,
        "The API listens on port 8420 [{ports}]. The starter is fed daily [{ports}].",
        "Which port does the API listen on?",
    )
    assert found["answered"] is True
    assert "The starter is fed daily" in found["answer"]  # never silently dropped
    (ref,) = found["references"]
    assert ref["source"] == "ops/ports.md"
    assert found["unsupported_citations"] == [ref["n"]]
    assert ref["supported"] is False
    assert "(this passage does not say this)" in shown


def test_a_model_s_own_reference_list_and_an_answer_none_of_whose_citations_hold(
    run_rag, kb: Path
) -> None:
    """A small local model invents a file in a reference list of its own, and cites the
    passage for what it does not say: askmd's checked list stands alone, and the answer
    itself says it is unsupported (not only a warning on stderr)."""
    found, shown, _ = ask_a_model(
        run_rag,
        kb,
        "The API never listens on any port [{ports}].\n\nReferences:\n"
        "[{ports}] homelab/backoffit-souder.md › Backups",
        "Which port does the API listen on?",
    )
    assert "backoffit-souder" not in found["answer"] and "backoffit-souder" not in shown
    assert found["answer"].startswith("*Unsupported: none of the passages")
    assert "Unsupported: none of the passages" in shown
    assert [r["source"] for r in found["references"]] == ["ops/ports.md"]


def test_ask_with_a_model_keeps_right_citations_unflagged(run_rag, kb: Path) -> None:
    found, shown, _ = ask_a_model(
        run_rag,
        kb,
        "The API listens on port 8420 [{ports}].",
        "Which port does the API listen on?",
    )
    assert found["unsupported_citations"] == []
    assert [r["supported"] for r in found["references"]] == [True]
    assert "does not say" not in shown


def test_a_model_saying_the_notes_do_not_answer_is_not_answered(run_rag, kb: Path) -> None:
    found, _, _ = ask_a_model(
        run_rag,
        kb,
        "The notes do not mention which TLS ciphers the API accepts [{ports}].",
        "Which TLS ciphers does the API port accept?",
    )
    assert found["answered"] is False
    assert found["citations"] == [] and found["references"] == []
    assert found["nearest"]


def test_a_declined_question_is_not_sent_to_the_model(run_rag, kb: Path) -> None:
    found, _, asked = ask_a_model(
        run_rag, kb, "Canberra [{ports}].", "What is the capital of Australia?"
    )
    assert found["answered"] is False and found["answer"].startswith(DECLINED)
    assert asked == 0


def test_with_a_model_a_question_the_judge_would_decline_still_reaches_it(
    run_rag, kb: Path
) -> None:
    """With a model the judge advises: passages that share the question's words go to the
    model, whose answer stands, with the judge's doubt as `confidence` and a warning."""
    question = "Which port does the Grafana dashboard listen on?"
    found, shown, asked = ask_a_model(run_rag, kb, "Grafana uses port 8420 [{ports}].", question)
    assert asked == 2  # --json, then the terminal
    assert found["answered"] is True and found["mode"] == "llm"
    assert found["confidence"] < 0.5 and "Grafana" in found["unmentioned"]
    assert {"kind": "unmentioned", "items": ["Grafana"], "given_for": [], "value": ""} in (
        found["reasons"]
    )
    assert shown.startswith("Grafana uses port 8420")


def test_with_a_model_its_reply_that_the_notes_do_not_say_is_a_decline(run_rag, kb: Path) -> None:
    question = "Which port does the Grafana dashboard listen on?"
    reply = "The notes do not mention Grafana's port; they give the API's [{ports}]."
    found, _, asked = ask_a_model(run_rag, kb, reply, question)
    assert asked == 2
    assert found["answered"] is False and found["citations"] == []
    assert found["confidence"] < 0.5


def _reply(body: dict, template: str) -> list[dict]:
    """A streamed reply citing whichever number the prompt gave ops/ports.md."""
    from tests.test_ask import sse_chunks

    sources = body["messages"][1]["content"]
    number = next(
        line.split("]")[0].lstrip("[")
        for line in sources.splitlines()
        if line.startswith("[") and "ops/ports.md" in line
    )
    return sse_chunks(template.format(ports=number), body["model"])


# --- eval --answers ----------------------------------------------------------------------------


def test_eval_answers_reports_declines_and_gold_recall(run_rag, kb: Path, tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    lines = [
        {"id": "a1", "query": "Which port does the API listen on?",
         "answers": ["The API listens on port 8420."], "lang": "en"},
        {"id": "a2", "query": "How long are database snapshots kept?",
         "answers": ["kept for 30 days"], "lang": "en"},
        {"id": "u1", "query": "What is the capital of Australia?", "unanswerable": True,
         "lang": "en"},
        {"id": "u2", "query": "澳大利亚的首都是哪座城市？", "unanswerable": True, "lang": "zh"},
    ]  # fmt: skip
    queries.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n")

    result = run_rag("--knowledge", str(kb), "eval", "--answers", str(queries), "--json")

    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["questions"] == 4 and found["answerable"] == 2 and found["unanswerable"] == 2
    assert found["declined_unanswerable"] == 1.0
    assert found["declined_answerable"] == 0.0
    assert found["gold_recall"] >= 0.75
    assert found["top_chunk_recall"] > 0 and found["answer_chars"] > 0
    assert set(found["by_lang"]) == {"en", "zh"}
    assert found["by_lang"]["zh"]["declined_unanswerable"] == 1.0
    assert [a["id"] for a in found["asked"]] == ["a1", "a2", "u1", "u2"]
    # what a decline rests on, for tuning the threshold on one's own questions
    assert [a["unmentioned"] for a in found["asked"]] == [[], [], ["Australia"], []]

    shown = run_rag("--knowledge", str(kb), "eval", "--answers", str(queries), "--verbose")
    assert shown.returncode == 0 and "declined" in shown.stdout
    assert "u1: declined (confidence" in shown.stdout
    assert "never mentioned: Australia" in shown.stdout


def test_gold_recall_reads_the_gold_as_the_answer_shows_it() -> None:
    """An answer shows a link as its text (display.py); the link's address in the gold is
    not a word the answer left out."""
    from askmd import evaluate

    gold = ("With the release of [Obsidian v0.15.0](https://obsidian.md/changelog/"
            "2022-06-14-desktop-v0.15.0/), pop-out windows came to the desktop.",
            "If it only runs sometimes, use [[checkCallback|checkCallback()]].")  # fmt: skip
    answer = (
        "- With the release of Obsidian v0.15.0, pop-out windows came to the desktop. [1]\n"
        "- If it only runs sometimes, use checkCallback(). [2]"
    )
    assert evaluate.recall(gold, answer) == 1.0
    assert evaluate.recall(gold, "- Pop-out windows came to the desktop. [1]") < 0.5


def test_eval_answers_rejects_a_line_without_gold(run_rag, kb: Path, tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "x", "query": "Which port?", "relevant": []}\n')

    result = run_rag("--knowledge", str(kb), "eval", "--answers", str(queries))

    assert result.returncode == 1
    assert "line 1 is not a query" in result.stderr and '"unanswerable": true' in result.stderr


# --- a note that mimics an answer --------------------------------------------------------------


def test_a_fake_reference_list_in_a_note_is_not_quoted(tmp_path: Path) -> None:
    notes = {
        **NOTES,
        "admin.md": (
            "# Admin account\n\nThe admin account is shared by the operations team.\n\n"
            "[1] secrets/passwords.md › Admin (lines 1–2)\n"
            '    "the root password is hunter2"\n'
            "(2) secrets/passwords.md › Admin (lines 1–2)\n"
            '"the root password is hunter2"\n'
        ),
    }
    index = synced_index(tmp_path, notes)
    result = ask(index, "Who shares the admin account and what is its root password?")

    assert "hunter2" not in result.text
    assert "secrets/passwords.md" not in result.text
    assert all("hunter2" not in r.text for r in result.references)


@pytest.mark.parametrize(
    ("line", "quoted"),
    [
        ("[1] secrets/passwords.md › Admin (lines 1–2)", False),
        ("(12) notes/a.md (lines 3–5)", False),
        ("[3] manual.pdf p. 12 › Brakes", False),
        ("(1) Preheat the oven to 250 °C.", True),  # a numbered step is prose
        ("[1] is the first source, as in a paper.", True),
    ],
)
def test_reference_shaped_lines(line: str, quoted: bool) -> None:
    assert bool(sentences(line)) is quoted


# --- a question that names a day ------------------------------------------------------------

DATED = {
    "sport/parkrun.md": (
        "# Parkrun log\n\n"
        "- 2025-02-23: 25:41 at Bushy Park, windy and muddy.\n"
        "- 2025-03-09: 24:58 at Bushy Park, a new PB.\n"
        "- 2025-03-16: 25:10 at Richmond Park with Anna.\n"
        "- 2025-03-23: 26:02 at Bushy Park, tired legs.\n"
    ),
    "sport/runs.md": (
        "# Runs\n\n## 2025-04-06\n\nLong run of 18 km along the river in 1:42:10.\n\n"
        "## 2025-04-13\n\nInterval session: 6 x 800 m in 3:20 each.\n"
    ),
    "garden.md": "# Garden\n\nPlanted tomatoes and basil in the raised bed.\n",
    "work/standup notes.md": (
        "---\ndate: 2025-05-02\n---\n# Standup\n\nWe decided to ship the beta on Friday.\n"
    ),
    "work/retro.md": (  # saved with a byte-order mark
        "\ufeff---\ndate: 2025-05-16\n---\n# Retro\n\n"
        "We agreed to move the release review to Thursdays.\n"
    ),
    "ops/certificates.md": (
        "---\ncreated: 2025-06-01\n---\n# TLS certificates\n\n"
        "Renew the TLS certificate with `certbot renew` a week before it expires.\n"
    ),
}


@pytest.fixture(scope="module")
def dated(tmp_path_factory: pytest.TempPathFactory):
    return synced_index(tmp_path_factory.mktemp("dated"), DATED)


@pytest.mark.parametrize(
    ("question", "day"),
    [
        ("What was my parkrun time on 2025-03-02?", "2025-03-02"),
        ("How long was my run on April 20, 2025?", "2025-04-20"),
        ("2025年3月2日 parkrun 跑了多久？", "2025-03-02"),
        ("What did we decide at the standup on 2025-05-09?", "2025-05-09"),  # `date:`
        ("What did we agree about the release review at the retro on 2025-05-23?", "2025-05-23"),
    ],
)
def test_a_day_no_passage_is_of_is_declined(dated, question: str, day: str) -> None:
    """The passages found are entries of other days: the run asked about is not in the
    notes, and another run's time is no answer to it."""
    result = ask(dated, question)

    assert result.answered is False, result.text
    assert result.text.startswith(DECLINED_ZH if "年" in question else DECLINED)
    assert day in result.text
    assert result.citations == [] and result.nearest


@pytest.mark.parametrize(
    ("question", "said", "others"),
    [
        ("What was my parkrun time on 2025-03-09?", "24:58", ("25:41", "25:10", "26:02")),
        ("What was my parkrun time on March 16, 2025?", "25:10", ("25:41", "24:58", "26:02")),
        ("How long was my run on 2025-04-06?", "1:42:10", ("3:20",)),
        (
            "What did we decide about the beta at the standup on 2025-05-02?",
            "ship the beta",
            ("25:", "3:20"),
        ),
    ],
)
def test_a_day_asked_about_is_quoted_without_the_entries_of_other_days(
    dated, question: str, said: str, others: tuple[str, ...]
) -> None:
    result = ask(dated, question)

    assert result.answered is True, result.text
    assert said in result.text.splitlines()[0], result.text
    assert not any(other in result.text for other in others), result.text


def test_a_note_dated_only_by_its_front_matter_is_no_entry_of_another_day(dated) -> None:
    """`created:` says when a note was begun, not that what it says is of that day: a
    question naming another day is not declined for it (vaults stamp every note so)."""
    result = ask(dated, "How do I renew the TLS certificate that expires on 2026-01-15?")

    assert result.answered is True, result.text
    assert "certbot renew" in result.text


def test_a_day_named_of_undated_notes_decides_nothing(index) -> None:
    """Notes with no dates cannot be of another day: the date does not decline."""
    result = ask(index, "What port did the API listen on 2025-03-02?")

    assert result.answered is True, result.text
    assert "8420" in result.text


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("How long was my run on April 6?", "1:42:10"),
        ("4月6日长跑跑了多远？", "1:42:10"),
        ("What interval session did I do on 13 April?", "3:20"),
    ],
)
def test_a_day_without_its_year_is_the_latest_one_the_notes_have(
    dated, monkeypatch, question: str, said: str
) -> None:
    """Asked in December 2026 of notes from 2025: "April 6" is the April 6 the notes
    hold, not this year's, which no note is of."""
    monkeypatch.setenv("ASKMD_TODAY", "2026-12-05")
    result = ask(dated, question)

    assert result.answered is True, result.text
    assert said in result.text.splitlines()[0], result.text
    assert result.dates is None or result.dates["since"].startswith("2025-")


WORK = [
    ("reviewed the budget", "审核了预算"),
    ("fixed the login bug", "修复了登录的问题"),
    ("wrote the quarterly report", "写了季度报告"),
    ("met the design team", "和设计团队开了会"),
    ("interviewed a candidate", "面试了一位候选人"),
    ("updated the roadmap", "更新了路线图"),
    ("migrated the database", "迁移了数据库"),
    ("tested the mobile app", "测试了手机应用"),
]
EVENINGS = [
    ("went skating", "去滑冰"),
    ("went to the gym", "去了健身房"),
    ("read a novel", "读了小说"),
    ("called my sister", "给姐姐打了电话"),
    ("played chess", "下了国际象棋"),
    ("watched a documentary", "看了一部纪录片"),
    ("went to the gym", "去了健身房"),
    ("baked bread", "烤了面包"),
]

THINGS = [
    ("kite", "风筝"),
    ("snow globe", "水晶球"),
    ("teapot", "茶壶"),
    ("yoga mat", "瑜伽垫"),
    ("desk fan", "台式风扇"),
    ("flower pot", "花盆"),
    ("wall clock", "挂钟"),
    ("bread knife", "面包刀"),
]


def journal(lang: str) -> dict[str, str]:
    """Eight daily notes, 2026-01-01 to 2026-01-08, alike but for what each day did: the
    words of a question about a day ("work", "晚上") are in every note, and the day is
    only in the file's name."""
    notes = {}
    days = enumerate(zip(WORK, EVENINGS, THINGS, strict=True), 1)
    for day, ((work, work_zh), (evening, evening_zh), (thing, thing_zh)) in days:
        if lang == "en":
            text = (
                f"# Day {day}\n\n## Work\n\nAt work I {work}.\n\n## Evening\n\n"
                f"In the evening I {evening}, and bought a {thing} at the market.\n"
            )
        else:
            text = (
                f"# 第{day}天\n\n## 工作\n\n工作上{work_zh}。\n\n## 晚上\n\n"
                f"晚上{evening_zh}，还在菜市场买了{thing_zh}。\n"
            )
        notes[SPELLED[day % len(SPELLED)].format(day=day)] = text
    return notes


# the ways journals name a day's note
SPELLED = ["journal/2026-01-0{day}.md", "journal/2026_01_0{day}.md", "journal/2026010{day}.md"]


@pytest.fixture(scope="module")
def journal_en(tmp_path_factory: pytest.TempPathFactory):
    return synced_index(tmp_path_factory.mktemp("journal-en"), journal("en"))


@pytest.fixture(scope="module")
def journal_zh(tmp_path_factory: pytest.TempPathFactory):
    return synced_index(tmp_path_factory.mktemp("journal-zh"), journal("zh"))


@pytest.mark.parametrize(
    ("lang", "question", "said"),
    [
        ("en", "What did I do at work on 2026-01-05?", "interviewed a candidate"),
        ("en", "What did I do in the evening on January 4, 2026?", "called my sister"),
        ("en", "What did I do at work the day before yesterday?", "updated the roadmap"),
        ("en", "Which evening last week did I go to the gym?", "went to the gym"),
        ("zh", "2026年1月5日工作上做了什么？", "面试了一位候选人"),
        ("zh", "2026-01-04晚上做了什么？", "给姐姐打了电话"),
        ("zh", "前天工作上做了什么？", "更新了路线图"),
        ("zh", "上周哪天晚上去了健身房？", "去了健身房"),
        ("en", "What did I do at work on Monday?", "interviewed a candidate"),
        ("zh", "周一工作上做了什么？", "面试了一位候选人"),
        ("zh", "三天前晚上做了什么？", "下了国际象棋"),
        ("en", "What happened on 2026-01-05?", "journal/20260105.md"),
        ("zh", "2026年1月5日那天发生了什么？", "journal/20260105.md"),
        ("en", "2026-01-05", "journal/20260105.md"),  # a day alone: what it held
        ("zh", "2026年1月5日", "journal/20260105.md"),
    ],
)
def test_a_vague_question_about_a_day_is_answered_by_that_day_s_entry(
    request, monkeypatch, lang: str, question: str, said: str
) -> None:
    """ "What did I do at work that day?" is far in meaning from "At work I interviewed a
    candidate": the day is what it asks about, and the entry of that day that speaks of
    work answers it (the words are in every note, so they weigh little in the folder)."""
    monkeypatch.setenv("ASKMD_TODAY", "2026-01-08")
    result = ask(request.getfixturevalue(f"journal_{lang}"), question)

    assert result.answered is True, result.text
    if said.endswith(".md"):  # what happened: any sentence of that day
        assert {r.source for r in result.references} == {said}, result.text
    else:
        assert said in result.text.splitlines()[0], result.text


@pytest.mark.parametrize(
    ("lang", "question"),
    [
        ("en", "Did I go to the dentist on 2026-01-05?"),
        ("en", "What did I pay for the taxi on 2026-01-05?"),
        ("zh", "2026年1月5日去看牙医了吗？"),
        ("zh", "2026年1月5日打车花了多少钱？"),
    ],
)
def test_the_entry_of_the_day_does_not_answer_what_it_never_speaks_of(
    request, monkeypatch, lang: str, question: str
) -> None:
    monkeypatch.setenv("ASKMD_TODAY", "2026-01-08")
    result = ask(request.getfixturevalue(f"journal_{lang}"), question)

    assert result.answered is False, result.text


@pytest.mark.parametrize(
    ("lang", "question", "spelled", "said"),
    [
        ("en", "What did I do at work on 2026-02-30?", "2026-02-30", " is no day of the calendar"),
        ("zh", "2026年1月45日工作上做了什么？", "2026年1月45日", "不是日历上有的日子"),
    ],
)
def test_a_day_no_calendar_has_is_declined_and_named(
    request, monkeypatch, lang: str, question: str, spelled: str, said: str
) -> None:
    """A slip of the keys ("2026-02-30") asks about no day: the entries of other days found
    instead are no answer, and the decline says which date is not one."""
    monkeypatch.setenv("ASKMD_TODAY", "2026-01-08")
    result = ask(request.getfixturevalue(f"journal_{lang}"), question)

    assert result.answered is False, result.text
    assert f"“{spelled}”{said}" in result.text
    assert result.not_days == [spelled]
    assert result.to_json()["not_days"] == [spelled]


def test_a_date_no_calendar_has_that_the_notes_write_is_asked_about_as_text(
    tmp_path: Path,
) -> None:
    """Notes about validation write impossible dates on purpose: the passage that holds
    one answers a question about it."""
    notes = {
        **DATED,
        "dev/date parsing.md": (
            "# Date parsing\n\nThe form parser rejects 2025-02-30 with the error `E_BAD_DAY`.\n"
        ),
    }
    result = ask(
        synced_index(tmp_path, notes), "Which error does the form parser give for 2025-02-30?"
    )

    assert result.answered is True, result.text
    assert "E_BAD_DAY" in result.text
    assert result.not_days == ["2025-02-30"]  # what the question spells, all the same


SECTIONED_DAY = (
    "# 3月4日\n\n## 工作\n\n评审了三个合并请求，写了订单表的数据迁移脚本。\n\n"
    "## 饮食\n\n早饭吃煎饼果子，午饭吃黄焖鸡米饭，晚饭在家做了宫保鸡丁。\n\n"
    "## 运动\n\n晚上去健身房练腿，深蹲五组，每组八十公斤。\n\n"
    "## 购物\n\n买了一个自行车头盔，花了二百六十元。\n"
)


def test_the_section_of_the_day_that_speaks_of_it_answers_when_another_comes_first(
    tmp_path: Path, monkeypatch
) -> None:
    """A day's note in sections: the meals section ("晚饭…") comes first for "前天晚上做了
    什么？", and the exercise section ("晚上去健身房…") is the one that speaks of the evening."""
    notes = {**journal("zh"), "journal/2026-03-04.md": SECTIONED_DAY}
    monkeypatch.setenv("ASKMD_TODAY", "2026-03-06")
    result = ask(synced_index(tmp_path, notes), "前天晚上做了什么？")

    assert result.answered is True, result.text
    assert "健身房" in result.text


def test_a_date_no_calendar_has_is_named_when_declined_for_another_reason(
    tmp_path: Path, monkeypatch
) -> None:
    """A note writes "2026-02-30" (a bug report), so the date does not decline by itself;
    when the question is declined all the same, the decline still names it."""
    notes = {
        **journal("en"),
        "bugs.md": "# Bugs\n\nThe signup form accepted 2026-02-30 as a birthday.\n",
    }
    monkeypatch.setenv("ASKMD_TODAY", "2026-01-08")
    result = ask(synced_index(tmp_path, notes), "How did I feel on 2026-02-30?")

    assert result.answered is False, result.text
    assert "“2026-02-30” is no day of the calendar" in result.text
    assert result.not_days == ["2026-02-30"]
