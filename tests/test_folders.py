"""Several folders answered as one: `--knowledge` repeated or ASKMD_KNOWLEDGE_DIR a list,
each folder with its own index, ranked as one, named in every reference, narrowed with
`--in`; a missing folder is one line and the others answer. Driven through the real
interfaces: the command line, the REPL in a pseudo-terminal, `serve` (the API and MCP
over HTTP) and `watch`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pytest

from askmd import folders, shelf
from askmd.errors import AskmdError
from askmd.index import embedder, index_home
from askmd.settings import load_settings
from tests.conftest import ROOT, clean_env, write_notes

WORK = {
    "office.md": "# Rotterdam office\n\nThe office opens at 08:30 and the front desk closes\n"
    "at 18:00. Badges are collected from Sanne at reception.\n",
    "oncall.md": "# On-call\n\nThe on-call phone is +31 10 555 0142. Level 3 is the CTO,\n"
    "called only for P1 incidents that last longer than an hour.\n",
    "deploys.md": "# Deploys\n\nWe deploy on Tuesdays and Thursdays after the 10:00 stand-up;\n"
    "never on Fridays.\n",
}
HOME = {
    "家人/爸妈.md": "# 爸妈\n\n爸爸的生日是 3 月 12 日，妈妈的生日是农历八月十六。\n"
    "他们住在苏州，每年春节我们回去住一周。\n",
    "房子/宽带.md": "# 宽带\n\n宽带账号是 0512-88886666，每年一月续费，一年 1200 元。\n",
    "旅行/京都.md": "# 京都\n\n2026 年四月去京都看樱花，住在四条附近的酒店，下午三点入住。\n",
}
WORK_SAYS = "Work documents of the Rotterdam logistics team"


@pytest.fixture(scope="module")
def two(tmp_path_factory) -> tuple[Path, Path, Path]:
    """An English work folder (labelled `work`, described in its .askmd.toml) and a
    Chinese family folder (labelled by its name), indexed once into one index folder."""
    root = tmp_path_factory.mktemp("shelf")
    work = write_notes(root / "work-docs", WORK)
    (work / folders.CONFIG).write_text(f'description = "{WORK_SAYS}"\n', encoding="utf-8")
    home = write_notes(root / "家", HOME)
    ix = root / "ix"
    subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), "--knowledge", f"work={work}", "--knowledge",
         str(home), "--index-dir", str(ix), "index"],
        env=clean_env(), cwd=root, capture_output=True, check=True, timeout=120,
    )  # fmt: skip
    return work, home, ix


def rag(two, *args: str, folders_given: tuple[str, ...] | None = None, **env: str):
    work, home, ix = two
    given = folders_given or (f"work={work}", str(home))
    knowledge = [part for folder in given for part in ("--knowledge", folder)]
    return subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), *knowledge, "--index-dir", str(ix), *args],
        env=clean_env(**env), cwd=ix.parent, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


# --- how folders are given -------------------------------------------------------------------


def test_folders_are_given_by_flag_or_by_a_list_and_labelled(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "notes", tmp_path / "家"
    a.mkdir(parents=True)
    b.mkdir()
    flagged = load_settings(
        environ={}, dotenv_path=None, overrides={"knowledge_dir": (f"work={a}", str(b))}
    )
    assert [(f.label, f.path) for f in flagged.folders] == [("work", a), ("家", b)]
    assert flagged.knowledge_dir == a
    listed = load_settings(environ={"ASKMD_KNOWLEDGE_DIR": f"{a}{os.pathsep}{b}"}, dotenv_path=None)
    assert [f.label for f in listed.folders] == ["notes", "家"]
    one = load_settings(environ={"ASKMD_KNOWLEDGE_DIR": str(a)}, dotenv_path=None)
    assert one.folders == () and one.knowledge_dir == a
    # each keeps its own index: where it would be alone, or under ASKMD_INDEX_DIR/LABEL
    own = shelf.settings_of(flagged, flagged.folders[1])
    assert own.index_dir == index_home.default_index_dir(b) and own.folders == ()
    given = load_settings(
        environ={}, dotenv_path=None,
        overrides={"knowledge_dir": (f"work={a}", str(b)), "index_dir": tmp_path / "ix"},
    )  # fmt: skip
    assert shelf.settings_of(given, given.folders[0]).index_dir == tmp_path / "ix" / "work"


def test_a_label_given_twice_or_malformed_and_no_folder_at_all_are_one_line_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no knowledge/ here to fall back on
    a, b = tmp_path / "x" / "notes", tmp_path / "y" / "notes"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    with pytest.raises(AskmdError, match="two folders are labelled 'notes'"):
        load_settings(environ={}, dotenv_path=None, overrides={"knowledge_dir": (str(a), str(b))})
    with pytest.raises(AskmdError, match="'my notes' is no label") as bad_label:
        load_settings(
            environ={}, dotenv_path=None, overrides={"knowledge_dir": (f"my notes={a}", str(b))}
        )
    assert "\n" not in str(bad_label.value)  # not also "the knowledge folder does not exist"
    with pytest.raises(AskmdError, match="none of the knowledge folders exists") as refused:
        load_settings(
            environ={}, dotenv_path=None,
            overrides={"knowledge_dir": (str(tmp_path / "gone"), f"b={tmp_path / 'nope'}")},
        )  # fmt: skip
    assert "\n" not in str(refused.value)


def test_a_broken_description_is_said_and_the_folder_still_answers(tmp_path: Path) -> None:
    (tmp_path / folders.CONFIG).write_text('description = "unclosed\n', encoding="utf-8")
    said, problem = folders.description(tmp_path)
    assert said == "" and folders.CONFIG in problem and "\n" not in problem
    (tmp_path / folders.CONFIG).write_text("description = 3\n", encoding="utf-8")
    assert folders.description(tmp_path) == (
        "",
        f"{tmp_path / folders.CONFIG}: description is not text; no description for this folder",
    )
    (tmp_path / folders.CONFIG).unlink()
    assert folders.description(tmp_path) == ("", "")


def test_a_model_let_go_takes_its_questions_vectors_with_it() -> None:
    """A new model at the address of one let go never gets the old one's vectors."""

    class Model:
        pass

    calls = []

    def embed(texts):
        calls.append(list(texts))
        return np.full((len(texts), 4), len(calls), dtype=np.float32)

    for _ in range(20):  # CPython gives a new object the address of one just freed
        model = Model()
        embedder.remembered(model, embed, ["how do I reset the router?"])
        del model
    assert len(calls) == 20


def test_a_question_asked_of_several_indexes_is_embedded_once() -> None:
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return np.eye(len(texts), 4, dtype=np.float32)

    class Model:
        pass

    model = Model()
    first = embedder.remembered(model, embed, ["where is the office?"])
    again = embedder.remembered(model, embed, ["where is the office?", "another one"])
    assert calls == [["where is the office?"], ["another one"]]
    assert np.array_equal(first[0], again[0]) and again.shape == (2, 4)
    local = embedder.LocalEmbedder()
    asked = local.embed_queries(["when does the office open?"])
    assert np.allclose(asked, local.embed(["when does the office open?"]), atol=1e-6)


# --- the command line ------------------------------------------------------------------------


def test_search_ranks_both_folders_as_one_and_names_each_hit_s_folder(two) -> None:
    english = rag(two, "search", "--json", "-k", "4", "When does the office open?")
    assert english.returncode == 0, english.stderr
    results = json.loads(english.stdout)["results"]
    assert results[0]["folder"] == "work" and results[0]["source"] == "office.md"
    assert results[0]["folder_description"] == WORK_SAYS
    assert [r["rank"] for r in results] == [1, 2, 3, 4]
    chinese = json.loads(rag(two, "search", "--json", "-k", "4", "宽带账号是多少？").stdout)
    assert (chinese["results"][0]["folder"], chinese["results"][0]["source"]) == (
        "家", "房子/宽带.md",
    )  # fmt: skip
    assert chinese["results"][0]["folder_description"] == ""
    shown = rag(two, "search", "-k", "2", "When does the office open?")
    assert "[1]" in shown.stdout and "work:office.md" in shown.stdout
    # each folder's sync is a line of its own, led by its label
    assert [line.split(":")[0] for line in shown.stderr.splitlines()] == ["work", "家"]


def test_in_narrows_to_a_folder_and_an_unknown_label_is_refused_before_indexing(two) -> None:
    narrowed = json.loads(rag(two, "search", "--json", "--in", "家", "office hours").stdout)
    assert narrowed["results"] and {r["folder"] for r in narrowed["results"]} == {"家"}
    refused = rag(two, "search", "--in", "wrok", "office hours")
    assert refused.returncode == 1
    assert refused.stderr.strip() == "error: no folder is labelled 'wrok' (folders: work, 家)"


def test_ask_cites_with_the_folder_named(two) -> None:
    asked = rag(two, "ask", "--json", "What number is the on-call phone?")
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert answer["answered"] and "0142" in answer["answer"]
    assert answer["references"][0]["folder"] == "work"
    assert answer["references"][0]["source"] == "oncall.md"
    shown = rag(two, "ask", "爸爸的生日是哪天？").stdout
    assert "3 月 12 日" in shown and "家:家人/爸妈.md" in shown


def test_a_saved_answer_links_each_reference_into_its_own_folder(two, tmp_path: Path) -> None:
    saved = tmp_path / "answers.md"
    asked = rag(two, "ask", "爸爸的生日是哪天？", "--save", str(saved))
    assert asked.returncode == 0, asked.stderr
    text = saved.read_text(encoding="utf-8")
    found = re.search(r"\[家:家人/爸妈\.md\]\(([^)]+)\)", text)
    assert found, text
    _, home, _ = two
    linked = (saved.parent / unquote(found.group(1))).resolve()
    assert linked == (home / "家人" / "爸妈.md").resolve()
    scored = rag(two, "eval", str(saved))
    assert scored.returncode == 1
    assert scored.stderr.strip() == (
        "error: eval scores one folder: give one --knowledge (or one in ASKMD_KNOWLEDGE_DIR)"
    )


def test_why_and_related_read_the_note_s_own_folder(two) -> None:
    why = rag(two, "why", "家:房子/宽带.md", "宽带账号是多少？", "--json")
    assert why.returncode == 0, why.stderr
    assert json.loads(why.stdout)["status"] == "indexed"
    related = rag(two, "related", "office.md", "--json")  # a name only one folder has
    assert related.returncode == 0, related.stderr
    assert json.loads(related.stdout)["folder"] == "work"


def test_a_missing_folder_is_one_line_and_the_others_still_answer(two, tmp_path: Path) -> None:
    work, _, _ = two
    gone = tmp_path / "gone"
    found = rag(two, "search", "--json", "office", folders_given=(f"work={work}", str(gone)))
    assert found.returncode == 0, found.stderr
    said = [line for line in found.stderr.splitlines() if "gone" in line]
    assert said == [f"warning: the folder gone ({gone}) does not exist: answering from the others"]
    assert {r["folder"] for r in json.loads(found.stdout)["results"]} == {"work"}


def test_stats_lists_each_folder_with_its_description(two) -> None:
    stats = json.loads(rag(two, "stats", "--json").stdout)
    assert [(f["label"], f["description"], f["files"]) for f in stats["folders"]] == [
        ("work", WORK_SAYS, 3),
        ("家", "", 3),
    ]
    assert stats["files"] == 6 and stats["knowledge_dir"].count(os.pathsep) == 1
    shown = rag(two, "stats").stdout
    assert "work" in shown and WORK_SAYS in shown and "家" in shown
    files = json.loads(rag(two, "stats", "--files", "--json").stdout)["files"]
    assert {(f["folder"], f["source"]) for f in files} >= {
        ("work", "office.md"),
        ("家", "房子/宽带.md"),
    }


# --- the REPL, serve (API and MCP over HTTP) and watch ---------------------------------------


def test_the_repl_reads_both_folders_and_in_narrows_them(two) -> None:
    pexpect = pytest.importorskip("pexpect")
    from tests.test_repl_pty import PROMPT, Term

    work, home, ix = two
    env = clean_env()
    env.update(TERM="xterm-256color", COLUMNS="100", LINES="40")
    child = pexpect.spawn(
        sys.executable,
        [str(ROOT / "rag.py"), "--knowledge", f"work={work}", "--knowledge", str(home),
         "--index-dir", str(ix)],
        env=env, cwd=str(ix.parent), dimensions=(40, 100), encoding="utf-8", timeout=60,
    )  # fmt: skip
    try:
        term = Term(child)
        banner = " ".join(term.wait(PROMPT, timeout=60).split())  # as one line, unwrapped
        assert f"work ({work}/)" in banner and f"家 ({home}/)" in banner
        assert "work:oncall.md" in term.ask("What number is the on-call phone?")
        term.ask("/in 家")
        narrowed = term.ask("/debug What number is the on-call phone?")
        assert "家:" in narrowed and "work:" not in narrowed
        assert "no folder is labelled 'wrk'" in term.ask("/in wrk")
        term.ask("/in")
        assert "work:oncall.md" in term.ask("/debug What number is the on-call phone?")
        term.quit_with_eof()
    finally:
        if child.isalive():
            child.terminate(force=True)


def test_serve_answers_from_both_folders_over_the_api_and_mcp(two, tmp_path: Path) -> None:
    import httpx

    from tests.serving import URL
    from tests.test_mcp_http import over_http

    work, home, ix = two
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "rag.py"), "--knowledge", f"work={work}", "--knowledge",
         str(home), "--index-dir", str(ix), "serve", "--host", "127.0.0.1", "--port", "0"],
        env=clean_env(), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        started = process.stdout.readline()
        assert f"work={work}" in started and f"家={home}" in started
        url = URL.search(started).group(0)
        with httpx.Client(base_url=url, timeout=60) as client:
            found = client.post(
                "/api/v1/search",
                json={"query": "宽带账号", "filters": {"folders": ["家"]}, "top_k": 3},
            ).json()["results"]
            assert {r["folder"] for r in found} == {"家"}
            refused = client.post(
                "/api/v1/search", json={"query": "x", "filters": {"folders": ["nope"]}}
            )
            assert refused.status_code == 400 and "no folder is labelled 'nope'" in refused.text
            collections = client.get("/api/v1/collections").json()["collections"]
            assert [(c["label"], c["description"], c["files"]) for c in collections] == [
                ("work", WORK_SAYS, 3),
                ("家", "", 3),
            ]

        async def use(mcp):
            told = mcp.instructions
            searched = await mcp.call_tool(
                "search_notes", {"query": "When does the office open?", "k": 2, "folders": ["work"]}
            )
            listed = await mcp.call_tool("list_notes", {})
            read = await mcp.call_tool("read_note", {"path": "家:房子/宽带.md"})
            return told, searched, listed, read

        told, searched, listed, read = over_http(url, use)
        assert WORK_SAYS in told and "家" in told
        assert searched.structured_content["results"][0]["folder"] == "work"
        paths = [n["path"] for n in listed.structured_content["notes"]]
        assert "work:office.md" in paths and "家:房子/宽带.md" in paths
        assert "0512-88886666" in read.structured_content["text"]
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_watch_keeps_each_folder_live_and_names_it(two, tmp_path: Path) -> None:
    work, home, ix = two
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "rag.py"), "--knowledge", f"work={work}", "--knowledge",
         str(home), "--index-dir", str(ix), "watch", "--json"],
        env=clean_env(), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    note = home / "房子" / "水电.md"
    try:
        assert process.stderr is not None and process.stdout is not None
        deadline = time.monotonic() + 60
        while "watching" not in process.stderr.readline():
            assert time.monotonic() < deadline
        time.sleep(1)
        note.write_text("# 水电\n\n水费每两个月交一次。\n", encoding="utf-8")
        change = json.loads(process.stdout.readline())
        assert change["folder"] == "家" and change["added"] == ["房子/水电.md"]
    finally:
        process.terminate()
        process.wait(timeout=30)
        note.unlink(missing_ok=True)


def test_mcp_over_stdio_reads_both_folders(two) -> None:
    import asyncio

    from mcp import Client, StdioServerParameters

    work, home, ix = two
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(ROOT / "rag.py"), "--knowledge", f"work={work}", "--knowledge", str(home),
              "--index-dir", str(ix), "mcp"],
        env=clean_env(), cwd=str(ix.parent),
    )  # fmt: skip

    async def main():
        async with Client(params, read_timeout_seconds=60) as client:
            found = await client.call_tool(
                "ask", {"question": "宽带账号是多少？", "folders": ["家"]}
            )
            note = await client.read_resource("note://家:房子/宽带.md")
            return client.instructions, found, note

    told, found, note = asyncio.run(main())
    assert WORK_SAYS in told
    answer = found.structured_content
    assert answer["answered"] and {r["folder"] for r in answer["references"]} == {"家"}
    assert "0512-88886666" in note.contents[0].text


def test_index_status_says_syncing_while_any_folder_s_index_is_written(two) -> None:
    from askmd.interfaces import mcp_server
    from tests.locking import lock_held

    work, home, ix = two
    settings = load_settings(
        environ={}, dotenv_path=None,
        overrides={"knowledge_dir": (f"work={work}", str(home)), "index_dir": ix},
    )  # fmt: skip
    server = mcp_server.build(shelf.Shelf(settings), watch=False)
    server.notes.started.set()  # the start-up sync is not run here
    assert server.notes.index_status()["syncing"] is False
    with lock_held(ix / "家"):
        assert server.notes.index_status()["syncing"] is True
