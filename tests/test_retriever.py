"""Hybrid retrieval on real indexes: the local MiniLM model and an embedded Chroma in temp dirs.

Every corpus is a handful of short notes written inline and indexed once per module
through Index, with one model shared by the whole session. Claims about what dense
search gets wrong were observed with all-MiniLM-L6-v2 int8 and are asserted with margin
(and with their premises checked, so a different model fails loudly, not mysteriously).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from askmd.answer.limits import MAX_QUESTION_CHARS
from askmd.errors import AskmdError
from askmd.index import windows
from askmd.index.manifest import Manifest
from askmd.interfaces import commands
from askmd.pipeline import Index
from askmd.search import retriever
from askmd.search.hits import Filters, Hit
from askmd.search.tuning import SHIPPED
from askmd.settings import load_settings
from askmd.terms import content_terms
from tests.conftest import write_notes

MODES = ("keyword", "dense", "hybrid")
LOCAL_ID = "local:all-MiniLM-L6-v2-int8"


@pytest.fixture(scope="session")
def embedder():
    """The real local model, loaded once for every index of the session."""
    from askmd.index.embedder import make_embedder

    model = make_embedder("local", None)
    assert model.id == LOCAL_ID
    return model


def build_index(root: Path, files: dict[str, str], embedder, **overrides) -> Index:
    """Write the notes under root/kb, index them into root/ix and return the Index."""
    knowledge = write_notes(root / "kb", files)
    settings = load_settings(
        environ={},
        dotenv_path=None,
        overrides={"knowledge_dir": knowledge, "index_dir": root / "ix", **overrides},
    )
    index = Index(settings)
    index.embedder = embedder  # the shared real model instead of loading it once more
    index.sync()
    return index


def all_chunks(index: Index) -> dict[str, dict]:
    """Every stored chunk id with its metadata."""
    index.store.ensure_open({})
    got = index.store.collection.get(include=["metadatas"])
    return dict(zip(got["ids"], got["metadatas"], strict=True))


def sources(hits: list[Hit]) -> list[str]:
    return [h.source for h in hits]


def ids(hits: list[Hit]) -> list[str]:
    return [h.chunk_id for h in hits]


def rank_of(source: str, hits: list[Hit]) -> int:
    """1-based rank of the first hit from this file; 0 when it is absent."""
    return sources(hits).index(source) + 1 if source in sources(hits) else 0


# --------------------------------------------------------------------------------------
# An English corpus: error-code notes that all sound alike, a few kubectl notes, a cat.
# --------------------------------------------------------------------------------------

ENGLISH = {
    "ops/certificates.md": (
        "# Certificates\n\nRenew the client certificate every ninety days. An expired one "
        "makes the gateway answer LUM-E013 and close the session.\n"
    ),
    "ops/errors.md": (
        "# Error codes\n\nEvery Lumen error code is written to the error log with a short "
        "explanation of the error.\n"
    ),
    "ops/disk.md": (
        "# Disk errors\n\nWhen the disk is full, Lumen logs an error code and stops writing "
        "until space is freed.\n"
    ),
    "ops/network.md": (
        "# Network errors\n\nA network error code in the log means the gateway could not "
        "reach a peer; the error clears itself.\n"
    ),
    "ops/auth.md": (
        "# Authentication errors\n\nA login error code means the password or the token was "
        "wrong; the error is shown to the user.\n"
    ),
    "ops/crash.md": (
        "# Crash codes\n\nAfter a crash Lumen writes an error code and a stack trace to the "
        "error log.\n"
    ),
    "deploy/rollback.md": (
        "# Undoing a deployment\n\nTo go back to the previous release, run "
        "`kubectl rollout undo deployment/api`.\n"
    ),
    "deploy/release.md": (
        "# Rolling out a release\n\nRoll out a new release by updating the image and letting "
        "the cluster replace the pods.\n"
    ),
    "deploy/restart.md": (
        "# Restarting pods\n\nRestart the pods of a deployment with kubectl rollout restart "
        "after a config change.\n"
    ),
    "pets/cat.md": "# Afternoons\n\nThe cat sat on the mat all afternoon.\n",
    "food/bread.md": "# Bread\n\nFeed the sourdough starter flour and water every morning.\n",
}


@pytest.fixture(scope="module")
def english(tmp_path_factory, embedder) -> Index:
    index = build_index(tmp_path_factory.mktemp("english"), ENGLISH, embedder)
    yield index
    index.manifest.close()


def test_the_english_corpus_is_one_chunk_a_note(english) -> None:
    # The rank arithmetic below relies on it: no section is split, nothing is collapsed.
    chunks = all_chunks(english)
    assert sorted(m["source"] for m in chunks.values()) == sorted(ENGLISH)


# 1. An exact term: keyword finds it where dense does not --------------------------------


def test_an_error_code_is_first_in_keyword_and_hybrid_but_not_in_dense(english) -> None:
    query, note = "LUM-E013", "ops/certificates.md"
    keyword = english.search(query, 10, mode="keyword")
    dense = english.search(query, 10, mode="dense")
    hybrid = english.search(query, 10, mode="hybrid")

    assert sources(keyword) == [note]  # the only note with the code, and its parts lum, e013
    assert keyword[0].score == 1.0
    assert hybrid[0].source == note
    # MiniLM puts the generic error-code notes first (observed rank 4, cosine 0.22 against
    # 0.54 for ops/errors.md): the code means nothing to it.
    assert rank_of(note, dense) > 2
    assert dense[0].source != note


@pytest.mark.parametrize(
    ("query", "note"),
    [
        ("kubectl rollout undo", "deploy/rollback.md"),
        ("deployment/api", "deploy/rollback.md"),
        ("what does LUM-E013 mean?", "ops/certificates.md"),
        ("lum-e013", "ops/certificates.md"),  # case does not matter
    ],
)
def test_identifiers_and_commands_rank_their_note_first(english, query, note) -> None:
    for mode in ("keyword", "hybrid"):
        assert english.search(query, 5, mode=mode)[0].source == note, mode


# 2. A paraphrase: dense finds it where keyword cannot -----------------------------------


def test_a_paraphrase_with_no_shared_word_is_found_by_dense_and_hybrid(english) -> None:
    query, note = "where did the kitten rest?", "pets/cat.md"
    assert not set(content_terms(query)) & set(content_terms(ENGLISH[note]))  # the premise

    assert english.search(query, 10, mode="keyword") == []
    assert note in sources(english.search(query, 3, mode="dense"))
    assert note in sources(english.search(query, 3, mode="hybrid"))


# 4. Fusion by weighted reciprocal rank --------------------------------------------------


@pytest.mark.parametrize(
    "query",
    ["LUM-E013", "kubectl rollout undo", "where did the kitten rest?", "error log of a crash"],
)
def test_hybrid_scores_are_the_documented_blend(english, query) -> None:
    k = len(ENGLISH)  # every chunk: the lists below are the whole candidate pools
    dense = english.search(query, k, mode="dense")
    keyword = english.search(query, k, mode="keyword")
    hybrid = english.search(query, k, mode="hybrid")

    alpha = retriever.dense_share(query, english.embedder.id)
    # The dense side: each chunk's cosine or, when better, its best window's less the
    # margin (windows.py).
    vector = english.embedder.embed_queries([query])[0]
    key = windows.key(english.embedder.id)
    found = english.manifest.windows(key, [h.chunk_id for h in dense], len(vector))
    assert found  # the premise: these English chunks have window vectors
    by_dense = {h.chunk_id: h.score for h in dense}
    for chunk_id, matrix in found.items():
        window = float((matrix.astype("float32") @ vector).max()) - SHIPPED.window_margin
        by_dense[chunk_id] = max(by_dense[chunk_id], window)
    blend: dict[str, float] = {}
    for ranking, weight in ((by_dense, alpha), ({h.chunk_id: h.score for h in keyword}, 1 - alpha)):
        values = list(ranking.values())
        low, high = (min(values), max(values)) if values else (0.0, 0.0)
        for chunk_id, score in ranking.items():
            scaled = (score - low) / (high - low) if high > low else 1.0
            blend[chunk_id] = blend.get(chunk_id, 0.0) + weight * scaled
    # Scaled by the best score possible from the retrievers that returned anything.
    top = alpha * bool(dense) + (1 - alpha) * bool(keyword)
    assert {h.chunk_id: h.score for h in hybrid} == pytest.approx(
        {c: v / top for c, v in blend.items()}
    )
    scores = [h.score for h in hybrid]
    assert scores == sorted(scores, reverse=True)
    assert all(0 <= s <= 1 for s in scores)
    assert [h.rank for h in hybrid] == list(range(1, len(hybrid) + 1))
    # 1.0 means first in every retriever that returned anything.
    best_dense = max(by_dense, key=by_dense.__getitem__)
    firsts = {best_dense, *(keyword[:1] and [keyword[0].chunk_id])}
    assert (hybrid[0].score == pytest.approx(1.0)) is (len(firsts) == 1)


def test_the_top_score_is_one_only_when_first_in_both(english) -> None:
    both = english.search("kubectl rollout undo", 3, mode="hybrid")
    assert english.search("kubectl rollout undo", 1, mode="dense")[0].source == both[0].source
    assert english.search("kubectl rollout undo", 1, mode="keyword")[0].source == both[0].source
    assert both[0].score == pytest.approx(1.0)

    keyword_only = english.search("LUM-E013", 3, mode="hybrid")
    assert keyword_only[0].source == "ops/certificates.md"
    assert rank_of("ops/certificates.md", english.search("LUM-E013", 10, mode="dense")) > 1
    assert keyword_only[0].score < 1.0


def test_keyword_and_dense_scores_are_scaled_as_documented(english) -> None:
    keyword = english.search("error code log", 10, mode="keyword")
    assert keyword[0].score == 1.0  # BM25 / the best
    assert all(0 < h.score <= 1 for h in keyword)
    assert [h.score for h in keyword] == sorted((h.score for h in keyword), reverse=True)
    dense = english.search("error code log", 10, mode="dense")
    assert all(-1 <= h.score <= 1 for h in dense)  # cosine similarity
    assert [h.score for h in dense] == sorted((h.score for h in dense), reverse=True)


# A corpus where one note is ranked well by both retrievers and another first by one only.
FUSION = {
    "codes.md": (
        "# Lumen error codes\n\nLumen error codes look like LUM-E followed by three digits; "
        "the error log explains each code.\n"
    ),
    "certificates.md": (
        "# Certificates\n\nRenew the client certificate every ninety days. An expired one "
        "makes the gateway answer LUM-E013 and close the session.\n"
    ),
    "disk.md": ENGLISH["ops/disk.md"],
    "crash.md": ENGLISH["ops/crash.md"],
    "errors.md": ENGLISH["ops/errors.md"],
    "bread.md": "# Bread\n\nFeed the sourdough starter every morning.\n",
}


def test_a_clear_keyword_win_beats_a_chunk_good_in_both(tmp_path_factory, embedder) -> None:
    index = build_index(tmp_path_factory.mktemp("fusion"), FUSION, embedder)
    try:
        keyword = sources(index.search("LUM-E013", 5, mode="keyword"))
        dense = sources(index.search("LUM-E013", 5, mode="dense"))
        hybrid = index.search("LUM-E013", 5, mode="hybrid")
    finally:
        index.manifest.close()
    # The premise, as observed: the note with the exact code is first by keyword only;
    # the note about the code format is second by keyword and first by dense.
    assert keyword[:2] == ["certificates.md", "codes.md"]
    assert dense[0] == "codes.md"
    assert dense.index("certificates.md") + 1 > 2
    # Blending scaled scores keeps how far ahead the exact code is in BM25 (a rank fusion
    # would let the note that merely resembles it win): the exact note first, the note
    # good in both second, and neither at 1.0 since no chunk is first in both.
    assert sources(hybrid)[:2] == ["certificates.md", "codes.md"]
    assert 0 < hybrid[1].score < hybrid[0].score < 1.0


# --------------------------------------------------------------------------------------
# A folder with Chinese notes (no spaces) and English ones side by side.
# --------------------------------------------------------------------------------------

MIXED = {
    "zh/备份.md": "# 数据库备份\n\n每天凌晨两点执行数据库备份，备份文件保留十四天。\n",
    "zh/端口.md": "# 服务端口\n\n接口服务监听八四二零端口，监控指标在九四二零端口。\n",
    "zh/密钥.md": "# 密钥轮换\n\n每九十天轮换一次访问密钥，旧密钥在一周后失效。\n",
    "zh/日志.md": "# 日志清理\n\n日志文件每周压缩一次，三十天后自动删除。\n",
    "zh/部署.md": "# 部署服务\n\n用docker部署服务，先构建镜像再启动容器。\n",
    "zh/恢复.md": "# 数据恢复\n\n从备份恢复数据库时先停止写入，再导入最近的备份文件。\n",
    "en/backup.md": (
        "# Database backups\n\nThe database is backed up every night at two; the backup "
        "files are kept for fourteen days.\n"
    ),
    "en/ports.md": "# Ports\n\nThe API listens on port 8420 and the metrics on port 9420.\n",
    "en/keys.md": "# Key rotation\n\nRotate the access keys every ninety days.\n",
}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory, embedder) -> Index:
    index = build_index(tmp_path_factory.mktemp("mixed"), MIXED, embedder)
    yield index
    index.manifest.close()


# 3. A Chinese query is not spoiled by the English-only model ----------------------------


USE_ID = "local:use-multilingual-v3"


@pytest.mark.parametrize(
    ("query", "embedder_id", "expected"),
    [
        ("数据库备份保留多久？", LOCAL_ID, 0.3),
        ("端口", LOCAL_ID, 0.3),
        ("用docker部署服务", LOCAL_ID, 0.3),  # half of its letters are CJK
        ("abcdefg数据库", LOCAL_ID, 0.3),  # exactly the 0.3 share
        ("abcdefgh数据", LOCAL_ID, 0.5),  # a fifth: English enough
        ("how long are backups kept?", LOCAL_ID, 0.5),
        ("", LOCAL_ID, 0.5),
        ("how long are backups kept?", USE_ID, 0.2),  # USE reads English weakly
        ("数据库备份保留多久？", USE_ID, 0.5),  # measured: BENCHMARKS.md, Chinese notes by default
        ("how long are backups kept?", "openai:text-embedding-3-small", 0.5),  # unmeasured
        ("数据库备份保留多久？", "openai:text-embedding-3-small", 0.5),
    ],
)
def test_the_dense_share_depends_on_the_query_and_the_embedder(
    query, embedder_id, expected
) -> None:
    assert retriever.dense_share(query, embedder_id) == expected


@pytest.mark.parametrize(
    ("query", "note", "same_in_english"),
    [
        ("数据库备份保留多久？", "zh/备份.md", "en/backup.md"),
        ("服务端口是多少", "zh/端口.md", "en/ports.md"),
        ("密钥多久轮换一次", "zh/密钥.md", "en/keys.md"),
        ("日志什么时候删除", "zh/日志.md", None),
        ("用docker部署服务", "zh/部署.md", None),
    ],
)
def test_a_chinese_query_is_not_spoiled_by_the_english_only_model(
    mixed, query, note, same_in_english
) -> None:
    """The Chinese note comes first; below it, an English note only when it says the same
    thing (found through the question's words in English, query_translation), never one
    MiniLM's reading of Chinese pulled up."""
    keyword = mixed.search(query, 10, mode="keyword")
    hybrid = mixed.search(query, 3, mode="hybrid")
    assert keyword[0].source == hybrid[0].source == note
    assert [s for s in sources(hybrid) if s.startswith("en/")] in ([], [same_in_english])


# 6. Chinese without spaces next to English notes -----------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("query", "note"),
    [
        ("how long are the database backups kept?", "en/backup.md"),
        ("which port does the API listen on?", "en/ports.md"),
        ("how often are the access keys rotated?", "en/keys.md"),
    ],
)
def test_an_english_query_finds_the_english_note(mixed, query, note, mode) -> None:
    assert mixed.search(query, 5, mode=mode)[0].source == note


@pytest.mark.parametrize("mode", ("keyword", "hybrid"))
@pytest.mark.parametrize(
    ("query", "note"),
    [("数据库备份", "zh/备份.md"), ("监控指标", "zh/端口.md"), ("轮换访问密钥", "zh/密钥.md")],
)
def test_a_chinese_query_finds_the_chinese_note(mixed, query, note, mode) -> None:
    assert mixed.search(query, 5, mode=mode)[0].source == note


@pytest.mark.parametrize("mode", MODES)
def test_an_identifier_inside_chinese_text_is_found_by_an_english_query(mixed, mode) -> None:
    assert "docker" in content_terms(MIXED["zh/部署.md"])
    assert mixed.search("docker", 5, mode=mode)[0].source == "zh/部署.md"


def test_keyword_search_of_chinese_text_needs_no_spaces(mixed) -> None:
    # 备份 occurs in two notes, 保留 only in one: both come back, the one with both first.
    # (The English note on backups comes too, through the question's words in English.)
    hits = mixed.search("备份保留", 10, mode="keyword")
    assert sources(hits)[0] == "zh/备份.md"
    assert [s for s in sources(hits) if s.startswith("zh/")] == ["zh/备份.md", "zh/恢复.md"]
    assert [s for s in sources(hits) if s.startswith("en/")] in ([], ["en/backup.md"])


# --------------------------------------------------------------------------------------
# 5. Filters: a source glob and a heading level, in every mode.
# --------------------------------------------------------------------------------------

LAYERED = {
    "guides/install.md": (
        "# Install guide\n\nInstall the lumen package with pip.\n\n"
        "## Upgrade\n\nUpgrade the lumen package with pip install --upgrade.\n\n"
        "### Upgrade from version one\n\nThe lumen package from version one needs its "
        "config migrated first.\n"
    ),
    "guides/deep/tuning.md": "# Tuning\n\nTune the lumen package cache for large workloads.\n",
    "lumen.md": (
        "# Lumen overview\n\nLumen is a small package that serves notes.\n\n"
        "### Lumen internals\n\nThe lumen package keeps a cache of parsed notes.\n"
    ),
    "notes/misc.md": "# Misc\n\n## Packaging\n\nThe lumen package is built with hatch.\n",
}
H3_CHAINS = {
    "Install guide > Upgrade > Upgrade from version one",
    "Lumen overview > Lumen internals",
}


@pytest.fixture(scope="module")
def layered(tmp_path_factory, embedder) -> Index:
    index = build_index(tmp_path_factory.mktemp("layered"), LAYERED, embedder)
    yield index
    index.manifest.close()


def test_the_layered_corpus_has_every_heading_level(layered) -> None:
    levels = {m["heading_chain"]: m["heading_level"] for m in all_chunks(layered).values()}
    assert levels == {
        "Install guide": 1,
        "Install guide > Upgrade": 2,
        "Install guide > Upgrade > Upgrade from version one": 3,
        "Tuning": 1,
        "Lumen overview": 1,
        "Lumen overview > Lumen internals": 3,
        "Misc > Packaging": 2,
    }


@pytest.mark.parametrize("mode", MODES)
def test_a_source_glob_keeps_only_that_folder(layered, mode) -> None:
    hits = layered.search("lumen package", 10, mode=mode, filters=Filters(source="guides/**"))
    assert sorted(sources(hits)) == [
        "guides/deep/tuning.md",
        "guides/install.md",
        "guides/install.md",
        "guides/install.md",
    ]
    assert len(hits) < 10  # fewer than k: the filter thins, nothing pads


@pytest.mark.parametrize("mode", MODES)
def test_star_md_matches_notes_at_any_depth(layered, mode) -> None:
    unfiltered = layered.search("lumen package", 10, mode=mode)
    star = layered.search("lumen package", 10, mode=mode, filters=Filters(source="*.md"))
    assert ids(star) == ids(unfiltered)
    assert len(star) == len(all_chunks(layered))


def test_an_anchored_star_md_keeps_only_top_level_notes(layered) -> None:
    hits = layered.search("lumen package", 10, mode="keyword", filters=Filters(source="/*.md"))
    assert set(sources(hits)) == {"lumen.md"}


@pytest.mark.parametrize("mode", MODES)
def test_heading_level_two_drops_chunks_under_an_h3(layered, mode) -> None:
    chunks = all_chunks(layered)
    hits = layered.search("lumen package", 10, mode=mode, filters=Filters(heading_level=2))
    assert {h.heading_chain for h in hits} == {
        "Install guide",
        "Install guide > Upgrade",
        "Tuning",
        "Lumen overview",
        "Misc > Packaging",
    }
    assert all(chunks[h.chunk_id]["heading_level"] <= 2 for h in hits)
    assert not H3_CHAINS & {h.heading_chain for h in hits}


@pytest.mark.parametrize("mode", MODES)
def test_heading_level_one_keeps_only_h1_sections(layered, mode) -> None:
    hits = layered.search("lumen package", 10, mode=mode, filters=Filters(heading_level=1))
    assert sorted(h.heading_chain for h in hits) == ["Install guide", "Lumen overview", "Tuning"]


@pytest.mark.parametrize("mode", MODES)
def test_source_and_heading_level_together(layered, mode) -> None:
    both = Filters(source="guides/**", heading_level=2)
    hits = layered.search("lumen package", 10, mode=mode, filters=both)
    assert sorted((h.source, h.heading_chain) for h in hits) == [
        ("guides/deep/tuning.md", "Tuning"),
        ("guides/install.md", "Install guide"),
        ("guides/install.md", "Install guide > Upgrade"),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_a_filter_that_matches_nothing_returns_nothing(layered, mode) -> None:
    assert layered.search("lumen package", 5, mode=mode, filters=Filters(source="nowhere/**")) == []


@pytest.mark.parametrize("mode", MODES)
def test_filtered_results_are_ranked_afresh(layered, mode) -> None:
    hits = layered.search("lumen package", 10, mode=mode, filters=Filters(source="guides/**"))
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    if mode == "keyword":
        assert hits[0].score == 1.0  # scaled by the best allowed chunk, not the best overall


def test_search_cli_with_source_and_heading_level(layered, run_rag, tmp_path) -> None:
    result = run_rag(
        "--knowledge",
        str(layered.settings.knowledge_dir),
        "--index-dir",
        str(tmp_path / "ix"),
        "search",
        "lumen package",
        "-k",
        "10",
        "--source",
        "guides/**",
        "--heading-level",
        "2",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    results = json.loads(result.stdout)["results"]
    assert sorted((r["source"], r["heading_chain"]) for r in results) == [
        ("guides/deep/tuning.md", "Tuning"),
        ("guides/install.md", "Install guide"),
        ("guides/install.md", "Install guide > Upgrade"),
    ]


@pytest.mark.parametrize("level", [-1, 5])
def test_a_heading_level_outside_one_to_four_is_refused(level) -> None:
    with pytest.raises(AskmdError, match="give 1 to 4"):
        commands._filters(argparse.Namespace(source=None, heading_level=level))


def test_heading_level_zero_is_refused_too() -> None:
    with pytest.raises(AskmdError, match="give 1 to 4"):
        commands._filters(argparse.Namespace(source=None, heading_level=0))


# --------------------------------------------------------------------------------------
# 7. Overlapping pieces of one long section are collapsed to the best of them.
# --------------------------------------------------------------------------------------

LONG = {
    "cache.md": (
        "# Cache\n\n## Warming\n\n"
        + " ".join(f"Sentence {i} explains how the lumen cache warms shard {i}." for i in range(30))
        + "\n\n## Eviction\n\n"
        + "\n".join(
            f"Line {i}: the lumen cache evicts shard {i} when memory is low." for i in range(30)
        )
        + "\n"
    ),
    "other.md": "# Other\n\nNothing about caches here, only bread.\n",
}


@pytest.fixture(scope="module")
def pieces(tmp_path_factory, embedder) -> Index:
    root = tmp_path_factory.mktemp("pieces")
    index = build_index(root, LONG, embedder, chunk_size=200, chunk_overlap=100)
    yield index
    index.manifest.close()


def overlapping(a: Hit, b: Hit) -> bool:
    return (
        (a.source, a.heading_chain) == (b.source, b.heading_chain)
        and a.line_start <= b.line_end
        and b.line_start <= a.line_end
    )


def test_the_long_sections_are_split_into_overlapping_pieces(pieces) -> None:
    chunks = list(all_chunks(pieces).values())
    warming = [m for m in chunks if m["heading_chain"] == "Cache > Warming"]
    eviction = [m for m in chunks if m["heading_chain"] == "Cache > Eviction"]
    assert len(warming) > 5 and len(eviction) > 5
    spans = sorted((m["line_start"], m["line_end"]) for m in eviction)
    assert any(a[1] >= b[0] for a, b in zip(spans, spans[1:], strict=False))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "query", ["lumen cache warms shard", "cache evicts shard when memory is low", "shard 17"]
)
def test_no_two_hits_are_overlapping_pieces_of_one_section(pieces, query, mode) -> None:
    hits = pieces.search(query, 50, mode=mode)
    assert hits
    for i, a in enumerate(hits):
        for b in hits[i + 1 :]:
            assert not overlapping(a, b), (a.chunk_id, b.chunk_id)
    assert len(set(ids(hits))) == len(hits)
    # The Warming paragraph is one line: all of its pieces overlap, one stands for them.
    assert [h.heading_chain for h in hits].count("Cache > Warming") <= 1
    assert len(hits) < len(all_chunks(pieces))


def test_the_best_ranked_piece_stands_for_its_section(pieces) -> None:
    query = "lumen cache warms shard"
    raw = pieces.manifest.keyword(content_terms(query), 100)
    chunks = all_chunks(pieces)
    best_warming = next(c for c, _ in raw if chunks[c]["heading_chain"] == "Cache > Warming")
    hits = pieces.search(query, 50, mode="keyword")
    assert [h.chunk_id for h in hits if h.heading_chain == "Cache > Warming"] == [best_warming]


# --------------------------------------------------------------------------------------
# 8. The keyword index stays in step with the folder.
# --------------------------------------------------------------------------------------


def indexed(index: Index) -> tuple[set[str], set[str]]:
    """(chunk ids with keyword postings, chunk ids in Chroma)."""
    rows = index.manifest.db.execute("SELECT chunk FROM documents").fetchall()
    return {r[0] for r in rows}, set(all_chunks(index))


def keyword_sources(index: Index, query: str) -> list[str]:
    return sources(index.search(query, 20, mode="keyword"))


def test_the_keyword_index_follows_edits_deletes_and_rebuilds(tmp_path, embedder) -> None:
    files = {
        "alpha.md": "# Alpha\n\nThe zebracode setting lives in alpha.\n",
        "beta.md": "# Beta\n\nThe yakcode setting lives in beta.\n",
        "gamma.md": "# Gamma\n\nNothing special lives in gamma.\n",
    }
    index = build_index(tmp_path, files, embedder)
    kb = index.settings.knowledge_dir
    try:
        assert keyword_sources(index, "zebracode") == ["alpha.md"]
        assert keyword_sources(index, "yakcode") == ["beta.md"]
        postings, stored = indexed(index)
        assert postings == stored and len(stored) == 3

        # An edit: one term removed, another added.
        (kb / "alpha.md").write_text("# Alpha\n\nThe quokkacode setting lives here now.\n")
        index.sync()
        assert keyword_sources(index, "zebracode") == []
        assert keyword_sources(index, "quokkacode") == ["alpha.md"]
        assert "zebracode" not in (index.search("quokkacode", 1, mode="keyword")[0].text)

        # A delete: its chunks leave both indexes, in every mode.
        (kb / "beta.md").unlink()
        index.sync()
        assert keyword_sources(index, "yakcode") == []
        assert index.manifest.keyword(["yakcode"], 10) == []
        for mode in MODES:
            assert "beta.md" not in sources(index.search("yakcode setting beta", 10, mode=mode))
        postings, stored = indexed(index)
        assert postings == stored
        assert {c.split("#")[0] for c in stored} == {"alpha.md", "gamma.md"}

        # A new file with the deleted one's term.
        (kb / "delta.md").write_text("# Delta\n\nThe yakcode setting moved to delta.\n")
        index.sync()
        assert keyword_sources(index, "yakcode") == ["delta.md"]
    finally:
        index.manifest.close()

    rebuilt = Index(index.settings)
    rebuilt.embedder = embedder
    try:
        report = rebuilt.sync(rebuild=True)
        assert report.rebuilt
        assert keyword_sources(rebuilt, "zebracode") == []
        assert keyword_sources(rebuilt, "quokkacode") == ["alpha.md"]
        assert keyword_sources(rebuilt, "yakcode") == ["delta.md"]
        assert keyword_sources(rebuilt, "gamma") == ["gamma.md"]
        for mode in MODES:
            assert "beta.md" not in sources(rebuilt.search("yakcode setting beta", 10, mode=mode))
        postings, stored = indexed(rebuilt)
        assert postings == stored
        assert {c.split("#")[0] for c in stored} == {"alpha.md", "gamma.md", "delta.md"}
    finally:
        rebuilt.manifest.close()


def test_manifest_keyword_edge_cases(english, tmp_path) -> None:
    m = english.manifest
    assert m.keyword([], 10) == []
    assert m.keyword(["nosuchtermanywhere", "zzzq"], 10) == []
    assert m.keyword(["lum-e013"], 0) == []
    assert [c for c, _ in m.keyword(["lum-e013"], 10)] == ["ops/certificates.md#0"]
    empty = Manifest(tmp_path / "empty" / "manifest.sqlite3")
    try:
        assert empty.keyword(["lum-e013", "error"], 10) == []
        assert empty.keyword([], 10) == []
    finally:
        empty.close()


# --------------------------------------------------------------------------------------
# 9. Edge input.
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query", ["", " ", "\n\t  \n"])
def test_an_empty_query_finds_nothing(english, query, mode) -> None:
    assert english.search(query, 5, mode=mode) == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query", ["？？？", "?!", "...", "🙂🙂", "—— ##"])
def test_a_query_without_a_letter_or_digit_finds_nothing(english, query, mode) -> None:
    # Dense search always has a nearest chunk: scaled, it would come first at 1.0.
    assert english.search(query, 5, mode=mode) == []


@pytest.mark.parametrize("query", ["42", "数据", "LUM-E013?"])
def test_a_query_with_one_letter_or_digit_is_searched(english, query) -> None:
    assert english.search(query, 5, mode="dense")


@pytest.mark.parametrize("mode", MODES)
def test_k_zero_finds_nothing(english, mode) -> None:
    assert english.search("LUM-E013", 0, mode=mode) == []


def test_a_query_of_stop_words_leaves_it_to_dense(english) -> None:
    query = "what is it and where are they?"
    assert content_terms(query) == []
    assert english.search(query, 5, mode="keyword") == []
    dense = english.search(query, 5, mode="dense")
    hybrid = english.search(query, 5, mode="hybrid")
    assert len(dense) == 5
    assert ids(hybrid) == ids(dense)


@pytest.mark.parametrize("mode", MODES)
def test_a_query_of_the_longest_allowed_length_works(english, mode) -> None:
    # Filler the notes do not contain, then the code at the very end, far past the
    # model's 256 tokens: keyword search still sees it.
    longest = MAX_QUESTION_CHARS
    query = ("lorem ipsum dolor sit amet " * 400)[: longest - len(" LUM-E013")] + " LUM-E013"
    assert len(query) == longest
    hits = english.search(query, 5, mode=mode)
    assert len(hits) <= 5
    if mode != "dense":
        assert hits[0].source == "ops/certificates.md"


@pytest.mark.parametrize("mode", MODES)
def test_a_longer_query_is_one_clear_refusal(english, mode) -> None:
    with pytest.raises(AskmdError, match=r"^the query is 10,000 characters long; the most is"):
        english.search("lorem ipsum " * 833 + "abcd", 5, mode=mode)


def test_a_query_with_bytes_that_are_not_utf8_is_one_clear_refusal(english) -> None:
    """The command line hands undecodable bytes on as lone surrogates; the embedder's
    tokenizer crashed on them. Every interface's question passes this gate."""
    with pytest.raises(AskmdError, match=r"^the query holds bytes that are not UTF-8 text"):
        english.search("what is \udcff\udcfe?", 5)
    with pytest.raises(AskmdError, match=r"^the question holds bytes that are not UTF-8"):
        english.ask("caf\udce9 hours", [], 5)


def test_a_chinese_query_of_the_longest_allowed_length_works(mixed) -> None:
    query = ("每天凌晨两点执行数据库备份" * 800)[:MAX_QUESTION_CHARS]
    for mode in MODES:
        hits = mixed.search(query, 5, mode=mode)
        assert len(hits) <= 5
    assert mixed.search(query, 5, mode="hybrid")[0].source == "zh/备份.md"


@pytest.mark.parametrize("mode", ("dense", "hybrid"))
def test_k_larger_than_the_corpus_returns_every_chunk_once(english, mode) -> None:
    hits = english.search("deployment error", 1000, mode=mode)
    assert len(hits) == len(ids(hits)) == len(set(ids(hits)))
    assert set(ids(hits)) == set(all_chunks(english))
    assert [h.rank for h in hits] == list(range(1, len(ENGLISH) + 1))


def test_k_larger_than_the_matches_returns_each_match_once_in_keyword_mode(english) -> None:
    hits = english.search("error", 1000, mode="keyword")
    expected = {s for s, text in ENGLISH.items() if "error" in content_terms(text)}
    assert sorted(sources(hits)) == sorted(expected)


# Cross-language questions with the multilingual model -------------------------------

CROSS = {
    "en/backup.md": "# Backups\n\nDaily database backups are kept for fourteen days.\n",
    "en/bread.md": "# Bread\n\nFeed the sourdough starter every morning.\n",
    "zh/端口.md": "# 端口\n\n接口服务监听八四二零端口。\n",
    "zh/猫.md": "# 猫\n\n猫整个下午都睡在窗台上。\n",
}


@pytest.fixture(scope="module")
def cross(tmp_path_factory):
    from askmd.index.embedder import make_embedder

    index = build_index(
        tmp_path_factory.mktemp("cross"),
        CROSS,
        make_embedder("local", "use-multilingual"),
        embedding_model="use-multilingual",
    )
    yield index
    index.manifest.close()


@pytest.mark.parametrize(
    ("query", "note"),
    [
        ("数据库备份保存多久？", "en/backup.md"),  # Chinese question, English note
        ("怎么喂面包酵母？", "en/bread.md"),
        ("Which port does the service listen on?", "zh/端口.md"),  # and the reverse
        ("Where does the cat sleep?", "zh/猫.md"),
    ],
)
def test_a_question_finds_a_note_in_the_other_language(cross, query, note) -> None:
    assert cross.embedder.id == "local:use-multilingual-v3"
    assert cross.search(query, 1, mode="hybrid")[0].source == note


# --------------------------------------------------------------------------------------
# A query term that occurs in few chunks is strong evidence, whatever dense search thinks.
# --------------------------------------------------------------------------------------

TOPICS = (
    "garden irrigation", "bicycle maintenance", "tax deadlines", "coffee brewing",
    "office printers", "train timetables", "password policy", "meeting rooms",
    "laptop batteries", "holiday requests", "kitchen rota", "parking permits",
    "team offsite", "backup tapes", "expense reports", "fire drills", "visitor badges",
    "shipping labels", "invoice numbering", "desk booking",
)  # fmt: skip


def _rule_note(topic: str, n: int) -> str:
    """A plausible note about a workplace rule, different enough from its neighbours."""
    lines = [f"# {topic.title()}\n"]
    for i in range(n):
        lines.append(
            f"Rule {i + 1} for {topic}: ask the {topic} owner before changing anything, write "
            f"down what you changed in the {topic} log, and check the rule again next month.\n"
        )
    return "\n".join(lines)


@pytest.fixture(scope="module")
def rules(tmp_path_factory, embedder) -> Index:
    """40 notes about rules; one long one ends with a sentence holding a made-up word."""
    files = {
        f"rules/{t.replace(' ', '-')}-{j}.md": _rule_note(t, 3) for j in (1, 2) for t in TOPICS
    }
    files["rules/handbook.md"] = (
        _rule_note("general conduct", 40)
        + "\nThe quokka0marmalade rule applies on Tuesdays.\n"
        + "\nThe gateway answers ERR-7731 when a request has no session.\n"
    )
    return build_index(tmp_path_factory.mktemp("rules"), files, embedder)


@pytest.mark.parametrize(
    "query",
    ["quokka0marmalade rule", "quokka0marmalade", "when does the quokka0marmalade rule apply",
     "ERR-7731", "what does ERR-7731 mean"],
)  # fmt: skip
def test_a_rare_word_finds_its_note_first_in_a_folder_of_look_alikes(rules, query) -> None:
    keyword = rules.search(query, 5, mode="keyword")
    assert keyword[0].source == "rules/handbook.md"  # the premise: BM25 knows
    hits = rules.search(query, 5)
    assert hits[0].source == "rules/handbook.md", sources(hits)


@pytest.mark.slow  # builds a big folder or runs several syncs: minutes on a busy machine
def test_a_unique_word_beats_hundreds_of_identical_notes(tmp_path, embedder) -> None:
    """Copies of one note all sit a little closer to a made-up word than the long note
    holding it, so they fill the dense pool; min-max scaling made them tie with it."""
    same = (
        "Please remember that the weekly status report goes to the whole team every Friday "
        "afternoon, and late reports are summarised on Monday.\n"
    )
    files = {f"copies/{i:04}.md": same for i in range(400)}
    files["copies/odd.md"] = (
        _rule_note("general conduct", 12) + "\nThe quokka0marmalade rule applies on Tuesdays.\n"
    )
    index = build_index(tmp_path, files, embedder)
    try:
        dense = sources(index.search("quokka0marmalade", 50, mode="dense"))
        hits = index.search("quokka0marmalade", 50)
    finally:
        index.manifest.close()
    assert "copies/odd.md" not in dense  # the premise: dense search alone misses it
    # A tie on the blend (the best dense look-alike gets 1.0 by min-max) goes to the
    # chunk with the keyword evidence: first, and never below a chunk with none.
    assert hits[0].source == "copies/odd.md", sources(hits)[:3]
    assert hits[0].score >= hits[1].score
