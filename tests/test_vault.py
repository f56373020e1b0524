"""Note-app syntax: the searchable text, links and tags read from a note's body."""

import pytest

import chunker
from askmd.read import notes, vault
from tests.conftest import write_notes

# (verbatim line, searchable line, links as (target, heading, embed), tags)
TABLE = [
    ("See [[Daily notes]].", "See Daily notes.", [("Daily notes", "", False)], []),
    (
        "Use [[Sync#Selective sync|choose what syncs]] now",
        "Use choose what syncs now",
        [("Sync", "Selective sync", False)],
        [],
    ),
    ("[[Sync#Selective sync]]", "Sync > Selective sync", [("Sync", "Selective sync", False)], []),
    ("[[#Local heading]]", "Local heading", [("", "Local heading", False)], []),
    ("[[Note#^abc123]]", "Note", [("Note", "^abc123", False)], []),
    ("[[Folder/Note.md|here]]", "here", [("Folder/Note.md", "", False)], []),
    ("![[Other#Part]]", "Other > Part", [("Other", "Part", True)], []),
    ("![[diagram.png]]", "diagram.png", [("diagram.png", "", True)], []),
    ("> [!warning] Loading remote content", "> Loading remote content", [], []),
    ("> [!tip]- Folded tip", "> Folded tip", [], []),
    ("> [!example]", "> Example", [], []),
    ("> [!note] See [[X|the x]]", "> See the x", [("X", "", False)], []),
    ("A paragraph with an id ^a1b2c3", "A paragraph with an id ", [], []),
    ("Cost is 5^2", "Cost is 5^2", [], []),
    ("before %% a secret %% after", "before  after", [], []),
    ("before <!-- hidden --> after", "before  after", [], []),
    ("See ((64f1a2b3-0000-4000-8000-00000000abcd)) here", "See  here", [], []),
    ("tagged #project and #project/alpha", None, [], ["project", "project/alpha"]),
    ("http://example.com/page#fragment and [x](#anchor)", None, [("", "anchor", False)], []),
    # Markdown links into the vault are links too (their text stays as written)
    (
        "[the guide](Folder/My%20Note.md#Set%20up) and [[Wiki]]",
        "[the guide](Folder/My%20Note.md#Set%20up) and Wiki",
        [("Folder/My Note.md", "Set up", False), ("Wiki", "", False)],
        [],
    ),
    ('![chart](<img/a b.png> "Title")', None, [("img/a b.png", "", True)], []),
    (
        "[up](../Other/Note.md) [p](Note_(film).md)",
        None,
        [("../Other/Note.md", "", False), ("Note_(film).md", "", False)],
        [],
    ),  # fmt: skip
    ("[web](https://x.org/a#b) [m](mailto:a@b.c) [o](obsidian://open?v=1)", None, [], []),
    ("`[code](x.md)` and [a [b] c](y.md)", None, [("y.md", "", False)], []),
    ("`#code` and `[[code link]]`", None, [], []),
    ("issue #123 is numeric", None, [], []),
    ("# A heading, not a tag", None, [], []),
    ("#tag at line start", None, [], ["tag"]),
]


@pytest.mark.parametrize(("verbatim", "searchable", "links", "tags"), TABLE)
def test_searchable_text_links_and_tags(verbatim, searchable, links, tags):
    found = vault.scan(verbatim)
    assert vault.apply(verbatim, found.edits) == (searchable or verbatim)
    assert [(k.target, k.heading, k.embed) for k in found.links] == links
    assert [t for t, _ in found.tags] == tags


def test_code_fences_and_multiline_comments_keep_line_numbers():
    text = "one [[A]]\n```\n[[not]] #nottag\n```\n%% two\nlines %% #real\n<!--\nx\n-->end ^id9"
    found = vault.scan(text)
    clean = vault.apply(text, found.edits)
    assert clean.count("\n") == text.count("\n")
    assert clean.split("\n") == ["one A", "```", "[[not]] #nottag", "```", "", " #real", "", "",
                                 "end "]  # fmt: skip
    assert [(k.target, k.line) for k in found.links] == [("A", 0)]
    assert found.tags == (("real", 5),)


def test_a_range_cut_inside_a_comment_keeps_only_its_newlines():
    text = "a %% x\ny %% b"
    edits = vault.scan(text).edits
    assert vault.apply(text, edits, 0, 5) == "a "
    assert vault.apply(text, edits, 5, len(text)) == "\n b"


def test_resolution_is_case_insensitive_prefers_same_folder_then_shortest_path():
    r = vault.Resolver(["a/Note.md", "b/c/Note.md", "b/Other.md", "img/diagram.png", "x.md"])
    assert r.resolve("note", "b/c/y.md") == "b/c/Note.md"  # the linking note's folder
    assert r.resolve("note", "x.md") == "a/Note.md"  # shortest path of the ambiguous two
    assert r.resolve("c/note", "x.md") == "b/c/Note.md"  # a partial path
    assert r.resolve("B/OTHER.md", "x.md") == "b/Other.md"
    assert r.resolve("diagram.png", "x.md") == "img/diagram.png"  # attachments are links
    assert r.resolve("missing", "x.md") is None
    assert r.resolve("", "x.md") == "x.md"  # [[#Heading]]
    assert r.resolve("../Other.md", "b/c/Note.md") == "b/Other.md"  # a Markdown link's path
    assert r.resolve("./Note.md", "b/c/y.md") == "b/c/Note.md"


def test_tag_filter_matches_nested_tags():
    assert vault.tag_matches("#project", ["project/alpha"])
    assert vault.tag_matches("Project", ["project"])
    assert not vault.tag_matches("project", ["projects"])
    assert not vault.tag_matches("project/alpha", ["project"])


def test_chunks_quote_verbatim_lines_and_embed_the_searchable_text():
    data = (
        b"---\ntags: [guide]\n---\n# Sync\n\nPick [[Sync#Selective sync|what syncs]] ^b1\n\n"
        b"## Later\n\n%% draft note %%\n> [!tip] Keep it short\n"
    )
    note = notes.parse(data, "Sync.md")
    chunks = chunker.split_note(note, size=40, overlap=0)
    by_line = {c.line_start: c for c in chunks}
    first = by_line[4]
    assert "[[Sync#Selective sync|what syncs]] ^b1" in first.text  # quoted as written
    assert "Pick what syncs" in first.embedding_text and "[[" not in first.embedding_text
    later = by_line[8]
    assert later.text.startswith("## Later") and "%% draft note %%" in later.text
    assert "draft" not in later.embedding_text and "> Keep it short" in later.embedding_text
    assert later.line_end == 11  # the file's line numbers, front matter counted
    plain = chunker.split_note(notes.parse(b"# A\n\nno vault syntax here\n", "a.md"))
    assert plain[0].search_text is None  # unchanged text: the same embedding, from the cache


def test_a_long_line_cut_mid_line_gives_each_piece_its_own_searchable_part():
    words = " ".join(f"[[Note {i}|word{i}]] filler text." for i in range(60))
    note = notes.parse(f"# T\n\n{words}\n".encode(), "t.md")
    chunks = chunker.split_note(note, size=300, overlap=0)
    assert len(chunks) > 2
    seen = []
    for c in chunks:
        assert "[[" not in c.embedding_text
        seen += [w for w in c.embedding_text.split() if w.startswith("word")]
    assert seen == [f"word{i}" for i in range(60)]  # every link once, in order


VAULT = {
    "Home.md": "# Home\n\nStart at [[Guides/Sync|sync]] and [[sync#Selective sync]].\n"
    "Also [[Missing note]] and ![[diagram.png]].\n",
    "Guides/Sync.md": "# Sync\n\n## Selective sync\n\nBack to [[home]]. ^s1\n",
    "Other/Sync.md": "# Another sync\n\nNot linked by name from Home: Guides/ is nearer.\n",
    "img/diagram.png": "not really a png",
}


def test_links_command_and_stats_count_the_graph(run_rag, tmp_path):
    import json

    kb = write_notes(tmp_path / "kb", VAULT)
    args = ("--knowledge", str(kb), "--index-dir", str(tmp_path / "ix"))
    assert run_rag(*args, "index").returncode == 0
    result = run_rag(*args, "links", "Home", "--json")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found == {
        "note": "Home.md",
        "links": [
            {"target": "Guides/Sync.md", "heading": "", "line": 3, "broken": False},
            {"target": "Guides/Sync.md", "heading": "Selective sync", "line": 3, "broken": False},
            {"target": "Missing note", "heading": "", "line": 4, "broken": True},
            {"target": "img/diagram.png", "heading": "", "line": 4, "broken": False},
        ],
        "backlinks": [{"source": "Guides/Sync.md", "line": 5}],
    }
    stats = json.loads(run_rag(*args, "stats", "--json").stdout)
    assert (stats["links"], stats["broken_links"]) == (5, 1)
    missing = run_rag(*args, "links", "Nowhere")
    assert missing.returncode != 0 and len(missing.stderr.strip().splitlines()) == 1
    # A note added later mends the link to it without re-indexing the note it is in.
    (kb / "Missing note.md").write_text("# Missing note\n\nHere now.\n", encoding="utf-8")
    assert run_rag(*args, "index").returncode == 0
    stats = json.loads(run_rag(*args, "stats", "--json").stdout)
    assert (stats["links"], stats["broken_links"]) == (5, 0)


MARKDOWN_LINKED = {
    "Guides/Setup.md": "# Setup\n\nSee [sync](../Guides/Sync%20notes.md#Selective%20sync), "
    "[the web](https://example.com/x.md) and ![chart](<../img/a chart.png>).\n"
    "Also [gone](Nowhere.md).\n",
    "Guides/Sync notes.md": "# Sync notes\n\n## Selective sync\n\nBack to [setup](Setup.md).\n",
    "img/a chart.png": "not really a png",
}


def test_markdown_links_are_in_the_graph_and_old_indexes_read_them_again(run_rag, tmp_path):
    import json
    import sqlite3

    kb = write_notes(tmp_path / "kb", MARKDOWN_LINKED)
    ix = tmp_path / "ix"
    args = ("--knowledge", str(kb), "--index-dir", str(ix))
    assert run_rag(*args, "index").returncode == 0
    expected = {
        "note": "Guides/Setup.md",
        "links": [
            {"target": "Guides/Sync notes.md", "heading": "Selective sync", "line": 3,
             "broken": False},
            {"target": "img/a chart.png", "heading": "", "line": 3, "broken": False},
            {"target": "Nowhere.md", "heading": "", "line": 4, "broken": True},
        ],
        "backlinks": [{"source": "Guides/Sync notes.md", "line": 5}],
    }  # fmt: skip
    assert json.loads(run_rag(*args, "links", "Guides/Setup.md", "--json").stdout) == expected

    # An index whose links an older reader recorded (wikilinks only) reads them again on
    # its next start, without re-recording or re-embedding a note.
    db = sqlite3.connect(ix / "manifest.sqlite3")
    db.execute("DELETE FROM links")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'links_version'")
    db.commit()
    db.close()
    synced = json.loads(run_rag(*args, "index", "--json").stdout)
    assert (synced["files_changed"], synced["chunks_embedded"]) == (0, 0)
    assert json.loads(run_rag(*args, "links", "Guides/Setup.md", "--json").stdout) == expected
    stats = json.loads(run_rag(*args, "stats", "--json").stdout)
    assert (stats["links"], stats["broken_links"]) == (4, 1)


TAGGED = {
    "alpha.md": "---\ntags: [project/alpha]\n---\n# Alpha\n\nThe deploy checklist for alpha.\n",
    "beta.md": "# Beta\n\nThe deploy checklist for beta. #project/beta\n\n"
    "## Untagged part\n\nAnother deploy checklist, with no tag here.\n",
    "gamma.md": "# Gamma\n\nThe deploy checklist for gamma. #personal\n",
}


def test_tag_filters_search_and_ask_from_the_cli(run_rag, tmp_path):
    import json

    kb = write_notes(tmp_path / "kb", TAGGED)
    args = ("--knowledge", str(kb), "--index-dir", str(tmp_path / "ix"))
    result = run_rag(*args, "search", "deploy checklist", "--tag", "#project", "--json", "-k", "10")
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)["results"]
    # Front-matter tags cover the note; an inline tag covers only its chunk.
    assert sorted((h["source"], h["line_start"]) for h in hits) == [("alpha.md", 4), ("beta.md", 1)]
    both = run_rag(*args, "search", "deploy", "--tag", "project", "--tag", "project/beta", "--json")
    assert [h["source"] for h in json.loads(both.stdout)["results"]] == ["beta.md"]
    none = run_rag(*args, "search", "deploy", "--tag", "projects", "--json")
    assert json.loads(none.stdout)["results"] == []
    ask = run_rag(*args, "ask", "deploy checklist?", "--tag", "personal", "--json")
    assert ask.returncode == 0, ask.stderr
    assert {r["source"] for r in json.loads(ask.stdout)["references"]} == {"gamma.md"}


def test_a_tag_no_note_has_is_named_with_the_nearest_tags(run_rag, tmp_path):
    kb = write_notes(tmp_path / "kb", TAGGED)
    args = ("--knowledge", str(kb), "--index-dir", str(tmp_path / "ix"))
    near = run_rag(*args, "search", "deploy", "--tag", "#persnal")
    assert near.returncode == 0, near.stderr
    assert near.stdout.splitlines()[-1] == "no note has the tag #persnal (nearest: #personal)"
    far = run_rag(*args, "search", "deploy", "--tag", "nosuchtag")
    assert " ".join(far.stdout.split()).endswith(  # wrapped at 80 columns
        "no note has the tag #nosuchtag (tags in the notes: #personal, #project/alpha, "
        "#project/beta)"
    )
    known = run_rag(*args, "search", "deploy", "--tag", "project")  # a parent of two tags
    assert "no note has" not in known.stdout and "alpha.md" in known.stdout


def test_tag_filter_over_the_api(tmp_path):
    from tests.serving import Server

    with Server(tmp_path, TAGGED) as server:
        client = server.client()
        body = {"query": "deploy checklist", "top_k": 10, "filters": {"tag": ["#personal"]}}
        reply = client.post("/api/v1/search", json=body)
        assert reply.status_code == 200, reply.text
        assert [h["source"] for h in reply.json()["results"]] == ["gamma.md"]


def test_debug_shows_each_hits_tags_and_how_many_notes_link_to_it(tmp_path):
    import subprocess
    import sys

    from tests.conftest import ROOT, clean_env

    kb = write_notes(
        tmp_path / "kb",
        {
            "Deploy.md": "---\ntags: [project/alpha]\n---\n# Deploy\n\nDeploy window: Monday.\n",
            "a.md": "# A\n\nSee [[Deploy]] before shipping.\n",
            "b.md": "# B\n\nAlso [[deploy|the deploy note]]. #ops\n",
        },
    )
    result = subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir",
         str(tmp_path / "ix"), "--no-watch"],
        input="/debug when is the deploy window\n", capture_output=True, text=True,
        env={**clean_env(), "COLUMNS": "200"}, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if "Deploy.md" in line)
    cells = [c.strip() for c in row.split("│")]
    assert "#project/alpha" in cells and "2" in cells, row  # linked from a.md and b.md
    ops = next(line for line in result.stdout.splitlines() if "b.md" in line)
    assert "#ops" in ops and "links in" in result.stdout
