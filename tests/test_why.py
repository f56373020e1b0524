"""`why NOTE QUESTION`: whether a note is indexed, where each retriever ranked its best
chunks, what ranked above, and whether the answer read and quoted it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from askmd import pipeline
from askmd.search import why
from askmd.settings import load_settings
from tests.conftest import ROOT, clean_env, index_once, write_notes

NOTES = {
    "homelab/nas.md": "---\ntype: server\n---\n# NAS\n\nThe NAS runs TrueNAS Scale and "
    "backs up to a Hetzner storage box with restic every night at 02:00.\n",
    "homelab/router.md": "---\ntype: server\n---\n# Router\n\nThe router is an OpenWrt box; "
    "its admin page is on port 8443.\n",
    "recipes/bread.md": "# Bread\n\nThe sourdough starter is fed every morning with 50 g "
    "of rye flour.\n",
    "journal/2026-11-29.md": "# Sunday\n\nPancakes for breakfast. A long walk by the river.\n",
}


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> pipeline.Index:
    kb = write_notes(tmp_path_factory.mktemp("why") / "kb", NOTES)
    (kb / "blob.md").write_bytes(bytes(range(256)) * 8)  # no text: skipped
    ix = index_once(kb, clean_env())
    return pipeline.Index(load_settings({}, None, {"knowledge_dir": kb, "index_dir": ix}))


def test_a_note_that_answers_is_retrieved_and_cited_with_its_ranks(index) -> None:
    found = why.explain(index, "homelab/nas.md", "When does the NAS back up with restic?")
    assert found["status"] == "indexed"
    assert found["retrieved"] and found["cited"]
    assert found["verdict"] == "homelab/nas.md was retrieved and cited"
    best = found["chunks"][0]
    assert best["keyword_rank"] == 1 and best["dense_rank"] == 1 and best["fused_rank"] == 1
    assert found["above"] == []


def test_a_note_ranked_below_others_says_what_ranked_above(index) -> None:
    found = why.explain(index, "nas", "What port is the router's admin page on?")
    assert found["note"] == "homelab/nas.md"  # found by its name, as a link finds it
    assert not found["cited"]
    assert found["chunks"][0]["fused_rank"] > 1
    assert found["above"][0]["source"] == "homelab/router.md"


def test_never_seen_skipped_and_filtered_out_are_said(index) -> None:
    never = why.explain(index, "homelab/nass.md", "restic")
    assert never["status"] == "never seen" and never["closest_files"][0] == "homelab/nas.md"
    skipped = why.explain(index, "blob.md", "restic")
    assert skipped["status"].startswith("skipped") and "not in the index" in skipped["verdict"]
    filters = pipeline.filters(None, None, where=["type=recipe"])
    left_out = why.explain(index, "homelab/nas.md", "restic", filters)
    assert left_out["excluded_by_filter"] is True
    assert left_out["verdict"] == "homelab/nas.md is left out by the filters given"


def test_the_cli_and_the_repl(index) -> None:
    where = ["--knowledge", str(index.settings.knowledge_dir),
             "--index-dir", str(index.settings.index_dir)]  # fmt: skip

    def rag(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(ROOT / "rag.py"), *where, *args], input=stdin,
            capture_output=True, text=True, env=clean_env(), cwd=Path.home(), timeout=120,
        )  # fmt: skip

    asked = rag("why", "recipes/bread.md", "how often is the starter fed?", "--json")
    assert asked.returncode == 0, asked.stderr
    assert json.loads(asked.stdout)["verdict"] == "recipes/bread.md was retrieved and cited"
    repl = rag(stdin="/why homelab/router.md what port is the admin page on?\n/why nas\n")
    assert "homelab/router.md was retrieved and cited" in repl.stdout
    assert "/why needs a note and a question" in repl.stderr
