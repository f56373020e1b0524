"""A Chroma folder a kill left unreadable is moved aside and rebuilt from the notes and
the embedding cache, with nothing embedded again; a full disk and a read-only index say
what they are. All through the real program, a real Chroma and real files.

How a kill breaks Chroma 1.5.9's embedded store: every write goes first to the log
(`embeddings_queue` in chroma.sqlite3); it is applied to the HNSW segment in memory, and
every `sync_threshold` (1,000) records the segment is saved: hnswlib writes header.bin,
data_level0.bin, length.bin and link_lists.bin, then index_metadata.pickle (the id ↔
label map) is written, then the segment's watermark in the `max_seq_id` table. A kill
between the first step and the last leaves a graph newer than its id map and watermark.
The next open replays the log from the old watermark into that graph: deleting an id
whose label the graph already marked deleted fails, every time ("Failed to apply logs to
the hnsw segment writer"), and the log is never purged past the watermark.
`damage` below makes exactly that state, without a kill.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import NOTES, ROOT, clean_env, write_notes
from tests.openai_server import OpenAIServer

# Run in a subprocess so this test process holds no Chroma system for the folder. Saves
# the segment once (P1), keeps the log (purging off, as a kill keeps it: the watermark
# never moved), saves it again after deleting what P1 held (P2), then puts P1's id map and
# watermark back beside P2's graph.
DAMAGE = r"""
import json, sqlite3, sys
from pathlib import Path
import chromadb, numpy as np
from chromadb.config import Settings

folder, dim = Path(sys.argv[1]), int(sys.argv[2])
db = sqlite3.connect(folder / "chroma.sqlite3")
db.execute("UPDATE embeddings_queue_config SET config_json_str = ?", (json.dumps(
    {"automatically_purge": False, "_type": "EmbeddingsQueueConfigurationInternal"}),))
db.commit()
client = chromadb.PersistentClient(str(folder), settings=Settings(anonymized_telemetry=False))
col = client.get_collection("askmd")
vector = db.execute("SELECT id FROM segments WHERE scope = 'VECTOR'").fetchone()[0]
ids = [f"filler#{i}" for i in range(1100)]
col.upsert(ids=ids, embeddings=np.random.default_rng(0).normal(size=(1100, dim)))
col.count()
pickle = folder / vector / "index_metadata.pickle"
saved = pickle.read_bytes()
mark = db.execute("SELECT seq_id FROM max_seq_id WHERE segment_id = ?", (vector,)).fetchone()
col.delete(ids=ids)
col.count()
client.close()
pickle.write_bytes(saved)
db.execute("UPDATE max_seq_id SET seq_id = ? WHERE segment_id = ?", (mark[0], vector))
db.commit()
"""

BROKEN = "Failed to apply logs to the hnsw segment writer"


@pytest.fixture(scope="module")
def embed_server():
    with OpenAIServer(dimension=16) as server:
        yield server


def env_for(server: OpenAIServer) -> dict[str, str]:
    return {
        "ASKMD_EMBEDDING_BACKEND": "openai",
        "ASKMD_EMBEDDING_MODEL": "test-embed",
        "OPENAI_BASE_URL": server.url,
        "OPENAI_API_KEY": "k",
    }


def damage(chroma: Path, dimension: int) -> None:
    subprocess.run(
        [sys.executable, "-c", DAMAGE, str(chroma), str(dimension)],
        cwd=ROOT, env=clean_env(), check=True, capture_output=True, timeout=120,
    )  # fmt: skip


def chroma_count(chroma: Path) -> subprocess.CompletedProcess:
    """What Chroma itself says when asked to count the collection, in a fresh process."""
    script = (
        "import sys, chromadb\n"
        "c = chromadb.PersistentClient(sys.argv[1])\n"
        "print(c.get_collection('askmd').count())\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script, str(chroma)],
        cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture
def indexed(tmp_path: Path, run_rag, embed_server) -> tuple[list[str], dict[str, str]]:
    """NOTES indexed, then bread.md edited and indexed again: both versions' vectors are
    in the embedding cache, so `killed_run` can put the old one back as a run killed
    half-way leaves things (files on disk that differ from the last completed sync)."""
    kb = write_notes(tmp_path / "kb", NOTES)
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    env = env_for(embed_server)
    for text in (NOTES["bread.md"], "# Bread\n\nFeed the starter twice a day.\n"):
        (kb / "bread.md").write_text(text, encoding="utf-8")
        run = run_rag(*where, "index", "--json", **env)
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["chunks_total"] == 3
    return where, env


def killed_run(tmp_path: Path) -> None:
    """The notes as a run that was killed had them: it never recorded its gate hash."""
    (tmp_path / "kb" / "bread.md").write_text(NOTES["bread.md"], encoding="utf-8")


def test_a_hnsw_segment_saved_without_its_id_map_is_rebuilt_without_embedding(
    tmp_path: Path, run_rag, embed_server, indexed
) -> None:
    where, env = indexed
    chroma = tmp_path / "ix" / "chroma"
    damage(chroma, 16)
    killed_run(tmp_path)
    broken = chroma_count(chroma)
    assert broken.returncode != 0 and BROKEN in broken.stderr  # Chroma alone never recovers

    embed_server.reset()
    second = run_rag(*where, "index", "--json", **env)
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert report["chunks_embedded"] == 0
    # Nothing of the notes went to the embedder (the OpenAI embedder asks its dimension).
    assert all(r.body["input"] == ["dimension probe"] for r in embed_server.requests)
    # The notes' chunks and postings were not lost: only bread.md, changed, is recorded again.
    assert report["chunks_total"] == 3 and report["files_added"] == 0
    assert (report["files_changed"], report["files_unchanged"]) == (1, 1)
    [warning] = report["warnings"]
    assert warning.startswith("the vector index could not be read (Error executing plan")
    assert BROKEN in warning and "embedding cache" in warning
    [aside] = sorted((tmp_path / "ix").glob("chroma.broken-*"))
    assert aside.name in warning and (aside / "chroma.sqlite3").is_file()

    assert chroma_count(chroma).stdout.strip() == "3"
    stats = json.loads(run_rag(*where, "stats", "--json", **env).stdout)
    assert (stats["files"], stats["chunks"]) == (2, 3)
    found = run_rag(*where, "search", "port 8420", "--json", **env)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["source"] == "guides/ports.md"
    again = run_rag(*where, "index", "--json", **env)
    assert json.loads(again.stdout)["warnings"] == []


def test_only_the_newest_two_broken_folders_are_kept(
    tmp_path: Path, run_rag, embed_server, indexed
) -> None:
    where, env = indexed
    ix = tmp_path / "ix"
    for old in ("chroma.broken-20200101T000000", "chroma.broken-20210101T000000"):
        (ix / old).mkdir()
        (ix / old / "chroma.sqlite3").write_bytes(b"old")
    damage(ix / "chroma", 16)
    killed_run(tmp_path)
    result = run_rag(*where, "index", "--json", **env)
    assert result.returncode == 0, result.stderr
    kept = sorted(p.name for p in ix.glob("chroma.broken-*"))
    assert len(kept) == 2 and "chroma.broken-20210101T000000" in kept
    assert "chroma.broken-20200101T000000" not in kept


def truncate_graph(chroma: Path) -> None:
    """A torn save: the graph file cut short, its header still counting every element."""
    [segment] = [p for p in chroma.iterdir() if (p / "data_level0.bin").is_file()]
    graph = segment / "data_level0.bin"
    graph.write_bytes(graph.read_bytes()[: graph.stat().st_size // 3])


def test_a_search_after_a_killed_run_rebuilds_a_torn_graph(
    tmp_path: Path, run_rag, embed_server, indexed
) -> None:
    where, env = indexed
    damage(tmp_path / "ix" / "chroma", 16)
    truncate_graph(tmp_path / "ix" / "chroma")
    killed_run(tmp_path)
    embed_server.reset()
    result = run_rag(*where, "search", "port 8420", "--json", **env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["results"][0]["source"] == "guides/ports.md"
    assert len(list((tmp_path / "ix").glob("chroma.broken-*"))) == 1
    embedded = [r.body["input"] for r in embed_server.requests]
    assert set(map(tuple, embedded)) <= {("dimension probe",), ("port 8420",)}


def test_damage_found_by_a_search_names_a_rebuild_that_embeds_nothing(
    tmp_path: Path, run_rag, embed_server, indexed
) -> None:
    """Damage behind an index that is otherwise up to date (a search killed while Chroma
    saved its graph): the search says so in one line, and the rebuild it names works."""
    where, env = indexed
    damage(tmp_path / "ix" / "chroma", 16)
    failed = run_rag(*where, "search", "port 8420", "--json", **env)
    assert failed.returncode == 1 and failed.stdout == ""
    [line] = failed.stderr.splitlines()
    assert line.startswith(f"error: the index at {tmp_path / 'ix' / 'chroma'} is damaged (")
    assert line.endswith(
        "Rebuild it with: python rag.py index --rebuild (cached embeddings make it quick)"
    )
    rebuilt = run_rag(*where, "index", "--rebuild", "--json", **env)
    assert rebuilt.returncode == 0, rebuilt.stderr
    report = json.loads(rebuilt.stdout)
    assert (report["chunks_embedded"], report["chunks_total"]) == (0, 3)
    found = run_rag(*where, "search", "port 8420", "--json", **env)
    assert found.returncode == 0, found.stderr
    sources = [r["source"] for r in json.loads(found.stdout)["results"]]
    assert sorted(sources) == ["bread.md", "guides/ports.md", "guides/ports.md"]


def test_a_chroma_server_is_never_moved_aside(tmp_path: Path) -> None:
    from askmd.index.store import Store

    store = Store(tmp_path / "ix", chroma_url="http://127.0.0.1:9")
    with pytest.raises(RuntimeError):
        store.set_aside()


@pytest.fixture
def small_disk(tmp_path: Path):
    """A real 3 MB filesystem (tmpfs), so a write can really run out of space."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(disk)],
                             capture_output=True, text=True)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"a full disk needs a small filesystem; mount: {mounted.stderr.strip()}")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path, leave: int) -> None:
    """Fill the filesystem, then free `leave` bytes: room for the manifest to open, not
    for Chroma to write."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    os.truncate(disk / "filler", (disk / "filler").stat().st_size - leave)


@pytest.mark.parametrize("leave", [40 * 1024, 80 * 1024])
def test_a_full_disk_says_so_and_does_not_advise_a_rebuild(
    tmp_path: Path, run_rag, embed_server, small_disk: Path, leave: int
) -> None:
    """With 40 KB left SQLite's "database or disk is full" reaches us; with 80 KB Chroma
    says only "Error in compaction: Failed to apply logs to the metadata segment"."""
    kb = write_notes(tmp_path / "kb", NOTES)
    ix = small_disk / "ix"
    where = ["--knowledge", str(kb), "--index-dir", str(ix)]
    env = env_for(embed_server)
    assert run_rag(*where, "index", **env).returncode == 0
    bread = (kb / "bread.md").read_text(encoding="utf-8")
    (kb / "bread.md").unlink()
    assert run_rag(*where, "index", **env).returncode == 0  # its vector stays cached
    fill(small_disk, leave)
    (kb / "bread.md").write_text(bread, encoding="utf-8")  # back: only Chroma must write
    result = run_rag(*where, "index", **env)
    assert result.returncode == 1
    # The manifest (chunk texts, postings) or Chroma (vectors) finds the disk full first.
    assert result.stderr in (
        f"error: the disk holding the index ({where}) is full: free some space and run again\n"
        for where in (ix, ix / "chroma")
    )
    assert not list(ix.glob("chroma.broken-*"))  # a full disk is not damage
