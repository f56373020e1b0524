"""Chinese notes by default: CJK chunks get multilingual vectors beside MiniLM's, on the
real models (MiniLM int8 and USE-multilingual), the real Chroma and real subprocesses."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from askmd.index import embedding_models as models
from askmd.index import windows
from askmd.pipeline import Index
from askmd.settings import load_settings
from askmd.terms import content_terms
from tests.conftest import ROOT, clean_env, write_notes

if not models.installed(models.CJK_MODEL):
    pytest.skip(f"needs {models.CJK_MODEL.pin}", allow_module_level=True)

SIDE = models.CJK_MODEL.id
CAT = "zh/cat.md"
ZH = {
    CAT: "# 养猫\n\n猫咪每天需要喂两次干粮，还要准备清水。\n",
    "zh/weather.md": "# 天气\n\n明天会下大雨，出门记得带伞。\n",
    "zh/code.md": "# 编程\n\n用 Python 写一个函数来排序列表。\n",
}
EN = {
    "en/garden.md": "# Gardening\n\nWater the tomatoes every morning in summer.\n",
    "en/car.md": "# Car\n\nChange the engine oil every ten thousand kilometres.\n",
}


def open_index(kb: Path, ix: Path) -> Index:
    settings = load_settings(
        environ={}, dotenv_path=None, overrides={"knowledge_dir": kb, "index_dir": ix}
    )
    return Index(settings)


def cached_ids(ix: Path, with_windows: bool = False) -> dict[str, int]:
    """How many vectors the embedding cache holds, per embedder id (and how many chunks'
    window vectors, under windows.key(id), with `with_windows`)."""
    db = sqlite3.connect(ix / "manifest.sqlite3")
    try:
        found = dict(db.execute("SELECT embedder, COUNT(*) FROM embeddings GROUP BY embedder"))
    finally:
        db.close()
    return {k: v for k, v in found.items() if with_windows or not k.endswith("#windows")}


def collections(index: Index) -> dict[str, int]:
    client = index.store._connect()
    return {c.name: c.count() for c in client.list_collections()}


def first_source(index: Index, query: str, mode: str = "hybrid") -> str:
    hits = index.search(query, 3, mode=mode)
    return hits[0].source if hits else ""


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Index:
    root = tmp_path_factory.mktemp("mixed")
    kb = write_notes(root / "kb", {**ZH, **EN})
    index = open_index(kb, root / "ix")
    index.sync()
    return index


def test_a_chinese_question_finds_a_chinese_note_by_meaning_alone(mixed: Index) -> None:
    query = "我的宠物吃什么？"  # "what does my pet eat": no character of the note's
    assert not set(query) & set(ZH[CAT])
    assert mixed.search(query, 3, mode="keyword") == []
    assert first_source(mixed, query) == CAT
    assert first_source(mixed, query, mode="dense") == CAT


def test_an_english_question_finds_a_chinese_note(mixed: Index) -> None:
    assert first_source(mixed, "How often should I feed my kitten?") == CAT
    # English questions still find English notes first
    assert first_source(mixed, "When do I water the tomato plants?") == "en/garden.md"


def test_a_chinese_question_finds_an_english_note_by_meaning(mixed: Index) -> None:
    query = "汽车发动机多久换一次机油？"  # "how often to change the engine's oil"
    assert mixed.manifest.keyword(content_terms(query), 10, cjk=True) == []  # no term shared
    # Keyword search reaches it only through the question's words in English (car,
    # engine, oil: query_translation); the vectors, by meaning.
    assert first_source(mixed, query, mode="keyword") == "en/car.md"
    assert first_source(mixed, query) == "en/car.md"
    assert first_source(mixed, "怎么给番茄浇水？") == "en/garden.md"  # watering tomatoes


def test_a_folder_with_cjk_notes_gives_every_chunk_the_multilingual_vector(mixed: Index) -> None:
    ix = mixed.settings.index_dir
    side = models.collection_name(mixed.settings.collection, SIDE)
    assert cached_ids(ix) == {models.MINILM.id: 5, SIDE: 5}
    # MiniLM's window vectors: of the English chunks only (windows.py); the Chinese ones
    # have an empty entry, which says they were looked at
    key = windows.key(models.MINILM.id)
    assert cached_ids(ix, with_windows=True)[key] == len(ZH) + len(EN)
    ids = [f"{source}#0" for source in {**ZH, **EN}]
    assert set(mixed.manifest.windows(key, ids, 384)) == {f"{source}#0" for source in EN}
    assert collections(mixed) == {mixed.settings.collection: 5, side: 5}
    assert mixed.manifest.get("side_scope") == "all"


def test_a_latin_question_searches_only_the_cjk_chunks_multilingual_vectors(mixed: Index) -> None:
    """English chunks keep MiniLM's reading for English questions: the side space answers
    a Latin-script question with its CJK chunks only, as when it held nothing else."""
    store = mixed.store.side(SIDE)
    assert store.open_existing()
    vector = mixed.embedder.companion().embed_queries(["water the tomatoes"])[0]
    found = store.nearest(vector, 10, where={"cjk": True})
    assert {s.metadata["source"] for s in found} == set(ZH)


def test_a_deleted_chinese_note_leaves_the_multilingual_collection(tmp_path: Path) -> None:
    kb = write_notes(tmp_path / "kb", {**ZH, **EN})
    index = open_index(kb, tmp_path / "ix")
    index.sync()
    (kb / CAT).unlink()
    index.sync()
    side = models.collection_name(index.settings.collection, SIDE)
    assert collections(index)[side] == 4
    assert first_source(index, "我的宠物吃什么？", mode="dense") != CAT


def test_an_english_folder_never_loads_the_multilingual_model(tmp_path: Path) -> None:
    kb = write_notes(tmp_path / "kb", EN)
    index = open_index(kb, tmp_path / "ix")
    index.sync()
    assert first_source(index, "When do I water the tomato plants?") == "en/garden.md"
    assert first_source(index, "汽车保养") != ""  # a Chinese question, by MiniLM's vectors
    assert index.embedder.companion_id == SIDE
    assert index.embedder._companion is None  # never loaded
    assert cached_ids(tmp_path / "ix") == {models.MINILM.id: 2}
    assert collections(index) == {index.settings.collection: 2}


def index_without_multilingual(kb: Path, ix: Path) -> subprocess.CompletedProcess:
    """`rag.py index` in a process where the multilingual package cannot be imported:
    the index as it was before that package came, and as it is where it is missing."""
    code = (
        f"import runpy, sys; sys.modules[{models.CJK_MODEL.module!r}] = None; "
        f"sys.path.insert(0, {str(ROOT)!r}); sys.argv = ['rag.py', *sys.argv[1:]]; "
        f"runpy.run_path({str(ROOT / 'rag.py')!r}, run_name='__main__')"
    )
    return subprocess.run(
        [sys.executable, "-c", code, "--knowledge", str(kb), "--index-dir", str(ix), "index"],
        env=clean_env(),
        cwd=kb.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


@pytest.mark.slow  # builds a big folder or runs several syncs: minutes on a busy machine
def test_an_index_upgrade_embeds_nothing_again_with_the_first_model(tmp_path: Path) -> None:
    kb = write_notes(tmp_path / "kb", {**ZH, **EN})
    ix = tmp_path / "ix"
    index_without_multilingual(kb, ix)
    assert cached_ids(ix) == {models.MINILM.id: 5}

    index = open_index(kb, ix)
    report = index.sync()
    assert not report.rebuilt
    assert report.chunks_embedded == 0  # nothing embedded again by MiniLM
    assert cached_ids(ix) == {models.MINILM.id: 5, SIDE: 5}
    side = models.collection_name(index.settings.collection, SIDE)
    assert collections(index) == {index.settings.collection: 5, side: 5}
    assert first_source(index, "我的宠物吃什么？") == CAT
    again = index.sync()
    assert (again.files_added, again.files_changed, again.chunks_embedded) == (0, 0, 0)


def test_without_the_package_chinese_notes_get_the_one_line_hint(tmp_path: Path) -> None:
    kb = write_notes(tmp_path / "kb", ZH)
    done = index_without_multilingual(kb, tmp_path / "ix")
    hint = [line for line in done.stderr.splitlines() if "Chinese or Japanese" in line]
    assert len(hint) == 1 and models.CJK_MODEL.pin in hint[0]
    assert cached_ids(tmp_path / "ix") == {models.MINILM.id: 3}


def test_an_english_folder_that_gets_a_chinese_note_widens_the_multilingual_space(
    tmp_path: Path,
) -> None:
    kb = write_notes(tmp_path / "kb", EN)
    index = open_index(kb, tmp_path / "ix")
    index.sync()
    assert index.manifest.get("side_scope") != "all"
    write_notes(kb, {CAT: ZH[CAT]})
    report = index.sync()
    assert report.chunks_embedded == 1  # MiniLM embeds the new note only
    side = models.collection_name(index.settings.collection, SIDE)
    assert collections(index) == {index.settings.collection: 3, side: 3}
    assert cached_ids(tmp_path / "ix") == {models.MINILM.id: 3, SIDE: 3}
    assert first_source(index, "汽车发动机多久换一次机油？") == "en/car.md"
    again = index.sync()
    assert (again.files_added, again.files_changed, again.chunks_embedded) == (0, 0, 0)
