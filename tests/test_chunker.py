"""The chunker on nasty inputs (exact chunks), on generated Markdown (invariants), and on
the sample notes in knowledge/."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chunker
from askmd.read import notes
from tests import invariants

KNOWLEDGE = Path(__file__).resolve().parent.parent / "knowledge"


def chunk(raw: str, size: int = 1000, overlap: int = 200) -> list[chunker.Chunk]:
    """The real path: bytes -> notes.parse -> chunker.split, as the index will do it."""
    note = notes.parse(raw.encode("utf-8"), "n.md")
    return chunker.split(
        note.text,
        source="n.md",
        title=note.title,
        first_line=note.first_line,
        size=size,
        overlap=overlap,
    )


def rows(chunks: list[chunker.Chunk]) -> list[tuple]:
    return [
        (c.text, c.heading_chain, c.heading_level, c.line_start, c.line_end, c.overlap)
        for c in chunks
    ]


# (id, input, mode, title, [(text, heading_chain, heading_level, line_start, line_end, overlap)])
CASES = [
    ("empty", "", None, None, []),
    ("whitespace only", " \n\n\t\n", None, None, []),
    ("heading only", "# Title\n", "heading", "Title", [("# Title", ("Title",), 1, 1, 1, 0)]),
    (
        "setext --- is a heading, not a separator",
        "Intro\n\nTitle\n---\nBody text.\n",
        "heading",
        "n",
        [("Intro", (), 0, 1, 1, 0), ("Title\n---\nBody text.", ("Title",), 2, 3, 5, 0)],
    ),
    (
        "setext === H1 names the file",
        "Setext One\n==========\n\ntext\n",
        "heading",
        "Setext One",
        [("Setext One\n==========\n\ntext", ("Setext One",), 1, 1, 4, 0)],
    ),
    ("front matter only", "---\ntitle: Notes\ntags: [a]\n---\n", None, None, []),
    (
        "front matter title, body lines counted from the file",
        "---\ntitle: Ops notes\n---\n\n## Ports\nAPI on 8420.\n",
        "heading",
        "Ops notes",
        [("## Ports\nAPI on 8420.", ("Ports",), 2, 5, 6, 0)],
    ),
    (
        "malformed front matter stays text",
        "---\ntitle: [x\n---\nBody\n",
        "separator",
        "n",
        [("title: [x\n---\nBody", ("title: [x",), 2, 2, 4, 0)],
    ),
    (
        "# inside ``` and ~~~ is code",
        "# Code\n\n```bash\n# not a heading\necho hi\n```\n\n~~~\n## also not\n~~~\n",
        "heading",
        "Code",
        [
            (
                "# Code\n\n```bash\n# not a heading\necho hi\n```\n\n~~~\n## also not\n~~~",
                ("Code",),
                1,
                1,
                10,
                0,
            )
        ],
    ),
    (
        "unterminated fence runs to the end and is closed",
        "# Open\n\ntext\n\n```python\nx = 1\n# comment\n\n## still code\n",
        "heading",
        "Open",
        [
            (
                "# Open\n\ntext\n\n```python\nx = 1\n# comment\n\n## still code\n```",
                ("Open",),
                1,
                1,
                9,
                0,
            )
        ],
    ),
    (
        "--- inside a fence is not a separator",
        "```yaml\nkey: 1\n\n---\nkey: 2\n```\n",
        "heading",
        "n",
        [("```yaml\nkey: 1\n\n---\nkey: 2\n```", (), 0, 1, 6, 0)],
    ),
    (
        "H5 and H6 are body text",
        "# A\n\n##### five\n\ntext\n\n###### six\n",
        "heading",
        "A",
        [("# A\n\n##### five\n\ntext\n\n###### six", ("A",), 1, 1, 7, 0)],
    ),
    (
        "heading-only sections join the next",
        "# A\n## B\n### C\n#### D\nbody\n",
        "heading",
        "A",
        [("# A\n## B\n### C\n#### D\nbody", ("A", "B", "C", "D"), 4, 1, 5, 0)],
    ),
    (
        "a heading pops deeper and equal levels",
        "# A\nx\n### C\ny\n## B\nz\n",
        "heading",
        "A",
        [
            ("# A\nx", ("A",), 1, 1, 2, 0),
            ("### C\ny", ("A", "C"), 3, 3, 4, 0),
            ("## B\nz", ("A", "B"), 2, 5, 6, 0),
        ],
    ),
    (
        "separators after blank lines; chain resets per note",
        "Journal\n\n---\n\n## 2026-10-01\nfirst\n\n---\n\nsecond entry\n\n***\n\nthird\n",
        "separator",
        "n",
        [
            ("Journal", (), 0, 1, 1, 0),
            ("## 2026-10-01\nfirst", ("2026-10-01",), 2, 5, 6, 0),
            ("second entry", (), 0, 10, 10, 0),
            ("third", (), 0, 14, 14, 0),
        ],
    ),
    (
        "CRLF line endings",
        "a\r\n\r\n# H\r\nb\r\n",
        "heading",
        "H",
        [("a", (), 0, 1, 1, 0), ("# H\nb", ("H",), 1, 3, 4, 0)],
    ),
    (
        "#hashtag and indented # are not headings",
        "#hashtag line\n\n    # indented code\n",
        "heading",
        "n",
        [("#hashtag line\n\n    # indented code", (), 0, 1, 3, 0)],
    ),
    (
        "closing #s are not part of the heading",
        "## Setup ##\ntext\n",
        "heading",
        "n",
        [("## Setup ##\ntext", ("Setup",), 2, 1, 2, 0)],
    ),
]


@pytest.mark.parametrize(
    ("raw", "mode", "title", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_nasty_inputs(raw: str, mode: str | None, title: str | None, expected: list) -> None:
    chunks = chunk(raw)
    assert rows(chunks) == expected
    assert {c.mode for c in chunks} == ({mode} if mode else set())
    assert {c.title for c in chunks} == ({title} if title else set())
    assert [c.id for c in chunks] == [f"n.md#{i}" for i in range(len(chunks))]


def test_one_5000_character_line_is_hard_cut_with_overlap() -> None:
    chunks = chunk("x" * 5000)
    assert [(len(c.text), c.line_start, c.line_end, c.overlap) for c in chunks] == [
        (1000, 1, 1, 0)
    ] + [(1000, 1, 1, 200)] * 5
    assert all(c.text == "x" * 1000 for c in chunks)


def test_20000_character_section_without_blank_line_splits_at_sentences() -> None:
    body = "# Long\n" + "\n".join(
        f"Line {i} says something. It has two sentences here." for i in range(400)
    )
    assert len(body) > 20_000
    chunks = chunk(body)
    assert [(c.line_start, c.line_end, len(c.text), c.overlap) for c in chunks] == [
        (1, 21, 989, 0), (18, 37, 992, 177), (34, 53, 992, 177), (50, 69, 992, 177),
        (66, 85, 992, 177), (82, 101, 992, 177), (98, 116, 983, 177), (113, 132, 987, 183),
        (129, 147, 987, 181), (144, 163, 987, 183), (160, 178, 987, 181), (175, 194, 987, 183),
        (191, 209, 987, 181), (206, 225, 987, 183), (222, 240, 987, 181), (237, 256, 987, 183),
        (253, 271, 987, 181), (268, 287, 987, 183), (284, 302, 987, 181), (299, 318, 987, 183),
        (315, 333, 987, 181), (330, 349, 987, 183), (346, 364, 987, 181), (361, 380, 987, 183),
        (377, 401, 1299, 181),
    ]  # fmt: skip
    for c in chunks:
        assert c.heading_chain == ("Long",)
        assert c.text.endswith(".")  # every cut fell after a sentence
    for c in chunks[1:]:  # the overlap and the new text both start at a sentence
        assert c.text.startswith(("Line", "It")) and c.text[c.overlap :].startswith(("Line", "It"))


def test_chinese_without_spaces_splits_after_full_stops() -> None:
    sentence = "数据库备份每天执行一次，保留十四天。"
    chunks = chunk(sentence * 150)
    assert [(c.line_start, c.line_end, len(c.text), c.overlap) for c in chunks] == [
        (1, 1, 990, 0),
        (1, 1, 990, 198),
        (1, 1, 1116, 198),
    ]
    for c in chunks:
        assert c.text == sentence * (len(c.text) // len(sentence))


def test_oversized_code_fence_is_split_by_lines_and_reopened() -> None:
    code = "\n".join(f"print({i})  # line {i} of the code block" for i in range(60))
    chunks = chunk(f"# Big code\n\n```python\n{code}\n```\n")
    assert [(c.line_start, c.line_end, len(c.text), c.overlap) for c in chunks] == [
        (1, 28, 980, 0),
        (24, 48, 988, 195),
        (44, 64, 793, 195),
    ]
    assert chunks[0].text.startswith("# Big code\n\n```python\nprint(0)")
    assert chunks[0].text.endswith("# line 24 of the code block\n```")
    assert chunks[1].text.startswith("```python\nprint(20)")
    assert chunks[2].text.endswith("# line 59 of the code block\n```")


def test_fence_that_fits_is_never_split() -> None:
    code = "\n".join(f"line {i}" for i in range(120))  # ~900 characters
    prose = "Some words here. " * 40
    chunks = chunk(f"# T\n\n{prose}\n\n```\n{code}\n```\n\n{prose}\n")
    whole = [c for c in chunks if "line 0" in c.text]
    assert len(whole) == 1 and "line 119\n```" in whole[0].text
    assert all(not invariants.unbalanced_fence(c.text) for c in chunks)


def test_overlap_zero_and_embedding_text() -> None:
    chunks = chunk("# Guide\n\n## Install\n\n" + "Run the installer now. " * 100, overlap=0)
    assert all(c.overlap == 0 for c in chunks)
    assert chunks[1].embedding_text.startswith("Guide > Install\n\nRun the installer")
    invariants.check(
        notes.parse(
            ("# Guide\n\n## Install\n\n" + "Run the installer now. " * 100).encode(), "n.md"
        ).text,
        chunks,
        1000,
    )


def test_invalid_overlap_is_refused() -> None:
    with pytest.raises(ValueError, match="smaller than size"):
        chunker.split("text", source="n.md", size=100, overlap=100)


def test_ids_are_deterministic() -> None:
    body = (KNOWLEDGE / "guides" / "deployment-guide.md").read_text(encoding="utf-8")
    assert chunker.split(body, source="a.md") == chunker.split(body, source="a.md")


# --- properties on generated Markdown ------------------------------------------------

_words = st.sampled_from(
    ["alpha", "beta", "gamma.", "delta!", "数据库", "备份。", "保留三十天；", "x" * 40,
     "#tag", "`code`", "e.g.", "？", "…", "end.\u3000"]
)  # fmt: skip
_paragraph = st.lists(_words, min_size=1, max_size=60).map(" ".join)
_cjk = st.text(alphabet="数据库备份保留天。！？；，", min_size=1, max_size=400)
_heading = st.tuples(st.integers(1, 6), _paragraph).map(lambda t: "#" * t[0] + " " + t[1][:30])
_code = st.lists(
    st.sampled_from(["# comment", "echo hi", "---", "## not", "    x = 1", "y" * 120, ""]),
    max_size=40,
).map("\n".join)
_fence = st.tuples(
    st.sampled_from(["```", "~~~", "````", "```python", "~~~ yaml"]), _code, st.booleans()
).map(lambda t: t[0] + "\n" + t[1] + ("\n" + t[0].split()[0][:4].rstrip("py") if t[2] else ""))
_block = st.one_of(
    _paragraph, _cjk, _heading, _fence,
    st.sampled_from(["---", "***", "___", "", "===", "- item one", "| a | b |", "z" * 3000,
                     "Title\n-----", "> quote\n---"]),
)  # fmt: skip
_document = st.lists(_block, max_size=25).flatmap(
    lambda blocks: st.lists(
        st.sampled_from(["\n", "\n\n"]), min_size=len(blocks), max_size=len(blocks)
    ).map(lambda seps: "".join(b + s for b, s in zip(blocks, seps, strict=True)))
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(_document, st.integers(100, 1500), st.floats(0, 0.9))
def test_invariants_hold_on_generated_markdown(body: str, size: int, ratio: float) -> None:
    overlap = int(size * ratio)
    chunks = chunker.split(body, source="p.md", size=size, overlap=overlap)
    invariants.check(body, chunks, size)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=3000))
def test_invariants_hold_on_arbitrary_text(body: str) -> None:
    body = body.replace("\r", "\n")
    chunks = chunker.split(body, source="p.md", size=200, overlap=50)
    invariants.check(body, chunks, 200)


# --- the sample notes ----------------------------------------------------------------

SAMPLE = sorted(notes.find(KNOWLEDGE, ("*.md", "*.markdown"))[0])


@pytest.mark.parametrize("source", SAMPLE)
@pytest.mark.parametrize(("size", "overlap"), [(1000, 200), (300, 100)])
def test_sample_notes_keep_every_invariant(source: str, size: int, overlap: int) -> None:
    note = notes.read(KNOWLEDGE, source)
    assert note.warnings == ()
    chunks = chunker.split(
        note.text, source=source, title=note.title, first_line=note.first_line,
        size=size, overlap=overlap,
    )  # fmt: skip
    assert chunks
    # line numbers are the file's: the first chunk's first line is really there
    file_lines = (KNOWLEDGE / source).read_text(encoding="utf-8").split("\n")
    assert chunks[0].text.split("\n")[0] == file_lines[chunks[0].line_start - 1]
    invariants.check("\n" * (note.first_line - 1) + note.text, chunks, size)


def test_sample_knowledge_has_both_modes_and_front_matter() -> None:
    modes, titled = {}, []
    for source in SAMPLE:
        note = notes.read(KNOWLEDGE, source)
        chunks = chunker.split(note.text, source=source, title=note.title)
        modes[source] = chunks[0].mode
        if note.title:
            titled.append(source)
    assert modes["faq/support-faq.md"] == "separator"
    assert modes["guides/deployment-guide.md"] == "heading"
    assert "runbooks/rotate-s3-keys.md" in titled
    assert 8 <= len(SAMPLE) <= 15


def test_a_piece_never_ends_on_a_bare_fence_opener() -> None:
    # Found by the property test: a large overlap pushed a hard cut into the opener line,
    # which left a chunk holding only "```python" and a duplicate after it.
    body = "alpha\n" + "alpha " * 6 + "x" * 40 + "\n```python\n" + "y" * 120 + "\n# comment\n"
    chunks = chunker.split(body, source="p.md", size=100, overlap=87)
    invariants.check(body, chunks, 100)
    assert [c.text.splitlines()[0] for c in chunks] == ["alpha", "```python", "```python"]
    assert len({c.text for c in chunks}) == len(chunks)
