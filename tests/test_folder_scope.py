"""Which files an index takes from the knowledge folder, end to end through `rag.py`:
links that lead out of it are refused, hidden files are named, and a folder that cannot
be read keeps what was indexed from it."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, clean_env, write_notes

SECRET = "root:x:0:0:quokkasecret:/root:/bin/bash\n"


def skipped_of(result: subprocess.CompletedProcess) -> dict[str, str]:
    assert result.returncode == 0, result.stderr
    return {s["path"]: s["reason"] for s in json.loads(result.stdout)["files_skipped"]}


def test_links_out_of_the_folder_are_not_indexed_unless_asked(run_rag, tmp_path: Path) -> None:
    secret = tmp_path / "etc" / "passwd"
    write_notes(tmp_path / "etc", {"passwd": SECRET, "shared/s.md": "# S\n\nquokkashared\n"})
    kb = write_notes(tmp_path / "kb", {"a.md": "# A\n\nThe API listens on port 8420.\n"})
    (kb / "passwd.md").symlink_to(secret)
    (kb / "shared").symlink_to(tmp_path / "etc" / "shared", target_is_directory=True)
    (kb / "same.md").symlink_to("a.md")  # a link inside the folder keeps working
    where = ("--knowledge", str(kb), "--index-dir", str(tmp_path / "ix"))

    indexed = run_rag(*where, "index", "--json")
    for word in ("quokkasecret", "quokkashared"):
        found = run_rag(*where, "search", word, "--json")
        assert found.returncode == 0, found.stderr
        texts = [r["text"] for r in json.loads(found.stdout)["results"]]
        assert texts and not any(word in t for t in texts)
    skipped = skipped_of(indexed)
    assert list(skipped) == ["passwd.md", "shared/"]
    assert all("links outside the knowledge folder" in r for r in skipped.values())
    stats = json.loads(run_rag(*where, "stats", "--json").stdout)
    assert stats["files"] == 2  # a.md and same.md

    followed = run_rag(*where, "index", "--json", ASKMD_FOLLOW_SYMLINKS="1")
    assert skipped_of(followed) == {}
    assert json.loads(followed.stdout)["files_added"] == 2
    found = run_rag(*where, "search", "quokkasecret", "--json", ASKMD_FOLLOW_SYMLINKS="1")
    assert "quokkasecret" in json.loads(found.stdout)["results"][0]["text"]
    unfollowed = json.loads(run_rag(*where, "index", "--json").stdout)  # the setting off again
    assert (unfollowed["files_deleted"], unfollowed["chunks_total"]) == (2, 2)


def test_a_hidden_note_is_reported_not_dropped_silently(run_rag, tmp_path: Path) -> None:
    kb = write_notes(
        tmp_path / "kb",
        {"pages/common/..md": "# .\n\nRun commands from a file.\n", "pages/common/ls.md": "# ls\n"},
    )
    write_notes(kb, {".git/notes.md": "tool state\n", ".obsidian/x.md": "tool state\n"})
    result = run_rag("--knowledge", str(kb), "--index-dir", str(tmp_path / "ix"), "index", "--json")
    assert skipped_of(result) == {"pages/common/..md": "hidden (its name starts with a dot)"}
    assert json.loads(result.stdout)["files_added"] == 1
    shown = run_rag("--knowledge", str(kb), "--index-dir", str(tmp_path / "ix"), "index")
    assert "pages/common/..md: hidden (its name starts with a dot); skipped" in shown.stderr


# --- an unreadable folder ----------------------------------------------------------------
# chmod 000 stops every user but root, and the tests may run as root. There the index runs
# as root without the two capabilities that let root ignore permissions (dropped from the
# bounding set before exec), so a folder with mode 000 cannot be listed, as for anyone.

PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2


def _drop_permission_override() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def as_unprivileged(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`python ARGS` in a process that chmod 000 stops."""
    drop = _drop_permission_override if os.geteuid() == 0 else None
    try:
        return subprocess.run(
            [sys.executable, *args],
            cwd=cwd,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=drop,
        )
    except subprocess.SubprocessError as exc:  # root without CAP_SETPCAP (a tight container)
        pytest.skip(f"running as root and cannot give up the permission override: {exc}")


def test_an_unreadable_folder_keeps_its_notes(tmp_path: Path) -> None:
    kb = write_notes(
        tmp_path / "kb",
        {
            "top.md": "# Top\n\nThe API listens on port 8420.\n",
            "locked/a.md": "# A\n\nFeed the starter daily.\n",
            "locked/deeper/b.md": "# B\n\nMetrics are on 9420.\n",
        },
    )
    where = (str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(tmp_path / "ix"))
    first = as_unprivileged(tmp_path, *where, "index", "--json")
    assert json.loads(first.stdout)["files_added"] == 3, first.stderr
    (kb / "locked").chmod(0)

    again = as_unprivileged(tmp_path, *where, "index", "--json")
    report = json.loads(again.stdout)
    assert (report["files_deleted"], report["files_unchanged"]) == (0, 3)
    assert report["chunks_total"] == 3
    assert skipped_of(again) == {
        "locked/": "a folder that cannot be read (Permission denied); its notes stay indexed"
    }
    found = as_unprivileged(tmp_path, *where, "search", "starter", "--json")
    assert json.loads(found.stdout)["results"][0]["source"] == "locked/a.md", found.stderr

    (kb / "locked").chmod(0o755)
    (kb / "locked" / "deeper" / "b.md").unlink()  # readable again: real changes count
    back = json.loads(as_unprivileged(tmp_path, *where, "index", "--json").stdout)
    assert (back["files_deleted"], back["files_skipped"], back["chunks_total"]) == (1, [], 2)


def test_find_names_the_unreadable_folder(tmp_path: Path) -> None:
    """notes.find itself, in a process that chmod 000 stops (see above)."""
    kb = write_notes(tmp_path / "kb", {"a.md": "a\n", "locked/b.md": "b\n"})
    (kb / "locked").chmod(0)
    try:
        code = (
            "import json, sys, pathlib; from askmd.read import notes; "
            "print(json.dumps(notes.find(pathlib.Path(sys.argv[1]), ('*.md',)), default=vars))"
        )
        result = as_unprivileged(ROOT, "-c", code, str(kb))
    finally:
        (kb / "locked").chmod(0o755)
    found, skipped = json.loads(result.stdout)
    assert found == ["a.md"]
    assert skipped == [
        {
            "source": "locked/",
            "reason": "a folder that cannot be read (Permission denied); its notes stay indexed",
            "unreadable_folder": True,
        }
    ]
