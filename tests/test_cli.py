"""The real program as a user runs it: `python rag.py ...` in a subprocess."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import NOTES, ROOT, clean_env, write_notes
from tests.openai_server import OpenAIServer

SAMPLE = ROOT / "knowledge"


def test_chunk_json_has_the_documented_fields(run_rag) -> None:
    result = run_rag(
        "--knowledge", str(SAMPLE), "chunk", str(SAMPLE / "faq/support-faq.md"), "--json"
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    data = json.loads(result.stdout)
    assert data["file"] == "faq/support-faq.md"
    assert data["mode"] == "separator"
    assert data["chunk_size"] == 1000 and data["chunk_overlap"] == 200
    first = data["chunks"][0]
    assert set(first) >= {"id", "heading_chain", "heading_level", "line_start", "line_end", "text"}
    assert first["id"] == "faq/support-faq.md#0"
    assert first["heading_chain"] == "Support FAQ"
    assert (first["line_start"], first["line_end"]) == (1, 3)
    lines = (SAMPLE / "faq/support-faq.md").read_text(encoding="utf-8").split("\n")
    for c in data["chunks"]:
        assert c["text"].split("\n")[0] == lines[c["line_start"] - 1]


def test_chunk_of_a_file_outside_the_knowledge_folder_uses_its_name(run_rag, tmp_path) -> None:
    note = tmp_path / "elsewhere.md"
    note.write_text(
        "---\ntitle: Far away\ntags: [x, y]\n---\n# Heading\n\nText.\n", encoding="utf-8"
    )
    result = run_rag("chunk", str(note), "--json", "--size", "300", "--overlap", "50")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["file"], data["title"], data["tags"]) == ("elsewhere.md", "Far away", ["x", "y"])
    assert (data["chunk_size"], data["chunk_overlap"]) == (300, 50)
    assert [(c["text"], c["line_start"], c["line_end"]) for c in data["chunks"]] == [
        ("# Heading\n\nText.", 5, 7)
    ]


def test_chunk_human_output_is_plain_when_piped(run_rag) -> None:
    result = run_rag("chunk", str(SAMPLE / "README.md"))
    assert result.returncode == 0, result.stderr
    assert "\x1b[" not in result.stdout
    assert result.stdout.startswith("README.md · heading mode · ")
    assert "#0 lines 1–" in result.stdout


def test_bad_files_give_one_line_errors(run_rag, tmp_path: Path) -> None:
    (tmp_path / "latin1.md").write_bytes("café".encode("latin-1"))
    (tmp_path / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (tmp_path / "folder.md").mkdir()
    kinds = "Markdown, PDF, DOCX, HTML or TXT"
    cases = {
        "missing.md": f"error: missing.md does not exist: give the path of a {kinds} file\n",
        "folder.md": f"error: folder.md is not a file: give the path of a {kinds} file\n",
        "latin1.md": "error: latin1.md: not UTF-8 (byte 0xe9 at offset 3); re-save it as UTF-8\n",
        "binary.md": "error: binary.md: binary (it contains NUL bytes), not a text note\n",
    }
    for name, expected in cases.items():
        result = run_rag("chunk", name)
        assert (result.returncode, result.stdout, result.stderr) == (1, "", expected), name


def test_malformed_front_matter_warns_and_keeps_the_text(run_rag, tmp_path: Path) -> None:
    (tmp_path / "fm.md").write_text("---\ntitle: [oops\n---\nBody line\n", encoding="utf-8")
    result = run_rag("chunk", "fm.md", "--json")
    assert result.returncode == 0
    assert result.stderr.startswith("warning: fm.md: front matter is not valid YAML (line 2:")
    assert result.stderr.count("\n") == 1
    texts = [c["text"] for c in json.loads(result.stdout)["chunks"]]
    assert texts == ["title: [oops\n---\nBody line"]


def test_settings_problems_are_listed_together_without_traceback(run_rag, tmp_path) -> None:
    (tmp_path / "n.md").write_text("text\n", encoding="utf-8")
    result = run_rag("chunk", "n.md", ASKMD_CHUNK_SIZE="abc", ASKMD_MAX_FILE_MB="0")
    assert result.returncode == 1
    assert result.stderr == (
        "error: ASKMD_CHUNK_SIZE='abc' (from environment) is not a whole number\n"
        "error: ASKMD_MAX_FILE_MB='0' (from environment): the size limit must be above 0\n"
    )


def test_dotenv_in_the_working_folder_is_read(run_rag, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("ASKMD_CHUNK_SIZE=400\nASKMD_CHUNK_OVERLAP=40\n")
    (tmp_path / "n.md").write_text("text\n", encoding="utf-8")
    data = json.loads(run_rag("chunk", "n.md", "--json").stdout)
    assert (data["chunk_size"], data["chunk_overlap"]) == (400, 40)
    flagged = json.loads(run_rag("chunk", "n.md", "--json", "--size", "500").stdout)
    assert (flagged["chunk_size"], flagged["chunk_overlap"]) == (500, 40)


def test_a_misspelled_setting_in_dotenv_is_one_warning_line(run_rag, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("ASKMD_TOPK=3\n")
    (tmp_path / "n.md").write_text("text\n", encoding="utf-8")
    result = run_rag("chunk", "n.md", "--json")
    assert result.returncode == 0
    assert result.stderr == (
        "warning: unknown settings ignored: ASKMD_TOPK (from .env; did you mean ASKMD_TOP_K?)\n"
    )


def test_missing_knowledge_folder_is_one_line(run_rag) -> None:
    result = run_rag("--knowledge", "nowhere")
    assert result.returncode == 1
    assert result.stderr == (
        "error: --knowledge nowhere: the knowledge folder does not exist: create it, or point "
        "ASKMD_KNOWLEDGE_DIR or --knowledge at your notes\n"
    )


def test_traceback_flag_shows_the_traceback(run_rag) -> None:
    result = run_rag("--traceback", "chunk", "missing.md")
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "AskmdError: missing.md does not exist" in result.stderr


# --- index, search, stats and the REPL, through the real program ---------------------


@pytest.fixture(scope="module")
def embed_server():
    with OpenAIServer(dimension=16) as server:
        yield server


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    return write_notes(tmp_path / "kb", NOTES)


def _index_env(server: OpenAIServer) -> dict[str, str]:
    return {
        "ASKMD_EMBEDDING_BACKEND": "openai",
        "ASKMD_EMBEDDING_MODEL": "test-embed",
        "OPENAI_BASE_URL": server.url,
        "OPENAI_API_KEY": "k",
    }


def test_index_search_stats_json(run_rag, kb: Path, embed_server) -> None:
    env = _index_env(embed_server)
    where = ("--knowledge", str(kb), "--index-dir", str(kb.parent / "ix"))
    first = run_rag(*where, "index", "--json", **env)
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    timing = ("seconds", "embed_seconds", "warnings")
    assert {k: v for k, v in report.items() if k not in timing} == {
        "files_scanned": 2,
        "files_added": 2,
        "files_changed": 0,
        "files_deleted": 0,
        "files_unchanged": 0,
        "files_skipped": [],
        "chunks_embedded": 3,
        "windows_embedded": 0,
        "multilingual_embedded": 0,
        "multilingual_windows_embedded": 0,
        "chunks_deleted": 0,
        "chunks_total": 3,
        "chunks_waiting": 0,
        "rebuilt": False,
        "rebuild_reason": "",
        "migrations": [],
    }
    assert 0 < report["embed_seconds"] < report["seconds"]

    found = run_rag(*where, "search", "port of the API", "-k", "2", "--json", **env)
    assert found.returncode == 0, found.stderr
    data = json.loads(found.stdout)
    assert data["query"] == "port of the API" and data["retriever"] == "hybrid"
    assert [r["rank"] for r in data["results"]] == [1, 2]
    assert set(data["results"][0]) == {
        "rank", "score", "source", "heading_chain", "line_start", "line_end", "page_start",
        "page_end", "chunk_id", "text"
    }  # fmt: skip
    assert data["results"][0]["page_start"] is None  # Markdown has no pages
    ids = {r["chunk_id"]: r for r in data["results"]}
    for chunk_id, r in ids.items():
        assert chunk_id.startswith(r["source"] + "#")
        assert r["source"] in ("guides/ports.md", "bread.md")

    stats = run_rag(*where, "stats", "--json", **env)
    got = json.loads(stats.stdout)
    assert {k: v for k, v in got.items() if k != "last_sync"} == {
        "files": 2,
        "chunks": 3,
        "embedder": "openai:test-embed",
        "dimension": 16,
        "index_dir": str(kb.parent / "ix"),
        "knowledge_dir": str(kb.resolve()),
        "links": 0,
        "broken_links": 0,
        "chunks_embedded": 3,
        "keyword_ready": True,
        "collection": "askmd",
        "filler": "off",
        "properties": {},
    }
    assert got["last_sync"].startswith("20")


def _repl(kb: Path, server: OpenAIServer, stdin: str) -> subprocess.CompletedProcess:
    """The REPL as a pipe: `python rag.py` with no command, questions on standard input."""
    where = ("--knowledge", str(kb), "--index-dir", str(kb.parent / "ix"))
    return subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), *where],
        input=stdin,
        capture_output=True,
        text=True,
        env=clean_env(**_index_env(server)),
        cwd=kb.parent,
        timeout=60,
    )


def test_an_index_that_stored_waiting_vectors_says_so(run_rag, kb: Path, embed_server) -> None:
    """No file changed, but the vectors a keyword-only run left were embedded: not "up to
    date"."""
    env = _index_env(embed_server)
    where = ("--knowledge", str(kb), "--index-dir", str(kb.parent / "ix"))
    assert run_rag(*where, "index", "--keyword-only", **env).returncode == 0
    filled = run_rag(*where, "index", **env)
    assert filled.returncode == 0, filled.stderr
    assert re.fullmatch(
        r"indexed: 2 unchanged; vectors stored for 3 chunks that were waiting; "
        r"3 chunks in the index \(\d+\.\d s\)\n",
        filled.stderr,
    ), filled.stderr
    again = run_rag(*where, "index", **env)
    assert again.stderr.startswith("index up to date: 2 files, 3 chunks (")


def test_global_options_work_after_the_command_too(run_rag, kb: Path, embed_server) -> None:
    env = _index_env(embed_server)
    ix = str(kb.parent / "ix")
    result = run_rag(
        "ask", "which port does the API listen on?", "--knowledge", str(kb), "--index-dir", ix,
        "--json", "--no-watch", **env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["references"][0]["source"] == "guides/ports.md"
    stats = json.loads(run_rag("stats", "--json", "--index-dir", ix, "--knowledge", str(kb)).stdout)
    assert (stats["index_dir"], stats["chunks"]) == (ix, 3)  # found by the flags after `stats`
    failed = run_rag("chunk", "missing.md", "--traceback")
    assert failed.returncode == 1 and "Traceback" in failed.stderr
    # before the command they still work, and a flag after it wins
    both = run_rag("--knowledge", "nowhere", "stats", "--json", "--knowledge", str(kb), **env)
    assert both.returncode == 0, both.stderr


def test_repl_piped_debug_and_quit(run_rag, kb: Path, embed_server) -> None:
    result = _repl(
        kb, embed_server, "/help\n/debug metrics port\n/nonsense\n/stats\n/quit\nignored\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "indexed: 2 added, 0 changed, 0 deleted, 0 unchanged; 3 chunks embedded, 0 removed; "
        + result.stderr.splitlines()[0].split("0 removed; ")[1],
        "error: unknown command /nonsense; /help lists the commands",
    ]
    assert "/debug QUESTION   show the retrieved chunks with their scores" in result.stdout
    assert "guides/ports.md" in result.stdout and "│ 5–7 " in result.stdout
    assert re.search(r"^files +2$", result.stdout, re.M)
    assert re.search(r"^chunks +3$", result.stdout, re.M)


def test_repl_ends_at_end_of_input(run_rag, kb: Path, embed_server) -> None:
    result = _repl(kb, embed_server, "")
    assert result.returncode == 0
    assert result.stdout == ""


def test_embeddings_server_down_is_one_line(run_rag, kb: Path) -> None:
    env = {
        "ASKMD_EMBEDDING_BACKEND": "openai",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "OPENAI_API_KEY": "k",
    }
    result = run_rag("--knowledge", str(kb), "--index-dir", str(kb.parent / "ix"), "index", **env)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(
        "error: cannot connect to the embeddings server at http://127.0.0.1:9/v1"
    )


def test_an_empty_knowledge_folder_warns(run_rag, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = run_rag("--knowledge", "empty", "index")
    assert result.returncode == 0
    assert result.stderr.splitlines()[0] == (
        "warning: no notes found in empty/ (looked for *.md, *.markdown, *.pdf, *.docx, "
        "*.html, *.htm, *.txt). "
        "Add notes, or set ASKMD_KNOWLEDGE_DIR or ASKMD_INCLUDE."
    )


def test_stats_before_any_index_creates_nothing(run_rag, tmp_path: Path) -> None:
    (tmp_path / "kb").mkdir()
    result = run_rag("--knowledge", "kb", "--index-dir", "ix", "stats", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "knowledge_dir": str((tmp_path / "kb").resolve()),
        "files": 0,
        "chunks": 0,
        "embedder": "local:all-MiniLM-L6-v2-int8",
        "dimension": 0,
        "index_dir": "ix",
        "last_sync": None,
        "links": 0,
        "broken_links": 0,
        "chunks_embedded": 0,
        "keyword_ready": False,
        "collection": "askmd",
        "filler": "off",
        "properties": {},
    }
    assert not (tmp_path / "ix").exists()


def test_an_unusable_index_folder_is_one_line_and_the_notes_are_untouched(
    run_rag, kb: Path, tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    before = sorted(p.read_bytes() for p in kb.rglob("*.md"))
    result = run_rag("--knowledge", str(kb), "--index-dir", "a-file", "index")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        "error: the index folder a-file cannot be created (it is a file). "
        "Point ASKMD_INDEX_DIR or --index-dir at a writable folder.\n"
    )
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken/manifest.sqlite3").write_bytes(b"not a database" * 100)
    result = run_rag("--knowledge", str(kb), "--index-dir", "broken", "index")
    assert result.returncode == 1
    assert result.stderr.startswith("error: the index manifest broken/manifest.sqlite3 cannot")
    assert result.stderr.count("\n") == 1
    assert sorted(p.read_bytes() for p in kb.rglob("*.md")) == before


def test_mostly_chinese_notes_need_no_hint_when_the_multilingual_model_is_installed(
    run_rag, tmp_path
) -> None:
    """Chinese chunks get multilingual vectors by default, so the hint that once told how to
    search Chinese notes by meaning is not needed (tests/test_multilingual.py shows it when
    the package is missing)."""
    kb = write_notes(
        tmp_path / "zh",
        {
            "备份.md": "# 数据库备份\n\n每日备份保留十四天，每周备份保留八周。\n",
            "端口.md": "# 端口\n\n接口服务监听八四二零端口，指标在九四二零端口。\n",
        },
    )
    first = run_rag("--knowledge", str(kb), "index", "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["warnings"] == []
    found = run_rag("--knowledge", str(kb), "search", "数据多久删掉", "--json", "-k", "1")
    assert json.loads(found.stdout)["results"][0]["source"] == "备份.md"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("ask", "  "), "error: the question is empty: "),
        (("search", ""), "error: the query is empty: "),
        (("search", " \t", "--json"), "error: the query is empty: "),
        (("ask", "q", "--heading-level", "9"), "error: --heading-level 9: give 1 to 4"),
        (("search", "q", "--heading-level", "0"), "error: --heading-level 0: give 1 to 4"),
        (("eval", "q.jsonl", "-k", "0"), "error: -k 0: rank between 1 and 100 files"),
        # bytes that are not UTF-8 reach Python as lone surrogates, which no model reads
        (("ask", os.fsdecode(b"what is \xff\xfe?")), "error: the question holds bytes that "),
        (("search", os.fsdecode(b"caf\xe9")), "error: the query holds bytes that are not "),
        (("ask", "q" * 4001), "error: the question is 4,001 characters long; the most is"),
    ],
)
def test_bad_arguments_are_one_line_before_anything_is_indexed(
    run_rag, tmp_path, args, message
) -> None:
    kb = write_notes(tmp_path / "kb", NOTES)
    result = run_rag("--knowledge", str(kb), "--index-dir", str(tmp_path / "ix"), *args)
    assert result.returncode == 1
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1
    assert not (tmp_path / "ix").exists()  # refused before any indexing


def run_module(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`python -m askmd ARGS` from `cwd`, the clone on the import path as an install puts it."""
    return subprocess.run(
        [sys.executable, "-m", "askmd", *args],
        cwd=cwd,
        env=clean_env(PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_version_prints_the_package_version(run_rag) -> None:
    from askmd import __version__

    result = run_rag("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"askmd {__version__}\n"


def test_python_m_askmd_is_the_same_program(run_rag, tmp_path) -> None:
    """Same commands and flags as rag.py; only the usage line names how it was started."""
    module = run_module("--help", cwd=tmp_path)
    script = run_rag("--help")
    assert module.returncode == 0, module.stderr
    assert module.stdout.startswith("usage: python -m askmd [-h]")
    as_script = module.stdout.replace("python -m askmd", "rag.py")
    assert as_script.split() == script.stdout.split()  # the usage lines wrap differently


def test_outside_the_repository_a_missing_knowledge_folder_says_knowledge(tmp_path) -> None:
    result = run_module("search", "upload size", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        "error: the knowledge folder knowledge does not exist: create it, or point "
        "ASKMD_KNOWLEDGE_DIR or --knowledge at your notes\n"
    )


def test_messages_name_commands_as_the_user_started_askmd(tmp_path: Path) -> None:
    """Run as `python -m askmd` (or `askmd`), a message that names a command to run names
    it that way, not as rag.py."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    result = run_module("--knowledge", str(kb), "ask", "   ", cwd=tmp_path)
    assert result.returncode == 1
    assert "python -m askmd ask" in result.stderr and "rag.py" not in result.stderr
