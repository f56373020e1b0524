"""Other note apps' syntax: Logseq properties and block refs, Dendron/Foam hierarchy names."""

import json

import pytest

import chunker
from askmd.read import notes, vault
from tests.conftest import write_notes

UUID = "6571a3b0-1234-4abc-8def-0123456789ab"
OTHER = "00000000-1234-4abc-8def-0123456789ab"

# (verbatim body, searchable body, Logseq page properties)
LOGSEQ = [
    (
        "title:: Deploy\nalias:: Ship it, [[Release steps]]\n\n- body",
        "title: Deploy\nalias: Ship it, Release steps\n\n- body",
        (("title", "Deploy"), ("alias", "Ship it, [[Release steps]]")),
    ),
    ("- title:: Page\n  tags:: a", "- title: Page\n  tags: a", (("title", "Page"), ("tags", "a"))),
    ("- first block\n  status:: doing", "- first block\n  status: doing", ()),  # a block's own
    (
        f"- Canary first\n  id:: {UUID}\n- See (({UUID.upper()}))",
        "- Canary first\n\n- See Canary first",
        (),
    ),
    (f"- See (({OTHER})) here", "- See  here", ()),  # a block of another page: dropped
    (  # the block's searchable text, its own refs dropped
        f"- Uses [[Pool]] (({OTHER}))\n  id:: {UUID}\n- (({UUID}))",
        "- Uses Pool \n\n- Uses Pool",
        (),
    ),
    (  # a block of several lines: its first line is its text
        f"- line one\n  line two\n  id:: {UUID}\n- (({UUID}))",
        "- line one\n  line two\n\n- line one",
        (),
    ),
    (f"Paragraph\nid:: {UUID}\n(({UUID}))", "Paragraph\n\n", ()),  # not a block: no text
    ("- text\n  collapsed:: true\n- more", "- text\n\n- more", ()),
    ("Rating:: 9", "Rating: 9", (("rating", "9"),)),  # Dataview's inline field is the same syntax
    ("```\ntitle:: not a property\n```", None, ()),
    ("`title:: inline code`", None, ()),
    ("std::vector and a::b\nNamespace::Class", None, ()),
    ("Prose first.\ntitle:: Late", "Prose first.\ntitle: Late", ()),
    ("%% key:: hidden %%", "", ()),
]


@pytest.mark.parametrize(("verbatim", "searchable", "properties"), LOGSEQ)
def test_logseq_properties_and_block_refs(verbatim, searchable, properties):
    found = vault.scan(verbatim)
    clean = vault.apply(verbatim, found.edits)
    assert clean == (verbatim if searchable is None else searchable)
    assert clean.count("\n") == verbatim.count("\n")  # line numbers hold
    assert found.properties == properties


# (file bytes, title, aliases, tags) as notes.parse reads them
PAGES = [
    (
        b"title:: Deploy Runbook\nalias:: Shipping guide, [[Release steps]]\n"
        b"tags:: [[ops]], #deploy, #[[Machine Learning]], plain\n\n- body\n",
        "Deploy Runbook",
        ("Shipping guide", "Release steps"),
        ("ops", "deploy", "Machine Learning", "plain"),
    ),
    (  # front matter wins field by field
        b"---\ntitle: From YAML\naliases: [Y]\n---\ntitle:: From page\nalias:: Z\ntags:: t\n",
        "From YAML",
        ("Y",),
        ("t",),
    ),
    (b"```\ntitle:: Code\nalias:: Code\n```\n", None, (), ()),
    (b"# Heading\n\ntitle:: Not the page's\n", None, (), ()),
]


@pytest.mark.parametrize(("data", "title", "aliases", "tags"), PAGES)
def test_logseq_page_properties_name_the_note(data, title, aliases, tags):
    note = notes.parse(data, "pages/p.md")
    assert (note.title, note.aliases, note.tags) == (title, aliases, tags)


# (file name, file bytes, chunk title, start of the embedded text)
HIERARCHY = [
    ("lang.python.typing.md", b"Body.\n", "lang > python > typing", "lang > python > typing\n\n"),
    (
        "lang.python.typing.md",
        b"---\ntitle: Type hints\n---\nBody.\n",
        "lang > python > Type hints",
        "lang > python > Type hints\n\n",
    ),
    (  # the H1 is the last part: not repeated after it
        "lang.python.typing.md",
        b"# Typing\n\n## Generics\n\nBody.\n",
        "lang > python > Typing",
        "lang > python > Typing > Generics\n\n",
    ),
    ("notes/a.b.c.markdown", b"Body.\n", "a > b > c", "a > b > c\n\n"),
    ("lang.python.typing.md", b"title:: lang/python/typing\n", "lang/python/typing", None),
    ("v1.2.md", b"Body.\n", "v1.2", "v1.2\n\n"),  # a version
    ("v1.2.3.md", b"Body.\n", "v1.2.3", "v1.2.3\n\n"),
    ("2024.01.05.md", b"Body.\n", "2024.01.05", "2024.01.05\n\n"),  # a date
    ("daily.2024.01.md", b"Body.\n", "daily.2024.01", "daily.2024.01\n\n"),
    ("setup.sh.md", b"Body.\n", "setup.sh", "setup.sh\n\n"),  # two parts: a name with a dot
    ("my notes.on.x.md", b"Body.\n", "my notes.on.x", "my notes.on.x\n\n"),  # spaces
    ("a..b.md", b"Body.\n", "a..b", "a..b\n\n"),
]


@pytest.mark.parametrize(("source", "data", "title", "embedded"), HIERARCHY)
def test_hierarchy_names_head_the_chain(source, data, title, embedded):
    chunks = chunker.split_note(notes.parse(data, source))
    assert {c.title for c in chunks} == {title}
    if embedded is not None:
        assert chunks[-1].embedding_text.startswith(embedded)


def test_hierarchy_links_resolve_as_usual():
    r = vault.Resolver(["lang.python.md", "lang.python.typing.md", "x/lang.rust.md"])
    assert r.resolve("lang.python.typing", "y.md") == "lang.python.typing.md"
    assert r.resolve("Lang.Python", "y.md") == "lang.python.md"
    assert r.resolve("lang.rust.md", "y.md") == "x/lang.rust.md"
    link = vault.scan("See [[lang.python.typing]].").links[0]
    assert r.resolve(link.target, "y.md") == "lang.python.typing.md"


VAULT = {
    "pages/deploy.md": "title:: Deploy Runbook\nalias:: Shipping guide\ntags:: [[ops]], release\n"
    f"\n- Roll out to the canary pool first.\n  id:: {UUID}\n"
    f"- Rollback: (({UUID})) in reverse order.\n",
    "kubernetes.networking.ingress.md": "---\ntitle: Ingress\n---\n"
    "Routes external HTTP traffic to services by host and path.\n",
    "garden.md": "# Garden\n\nTomatoes need sun, water and a bamboo stake.\n",
}


def test_logseq_page_and_dendron_note_through_the_cli(run_rag, tmp_path):
    kb = write_notes(tmp_path / "kb", VAULT)
    args = ("--knowledge", str(kb), "--index-dir", str(tmp_path / "ix"))
    shown = run_rag(*args, "chunk", str(kb / "pages/deploy.md"), "--json")
    assert shown.returncode == 0, shown.stderr
    page = json.loads(shown.stdout)
    assert (page["title"], page["tags"]) == ("Deploy Runbook", ["ops", "release"])
    found = run_rag(*args, "search", "shipping guide", "--tag", "ops", "--json")
    assert found.returncode == 0, found.stderr
    assert [h["source"] for h in json.loads(found.stdout)["results"]] == ["pages/deploy.md"]
    # "kubernetes" and "networking" are only in the file name.
    assert "kubernetes" not in VAULT["kubernetes.networking.ingress.md"]
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        "".join(
            json.dumps({"id": q, "query": q, "relevant": ["kubernetes.networking.ingress.md"]})
            + "\n"
            for q in ("kubernetes", "networking ingress")
        ),
        encoding="utf-8",
    )
    scored = run_rag(*args, "eval", str(queries), "--retriever", "keyword", "--json")
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout)["hit@1"] == 1.0
