"""Window vectors: the spans a chunk is cut into, their vectors pooled from the chunk's own
run of the real local model, what the index keeps of them and what they change in search."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace

import numpy as np
import pytest

from askmd.index import embedding_models as models
from askmd.index import windows
from askmd.pipeline import Index
from askmd.search.tuning import SHIPPED
from tests.conftest import synced_index, write_notes

TITLE = "Power settings > Laptop"


def test_sentences_are_merged_while_short_and_lines_stay_apart() -> None:
    text = "One. Two! Three?\nA line of its own\n\n" + "Long sentence " * 12 + "ends. Tail."
    got = [text[a:b] for a, b in windows.spans(text)]
    assert got[0] == "One. Two! Three?\nA line of its own"
    assert got[1].startswith("Long sentence") and got[1].endswith("ends.")
    assert got[2] == "Tail."
    assert len(got) == 3


def test_a_window_never_grows_past_the_limit_unless_one_sentence_does() -> None:
    sentences = [f"Sentence number {i} says a little more." for i in range(20)]
    spans = windows.spans(" ".join(sentences))
    assert len(spans) > 3
    assert all(b - a < windows.WINDOW_CHARS for a, b in spans)
    one = "word " * 80 + "end."
    assert windows.spans(one) == [(0, len(one))]


def test_spans_start_where_asked_and_skip_blank_text() -> None:
    text = f"{TITLE}\n\nDisable suspend on lid close.\n\n   \n"
    start = len(TITLE) + 2
    assert [text[a:b] for a, b in windows.spans(text, start)] == ["Disable suspend on lid close."]
    assert windows.spans("") == []
    assert windows.spans(" \n\t\n") == []


def test_each_chunk_gets_its_nearest_window() -> None:
    question = np.array([1.0, 0.0], dtype=np.float32)
    found = {
        "a": np.array([[0.0, 1.0], [0.6, 0.8]], dtype=np.float16),
        "b": np.array([[1.0, 0.0]], dtype=np.float16),
        "c": np.array([[-1.0, 0.0], [0.0, -1.0], [0.8, 0.6]], dtype=np.float16),
    }
    expected = {"a": 0.6, "b": 1.0, "c": 0.8}
    assert windows.nearest(found, question) == pytest.approx(expected, abs=1e-3)
    assert windows.nearest({}, question) == {}


def test_chinese_sentence_ends_split_without_spaces() -> None:
    text = "第一句很长" * 20 + "。第二句。" + "第三句很长" * 20 + "！"
    assert len(windows.spans(text)) == 2  # the short second one joins the first


@pytest.fixture(scope="module")
def model():
    from askmd.index.embedder import make_embedder

    return make_embedder("local", None)


def test_the_chunk_vectors_are_those_of_a_plain_run(model) -> None:
    texts = [f"{TITLE}\n\nDisable suspend. Keep the screen on.", "short", "x " * 600]
    plain = model.embed(texts)
    vectors, pooled = model.embed_windows(texts, [len(TITLE) + 2, 0, 0])
    assert np.array_equal(vectors, plain)
    assert [len(p) for p in pooled[:2]] == [1, 1]  # both sentences fit one window
    for p in pooled:
        assert p.shape[1] == model.dimension
        assert np.allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-5)


def test_windows_past_the_model_limit_are_left_out(model) -> None:
    text = " ".join(f"Sentence {i} is about topic {i}." for i in range(200))  # ~1,400 tokens
    spans = windows.spans(text)
    _, (pooled,) = model.embed_windows([text], [0])
    assert 0 < len(pooled) < len(spans)


def test_a_window_is_nearer_its_own_question_than_the_whole_chunk(model) -> None:
    text = (
        f"{TITLE}\n\nThe battery lasts longer with the screen dimmed to half. Fan noise "
        "rises under load; a cooling pad helps. To keep the machine awake, disable suspend "
        "when the lid closes. Keyboard backlight turns off after ten seconds idle."
    )
    question = model.embed_queries(["how do I stop the laptop going to sleep"])[0]
    (chunk,), (pooled,) = model.embed_windows([text], [len(TITLE) + 2])
    spans = windows.spans(text, len(TITLE) + 2)
    assert len(pooled) == len(spans) > 1
    nearest = spans[int((pooled @ question).argmax())]
    assert "disable suspend" in text[nearest[0] : nearest[1]]
    assert windows.nearest({"c": pooled}, question)["c"] > float(chunk @ question)


# A folder where the note that answers says it in one sentence among many about other
# things, and another note is nearer the question as a whole (observed with MiniLM).
NOTES = {
    "handbook.md": (
        "# Office handbook\n\nPrinter drivers come from the vendor page; reinstall them after "
        "an upgrade. Mail rules live under the account menu. Shared calendars need an "
        "invitation from their owner. Fonts go in the system font folder. To keep the "
        "machine awake, disable suspend when the lid closes. Expense forms are due on the "
        "fifth. The guest wifi password changes every Monday. Badge photos are taken at "
        "reception. Parking permits renew each January.\n"
    ),
    "lid.md": (
        "# Lid and hinge\n\nWipe the hinge of the notebook with a dry cloth and lower the "
        "lid gently; a cracked hinge needs a repair shop.\n"
    ),
    "travel.md": (
        "# Travel kit\n\nPack the laptop charger, a spare cable and noise cancelling "
        "headphones for the night flight so you can rest.\n"
    ),
    "display.md": "# Display\n\nScreen brightness, night light and the refresh rate.\n",
    "中文.md": "# 电源\n\n合上盖子时不要休眠：在设置里关闭挂起。\n",
}
QUESTION = "prevent the computer from dozing off when closed"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    index = synced_index(tmp_path_factory.mktemp("windows"), NOTES)
    yield index
    index.manifest.close()


def test_the_index_keeps_windows_of_latin_chunks_only(folder) -> None:
    key = windows.key(folder.embedder.id)
    ids = [f"{name}#0" for name in NOTES]
    found = folder.manifest.windows(key, ids, folder.embedder.dimension)
    assert set(found) == {"handbook.md#0", "lid.md#0", "travel.md#0", "display.md#0"}
    assert len(found["handbook.md#0"]) >= 3  # nine sentences in windows under 150 chars


def test_windows_lift_the_note_that_answers_in_one_sentence(folder, monkeypatch) -> None:
    assert folder.search(QUESTION, 3)[0].source == "handbook.md"
    # The premise: by its one vector the note is not the nearest, nor first in the blend.
    assert folder.search(QUESTION, 3, mode="dense")[0].source == "lid.md"
    monkeypatch.setattr(folder, "tuning", replace(SHIPPED, windows=False))
    assert folder.search(QUESTION, 3)[0].source == "lid.md"


def test_an_index_without_windows_ranks_as_with_windows_off(folder, monkeypatch) -> None:
    monkeypatch.setattr(folder, "tuning", replace(SHIPPED, windows=False))
    expected = [(h.chunk_id, h.score) for h in folder.search(QUESTION, 4)]
    monkeypatch.setattr(folder, "tuning", SHIPPED)
    key = windows.key(folder.embedder.id)
    rows = folder.manifest.db.execute("SELECT * FROM embeddings WHERE embedder = ?", (key,))
    kept = rows.fetchall()
    with folder.manifest.db:
        folder.manifest.db.execute("DELETE FROM embeddings WHERE embedder = ?", (key,))
    try:
        assert [(h.chunk_id, h.score) for h in folder.search(QUESTION, 4)] == expected
    finally:
        with folder.manifest.db:
            folder.manifest.db.executemany("INSERT INTO embeddings VALUES (?, ?, ?)", kept)


def test_a_chinese_question_is_ranked_as_before(folder, monkeypatch) -> None:
    question = "合上盖子怎么不休眠"
    with_windows = [(h.chunk_id, h.score) for h in folder.search(question, 4)]
    monkeypatch.setattr(folder, "tuning", replace(SHIPPED, windows=False))
    assert [(h.chunk_id, h.score) for h in folder.search(question, 4)] == with_windows


def _forget_windows(index_dir) -> None:
    """Make an index look built before window vectors: no entries, no mark."""
    key = windows.key(models.MINILM.id)
    db = sqlite3.connect(index_dir / "manifest.sqlite3")
    with db:
        db.execute("DELETE FROM embeddings WHERE embedder = ?", (key,))
        db.execute("DELETE FROM meta WHERE key = 'windows'")
    db.close()


def _window_entries(index_dir) -> tuple[int, str | None]:
    db = sqlite3.connect(index_dir / "manifest.sqlite3")
    try:
        key = windows.key(models.MINILM.id)
        count = "SELECT COUNT(*) FROM embeddings WHERE embedder = ? AND length(vector) > 0"
        mark = db.execute("SELECT value FROM meta WHERE key = 'windows'").fetchone()
        return db.execute(count, (key,)).fetchone()[0], mark and mark[0]
    finally:
        db.close()


def test_an_index_from_before_windows_gets_them_at_its_next_index(tmp_path, run_rag) -> None:
    kb = write_notes(tmp_path / "kb", NOTES)
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    assert run_rag(*where, "index").returncode == 0
    fresh = run_rag(*where, "search", QUESTION, "--json")
    assert _window_entries(tmp_path / "ix") == (4, windows.key(models.MINILM.id))
    _forget_windows(tmp_path / "ix")

    # A one-shot search answers at once: it does not stop to make them.
    assert run_rag(*where, "search", QUESTION, "--json").returncode == 0
    assert _window_entries(tmp_path / "ix") == (0, None)
    indexed = run_rag(*where, "index")
    assert indexed.returncode == 0, indexed.stderr
    assert "up to date" in indexed.stderr  # no note was re-read or re-embedded
    assert _window_entries(tmp_path / "ix") == (4, windows.key(models.MINILM.id))
    again = run_rag(*where, "search", QUESTION, "--json")
    assert json.loads(again.stdout)["results"] == json.loads(fresh.stdout)["results"]


@pytest.mark.slow  # builds a big folder or runs several syncs: minutes on a busy machine
def test_the_background_filler_gives_windows_to_an_older_index(tmp_path) -> None:
    index = synced_index(tmp_path, NOTES)
    expected = [(h.chunk_id, h.score) for h in index.search(QUESTION, 4)]
    index.manifest.close()
    _forget_windows(tmp_path / "ix")
    index = Index(index.settings)
    try:
        assert index.keeper.fill_some(2, lambda: False) is True  # two chunks' worth: more to do
        assert 0 < _window_entries(tmp_path / "ix")[0] < 4
        while index.keeper.fill_some(2, lambda: False):
            pass
        assert _window_entries(tmp_path / "ix") == (4, windows.key(models.MINILM.id))
        assert [(h.chunk_id, h.score) for h in index.search(QUESTION, 4)] == expected
    finally:
        index.manifest.close()


@pytest.mark.slow  # builds a big folder or runs several syncs: minutes on a busy machine
def test_a_note_changed_on_disk_does_not_keep_the_filler_busy(tmp_path) -> None:
    index = synced_index(tmp_path, NOTES)
    index.manifest.close()
    _forget_windows(tmp_path / "ix")
    # Changed after it was recorded: its chunks no longer match, so it cannot be done now.
    (tmp_path / "kb" / "lid.md").write_text("# Lid\n\nA different text now.\n")
    index = Index(index.settings)
    try:
        calls = 1
        while index.keeper.fill_some(64, lambda: False):
            calls += 1
            assert calls < 10, "the filler keeps retrying a note it cannot do"
        assert _window_entries(tmp_path / "ix") == (3, windows.key(models.MINILM.id))
        index.sync()  # the note's new chunks come with their windows
        assert _window_entries(tmp_path / "ix")[0] == 4
    finally:
        index.manifest.close()


def test_own_run_windows_keep_the_title_and_are_shorter_for_cjk_text() -> None:
    title = "# 电源\n\n"
    body = "合上盖子时不要休眠。" * 12 + "\n" + "在设置里关闭挂起，电脑就不会在合盖后睡着了。"
    texts = windows.own_run(title + body, len(title))
    assert len(texts) >= 3
    assert all(t.startswith("# 电源\n\n") for t in texts)
    assert all(len(t) - len(title) <= windows.CJK_WINDOW_CHARS for t in texts[:-1])
    english = "Sleep settings. " * 20
    assert all(
        len(t) < windows.WINDOW_CHARS + len("# Power\n\n") + 20
        for t in windows.own_run("# Power\n\n" + english, 9)
    )
    assert windows.own_run("no title here.", 0) == ["no title here."]


# Chinese notes: the answering one says it in one sentence among many; by their one
# vector another note is nearer the question, and no note shares a word (bigram) with it,
# so the blend is the multilingual model's ranking alone (observed with USE).
CHINESE = {
    "手册.md": (
        "# 办公室手册\n\n打印机驱动从厂商网站下载，系统升级后需要重新安装。邮件规则在账户菜单里"
        "设置。共享日历需要所有者发出邀请。字体放进系统字体文件夹。想让电脑合盖后不睡眠，就在"
        "电源设置里关闭挂起。报销单每月五号之前交。访客无线网络的密码每周一更换。工牌照片在前台"
        "拍摄。停车证每年一月续办。\n"
    ),
    "铰链.md": "# 盖子和铰链\n\n用干布擦拭笔记本的铰链，轻轻合上盖子；铰链裂了要送修。\n",
    "旅行.md": "# 旅行装备\n\n夜间航班带上笔记本充电器、备用数据线和降噪耳机，方便休息。\n",
    "显示.md": "# 显示\n\n屏幕亮度、夜间模式和刷新率。\n",
    "power.md": (
        "# Display\n\nScreen brightness and night light live in the display settings. The "
        "refresh rate is set per monitor, and a higher one costs battery. Colour profiles "
        "come from the vendor and are chosen per screen.\n"
    ),
}
CHINESE_QUESTION = "手提怎样避免自动休眠"
SIDE_KEY = windows.key(models.USE.id)


@pytest.fixture(scope="module")
def chinese(tmp_path_factory):
    index = synced_index(tmp_path_factory.mktemp("cjk-windows"), CHINESE)
    yield index
    index.manifest.close()


def _side_entries(index_dir) -> tuple[int, str | None]:
    db = sqlite3.connect(index_dir / "manifest.sqlite3")
    try:
        count = "SELECT COUNT(*) FROM embeddings WHERE embedder = ?"  # empty ones too
        mark = db.execute("SELECT value FROM meta WHERE key = 'side_windows'").fetchone()
        return db.execute(count, (SIDE_KEY,)).fetchone()[0], mark and mark[0]
    finally:
        db.close()


@pytest.mark.slow  # builds a big folder or runs several syncs: minutes on a busy machine
def test_every_chunk_in_the_multilingual_space_gets_its_windows(chinese) -> None:
    ids = [f"{name}#0" for name in CHINESE]
    found = chinese.manifest.windows(SIDE_KEY, ids, chinese.embedder.companion().dimension)
    # The English note too (a mixed folder's chunks are all in that space); a chunk of one
    # window has none: that window's vector would be the chunk's own.
    assert set(found) == {"手册.md#0", "power.md#0"}
    assert len(found["手册.md#0"]) >= 3  # ten sentences, 150 characters, windows under 60
    assert len(found["power.md#0"]) == 2
    assert _side_entries(chinese.settings.index_dir) == (5, SIDE_KEY)


def test_multilingual_windows_lift_the_chinese_note_that_answers_in_one_sentence(
    chinese, monkeypatch
) -> None:
    assert not chinese.search(CHINESE_QUESTION, 3, mode="keyword")  # no shared word
    assert chinese.search(CHINESE_QUESTION, 3, mode="dense")[0].source == "旅行.md"
    assert chinese.search(CHINESE_QUESTION, 3)[0].source == "手册.md"
    monkeypatch.setattr(chinese, "tuning", replace(SHIPPED, cjk_windows=False))
    assert chinese.search(CHINESE_QUESTION, 3)[0].source == "旅行.md"


def test_english_questions_do_not_use_the_multilingual_windows(chinese, monkeypatch) -> None:
    question = "screen brightness at night"
    with_them = [(h.chunk_id, h.score) for h in chinese.search(question, 4)]
    monkeypatch.setattr(chinese, "tuning", replace(SHIPPED, cjk_windows=False))
    assert [(h.chunk_id, h.score) for h in chinese.search(question, 4)] == with_them


def _forget_side_windows(index_dir) -> None:
    db = sqlite3.connect(index_dir / "manifest.sqlite3")
    with db:
        db.execute("DELETE FROM embeddings WHERE embedder = ?", (SIDE_KEY,))
        db.execute("DELETE FROM meta WHERE key = 'side_windows'")
    db.close()


@pytest.mark.slow  # builds a big folder or runs several syncs: minutes on a busy machine
def test_an_index_without_multilingual_windows_ranks_as_with_them_off(tmp_path) -> None:
    index = synced_index(tmp_path, CHINESE)
    try:
        index.tuning = replace(SHIPPED, cjk_windows=False)
        expected = [(h.chunk_id, h.score) for h in index.search(CHINESE_QUESTION, 4)]
        index.tuning = SHIPPED
        _forget_side_windows(tmp_path / "ix")
        assert [(h.chunk_id, h.score) for h in index.search(CHINESE_QUESTION, 4)] == expected
    finally:
        index.manifest.close()


def test_an_older_chinese_index_gets_its_windows_at_index_and_from_the_filler(
    tmp_path, run_rag
) -> None:
    kb = write_notes(tmp_path / "kb", CHINESE)
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    assert run_rag(*where, "index").returncode == 0
    fresh = json.loads(run_rag(*where, "search", CHINESE_QUESTION, "--json").stdout)
    _forget_side_windows(tmp_path / "ix")
    assert _side_entries(tmp_path / "ix") == (0, None)
    indexed = run_rag(*where, "index")
    assert indexed.returncode == 0, indexed.stderr
    assert "up to date" in indexed.stderr  # nothing re-read into the index or re-embedded
    assert _side_entries(tmp_path / "ix") == (5, SIDE_KEY)
    again = json.loads(run_rag(*where, "search", CHINESE_QUESTION, "--json").stdout)
    assert again["results"] == fresh["results"]
    assert again["results"][0]["source"] == "手册.md"

    _forget_side_windows(tmp_path / "ix")
    index = Index(index_settings(kb, tmp_path / "ix"))
    try:
        assert index.keeper.fill_some(2, lambda: False) is True  # two chunks' worth: more to do
        assert 0 < _side_entries(tmp_path / "ix")[0] < 5
        while index.keeper.fill_some(2, lambda: False):
            pass
        assert _side_entries(tmp_path / "ix") == (5, SIDE_KEY)
        assert index.search(CHINESE_QUESTION, 1)[0].source == "手册.md"
    finally:
        index.manifest.close()


def index_settings(kb, index_dir):
    from askmd.settings import load_settings

    overrides = {"knowledge_dir": kb, "index_dir": index_dir}
    return load_settings(environ={}, dotenv_path=None, overrides=overrides)
