"""Keyword ranking with fields (BM25F): a note's title, front matter aliases and heading
chain count on their own, and an index from before fields gets them on its next sync."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from askmd.index import manifest
from askmd.index.manifest import FileRecord, Manifest, chunk_row
from askmd.read import notes
from askmd.terms import content_terms
from tests.conftest import ROOT, clean_env, write_notes

# The same words in each note's text; only the fields tell the notes apart.
TEXT = "Turn the setting off in the panel, then restart so the change holds."


def record(m: Manifest, title: str, aliases: tuple[str, ...] = (), chain=()) -> None:
    source = f"{title}.md"
    row = chunk_row(f"{source}#0", f"h-{source}", TEXT, title=title, aliases=aliases, chain=chain)
    m.record([(FileRecord(source, "md5", 1, 0, 1), [row])])


def ranked(m: Manifest, question: str, weights=None) -> list[str]:
    return [c for c, _ in m.keyword(content_terms(question), 10, weights=weights)]


def test_a_question_naming_an_alias_finds_the_note(tmp_path: Path) -> None:
    m = Manifest(tmp_path / "manifest.sqlite3")
    record(m, "Power settings", aliases=("Sleep mode", "suspend"))
    record(m, "Display settings", chain=("Display settings", "Brightness"))
    record(m, "Sound settings")
    assert ranked(m, "how do I stop suspend?", (0.0, 1.0, 0.0)) == ["Power settings.md#0"]
    assert ranked(m, "how do I stop suspend?", (0.0, 0.0, 0.0)) == []  # the text lacks it


def test_field_weights_lift_the_note_whose_title_or_heading_names_the_topic(
    tmp_path: Path,
) -> None:
    m = Manifest(tmp_path / "manifest.sqlite3")
    record(m, "Sound settings")
    record(m, "Display panel", chain=("Display panel", "Brightness"))
    # Both texts say "setting" and "panel" once; the title and the chain decide.
    assert ranked(m, "brightness panel setting", (0.0, 0.0, 1.0))[0] == "Display panel.md#0"
    assert ranked(m, "sound setting", (1.0, 0.0, 0.0))[0] == "Sound settings.md#0"


def test_without_field_weights_the_score_is_plain_bm25(tmp_path: Path) -> None:
    m = Manifest(tmp_path / "manifest.sqlite3")
    record(m, "Power settings", aliases=("Sleep mode",), chain=("Power settings", "Suspend"))
    ((_, score),) = m.keyword(["restart"], 5, weights=(0.0, 0.0, 0.0))
    # One chunk in the collection: idf = ln(1 + 0.5 / 1.5); its length is the average.
    expected = 0.28768207245178085 * 1 * (manifest.BM25_K1 + 1) / (1 + manifest.BM25_K1)
    assert abs(score - expected) < 1e-9


def test_front_matter_aliases_are_read() -> None:
    note = notes.parse(b"---\naliases:\n  - Sleep mode\n  - suspend\n---\n# Power\n", "p.md")
    assert note.aliases == ("Sleep mode", "suspend")
    one = notes.parse(b"---\naliases: Sleep, or suspend\n---\ntext\n", "p.md")
    assert one.aliases == ("Sleep, or suspend",)


def test_an_index_from_before_fields_is_upgraded_and_rebuilt(tmp_path: Path) -> None:
    kb = write_notes(
        tmp_path / "kb",
        {"power.md": "---\naliases: [hibernation]\n---\n# Power\n\nDisable suspend here.\n"},
    )
    index_dir = tmp_path / "ix"
    env = clean_env(ASKMD_KNOWLEDGE_DIR=str(kb), ASKMD_INDEX_DIR=str(index_dir))
    rag = [sys.executable, str(ROOT / "rag.py")]
    subprocess.run([*rag, "index"], env=env, check=True, capture_output=True, timeout=60)
    # Make it look like an index from before fields: no field columns, the old fingerprint.
    db = sqlite3.connect(index_dir / manifest.MANIFEST)
    db.executescript(
        "CREATE TABLE old AS SELECT term, doc, tf FROM postings; DROP TABLE postings; "
        "CREATE TABLE postings (term TEXT NOT NULL, doc INTEGER NOT NULL, tf INTEGER NOT "
        "NULL, PRIMARY KEY (term, doc)) WITHOUT ROWID; INSERT INTO postings SELECT * FROM old; "
        "DROP TABLE old; UPDATE meta SET value = replace(value, 'terms=2', 'terms=1') "
        "WHERE key = 'fingerprint'; DELETE FROM meta WHERE key = 'gate';"  # gate holds it
        "DROP TABLE _migrations;"  # older code recorded no migrations
    )
    db.close()
    old = Manifest(index_dir / manifest.MANIFEST, read_only=True)
    assert old.keyword(["disable"], 5) and not old.keyword(["hibernation"], 5)  # still reads
    old.close()
    done = subprocess.run([*rag, "index", "--json"], env=env, check=True, capture_output=True)
    assert json.loads(done.stdout)["rebuild_reason"] == (
        "the keyword index changed (new search terms or fields)"
    )
    m = Manifest(index_dir / manifest.MANIFEST)
    assert [c for c, _ in m.keyword(["hibernation"], 5, weights=(0.0, 1.0, 0.0))]
