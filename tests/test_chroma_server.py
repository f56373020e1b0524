"""Several askmd processes sharing one Chroma server: one collection per knowledge folder,
and a writer lease in the collection's metadata so that two machines never write one
collection at once. Against a real `chroma run` on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from askmd.errors import IndexBusy
from askmd.index import index_home
from askmd.index import store_lease as store_module
from askmd.index.store import Lease, Store
from askmd.settings import load_settings

from .conftest import NOTES, write_notes

CHROMA_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$")


# --- the collection's name ------------------------------------------------------------


@pytest.mark.parametrize("name", ["notes", "my notes!", "笔记", ".hidden", "a" * 80, "x"])
def test_a_folder_names_a_valid_collection_unique_to_its_real_path(tmp_path, name) -> None:
    folder = tmp_path / name
    folder.mkdir()
    collection = index_home.default_collection(folder)
    assert CHROMA_NAME.match(collection), collection
    assert index_home.default_collection(tmp_path / "other" / name) != collection
    link = tmp_path / "link"
    link.symlink_to(folder)
    assert index_home.default_collection(link) == collection  # the real path counts


def test_a_server_gets_one_collection_per_folder_unless_one_is_named(tmp_path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    url = {"ASKMD_CHROMA_URL": "http://127.0.0.1:8001"}

    def collection(folder: Path, **env: str) -> str:
        environ = {"ASKMD_KNOWLEDGE_DIR": str(folder), **env}
        return load_settings(environ, dotenv_path=None).collection

    assert collection(a) == collection(b) == "askmd"  # embedded: each index has its own
    assert collection(a, **url) == index_home.default_collection(a)
    assert collection(b, **url) == index_home.default_collection(b)
    assert collection(a, **url, ASKMD_COLLECTION="team") == "team"
    assert collection(a, **url, ASKMD_COLLECTION="") == index_home.default_collection(a)


# --- a real Chroma server -------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`chroma run` in a subprocess on a free port (it answers its heartbeat in about a
    second), stopped when the module's tests are done."""
    folder = tmp_path_factory.mktemp("chroma-server")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [str(Path(sys.executable).parent / "chroma"), "run", "--path", str(folder / "data")]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    log_path = folder / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while not _beats(url):
                log_text = log_path.read_text(errors="replace")
                assert process.poll() is None, f"chroma run exited:\n{log_text}"
                assert time.monotonic() < deadline, f"chroma run did not answer:\n{log_text}"
                time.sleep(0.1)
            yield url
        finally:
            process.kill()
            process.wait()


def _beats(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1) as reply:
            return reply.status == 200
    except OSError:
        return False


def client(url: str):
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    host, port = url.removeprefix("http://").split(":")
    return chromadb.HttpClient(
        host=host, port=int(port), settings=ChromaSettings(anonymized_telemetry=False)
    )


def sources(url: str, collection: str) -> dict[str, int]:
    """The chunks per note that the server holds in a collection."""
    found = client(url).get_collection(collection).get(include=["metadatas"])
    counts: dict[str, int] = {}
    for meta in found["metadatas"]:
        counts[meta["source"]] = counts.get(meta["source"], 0) + 1
    return counts


def foreign_lease(url: str, collection: str, until: float, host: str = "build-7") -> Lease:
    """Another machine's writer lease, written into the collection's metadata the way its
    `claim` would write it."""
    lease = Lease(host, 4242, "/srv/notes", "their-token")
    found = client(url).get_collection(collection)
    found.modify(metadata={**(found.metadata or {}), **lease.fields(until)})
    return lease


# --- through the command line ---------------------------------------------------------


def test_index_and_search_through_the_server(server, run_rag, tmp_path) -> None:
    kb = write_notes(tmp_path / "kb", NOTES)
    index_dir = tmp_path / "ix"
    env = {
        "ASKMD_CHROMA_URL": server,
        "ASKMD_KNOWLEDGE_DIR": str(kb),
        "ASKMD_INDEX_DIR": str(index_dir),
    }
    indexed = run_rag("index", "--json", **env)
    assert indexed.returncode == 0, indexed.stderr
    name = index_home.default_collection(kb)
    assert sources(server, name) == {"guides/ports.md": 2, "bread.md": 1}
    found = run_rag("search", "which port does the API listen on", "-k", "1", "--json", **env)
    assert found.returncode == 0, found.stderr
    (hit,) = json.loads(found.stdout)["results"]
    assert hit["source"] == "guides/ports.md" and "8420" in hit["text"]
    assert (index_dir / "manifest.sqlite3").is_file()  # the manifest stays on this machine
    assert not (index_dir / "chroma").exists()  # the vectors do not


def test_two_folders_get_two_collections_and_keep_their_chunks(server, run_rag, tmp_path):
    a = write_notes(tmp_path / "a" / "notes", {"ports.md": NOTES["guides/ports.md"]})
    b = write_notes(tmp_path / "b" / "notes", {"bread.md": NOTES["bread.md"]})
    for kb in (a, b):
        where = ("--knowledge", str(kb), "--index-dir", str(kb.parent / "ix"))
        done = run_rag(*where, "index", ASKMD_CHROMA_URL=server)
        assert done.returncode == 0, done.stderr
    names = {kb: index_home.default_collection(kb) for kb in (a, b)}
    assert names[a] != names[b] and names[a].startswith("notes-")
    assert sources(server, names[a]) == {"ports.md": 2}
    assert sources(server, names[b]) == {"bread.md": 1}
    where = ("--knowledge", str(b), "--index-dir", str(b.parent / "ix"))
    rebuilt = run_rag(*where, "index", "--rebuild", ASKMD_CHROMA_URL=server)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert sources(server, names[a]) == {"ports.md": 2}  # b's rebuild left a's alone


def test_stats_names_the_collection(server, run_rag, tmp_path) -> None:
    kb = write_notes(tmp_path / "kb", NOTES)
    shown = run_rag("--knowledge", str(kb), "stats", "--json", ASKMD_CHROMA_URL=server)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["collection"] == index_home.default_collection(kb)


def test_a_second_writer_is_refused_in_one_line_and_changes_nothing(server, run_rag, tmp_path):
    kb = write_notes(tmp_path / "kb", NOTES)
    env = {
        "ASKMD_CHROMA_URL": server,
        "ASKMD_KNOWLEDGE_DIR": str(kb),
        "ASKMD_INDEX_DIR": str(tmp_path / "ix"),
    }
    assert run_rag("index", **env).returncode == 0
    name = index_home.default_collection(kb)
    before = client(server).get_collection(name).get()["ids"]
    write_notes(kb, {"new.md": "# New\n\nThe cache lives for 42 minutes.\n"})
    foreign_lease(server, name, time.time() + 600)

    refused = run_rag("index", **env)
    assert refused.returncode == 1
    (line,) = refused.stderr.strip().splitlines()
    assert "pid 4242 on build-7 is writing the Chroma collection" in line
    assert "/srv/notes" in line
    assert client(server).get_collection(name).get()["ids"] == before

    foreign_lease(server, name, time.time() - 1)  # its lease ran out: the next writer takes it
    taken = run_rag("index", **env)
    assert taken.returncode == 0, taken.stderr
    assert sources(server, name)["new.md"] == 1
    assert Lease.read(client(server).get_collection(name).metadata).until == 0.0  # released


# --- the writer lease, on the store itself --------------------------------------------

META = {"embedder": "test", "fingerprint": "f1"}


def opened(url: str, index_dir: Path, name: str) -> Store:
    store = Store(index_dir, url, name)
    assert store.open(META) == META  # the lease is no part of what `open` reports
    return store


def test_a_live_lease_refuses_a_second_writer_in_one_line(server, tmp_path) -> None:
    first = opened(server, tmp_path, "lease-live")
    first.claim(tmp_path / "kb")
    held = Lease.read(client(server).get_collection("lease-live").metadata)
    assert (held.host, held.pid) == (socket.gethostname(), os.getpid())
    assert held.folder == str(tmp_path / "kb") and held.until > time.time() + 60
    second = opened(server, tmp_path, "lease-live")
    with pytest.raises(IndexBusy) as caught:
        second.claim(tmp_path / "kb")  # the same host, but a live process: refused too
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(
        f"pid {os.getpid()} on {socket.gethostname()} is writing the Chroma collection "
        f"lease-live at {server} (indexing {tmp_path / 'kb'}; its lease runs to "
    )
    assert caught.value.holder == f"{os.getpid()} on {socket.gethostname()}"
    first.release()
    assert Lease.read(client(server).get_collection("lease-live").metadata).until == 0.0
    second.claim(tmp_path / "kb")  # released: free to take
    second.release()


def test_another_machines_lease_refuses_and_nothing_changes(server, tmp_path) -> None:
    store = opened(server, tmp_path, "lease-foreign")
    theirs = foreign_lease(server, "lease-foreign", time.time() + 600)
    before = client(server).get_collection("lease-foreign").metadata
    said = r"^pid 4242 on build-7 is writing the Chroma collection .* \(indexing /srv/notes;"
    with pytest.raises(IndexBusy, match=said):
        store.claim(tmp_path)
    assert client(server).get_collection("lease-foreign").metadata == before
    assert Lease.read(before).token == theirs.token
    store.release()  # holding nothing, it clears nothing
    assert client(server).get_collection("lease-foreign").metadata == before


def test_an_expired_lease_or_a_dead_local_writer_is_taken_over(server, tmp_path) -> None:
    store = opened(server, tmp_path, "lease-expired")
    foreign_lease(server, "lease-expired", time.time() - 1)
    store.claim(tmp_path)
    assert Lease.read(client(server).get_collection("lease-expired").metadata).host != "build-7"
    store.release()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    foreign_lease(server, "lease-expired", time.time() + 600, host=socket.gethostname())
    found = client(server).get_collection("lease-expired")
    found.modify(metadata={**found.metadata, "writer_pid": int(dead.stdout)})
    store.claim(tmp_path)  # its pid is gone from this host: no need to wait for the expiry
    assert Lease.read(client(server).get_collection("lease-expired").metadata).pid == os.getpid()
    store.release()


def test_the_lease_is_renewed_while_held_and_survives_a_reset(server, tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "RENEW_SECONDS", 0.2)
    store = opened(server, tmp_path, "lease-renew")
    store.claim(tmp_path)
    first = Lease.read(client(server).get_collection("lease-renew").metadata)
    time.sleep(0.6)
    renewed = Lease.read(client(server).get_collection("lease-renew").metadata)
    assert renewed.token == first.token and renewed.until > first.until
    store.reset({"embedder": "test", "fingerprint": "f2"})  # a rebuild makes a new collection
    meta = client(server).get_collection("lease-renew").metadata
    assert meta["fingerprint"] == "f2" and Lease.read(meta).token == first.token
    store.release()
    released = Lease.read(client(server).get_collection("lease-renew").metadata)
    time.sleep(0.5)  # no renewal after the release
    assert Lease.read(client(server).get_collection("lease-renew").metadata) == released
    assert released.until == 0.0


def test_an_embedded_store_takes_no_lease(tmp_path) -> None:
    store = Store(tmp_path, "", "askmd")
    assert store.open(META) == META
    store.claim(tmp_path)  # the lock file serialises local writers
    assert store.open(META) == META and store.collection.metadata == META
    store.release()
    store.close()


def test_the_compose_file_runs_the_server_version_of_the_installed_client() -> None:
    import chromadb
    import yaml

    docs = Path(__file__).resolve().parent.parent / "docs"
    (service,) = yaml.safe_load((docs / "docker-compose.yml").read_text())["services"].values()
    assert service["image"] == f"chromadb/chroma:{chromadb.__version__}"
    assert service["ports"] == ["8001:8000"] and service["volumes"][0].endswith(":/data")
    assert f"chromadb/chroma:{chromadb.__version__}" in (docs / "chroma-server.md").read_text()


def test_a_lease_taken_over_is_not_renewed_over_its_new_holder(server, tmp_path, monkeypatch):
    """A writer stalled past its expiry finds, at its next renewal, that another machine
    took the collection over: it leaves that lease alone, and its release clears nothing."""
    monkeypatch.setattr(store_module, "RENEW_SECONDS", 1.0)
    store = opened(server, tmp_path, "lease-lost")
    with store.releasing():
        store.claim(tmp_path)
        # Taken over just after a renewal, as an expired lease is (its holder stalled): a
        # takeover written while the renewer is between its read and its write is the
        # race that no compare-and-set guards, and not what this test is about.
        first = Lease.read(client(server).get_collection("lease-lost").metadata).until
        deadline = time.time() + 10
        while Lease.read(client(server).get_collection("lease-lost").metadata).until == first:
            assert time.time() < deadline, "the lease was never renewed"
            time.sleep(0.02)
        theirs = foreign_lease(server, "lease-lost", time.time() + 600)
        time.sleep(1.6)  # the renewer's next turn finds their lease and leaves it
        assert Lease.read(client(server).get_collection("lease-lost").metadata) == Lease(
            theirs.host,
            theirs.pid,
            theirs.folder,
            theirs.token,
            pytest.approx(time.time() + 600, abs=5),
        )
    assert Lease.read(client(server).get_collection("lease-lost").metadata).token == theirs.token
