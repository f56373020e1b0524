"""notes.py on real bytes and real folders: decoding, front matter, find, read, matches."""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import hashlib
import json
import os
import signal
from pathlib import Path

import pytest

from askmd.read import notes
from askmd.read.notes import Note
from askmd.settings import Settings

DEFAULT_INCLUDE = ("*.md", "*.markdown")
MB = 1024 * 1024


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def write(root: Path, rel: str, data: bytes = b"# note\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def unreadable_reason(fn, *args) -> str:
    with pytest.raises(notes.Unreadable) as info:
        fn(*args)
    return str(info.value)


@contextlib.contextmanager
def fails_if_blocked(seconds: float = 5.0):
    """Turn a hang (e.g. opening a FIFO that has no writer) into a test failure."""

    def on_alarm(signum, frame):
        raise TimeoutError(f"blocked for more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --------------------------------------------------------------------------------------
# parse: bytes -> Note (encodings and newlines)
# --------------------------------------------------------------------------------------

UTF16_TEXT = "---\ntitle: 数据库\n---\n正文\n"

DECODE_CASES = [
    # (bytes, text, first_line, title)
    pytest.param(b"# Title\nbody\n", "# Title\nbody\n", 1, None, id="plain-utf8"),
    pytest.param("数据库\n索引\n".encode(), "数据库\n索引\n", 1, None, id="utf8-chinese"),
    pytest.param(codecs.BOM_UTF8 + b"# T\nx\n", "# T\nx\n", 1, None, id="utf8-bom-dropped"),
    pytest.param(codecs.BOM_UTF8, "", 1, None, id="utf8-bom-only"),
    pytest.param(b"a\r\nb\r\nc\r\n", "a\nb\nc\n", 1, None, id="crlf"),
    pytest.param(b"a\rb\rc", "a\nb\nc", 1, None, id="lone-cr"),
    pytest.param(b"a\r\n\rb\nc", "a\n\nb\nc", 1, None, id="mixed-crlf-cr-lf-keeps-lines"),
    pytest.param(
        b"---\r\ntitle: T\r\n---\r\nbody\r\n", "body\n", 4, "T", id="crlf-front-matter-line-4"
    ),
    pytest.param(b"---\rtitle: T\r---\rbody", "body", 4, "T", id="lone-cr-front-matter-line-4"),
    pytest.param(
        codecs.BOM_UTF8 + b"---\ntitle: T\n---\nbody", "body", 4, "T", id="bom-then-front-matter"
    ),
    pytest.param(
        codecs.BOM_UTF16_LE + UTF16_TEXT.encode("utf-16-le"), "正文\n", 4, "数据库", id="utf16-le"
    ),
    pytest.param(
        codecs.BOM_UTF16_BE + UTF16_TEXT.replace("\n", "\r\n").encode("utf-16-be"),
        "正文\n",
        4,
        "数据库",
        id="utf16-be-crlf",
    ),
    pytest.param(
        codecs.BOM_UTF32_LE + UTF16_TEXT.encode("utf-32-le"), "正文\n", 4, "数据库", id="utf32-le"
    ),
    pytest.param(
        codecs.BOM_UTF32_BE + UTF16_TEXT.encode("utf-32-be"), "正文\n", 4, "数据库", id="utf32-be"
    ),
    pytest.param(b"", "", 1, None, id="empty-file"),
    pytest.param(b"  \n\t\n", "  \n\t\n", 1, None, id="whitespace-only"),
]


def without_properties(note: Note) -> Note:
    """The note as these tests expect it: its properties (for `--where`) are read by
    read/properties.py and tested in test_where.py."""
    return dataclasses.replace(note, properties=())


@pytest.mark.parametrize(("data", "text", "first_line", "title"), DECODE_CASES)
def test_parse_decodes_and_normalises_newlines(data, text, first_line, title):
    assert without_properties(notes.parse(data, "dir/n.md")) == Note(
        source="dir/n.md", text=text, first_line=first_line, md5=md5(data), title=title
    )


UNREADABLE_CASES = [
    pytest.param(b"caf\xe9", "not UTF-8 (byte 0xe9 at offset 3); re-save it as UTF-8", id="latin1"),
    pytest.param(
        "数据库".encode("gbk"),
        "not UTF-8 (byte 0xca at offset 0); re-save it as UTF-8",
        id="gbk-chinese",
    ),
    pytest.param(
        b"# notes\n" + "数据库".encode("gbk"),
        "not UTF-8 (byte 0xca at offset 8); re-save it as UTF-8",
        id="gbk-after-ascii-line",
    ),
    pytest.param(
        b"ab\xc3", "not UTF-8 (byte 0xc3 at offset 2); re-save it as UTF-8", id="truncated-utf8"
    ),
    pytest.param(
        b"a\x80", "not UTF-8 (byte 0x80 at offset 1); re-save it as UTF-8", id="lone-continuation"
    ),
    # The offset and byte are those of the file, BOM included: the 0xe9 is the 7th byte.
    pytest.param(
        codecs.BOM_UTF8 + b"caf\xe9",
        "not UTF-8 (byte 0xe9 at offset 6); re-save it as UTF-8",
        id="utf8-bom-then-latin1",
    ),
    pytest.param(b"a\x00b", "binary (it contains NUL bytes), not a text note", id="nul-in-ascii"),
    pytest.param(
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        "binary (it contains NUL bytes), not a text note",
        id="png-header",
    ),
    pytest.param(
        codecs.BOM_UTF16_LE + b"a\x00b",
        "not valid UTF-16 despite its byte-order mark",
        id="utf16-odd-length",
    ),
    pytest.param(
        codecs.BOM_UTF16_LE + b"a\x00\x00\xd8",
        "not valid UTF-16 despite its byte-order mark",
        id="utf16-lone-surrogate",
    ),
]


@pytest.mark.parametrize(("data", "reason"), UNREADABLE_CASES)
def test_parse_rejects_what_is_not_a_text_note(data, reason):
    assert unreadable_reason(notes.parse, data, "n.md") == reason


def test_utf16_without_its_mark_is_read_and_said():
    note = notes.parse(UTF16_TEXT.encode("utf-16-le"), "n.md")
    assert (note.text, note.title) == ("正文\n", "数据库")
    assert note.warnings == (
        "not UTF-8, read as UTF-16-LE (the encoding it most surely is); re-save it as UTF-8",
    )


def test_md5_is_of_the_raw_bytes_not_the_decoded_text():
    crlf_with_bom = codecs.BOM_UTF8 + b"a\r\nb\r\n"
    plain = b"a\nb\n"
    a, b = notes.parse(crlf_with_bom, "a.md"), notes.parse(plain, "b.md")
    assert (a.text, b.text) == ("a\nb\n", "a\nb\n")
    assert a.md5 == hashlib.md5(crlf_with_bom).hexdigest()
    assert b.md5 == hashlib.md5(plain).hexdigest()
    assert a.md5 != b.md5


def test_parse_is_pure_and_note_is_frozen():
    data = b"---\ntitle: T\ntags: [a]\n---\nbody\n"
    first, second = notes.parse(data, "n.md"), notes.parse(data, "n.md")
    assert first == second
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.text = "changed"  # type: ignore[misc]


# --------------------------------------------------------------------------------------
# front matter: split_front_matter and parse
# --------------------------------------------------------------------------------------

FRONT_MATTER_CASES = [
    # (text, meta, body, first_line, title, tags); no warning in any of these
    pytest.param(
        "---\ntitle: Backups\ntags: [ops, db]\n---\n# Backups\nbody\n",
        {"title": "Backups", "tags": ["ops", "db"]},
        "# Backups\nbody\n",
        5,
        "Backups",
        ("ops", "db"),
        id="title-and-yaml-list-tags",
    ),
    pytest.param(
        "---\ntags: ops, db\n---\nx",
        {"tags": "ops, db"},
        "x",
        4,
        None,
        ("ops", "db"),
        id="tags-comma-string",
    ),
    pytest.param(
        "---\ntags: ops db\n---\nx",
        {"tags": "ops db"},
        "x",
        4,
        None,
        ("ops", "db"),
        id="tags-space-string",
    ),
    pytest.param(
        '---\ntags: "#ops, #db"\n---\nx',
        {"tags": "#ops, #db"},
        "x",
        4,
        None,
        ("ops", "db"),
        id="tags-hash-prefixed-string",
    ),
    pytest.param(
        '---\ntags: ["#ops", "#db"]\n---\nx',
        {"tags": ["#ops", "#db"]},
        "x",
        4,
        None,
        ("ops", "db"),
        id="tags-hash-prefixed-list",
    ),
    pytest.param(
        '---\ntags: [db, ops, db, "#ops", " db "]\n---\nx',
        {"tags": ["db", "ops", "db", "#ops", " db "]},
        "x",
        4,
        None,
        ("db", "ops"),
        id="duplicate-tags-collapsed-in-order",
    ),
    pytest.param(
        "---\ntags: [2024, null, db]\n---\nx",
        {"tags": [2024, None, "db"]},
        "x",
        4,
        None,
        ("2024", "db"),
        id="tags-number-and-null",
    ),
    pytest.param(
        # unquoted, '#ops' is a YAML comment: tags is null
        "---\ntags: #ops\n---\nx",
        {"tags": None},
        "x",
        4,
        None,
        (),
        id="unquoted-hash-is-yaml-comment",
    ),
    pytest.param(
        # a lone '#' is not a tag: it must not become the empty tag ""
        '---\ntags: "#, ops"\n---\nx',
        {"tags": "#, ops"},
        "x",
        4,
        None,
        ("ops",),
        id="lone-hash-is-not-an-empty-tag",
    ),
    pytest.param(
        "---\ntitle: T\n...\nbody",
        {"title": "T"},
        "body",
        4,
        "T",
        (),
        id="closed-with-dots",
    ),
    pytest.param(
        "--- \ntitle: T\n---  \nbody",
        {"title": "T"},
        "body",
        4,
        "T",
        (),
        id="fences-with-trailing-spaces",
    ),
    pytest.param("---\n---\nbody", {}, "body", 3, None, (), id="empty-block"),
    pytest.param("---\n\n---\nbody", {}, "body", 4, None, (), id="blank-line-block"),
    pytest.param(
        "---\ntitle: T\n---", {"title": "T"}, "", 4, "T", (), id="front-matter-only-no-newline"
    ),
    pytest.param(
        "---\ntitle: T\n---\n", {"title": "T"}, "", 4, "T", (), id="front-matter-only-newline"
    ),
    pytest.param(
        "---\ntitle: T\nbody\n",
        {},
        "---\ntitle: T\nbody\n",
        1,
        None,
        (),
        id="unclosed-is-all-body",
    ),
    pytest.param(
        "---\njust a sentence\n---\nmore",
        {},
        "---\njust a sentence\n---\nmore",
        1,
        None,
        (),
        id="scalar-block-is-a-separator",
    ),
    pytest.param(
        "---\n- a\n- b\n---\nmore",
        {},
        "---\n- a\n- b\n---\nmore",
        1,
        None,
        (),
        id="list-block-is-a-separator",
    ),
    pytest.param(
        "---\n\nMonday\n\n---\n\nTuesday\n",
        {},
        "---\n\nMonday\n\n---\n\nTuesday\n",
        1,
        None,
        (),
        id="journal-with-separators",
    ),
    pytest.param(
        "\n---\ntitle: T\n---\nbody",
        {},
        "\n---\ntitle: T\n---\nbody",
        1,
        None,
        (),
        id="fence-on-line-2",
    ),
    pytest.param(
        "# H\n---\ntitle: T\n---\n",
        {},
        "# H\n---\ntitle: T\n---\n",
        1,
        None,
        (),
        id="fence-after-heading",
    ),
    pytest.param(
        "----\ntitle: T\n----\nbody",
        {},
        "----\ntitle: T\n----\nbody",
        1,
        None,
        (),
        id="four-dashes-not-a-fence",
    ),
    pytest.param(
        " ---\ntitle: T\n---\nbody",
        {},
        " ---\ntitle: T\n---\nbody",
        1,
        None,
        (),
        id="indented-fence-not-a-fence",
    ),
    pytest.param(
        "---\ntitle: 2026\n---\nbody", {"title": 2026}, "body", 4, "2026", (), id="numeric-title"
    ),
    pytest.param(
        "---\ntitle: '  Spaced  '\n---\nbody",
        {"title": "  Spaced  "},
        "body",
        4,
        "Spaced",
        (),
        id="title-stripped",
    ),
    pytest.param(
        "---\ntitle:\n---\nbody", {"title": None}, "body", 4, None, (), id="empty-title-is-none"
    ),
    pytest.param(
        "---\ntitle: '   '\n---\nbody",
        {"title": "   "},
        "body",
        4,
        None,
        (),
        id="blank-title-is-none",
    ),
    pytest.param(
        "---\ntitle: 数据库\ntags: [索引]\n---\n正文",
        {"title": "数据库", "tags": ["索引"]},
        "正文",
        5,
        "数据库",
        ("索引",),
        id="chinese-title-and-tag",
    ),
    pytest.param(
        "---\ntitle: T\n---\nbody\n---\nmore\n",
        {"title": "T"},
        "body\n---\nmore\n",
        4,
        "T",
        (),
        id="later-separator-stays-in-body",
    ),
]


@pytest.mark.parametrize(
    ("text", "meta", "body", "first_line", "title", "tags"), FRONT_MATTER_CASES
)
def test_split_front_matter(text, meta, body, first_line, title, tags):
    assert notes.split_front_matter(text) == (meta, body, first_line, None)


@pytest.mark.parametrize(
    ("text", "meta", "body", "first_line", "title", "tags"), FRONT_MATTER_CASES
)
def test_parse_front_matter(text, meta, body, first_line, title, tags):
    data = text.encode()
    assert without_properties(notes.parse(data, "n.md")) == Note(
        source="n.md",
        text=body,
        first_line=first_line,
        md5=md5(data),
        title=title,
        tags=tags,
    )


INVALID_YAML_CASES = [
    # (text, the file line the warning points at)
    pytest.param("---\ntitle: [unclosed\n---\nbody", 2, id="unclosed-flow-list"),
    pytest.param("---\ntitle: a\n  b: c\n---\nbody", 3, id="bad-indent-line-3"),
    pytest.param("---\n\ttitle: x\n---\nbody", 2, id="tab-indent"),
    pytest.param('---\ntitle: "T\n---\nbody', 2, id="unclosed-quote"),
]


@pytest.mark.parametrize(("text", "line"), INVALID_YAML_CASES)
def test_invalid_yaml_front_matter_is_kept_as_text_with_one_warning(text, line):
    meta, body, first_line, warning = notes.split_front_matter(text)
    assert (meta, body, first_line) == ({}, text, 1)
    assert warning.startswith(f"front matter is not valid YAML (line {line}: ")
    assert warning.endswith("); read as text")
    assert "\n" not in warning

    note = notes.parse(text.encode(), "n.md")
    assert note == Note(
        source="n.md", text=text, first_line=1, md5=md5(text.encode()), warnings=(warning,)
    )


# --------------------------------------------------------------------------------------
# matches
# --------------------------------------------------------------------------------------

MATCH_CASES = [
    # (path, patterns, expected)
    pytest.param("a.md", ("*.md",), True, id="star-md-top"),
    pytest.param("deep/er/a.md", ("*.md",), True, id="star-md-deep"),
    pytest.param("a.markdown", ("*.md",), False, id="markdown-not-md"),
    pytest.param("a.md.txt", ("*.md",), False, id="md-then-txt"),
    pytest.param("a.txt", ("*.md", "*.txt"), True, id="second-pattern"),
    pytest.param("a.md", (" *.md ",), True, id="pattern-whitespace-stripped"),
    pytest.param("a.md", ("", "  ", "/"), False, id="blank-patterns-match-nothing"),
    pytest.param("a.md", (), False, id="no-patterns"),
    pytest.param("drafts", ("drafts",), True, id="folder-name-top"),
    pytest.param("drafts/x.md", ("drafts",), True, id="file-in-folder"),
    pytest.param("notes/drafts/x.md", ("drafts",), True, id="folder-any-depth"),
    pytest.param("notes/drafts", ("drafts",), True, id="folder-itself-any-depth"),
    pytest.param("mydrafts/x.md", ("drafts",), False, id="folder-name-is-whole-part"),
    pytest.param("drafts.md", ("drafts",), False, id="file-with-folder-stem"),
    pytest.param("drafts/x.md", ("drafts/",), True, id="trailing-slash"),
    pytest.param("notes/drafts/x.md", ("drafts/",), True, id="trailing-slash-any-depth"),
    pytest.param("notes/drafts/x.md", ("notes/drafts/*",), True, id="anchored-folder"),
    pytest.param("other/drafts/x.md", ("notes/drafts/*",), False, id="anchored-other-folder"),
    pytest.param("archive/x.md", ("archive/*",), True, id="archive-star"),
    pytest.param("archive/old/x.md", ("archive/*",), True, id="archive-star-deeper"),
    pytest.param("archive/old", ("archive/*",), True, id="archive-star-subfolder"),
    pytest.param("archive", ("archive/*",), False, id="archive-star-not-the-folder"),
    pytest.param("notes/archive/x.md", ("archive/*",), False, id="archive-star-is-anchored"),
    pytest.param("x.tmp.md", ("*.tmp.md",), True, id="tmp-md"),
    pytest.param("sub/x.tmp.md", ("*.tmp.md",), True, id="tmp-md-deep"),
    pytest.param("x.md", ("*.tmp.md",), False, id="tmp-md-plain"),
    pytest.param("private.md", ("private.md",), True, id="name-top"),
    pytest.param("sub/private.md", ("private.md",), True, id="name-any-depth"),
    pytest.param("notprivate.md", ("private.md",), False, id="name-is-whole"),
    pytest.param("private.md.bak", ("private.md",), False, id="name-with-suffix"),
    pytest.param("notes/2024/jan/x.md", ("notes/**/x.md",), True, id="double-star-spans"),
    pytest.param("a/b/x.md", ("**/x.md",), True, id="leading-double-star-deep"),
    # gitignore: `**/` and `/**/` also match zero folders
    pytest.param("notes/x.md", ("notes/**/x.md",), True, id="double-star-zero-folders"),
    pytest.param("x.md", ("**/x.md",), True, id="leading-double-star-top"),
    pytest.param("笔记/数据库.md", ("笔记",), True, id="chinese-folder"),
    pytest.param("笔记/数据库.md", ("*.md",), True, id="chinese-file"),
    pytest.param("笔记/数据库.md", ("数据库.md",), True, id="chinese-name-any-depth"),
]


@pytest.mark.parametrize(("path", "patterns", "expected"), MATCH_CASES)
def test_matches(path, patterns, expected):
    assert notes.matches(path, patterns) is expected


# --------------------------------------------------------------------------------------
# find
# --------------------------------------------------------------------------------------

TREE = [
    "index.md",
    "guide.markdown",
    "notes.txt",
    "image.png",
    ".hidden.md",
    ".obsidian/workspace.md",
    ".git/HEAD.md",
    "projects/.secret/s.md",
    "projects/plan.md",
    "projects/idea.tmp.md",
    "projects/private.md",
    "projects/archive/keep.md",
    "projects/drafts/p.md",
    "drafts/d.md",
    "drafts/deeper/dd.md",
    "archive/2020.md",
    "archive/old/2019.md",
    "scratch.tmp.md",
    "private.md",
    "dir.md/inner.md",
    "笔记/数据库.md",
    "中文.md",
]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    for rel in TREE:
        write(root, rel)
    (root / "empty").mkdir()
    return root


def test_find_includes_md_and_markdown_skips_hidden(tree):
    """Hidden files are named with a reason; hidden folders (tools' state) are passed over."""
    assert notes.find(tree, DEFAULT_INCLUDE) == (
        [
            "archive/2020.md",
            "archive/old/2019.md",
            "dir.md/inner.md",
            "drafts/d.md",
            "drafts/deeper/dd.md",
            "guide.markdown",
            "index.md",
            "private.md",
            "projects/archive/keep.md",
            "projects/drafts/p.md",
            "projects/idea.tmp.md",
            "projects/plan.md",
            "projects/private.md",
            "scratch.tmp.md",
            "中文.md",
            "笔记/数据库.md",
        ],
        [notes.Skipped(".hidden.md", notes.HIDDEN)],
    )


def test_find_with_excludes(tree):
    exclude = ("drafts", "archive/*", "*.tmp.md", "private.md", ".*")
    assert notes.find(tree, DEFAULT_INCLUDE, exclude) == (
        [
            "dir.md/inner.md",
            "guide.markdown",
            "index.md",
            "projects/archive/keep.md",
            "projects/plan.md",
            "中文.md",
            "笔记/数据库.md",
        ],
        [],
    )


@pytest.mark.parametrize(
    ("include", "exclude", "expected"),
    [
        pytest.param(("*.txt",), (), ["notes.txt"], id="txt-only"),
        pytest.param(("*.markdown",), (), ["guide.markdown"], id="markdown-only"),
        pytest.param(
            ("projects/*",),
            ("*.tmp.md",),
            [
                "projects/archive/keep.md",
                "projects/drafts/p.md",
                "projects/plan.md",
                "projects/private.md",
            ],
            id="include-a-folder",
        ),
        pytest.param(("笔记",), (), ["笔记/数据库.md"], id="include-chinese-folder"),
        pytest.param(
            ("*.md",),
            ("projects", "archive", "drafts", "笔记", "*.tmp.md", "dir.md"),
            ["index.md", "private.md", "中文.md"],
            id="exclude-many-folders",
        ),
        pytest.param(("*.md",), ("*",), [], id="exclude-everything"),
    ],
)
def test_find_include_exclude_table(tree, include, exclude, expected):
    found, skipped = notes.find(tree, include, exclude)
    assert found == expected
    assert [s for s in skipped if s.reason != notes.HIDDEN] == []


def test_find_does_not_list_a_folder_named_like_a_note(tree):
    found, _ = notes.find(tree, DEFAULT_INCLUDE)
    assert "dir.md" not in found
    assert [s for s in found if s.startswith("dir.md")] == ["dir.md/inner.md"]
    assert unreadable_reason(notes.read, tree, "dir.md") == "not a regular file"


def test_find_on_an_empty_folder(tmp_path):
    assert notes.find(tmp_path, DEFAULT_INCLUDE) == ([], [])


def test_find_follows_a_folder_linked_from_outside_only_when_asked(tmp_path):
    outside = tmp_path / "outside"
    write(outside, "e.md")
    write(outside, "sub/f.md")
    root = tmp_path / "kb"
    write(root, "a.md")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    assert notes.find(root, DEFAULT_INCLUDE) == (
        ["a.md"],
        [notes.Skipped("linked/", notes.OUTSIDE)],
    )
    assert notes.find(root, DEFAULT_INCLUDE, follow_symlinks=True) == (
        ["a.md", "linked/e.md", "linked/sub/f.md"],
        [],
    )


def test_find_refuses_file_links_that_lead_out_of_the_folder(tmp_path):
    secret = write(tmp_path, "etc/passwd", b"root:x:0:0:root:/root:/bin/bash\n")
    root = tmp_path / "kb"
    write(root, "a.md")
    (root / "passwd.md").symlink_to(secret)
    (root / "sub").mkdir()
    (root / "sub" / "up.md").symlink_to("../../etc/passwd")  # relative, still outside
    (root / "sub" / "gone.md").symlink_to(tmp_path / "missing.md")  # broken and outside
    (root / "sub" / "inside.md").symlink_to("../a.md")  # stays inside: kept
    found, skipped = notes.find(root, DEFAULT_INCLUDE)
    assert found == ["a.md", "sub/inside.md"]
    assert skipped == [
        notes.Skipped(s, notes.OUTSIDE) for s in ("passwd.md", "sub/gone.md", "sub/up.md")
    ]
    assert "links outside the knowledge folder" in notes.OUTSIDE
    found, skipped = notes.find(root, DEFAULT_INCLUDE, follow_symlinks=True)
    assert (found, skipped) == (
        ["a.md", "passwd.md", "sub/gone.md", "sub/inside.md", "sub/up.md"],
        [],
    )


def test_find_through_a_linked_knowledge_folder_keeps_its_notes(tmp_path):
    """The knowledge folder itself may be a symlink: what is inside its target is inside."""
    write(tmp_path, "real/a.md")
    (tmp_path / "real" / "b.md").symlink_to(tmp_path / "real" / "a.md")
    (tmp_path / "kb").symlink_to(tmp_path / "real", target_is_directory=True)
    assert notes.find(tmp_path / "kb", DEFAULT_INCLUDE) == (["a.md", "b.md"], [])


def test_find_with_links_followed_still_survives_loops(tmp_path):
    outside = tmp_path / "outside"
    write(outside, "o.md")
    (outside / "back").symlink_to(tmp_path / "kb", target_is_directory=True)
    (outside / "again").symlink_to(outside, target_is_directory=True)
    root = tmp_path / "kb"
    write(root, "a.md")
    (root / "out").symlink_to(outside, target_is_directory=True)
    with fails_if_blocked():
        found, skipped = notes.find(root, DEFAULT_INCLUDE, follow_symlinks=True)
    assert (found, skipped) == (["a.md", "out/o.md"], [])


def test_a_dot_dot_md_file_is_hidden_and_reported(tmp_path):
    """tldr's pages/common/..md (the page of the `.` command): a name that starts with a
    dot is hidden, and every hidden file the include globs match is said to be skipped."""
    root = tmp_path / "kb"
    for rel in ("pages/common/..md", "pages/common/ls.md", "pages/.md", ".x.md", ".notes.txt"):
        write(root, rel)
    assert notes.find(root, DEFAULT_INCLUDE) == (
        ["pages/common/ls.md"],
        [notes.Skipped(s, notes.HIDDEN) for s in (".x.md", "pages/.md", "pages/common/..md")],
    )
    assert notes.find(root, DEFAULT_INCLUDE, exclude=("..md",))[1] == [
        notes.Skipped(s, notes.HIDDEN) for s in (".x.md", "pages/.md")
    ]


def test_find_lists_a_folder_linked_twice_once(tmp_path):
    root = tmp_path / "kb"
    write(root, "real/r.md")
    (root / "zz_alias").symlink_to("real", target_is_directory=True)
    assert notes.find(root, DEFAULT_INCLUDE) == (["real/r.md"], [])


def test_find_survives_symlink_loops(tmp_path):
    root = tmp_path / "kb"
    write(root, "top.md")
    write(root, "a/x.md")
    write(root, "b/y.md")
    (root / "a" / "loop").symlink_to("..", target_is_directory=True)  # a/loop -> kb
    (root / "b" / "self").symlink_to(root / "b", target_is_directory=True)  # b/self -> b
    (root / "self.md").symlink_to("self.md")  # a link to itself: ELOOP on stat
    with fails_if_blocked():
        found, skipped = notes.find(root, DEFAULT_INCLUDE)
    assert (found, skipped) == (["a/x.md", "b/y.md", "self.md", "top.md"], [])
    assert unreadable_reason(notes.read, root, "self.md") == (
        "a broken symlink (its target is missing or loops)"
    )


def test_find_lists_broken_symlinks_and_fifos_so_read_can_report_them(tmp_path):
    root = tmp_path / "kb"
    write(root, "ok.md")
    (root / "broken.md").symlink_to("nowhere.md")
    os.mkfifo(root / "x.md")
    with fails_if_blocked():
        assert notes.find(root, DEFAULT_INCLUDE) == (["broken.md", "ok.md", "x.md"], [])


# --------------------------------------------------------------------------------------
# read
# --------------------------------------------------------------------------------------


def test_read_a_normal_note(tmp_path):
    data = b"---\r\ntitle: Backups\r\ntags: [ops]\r\n---\r\n# Backups\r\nNightly.\r\n"
    write(tmp_path, "runbooks/backups.md", data)
    found = notes.read(tmp_path, "runbooks/backups.md", 10 * MB)
    assert found.properties == (("title", "backups", None, None), ("tags", "ops", None, None))
    assert without_properties(found) == Note(
        source="runbooks/backups.md",
        text="# Backups\nNightly.\n",
        first_line=5,
        md5=md5(data),
        title="Backups",
        tags=("ops",),
    )


def test_read_chinese_path_without_limit(tmp_path):
    data = "# 数据库\n索引\n".encode()
    write(tmp_path, "笔记/数据库.md", data)
    assert notes.read(tmp_path, "笔记/数据库.md") == Note(
        source="笔记/数据库.md", text="# 数据库\n索引\n", first_line=1, md5=md5(data)
    )


def test_read_through_a_file_symlink(tmp_path):
    data = b"# real\n"
    write(tmp_path, "real.md", data)
    (tmp_path / "link.md").symlink_to("real.md")
    assert notes.read(tmp_path, "link.md") == Note(
        source="link.md", text="# real\n", first_line=1, md5=md5(data)
    )


def test_read_reports_undecodable_bytes(tmp_path):
    write(tmp_path, "gbk.md", "数据库".encode("gbk"))
    assert unreadable_reason(notes.read, tmp_path, "gbk.md") == (
        "not UTF-8 (byte 0xca at offset 0); re-save it as UTF-8"
    )


def test_read_at_exactly_the_limit_is_fine(tmp_path):
    data = b"x" * 1000
    write(tmp_path, "n.md", data)
    assert notes.read(tmp_path, "n.md", 1000) == Note(
        source="n.md", text="x" * 1000, first_line=1, md5=md5(data)
    )


@pytest.mark.parametrize(
    ("size", "max_bytes", "reason"),
    [
        pytest.param(600_000, MB // 2, "0.6 MB, over the 0.5 MB limit", id="half-mb"),
        pytest.param(3 * MB, 2 * MB, "3.0 MB, over the 2 MB limit", id="two-mb"),
        pytest.param(
            25 * MB + MB // 4, 10 * MB, "25.2 MB, over the 10 MB limit", id="default-limit"
        ),
        pytest.param(
            3 * MB,
            Settings(max_file_mb=2.5).max_file_bytes,
            "3.0 MB, over the 2.5 MB limit",
            id="settings-2.5",
        ),
        # The limit is shown as the user wrote it in ASKMD_MAX_FILE_MB.
        pytest.param(
            200_000,
            Settings(max_file_mb=0.1).max_file_bytes,
            "0.2 MB, over the 0.1 MB limit",
            id="settings-0.1",
        ),
        pytest.param(
            MB,
            Settings(max_file_mb=0.3).max_file_bytes,
            "1.0 MB, over the 0.3 MB limit",
            id="settings-0.3",
        ),
    ],
)
def test_read_over_the_size_limit(tmp_path, size, max_bytes, reason):
    path = tmp_path / "big.md"
    path.touch()
    os.truncate(path, size)  # a real file of that size (sparse), never read
    assert unreadable_reason(notes.read, tmp_path, "big.md", max_bytes) == (
        f"{reason} (ASKMD_MAX_FILE_MB)"
    )


def test_read_a_fifo_is_not_a_regular_file_and_does_not_hang(tmp_path):
    os.mkfifo(tmp_path / "x.md")
    with fails_if_blocked():
        reason = unreadable_reason(notes.read, tmp_path, "x.md", 10 * MB)
    assert reason == "not a regular file"


def test_read_a_directory_is_not_a_regular_file(tmp_path):
    (tmp_path / "dir.md").mkdir()
    assert unreadable_reason(notes.read, tmp_path, "dir.md") == "not a regular file"


def test_read_a_file_deleted_after_find(tmp_path):
    write(tmp_path, "a.md")
    write(tmp_path, "gone.md")
    found, _ = notes.find(tmp_path, DEFAULT_INCLUDE)
    assert found == ["a.md", "gone.md"]
    (tmp_path / "gone.md").unlink()
    assert unreadable_reason(notes.read, tmp_path, "gone.md") == "vanished before it could be read"


def test_read_a_broken_symlink_does_not_claim_it_vanished(tmp_path):
    """A link whose target never existed did not vanish: the reason must say it is a
    broken symlink (the exact wording is the module's choice)."""
    (tmp_path / "broken.md").symlink_to("nowhere.md")
    found, _ = notes.find(tmp_path, DEFAULT_INCLUDE)
    assert found == ["broken.md"]
    reason = unreadable_reason(notes.read, tmp_path, "broken.md")
    assert reason != "vanished before it could be read"
    assert "symlink" in reason


def test_a_file_name_that_is_not_utf8_is_skipped_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "good.md").write_text("# Good\n", encoding="utf-8")
    with open(os.fsencode(tmp_path) + b"/bad\x80.md", "wb") as handle:
        handle.write(b"# Bad\n")
    found, skipped = notes.find(tmp_path, ("*.md",))
    assert found == ["good.md"]
    assert [(s.source, s.reason) for s in skipped] == [
        ("bad\ufffd.md", "named in an encoding other than UTF-8; rename it")
    ]


FRENCH = """# Préparer le café

Le café est prêt à être servi. Où est la clé? Ça va très bien, merci.
Il faut moudre les grains juste avant l'infusion : la mouture fraîche garde l'arôme.
Versez l'eau à 93 °C, jamais bouillante, et attendez quatre minutes.
"""
QUOTES = """# Release notes

He said “ship it” – and left… The licence costs 5€ a seat.
It’s the “stable” channel — use it for production.

The rollback command is `deploy --undo`; it takes a minute.
"""
JAPANESE = """設定ガイド

設定ファイルはホームディレクトリにあります。
変更したあとはサーバーを再起動してください。
ログは毎晩ローテーションされます。
"""


def test_a_note_in_a_legacy_encoding_is_read_when_its_encoding_is_certain(run_rag, tmp_path):
    """Latin-1, Windows-1252 and Shift-JIS notes were skipped as not UTF-8: decoded when
    the detector is sure, with a warning naming the encoding assumed; a file too short
    to tell is still skipped. Lines are counted as in the file."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "cafe.md").write_bytes(FRENCH.encode("latin-1"))
    (kb / "release.md").write_bytes(QUOTES.encode("cp1252"))
    (kb / "guide.txt").write_bytes(JAPANESE.encode("shift_jis"))
    (kb / "short.md").write_bytes(b"caf\xe9")
    where = ("--knowledge", str(kb), "--index-dir", str(tmp_path / "ix"))
    result = run_rag(*where, "index", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [s["path"] for s in report["files_skipped"]] == ["short.md"]
    warned = " | ".join(report["warnings"])
    for name, encoding in (("cafe.md", "windows-1252"), ("release.md", "windows-1252"),
                           ("guide.txt", "shift_jis")):  # fmt: skip
        assert f"{name}: not UTF-8, read as {encoding}" in warned, warned
    found = run_rag(*where, "search", "rollback command deploy undo", "--json")
    top = json.loads(found.stdout)["results"][0]
    assert top["source"] == "release.md" and "deploy --undo" in top["text"]
    assert (top["line_start"], top["line_end"]) == (1, 6)
    assert "“ship it” – and left…" in top["text"]
    found = run_rag(*where, "search", "設定ファイル ホームディレクトリ", "--json")
    top = json.loads(found.stdout)["results"][0]
    assert top["source"] == "guide.txt" and "サーバーを再起動" in top["text"]
    assert top["line_end"] == 5
