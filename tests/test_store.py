"""The vector store against a real Chroma: an embedded PersistentClient in tmp_path, and a
real `chroma run` server on 127.0.0.1. Vectors are small hand-made float32 unit vectors, so
no embedding model is needed; the expected distances are 1 - cosine similarity."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import chunker
from askmd.errors import AskmdError
from askmd.index import store as stored
from askmd.index.store import EF_SEARCH, Store, Stored, chunk_metadata
from tests.conftest import ROOT

META = {"embedder": "test-embedder", "fingerprint": "f1", "dim": 8}

A_TEXT = (
    '# Alpha\n\nIntro.\n\n## Beta\n\nOne.\n\n### Gamma · 日本\n\nTwo, with "quotes".\n\n'
    "## Delta\n\nThree.\n\n## Epsilon\n\nFour.\n"
)
A_SHORTER = "# Alpha\n\nShorter now.\n\n## Beta\n\nOnly two.\n"
B_TEXT = "First note.\n\n---\n\nSecond note.\n"


def basis(i: int, dim: int = 8) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[i] = 1.0
    return v


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


# Its cosine similarity with basis(i) is (7 - i) / sqrt(140): every basis vector is at a
# different distance, so the order of the nearest chunks is exact.
QUERY = unit(7, 6, 5, 4, 3, 2, 1, 0)


def expected_distance(vector: np.ndarray) -> float:
    return 1.0 - float(np.dot(QUERY.astype(np.float64), vector.astype(np.float64)))


def put(
    store: Store,
    source: str,
    chunks: list[chunker.Chunk],
    vectors: list[np.ndarray],
    tags: list[str],
    md5: str,
) -> None:
    """Replace one source with these chunks, the way the indexer builds its arguments."""
    store.replace(
        [source],
        [c.id for c in chunks],
        [c.text for c in chunks],
        [chunk_metadata(c, md5, tags, f"hash-{c.id}") for c in chunks],
        np.stack(vectors) if vectors else np.zeros((0, 8), dtype=np.float32),
    )


# The start of a script for `in_new_process`: the store of the index folder it is given.
NEXT_RUN = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "import numpy as np\n"
    "from askmd.index.store import Store\n"
    "s = Store(index_dir=Path(sys.argv[1]))\n"
)


def in_new_process(script: str, index_dir: Path, vectors: list) -> object:
    """Run `script` as the next `rag.py` run would (a new process, sys.argv[1] the index
    folder, sys.argv[2] the vectors as JSON); what it printed, read as JSON."""
    result = subprocess.run(
        [sys.executable, "-c", script, str(index_dir), json.dumps(vectors)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def rows(results: list[Stored]) -> list[tuple[str, str, dict]]:
    return [(r.id, r.text, r.metadata) for r in results]


def distances(results: list[Stored]) -> list[float]:
    return [r.distance for r in results]


def all_ids(store: Store) -> list[str]:
    return sorted(store.collection.get(include=[])["ids"])


def tiny(store: Store, sources: list[str], per_source: int = 1) -> None:
    """One or more 4-d chunks per source, in a single replace()."""
    ids = [f"{s}#{i}" for s in sources for i in range(per_source)]
    metas = [{"source": s} for s in sources for _ in range(per_source)]
    vectors = np.tile(np.eye(4, dtype=np.float32), (len(ids) // 4 + 1, 1))[: len(ids)]
    store.replace(sources, ids, ["t"] * len(ids), metas, vectors)


def exercise(store: Store) -> None:
    """The same replace / nearest / source_counts / delete checks, embedded or server."""
    assert store._connect().get_settings().anonymized_telemetry is False
    assert store.open(META) == META
    assert store.nearest(QUERY, 5) == []
    assert store.source_counts() == {}

    a = chunker.split(A_TEXT, source="a.md")
    b = chunker.split(B_TEXT, source="notes/b.md")
    assert [c.id for c in a] == ["a.md#0", "a.md#1", "a.md#2", "a.md#3", "a.md#4"]
    assert [c.id for c in b] == ["notes/b.md#0", "notes/b.md#1"]
    a_vectors = [basis(i) for i in range(5)]
    b_vectors = [basis(5), basis(6)]
    put(store, "a.md", a, a_vectors, ["x", "y z"], "md5-a")
    put(store, "notes/b.md", b, b_vectors, [], "md5-b")

    assert store.count() == 7
    assert store.source_counts() == {"a.md": 5, "notes/b.md": 2}

    found = store.nearest(QUERY, 7)
    expected_a = [
        (c.id, c.text, chunk_metadata(c, "md5-a", ["x", "y z"], f"hash-{c.id}")) for c in a
    ]
    expected_b = [(c.id, c.text, chunk_metadata(c, "md5-b", [], f"hash-{c.id}")) for c in b]
    assert rows(found) == expected_a + expected_b
    assert distances(found) == pytest.approx(
        [expected_distance(v) for v in a_vectors + b_vectors], abs=1e-5
    )
    # Chroma metadata is scalar: the chain and the tags come back as strings, lines as ints.
    assert found[2].metadata == {
        "source": "a.md",
        "chunk_index": 2,
        "heading_chain": "Alpha > Beta > Gamma · 日本",
        "heading_level": 3,
        "line_start": 9,
        "line_end": 11,
        "mode": "heading",
        "title": "Alpha",
        "tags": "x,y z",
        "md5": "md5-a",
        "text_hash": "hash-a.md#2",
    }
    assert {k: type(v) for k, v in found[2].metadata.items()} == {
        "source": str,
        "chunk_index": int,
        "heading_chain": str,
        "heading_level": int,
        "line_start": int,
        "line_end": int,
        "mode": str,
        "title": str,
        "tags": str,
        "md5": str,
        "text_hash": str,
    }
    assert found[2].text == '### Gamma · 日本\n\nTwo, with "quotes".'
    assert (found[5].metadata["heading_chain"], found[5].metadata["tags"]) == ("", "")

    # k larger than the count returns everything; k smaller returns the top k.
    assert [r.id for r in store.nearest(QUERY, 100)] == [r.id for r in found]
    assert [r.id for r in store.nearest(QUERY, 2)] == ["a.md#0", "a.md#1"]
    b_before = store.nearest(QUERY, 10, where={"source": "notes/b.md"})
    assert [r.id for r in b_before] == ["notes/b.md#0", "notes/b.md#1"]

    # Fewer chunks than before: no stale ids are left, and notes/b.md is untouched.
    shorter = chunker.split(A_SHORTER, source="a.md")
    put(store, "a.md", shorter, [basis(2), basis(3)], ["x"], "md5-a2")
    assert store.count() == 4
    assert store.source_counts() == {"a.md": 2, "notes/b.md": 2}
    assert all_ids(store) == ["a.md#0", "a.md#1", "notes/b.md#0", "notes/b.md#1"]
    found = store.nearest(QUERY, 10)
    assert rows(found) == [
        (
            "a.md#0",
            "# Alpha\n\nShorter now.",
            chunk_metadata(shorter[0], "md5-a2", ["x"], "hash-a.md#0"),
        ),
        (
            "a.md#1",
            "## Beta\n\nOnly two.",
            chunk_metadata(shorter[1], "md5-a2", ["x"], "hash-a.md#1"),
        ),
        *rows(b_before),
    ]
    assert distances(found) == pytest.approx(
        [expected_distance(v) for v in [basis(2), basis(3), *b_vectors]], abs=1e-5
    )
    b_after = store.nearest(QUERY, 10, where={"source": "notes/b.md"})
    assert rows(b_after) == expected_b
    assert distances(b_after) == pytest.approx(distances(b_before), abs=1e-6)

    # A source replaced with no chunks at all is gone.
    put(store, "notes/b.md", [], [], [], "md5-b")
    assert store.source_counts() == {"a.md": 2}
    assert store.nearest(QUERY, 10, where={"source": "notes/b.md"}) == []

    # Deleting a known and an unknown source at once: no error, nothing left.
    store.delete(["a.md", "never-indexed.md"])
    assert store.count() == 0
    assert store.source_counts() == {}
    assert store.nearest(QUERY, 3) == []


# --- embedded: a PersistentClient in tmp_path ----------------------------------------


@pytest.fixture(autouse=True)
def vectors_as_given(monkeypatch) -> None:
    """These tests check what the store gives back, to the float: the vectors are stored
    as given. The jitter that keeps copies apart is tested on its own (below)."""
    monkeypatch.setattr(stored, "JITTER", 0.0)


def test_identical_vectors_are_stored_apart_and_barely_moved(store: Store, monkeypatch) -> None:
    monkeypatch.setattr(stored, "JITTER", 1e-3)
    ids = [f"copy{i}.md#0" for i in range(3)]
    metas = [{"source": f"copy{i}.md"} for i in range(3)]
    same = np.stack([unit(1, 2, 3, 4, 5, 6, 7, 8)] * 3)
    store.replace([m["source"] for m in metas], ids, ["x"] * 3, metas, same)
    found = distances(store.nearest(QUERY, 3))
    assert len(set(found)) == 3  # no two at the same distance: no two at the same point
    assert found == pytest.approx([expected_distance(same[0])] * 3, abs=2e-3)
    store.replace([m["source"] for m in metas], ids, ["x"] * 3, metas, same)
    assert distances(store.nearest(QUERY, 3)) == pytest.approx(found, abs=1e-6)  # the same way


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(index_dir=tmp_path / "ix")
    s.open(META)
    return s


def test_embedded_replace_nearest_source_counts_delete(tmp_path: Path) -> None:
    exercise(Store(index_dir=tmp_path / "ix"))


def test_open_creates_the_collection_and_a_reopen_sees_the_same_data(tmp_path: Path) -> None:
    first = Store(index_dir=tmp_path / "ix")
    assert first.open(META) == META
    assert (tmp_path / "ix" / "chroma").is_dir()
    assert first.collection.name == "askmd"
    assert first.collection.metadata == META
    a = chunker.split(A_TEXT, source="a.md")
    put(first, "a.md", a, [basis(i) for i in range(5)], ["x"], "md5-a")
    before = first.nearest(QUERY, 3)
    assert [r.id for r in before] == ["a.md#0", "a.md#1", "a.md#2"]

    # A second Store in this process: open() returns the metadata the collection was
    # created with, not the one it is given now.
    again = Store(index_dir=tmp_path / "ix")
    assert again.open({"embedder": "other", "fingerprint": "f2"}) == META
    assert again.count() == 5
    assert again.source_counts() == {"a.md": 5}
    assert again.nearest(QUERY, 3) == before

    # A new process, as the next `rag.py` run: the data really is on disk.
    script = (
        NEXT_RUN + "meta = s.open({'embedder': 'other'})\n"
        "hits = s.nearest(np.array(json.loads(sys.argv[2]), dtype=np.float32), 3)\n"
        "print(json.dumps([meta, s.count(), s.source_counts(),"
        " [[h.id, h.text, h.metadata, h.distance] for h in hits]]))\n"
    )
    meta, count, counts, hits = in_new_process(script, tmp_path / "ix", QUERY.tolist())
    assert (meta, count, counts) == (META, 5, {"a.md": 5})
    assert [h[:3] for h in hits] == [list(r) for r in rows(before)]
    assert [h[3] for h in hits] == pytest.approx(distances(before), abs=1e-6)


def random_units(n: int, dim: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_the_dense_pool_is_the_exact_top_100(store: Store) -> None:
    """The retriever scales its pool of 100 by the pool's last score, so the pool must be
    the real top 100, the same in every process. On these 3,000 vectors Chroma's default
    depth (ef_search 100) returns 0.92 of it on average (0.88 at worst)."""
    vectors = random_units(3000, 64, seed=1)
    ids = [f"n{i // 10}.md#{i % 10}" for i in range(len(vectors))]
    metas = [{"source": f"n{i // 10}.md"} for i in range(len(vectors))]
    store.replace(sorted({m["source"] for m in metas}), ids, [""] * len(ids), metas, vectors)
    for query in random_units(10, 64, seed=2):
        exact = {ids[i] for i in np.argsort(-(vectors @ query))[:100]}
        assert {s.id for s in store.nearest(query, 100, content=False)} == exact


def chroma(index_dir: Path):
    """A client of the index's Chroma folder, as the store makes it (settings must match)."""
    import chromadb
    from chromadb.config import Settings

    path = str(index_dir / "chroma")
    return chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))


def hnsw_depth(index_dir: Path, name: str = "askmd") -> int:
    return chroma(index_dir).get_collection(name).configuration_json["hnsw"]["ef_search"]


def test_a_new_collection_and_its_side_collection_search_at_full_depth(tmp_path: Path) -> None:
    s = Store(index_dir=tmp_path / "ix")
    s.open(META)
    s.side("other-model").open({"embedder": "other-model"})
    assert hnsw_depth(tmp_path / "ix") == EF_SEARCH
    assert hnsw_depth(tmp_path / "ix", s.side("other-model").name) == EF_SEARCH


@pytest.mark.parametrize("opening", ["open", "open_existing"])
def test_a_collection_made_by_older_code_is_deepened_when_opened(
    tmp_path: Path, opening: str
) -> None:
    """Older code made its collections at Chroma's default depth; the next run to open
    one, to write or only to search, sets the new depth and its search uses it."""
    old = chroma(tmp_path / "ix").create_collection(
        "askmd", metadata=META, configuration={"hnsw": {"space": "cosine"}}
    )
    vectors = random_units(3000, 64, seed=1)
    ids = [str(i) for i in range(len(vectors))]
    for start in range(0, len(ids), 1000):
        old.add(
            ids=ids[start : start + 1000],
            embeddings=vectors[start : start + 1000],
            metadatas=[{"source": "a.md"}] * len(ids[start : start + 1000]),
        )
    assert hnsw_depth(tmp_path / "ix") == 100
    script = (
        NEXT_RUN + f"s.{'open(' + repr(META) + ')' if opening == 'open' else 'open_existing()'}\n"
        "queries = np.array(json.loads(sys.argv[2]), dtype=np.float32)\n"
        "print(json.dumps([[h.id for h in s.nearest(q, 100, content=False)] for q in queries]))\n"
    )
    queries = random_units(10, 64, seed=2)
    lists = in_new_process(script, tmp_path / "ix", queries.tolist())
    assert hnsw_depth(tmp_path / "ix") == EF_SEARCH
    for query, found in zip(queries, lists, strict=True):
        assert set(found) == {ids[i] for i in np.argsort(-(vectors @ query))[:100]}


def test_nearest_on_a_new_empty_collection_and_with_a_where_filter(store: Store) -> None:
    assert store.count() == 0
    assert store.nearest(QUERY, 10) == []
    assert store.nearest(QUERY, 10, where={"source": "a.md"}) == []
    put(store, "a.md", chunker.split(A_TEXT, source="a.md")[:2], [basis(0), basis(1)], [], "m")
    put(store, "b.md", chunker.split(B_TEXT, source="b.md"), [basis(2), basis(3)], [], "m")
    assert [r.id for r in store.nearest(QUERY, 1000)] == ["a.md#0", "a.md#1", "b.md#0", "b.md#1"]
    assert [r.id for r in store.nearest(QUERY, 10, where={"source": "b.md"})] == [
        "b.md#0",
        "b.md#1",
    ]
    assert [r.id for r in store.nearest(QUERY, 1, where={"source": "b.md"})] == ["b.md#0"]
    assert store.nearest(QUERY, 10, where={"source": "c.md"}) == []


def test_has_chunks_asks_again_after_a_no_and_after_a_reopen(store: Store) -> None:
    """A search asks on every question whether the side collection holds anything; a no
    must not be kept (another process may be filling it), and a yes only for as long as
    the collection object lives."""
    assert store.has_chunks() is False
    tiny(store, ["a.md"])
    assert store.has_chunks() is True
    store.delete(["a.md"])
    store.close()
    assert store.open_existing()
    assert store.has_chunks() is False


def test_delete_several_sources_an_unknown_one_and_more_than_500(store: Store) -> None:
    many = [f"n{i:04d}.md" for i in range(1001)]  # pages of 500, 500 and 1
    tiny(store, ["keep.md", "a.md", "b.md", *many])
    assert store.count() == 1004

    store.delete(["a.md", "b.md", "unknown.md"])
    assert store.count() == 1002
    assert sorted(store.source_counts()) == sorted(["keep.md", *many])

    store.delete([])
    store.delete(["unknown.md"])
    assert store.count() == 1002

    store.delete([*many, "unknown.md"])
    assert store.source_counts() == {"keep.md": 1}
    assert all_ids(store) == ["keep.md#0"]


def test_replace_more_ids_than_one_chroma_batch(store: Store) -> None:
    # About 3 s on 2 cores: 6,000 ids are two upsert batches and two source_counts pages.
    assert store._connect().get_max_batch_size() < 6000
    sources = ["big.md", "other.md", "third.md"]
    store.replace(
        sources,
        [f"{s}#{i}" for s in sources for i in range(2000)],
        ["t"] * 6000,
        [{"source": s, "chunk_index": i} for s in sources for i in range(2000)],
        np.tile(np.eye(4, dtype=np.float32), (1500, 1)),
    )
    assert store.count() == 6000
    assert store.source_counts() == {"big.md": 2000, "other.md": 2000, "third.md": 2000}

    # Replacing the big source again with fewer chunks still leaves nothing stale.
    tiny(store, ["big.md"], per_source=3)
    assert store.source_counts() == {"big.md": 3, "other.md": 2000, "third.md": 2000}
    assert store.count() == 4003


def test_reset_empties_the_collection_and_sets_the_new_metadata(
    store: Store, tmp_path: Path
) -> None:
    put(store, "a.md", chunker.split(A_TEXT, source="a.md"), [basis(i) for i in range(5)], [], "m")
    assert store.count() == 5
    new_meta = {"embedder": "another", "fingerprint": "f2"}
    store.reset(new_meta)
    assert store.count() == 0
    assert store.source_counts() == {}
    assert store.nearest(QUERY, 5) == []
    assert store.collection.metadata == new_meta
    assert Store(index_dir=tmp_path / "ix").open(META) == new_meta

    # The new collection is cosine too, and may hold vectors of another dimension.
    store.replace(["c.md"], ["c.md#0"], ["c"], [{"source": "c.md"}], unit(1, 1, 0, 0)[None, :])
    [hit] = store.nearest(unit(1, 0, 0, 0), 5)
    assert (hit.id, hit.text, hit.metadata) == ("c.md#0", "c", {"source": "c.md"})
    assert hit.distance == pytest.approx(1 - 1 / np.sqrt(2), abs=1e-5)


def test_reset_before_any_collection_exists(tmp_path: Path) -> None:
    s = Store(index_dir=tmp_path / "ix")
    s.reset(META)
    assert s.collection.metadata == META
    assert s.count() == 0


def test_a_vector_of_the_wrong_dimension_is_an_askmd_error(store: Store, tmp_path: Path) -> None:
    tiny(store, ["a.md"])
    with pytest.raises(AskmdError) as caught:
        store.replace(
            ["b.md"], ["b.md#0"], ["b"], [{"source": "b.md"}], np.ones((1, 8), np.float32)
        )
    assert type(caught.value) is AskmdError
    assert str(caught.value) == (
        f"the index at {tmp_path / 'ix' / 'chroma'} cannot be used: "
        "Collection expecting embedding with dimension of 4, got 8. "
        "Rebuild it with: python rag.py index --rebuild"
    )
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert store.source_counts() == {"a.md": 1}


def test_a_failed_replace_keeps_the_chunks_it_was_replacing(store: Store) -> None:
    """Bad input never destroys good state: the old chunks stay when the new ones fail."""
    tiny(store, ["a.md"], per_source=2)
    with pytest.raises(AskmdError):
        store.replace(
            ["a.md"], ["a.md#0"], ["a"], [{"source": "a.md"}], np.ones((1, 8), np.float32)
        )
    assert store.source_counts() == {"a.md": 2}
    assert all_ids(store) == ["a.md#0", "a.md#1"]


def test_an_index_folder_that_is_a_file_is_an_askmd_error(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "ix"
    not_a_folder.write_text("a file, not a folder\n", encoding="utf-8")
    s = Store(index_dir=not_a_folder)
    with pytest.raises(AskmdError) as caught:
        s.open(META)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"the index at {not_a_folder / 'chroma'} cannot be used: ")
    assert message.endswith(". Rebuild it with: python rag.py index --rebuild")
    assert not_a_folder.read_text(encoding="utf-8") == "a file, not a folder\n"


# --- server mode: a real `chroma run` on 127.0.0.1 -----------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Chroma server in a subprocess. `python -m chromadb.cli.cli` is no use: that
    module has no __main__ block and exits 0 at once, so this runs the `chroma` script."""
    folder = tmp_path_factory.mktemp("chroma-server")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [str(Path(sys.executable).parent / "chroma"), "run", "--path", str(folder / "srv")]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    log_path = folder / "server.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                log_text = log_path.read_text(errors="replace")
                assert server.poll() is None, f"chroma run exited:\n{log_text}"
                assert time.monotonic() < deadline, f"chroma run did not answer:\n{log_text}"
                time.sleep(0.1)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def test_server_replace_nearest_source_counts_delete(chroma_url: str, tmp_path: Path) -> None:
    s = Store(index_dir=tmp_path, chroma_url=chroma_url, collection="notes-test")
    assert s.where == chroma_url
    exercise(s)
    assert not (tmp_path / "chroma").exists()  # nothing is written locally in server mode


def test_server_reset_and_reopen(chroma_url: str, tmp_path: Path) -> None:
    s = Store(index_dir=tmp_path, chroma_url=chroma_url, collection="notes-reset")
    assert s.open(META) == META
    tiny(s, ["a.md", "b.md"])
    again = Store(index_dir=tmp_path, chroma_url=chroma_url, collection="notes-reset")
    assert again.open({"embedder": "other"}) == META
    assert again.source_counts() == {"a.md": 1, "b.md": 1}
    again.reset({"embedder": "other"})
    assert again.count() == 0
    assert again.source_counts() == {}
    assert Store(tmp_path, chroma_url, "notes-reset").open(META) == {"embedder": "other"}


def test_a_server_collection_searches_at_full_depth(chroma_url: str, tmp_path: Path) -> None:
    s = Store(index_dir=tmp_path, chroma_url=chroma_url, collection="notes-depth")
    s.open(META)
    assert s.collection.configuration_json["hnsw"]["ef_search"] == EF_SEARCH


def test_a_server_that_is_not_running_is_an_askmd_error(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    s = Store(index_dir=tmp_path, chroma_url=f"http://127.0.0.1:{port}")
    with pytest.raises(AskmdError) as caught:
        s.open(META)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"the Chroma server at http://127.0.0.1:{port} failed: ")
    assert message.endswith(
        "Is it running (chroma run --path DIR --port N)? Check ASKMD_CHROMA_URL."
    )
    assert not (tmp_path / "chroma").exists()


def test_an_error_message_does_not_double_its_punctuation(tmp_path: Path) -> None:
    """Chroma's own sentence already ends in '?' or '.': no '?.' or '..' after it."""
    port = free_port()
    with pytest.raises(AskmdError) as caught:
        Store(index_dir=tmp_path, chroma_url=f"http://127.0.0.1:{port}").open(META)
    assert str(caught.value) == (
        f"the Chroma server at http://127.0.0.1:{port} failed: Could not connect to a Chroma "
        "server. Are you sure it is running? Is it running (chroma run --path DIR --port N)? "
        "Check ASKMD_CHROMA_URL."
    )


def test_telemetry_is_off_in_both_modes(chroma_url: str, tmp_path: Path) -> None:
    for s in (Store(index_dir=tmp_path), Store(tmp_path, chroma_url, "notes-telemetry")):
        settings = s._connect().get_settings()
        assert settings.anonymized_telemetry is False
