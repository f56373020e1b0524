"""Embeds: an embedded section's words are found where they are written and listed where
they are shown (`Hit.shown_in`), cycles and chains bounded, edits seen by the next search."""

import pytest

from askmd import evaluate, pipeline
from askmd.interfaces import console, found_display
from askmd.settings import load_settings
from tests.conftest import write_notes

VAULT = {
    "Sync.md": (
        "# Sync\n\nIntro about syncing.\n\n## Selective sync\n\n"
        "Choose folders to leave out with the quokka filter.\n\n"
        "## Conflicts\n\nConflicts are merged by the pelican merger.\n"
    ),
    "Guide.md": "# Guide\n\nHow to set things up.\n\n## Setup\n\n![[sync#Selective sync]]\n",
    "Snippet.md": "The wombat ledger lists every payment.\n",
    "Whole.md": "# Whole\n\nAbove the snippet.\n\n![[Snippet]]\n",
    "Blocks.md": "# Blocks\n\nThe narwhal rule applies to all. ^rule1\n",
    "Uses block.md": "# Uses\n\n![[Blocks#^rule1]]\n",
    "Broken.md": "# Broken\n\n![[Nowhere#Part]]\n\n![[diagram.png]]\n\nThe ferret page.\n",
    # A cycle: A embeds B, B embeds A.
    "A.md": "# A\n\nAlpha words about the ocelot.\n\n![[B]]\n",
    "B.md": "# B\n\nBeta words about the tapir.\n\n![[A]]\n",
    # A chain four deep: C0 in C1 (under Part) in C2 in C3 in C4; C5 embeds C1's other part.
    "C0.md": "The axolotl gills regrow.\n",
    "C1.md": "# C1\n\n## Part\n\n![[C0]]\n\n## Other\n\nNothing here.\n",
    "C2.md": "# C2\n\n![[C1#Part]]\n",
    "C3.md": "# C3\n\n![[C2]]\n",
    "C4.md": "# C4\n\n![[C3]]\n",
    "C5.md": "# C5\n\n![[C1#Other]]\n",
}

# (query, the note the words are in: first hit, the notes that show them with the embed's line)
TABLE = [
    ("quokka filter", "Sync.md", [("Guide.md", 7)]),  # a section, linked case-insensitively
    ("pelican merger", "Sync.md", []),  # a section nobody embeds
    ("wombat ledger", "Snippet.md", [("Whole.md", 5)]),  # a whole note
    ("narwhal rule", "Blocks.md", [("Uses block.md", 3)]),  # a block
    ("ferret page", "Broken.md", []),  # its own embeds point nowhere: nothing breaks
    ("tapir", "B.md", [("A.md", 5)]),  # the cycle ends at the note the words are in
    ("ocelot", "A.md", [("B.md", 5)]),
    # Three deep at most; C5 shows C1's other section, not the one holding C0.
    ("axolotl gills", "C0.md", [("C1.md", 5), ("C2.md", 3), ("C3.md", 3)]),
]


def index_of(kb, tmp_path) -> pipeline.Index:
    settings = load_settings({}, None, {"knowledge_dir": kb, "index_dir": tmp_path / "ix"})
    index = pipeline.Index(settings)
    index.sync()
    return index


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> pipeline.Index:
    tmp = tmp_path_factory.mktemp("embeds")
    return index_of(write_notes(tmp / "kb", VAULT), tmp)


@pytest.mark.parametrize(("query", "source", "shown"), TABLE)
@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
def test_a_hit_is_cited_where_written_and_listed_where_shown(index, query, source, shown, mode):
    first = index.search(query, 3, mode=mode)[0]
    assert first.source == source
    assert first.shown_in == tuple(shown)
    # The words quoted are the note's own lines, and the notes that show them rank next.
    assert query.split()[0] in first.text
    assert evaluate.rank_files([first]) == [source, *(s for s, _ in shown)]
    listed = pipeline.search_json(query, [first])["results"][0]
    assert listed.get("shown_in", []) == [{"source": s, "line": line} for s, line in shown]


def test_an_answer_cites_the_note_the_words_are_in(index):
    result = index.ask("what is the quokka filter for?", [], k=3)
    assert result.mode == "extractive"
    assert result.references[0].source == "Sync.md"


def test_an_edit_to_either_note_is_seen_by_the_next_search(tmp_path):
    kb = write_notes(tmp_path / "kb", {n: VAULT[n] for n in ("Sync.md", "Guide.md")})
    index = index_of(kb, tmp_path)
    assert index.search("quokka filter", 1)[0].shown_in == (("Guide.md", 7),)
    sync = kb / "Sync.md"
    sync.write_text(sync.read_text().replace("quokka filter", "meerkat sieve"))
    index.sync()
    first = index.search("meerkat sieve", 1)[0]
    assert (first.source, first.shown_in) == ("Sync.md", (("Guide.md", 7),))
    assert "meerkat" in first.text
    guide = kb / "Guide.md"
    guide.write_text(guide.read_text().replace("![[sync#Selective sync]]", "Nothing shown."))
    index.sync()
    assert index.search("meerkat sieve", 1)[0].shown_in == ()


def test_the_embedding_note_keeps_its_own_lines(index):
    """The embed's own chunk is Guide's, quoting Guide's lines (the `![[...]]` line)."""
    own = [h for h in index.search("Guide setup", 5, mode="keyword") if h.source == "Guide.md"]
    assert own and "![[sync#Selective sync]]" in own[0].text
    assert own[0].line_start <= 7 <= own[0].line_end


def test_search_and_debug_say_where_a_hit_is_shown(run_rag, tmp_path):
    kb = write_notes(tmp_path / "kb", {n: VAULT[n] for n in ("Sync.md", "Guide.md")})
    where = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    found = run_rag(*where, "search", "quokka filter", "-k", "1", ASKMD_WATCH="0")
    assert found.returncode == 0, found.stderr
    assert "Sync.md" in found.stdout and "shown in Guide.md:7" in found.stdout
    alone = run_rag(*where, "search", "pelican merger", "-k", "1", ASKMD_WATCH="0")
    assert alone.returncode == 0 and "shown in" not in alone.stdout  # nobody embeds it


def test_debug_lists_where_a_hit_is_shown(index):
    hits = index.search("quokka filter", 3)
    width, console.out.width = console.out.width, 200  # one table row a line
    try:
        with console.out.capture() as captured:
            found_display.show_debug(hits, "quokka filter", index.graph.backlinks())
    finally:
        console.out.width = width
    assert "shown in Guide.md:7" in captured.get()


def test_debug_at_110_columns_breaks_no_path_inside_a_word() -> None:
    from askmd.search.hits import Hit

    hits = [
        Hit(n, 0.9 - n / 10, f"c{n}", f"projects/homelab/backups/offsite-restic-hetzner-{n}.md",
            "Backups > Offsite", 1, 9, "Set up the offsite restic backup to the storage box. " * 3)
        for n in (1, 2, 3)
    ]  # fmt: skip
    width, console.out.width = console.out.width, 110
    try:
        with console.out.capture() as captured:
            found_display.show_debug(hits, "offsite backup")
    finally:
        console.out.width = width
    shown = captured.get()
    for n in (1, 2, 3):
        assert f"projects/homelab/backups/offsite-restic-hetzner-{n}.md" in shown, shown
