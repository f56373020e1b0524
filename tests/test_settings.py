"""settings.load_settings: layers, parsing and validation, with real .env files in tmp_path."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from askmd import settings
from askmd.errors import AskmdError
from askmd.settings import Settings, load_settings

ASKMD_VARS = [name for name, _ in settings.DOCS.values()]


@pytest.fixture(autouse=True)
def clean_askmd_environment(monkeypatch):
    """The developer's own ASKMD_* variables must not leak into these tests."""
    for name in ASKMD_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def kdir(tmp_path: Path) -> Path:
    folder = tmp_path / "kb"
    folder.mkdir()
    return folder


def dotenv(tmp_path: Path, text: str, name: str = "askmd.env") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def problems(environ, dotenv_path=None, overrides=None, *, need_knowledge_dir=False) -> list[str]:
    with pytest.raises(AskmdError) as info:
        load_settings(environ, dotenv_path, overrides, need_knowledge_dir=need_knowledge_dir)
    return str(info.value).split("\n")


# --------------------------------------------------------------------------------------
# defaults
# --------------------------------------------------------------------------------------


def test_defaults_without_knowledge_check():
    assert load_settings({}, None, need_knowledge_dir=False) == Settings()
    assert Settings() == Settings(
        knowledge_dir=Path("knowledge"),
        chunk_size=1000,
        chunk_overlap=200,
        include=("*.md", "*.markdown", "*.pdf", "*.docx", "*.html", "*.htm", "*.txt"),
        exclude=(),
        max_file_mb=10.0,
    )
    assert Settings().max_file_bytes == 10 * 1024 * 1024


def test_defaults_with_an_existing_knowledge_folder(kdir):
    assert load_settings({"ASKMD_KNOWLEDGE_DIR": str(kdir)}, None) == Settings(knowledge_dir=kdir)


@pytest.mark.parametrize(
    "dotenv_text",
    [
        pytest.param(None, id="dotenv-file-missing"),
        pytest.param("", id="dotenv-empty"),
        pytest.param("# only a comment\n\nOTHER_TOOL=1\n", id="dotenv-unrelated"),
        pytest.param("ASKMD_CHUNK_SIZE=\nASKMD_INCLUDE=   \n", id="dotenv-blank-values"),
    ],
)
def test_dotenv_without_askmd_values_gives_defaults(tmp_path, dotenv_text):
    path = tmp_path / "absent.env" if dotenv_text is None else dotenv(tmp_path, dotenv_text)
    assert load_settings({}, path, need_knowledge_dir=False) == Settings()


def test_a_dotenv_path_that_is_a_folder_is_ignored(tmp_path):
    assert load_settings({}, tmp_path, need_knowledge_dir=False) == Settings()


# --------------------------------------------------------------------------------------
# precedence: defaults < .env < environment < overrides
# --------------------------------------------------------------------------------------

DOTENV_ALL = """\
ASKMD_KNOWLEDGE_DIR={root}/from_dotenv
ASKMD_CHUNK_SIZE=300
ASKMD_CHUNK_OVERLAP=30
ASKMD_INCLUDE=*.dotenv
ASKMD_EXCLUDE=dotenv_drafts
ASKMD_MAX_FILE_MB=3
"""

ENVIRON_ALL = {
    "ASKMD_KNOWLEDGE_DIR": "{root}/from_environ",
    "ASKMD_CHUNK_SIZE": "400",
    "ASKMD_CHUNK_OVERLAP": "40",
    "ASKMD_INCLUDE": "*.environ",
    "ASKMD_EXCLUDE": "environ_drafts",
    "ASKMD_MAX_FILE_MB": "4",
}

OVERRIDES_ALL = {
    "knowledge_dir": "{root}/from_flag",
    "chunk_size": 500,
    "chunk_overlap": 50,
    "include": ("*.flag",),
    "exclude": ("flag_drafts",),
    "max_file_mb": 5.0,
}


@pytest.mark.parametrize(
    ("use_dotenv", "use_environ", "use_overrides", "layer"),
    [
        pytest.param(True, False, False, "dotenv", id="dotenv-only"),
        pytest.param(True, True, False, "environ", id="environment-beats-dotenv"),
        pytest.param(False, True, False, "environ", id="environment-only"),
        pytest.param(True, True, True, "flag", id="flags-beat-both"),
        pytest.param(False, False, True, "flag", id="flags-only"),
    ],
)
def test_layer_precedence(tmp_path, use_dotenv, use_environ, use_overrides, layer):
    for name in ("from_dotenv", "from_environ", "from_flag"):
        (tmp_path / name).mkdir()
    path = dotenv(tmp_path, DOTENV_ALL.format(root=tmp_path)) if use_dotenv else None
    environ = {k: v.format(root=tmp_path) for k, v in ENVIRON_ALL.items()} if use_environ else {}
    overrides = (
        {**OVERRIDES_ALL, "knowledge_dir": tmp_path / "from_flag"} if use_overrides else None
    )
    expected = {
        name: Settings(
            knowledge_dir=tmp_path / f"from_{src}",
            chunk_size=size,
            chunk_overlap=size // 10,
            include=(f"*.{src}",),
            exclude=(f"{src}_drafts",),
            max_file_mb=size / 100,
        )
        for name, src, size in (
            ("dotenv", "dotenv", 300),
            ("environ", "environ", 400),
            ("flag", "flag", 500),
        )
    }[layer]
    assert load_settings(environ, path, overrides) == expected


def test_overrides_set_to_none_are_ignored(tmp_path):
    path = dotenv(tmp_path, "ASKMD_CHUNK_SIZE=300\n")
    loaded = load_settings(
        {"ASKMD_CHUNK_OVERLAP": "40"},
        path,
        {"chunk_size": None, "chunk_overlap": None, "knowledge_dir": None},
        need_knowledge_dir=False,
    )
    assert loaded == Settings(chunk_size=300, chunk_overlap=40)


def test_each_variable_comes_from_its_own_highest_layer(tmp_path):
    path = dotenv(tmp_path, "ASKMD_CHUNK_SIZE=300\nASKMD_CHUNK_OVERLAP=30\nASKMD_MAX_FILE_MB=3\n")
    loaded = load_settings(
        {"ASKMD_CHUNK_OVERLAP": "40", "ASKMD_INCLUDE": "*.txt"},
        path,
        {"max_file_mb": 5.0},
        need_knowledge_dir=False,
    )
    assert loaded == Settings(chunk_size=300, chunk_overlap=40, include=("*.txt",), max_file_mb=5.0)


@pytest.mark.parametrize("blank", [pytest.param("", id="empty"), pytest.param("   ", id="spaces")])
def test_a_blank_environment_value_does_not_hide_the_dotenv_value(tmp_path, blank):
    path = dotenv(tmp_path, "ASKMD_CHUNK_SIZE=300\nASKMD_INCLUDE=*.txt\n")
    loaded = load_settings(
        {"ASKMD_CHUNK_SIZE": blank, "ASKMD_INCLUDE": blank}, path, need_knowledge_dir=False
    )
    assert loaded == Settings(chunk_size=300, include=("*.txt",))


def test_loading_a_dotenv_never_touches_os_environ(tmp_path):
    assert "ASKMD_TEST_ONLY_IN_DOTENV" not in os.environ
    before = dict(os.environ)
    path = dotenv(tmp_path, "ASKMD_CHUNK_SIZE=300\nASKMD_TEST_ONLY_IN_DOTENV=yes\n")
    assert load_settings({}, path, need_knowledge_dir=False) == Settings(chunk_size=300)
    assert "ASKMD_TEST_ONLY_IN_DOTENV" not in os.environ
    assert "ASKMD_CHUNK_SIZE" not in os.environ
    assert dict(os.environ) == before


def test_environ_none_reads_os_environ(monkeypatch):
    monkeypatch.setenv("ASKMD_CHUNK_SIZE", "700")
    monkeypatch.setenv("ASKMD_EXCLUDE", "drafts")
    assert load_settings(None, None, need_knowledge_dir=False) == Settings(
        chunk_size=700, exclude=("drafts",)
    )


def test_dotenv_syntax_quotes_comments_export(tmp_path):
    path = dotenv(
        tmp_path,
        "# askmd settings\n"
        "export ASKMD_CHUNK_SIZE=600\n"
        'ASKMD_INCLUDE="*.md, *.txt"  # two globs\n'
        "ASKMD_EXCLUDE='drafts'\n",
    )
    assert load_settings({}, path, need_knowledge_dir=False) == Settings(
        chunk_size=600, include=("*.md", "*.txt"), exclude=("drafts",)
    )


# --------------------------------------------------------------------------------------
# parsing
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        pytest.param(
            {"ASKMD_INCLUDE": "*.md, *.txt ,,"}, Settings(include=("*.md", "*.txt")), id="include"
        ),
        pytest.param(
            {"ASKMD_EXCLUDE": " drafts , archive/* ,*.tmp.md"},
            Settings(exclude=("drafts", "archive/*", "*.tmp.md")),
            id="exclude",
        ),
        pytest.param({"ASKMD_EXCLUDE": ""}, Settings(exclude=()), id="exclude-empty"),
        pytest.param({"ASKMD_MAX_FILE_MB": "2.5"}, Settings(max_file_mb=2.5), id="max-mb-float"),
        pytest.param({"ASKMD_MAX_FILE_MB": " 7 "}, Settings(max_file_mb=7.0), id="max-mb-int"),
        pytest.param({"ASKMD_CHUNK_SIZE": " 1500 "}, Settings(chunk_size=1500), id="size-spaces"),
        pytest.param({"ASKMD_CHUNK_OVERLAP": "0"}, Settings(chunk_overlap=0), id="overlap-zero"),
        pytest.param(
            {"ASKMD_CHUNK_SIZE": "100", "ASKMD_CHUNK_OVERLAP": "99"},
            Settings(chunk_size=100, chunk_overlap=99),
            id="smallest-valid-size-and-overlap",
        ),
        pytest.param(
            {"ASKMD_KNOWLEDGE_DIR": "  /srv/notes  "},
            Settings(knowledge_dir=Path("/srv/notes")),
            id="knowledge-dir-stripped",
        ),
        pytest.param(
            {"ASKMD_KNOWLEDGE_DIR": "笔记"},
            Settings(knowledge_dir=Path("笔记")),
            id="knowledge-dir-chinese",
        ),
    ],
)
def test_parsing(environ, expected):
    assert load_settings(environ, None, need_knowledge_dir=False) == expected


def test_max_file_mb_in_bytes():
    loaded = load_settings({"ASKMD_MAX_FILE_MB": "2.5"}, None, need_knowledge_dir=False)
    assert (loaded.max_file_mb, loaded.max_file_bytes) == (2.5, 2621440)


def test_an_empty_exclude_in_the_environment_overrides_the_dotenv_exclude(tmp_path):
    path = dotenv(tmp_path, "ASKMD_EXCLUDE=drafts,archive/*\n")
    assert load_settings({}, path, need_knowledge_dir=False).exclude == ("drafts", "archive/*")
    assert load_settings({"ASKMD_EXCLUDE": ""}, path, need_knowledge_dir=False) == Settings()


def test_knowledge_dir_tilde_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "notes").mkdir()
    loaded = load_settings({"ASKMD_KNOWLEDGE_DIR": "~/notes"}, None)
    assert loaded == Settings(knowledge_dir=tmp_path / "notes")


# --------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------

OVERLAP_TOO_BIG = "the overlap must be smaller than the chunk size ({size}); the default is 200"

SINGLE_PROBLEM_CASES = [
    # (environ, overrides, expected lines)
    pytest.param(
        {"ASKMD_CHUNK_SIZE": "abc"},
        None,
        ["ASKMD_CHUNK_SIZE='abc' (from environment) is not a whole number"],
        id="size-not-a-number",
    ),
    pytest.param(
        {"ASKMD_CHUNK_SIZE": "1000.0"},
        None,
        ["ASKMD_CHUNK_SIZE='1000.0' (from environment) is not a whole number"],
        id="size-decimal",
    ),
    pytest.param(
        {"ASKMD_CHUNK_OVERLAP": "1e2"},
        None,
        ["ASKMD_CHUNK_OVERLAP='1e2' (from environment) is not a whole number"],
        id="overlap-exponent",
    ),
    pytest.param(
        {"ASKMD_CHUNK_SIZE": "99", "ASKMD_CHUNK_OVERLAP": "10"},
        None,
        ["ASKMD_CHUNK_SIZE='99' (from environment): the chunk size must be at least 100"],
        id="size-below-minimum",
    ),
    pytest.param(
        {"ASKMD_CHUNK_OVERLAP": "-1"},
        None,
        ["ASKMD_CHUNK_OVERLAP='-1' (from environment): the overlap cannot be negative"],
        id="overlap-negative",
    ),
    pytest.param(
        {"ASKMD_CHUNK_SIZE": "500", "ASKMD_CHUNK_OVERLAP": "500"},
        None,
        ["ASKMD_CHUNK_OVERLAP='500' (from environment): " + OVERLAP_TOO_BIG.format(size=500)],
        id="overlap-equals-size",
    ),
    pytest.param(
        {"ASKMD_CHUNK_SIZE": "500", "ASKMD_CHUNK_OVERLAP": "600"},
        None,
        ["ASKMD_CHUNK_OVERLAP='600' (from environment): " + OVERLAP_TOO_BIG.format(size=500)],
        id="overlap-above-size",
    ),
    pytest.param(
        {"ASKMD_CHUNK_OVERLAP": "300"},
        {"chunk_size": 300},
        ["ASKMD_CHUNK_OVERLAP='300' (from environment): " + OVERLAP_TOO_BIG.format(size=300)],
        id="overlap-equals-size-from-flag",
    ),
    pytest.param(
        {"ASKMD_CHUNK_OVERLAP": "300"},
        {"chunk_size": 250},
        ["ASKMD_CHUNK_OVERLAP='300' (from environment): " + OVERLAP_TOO_BIG.format(size=250)],
        id="overlap-above-size-from-flag",
    ),
    pytest.param(
        {},
        {"chunk_overlap": 1000},
        ["--overlap 1000: " + OVERLAP_TOO_BIG.format(size=1000)],
        id="flag-overlap-equals-default-size",
    ),
    pytest.param(
        {},
        {"chunk_size": 150},
        ["ASKMD_CHUNK_OVERLAP (default 200): " + OVERLAP_TOO_BIG.format(size=150)],
        id="default-overlap-above-flag-size",
    ),
    pytest.param(
        {"ASKMD_INCLUDE": ",,"},
        None,
        ["ASKMD_INCLUDE=',,' (from environment): at least one include glob is needed, e.g. *.md"],
        id="include-empty",
    ),
    pytest.param(
        {"ASKMD_MAX_FILE_MB": "0"},
        None,
        ["ASKMD_MAX_FILE_MB='0' (from environment): the size limit must be above 0"],
        id="max-mb-zero",
    ),
    pytest.param(
        {"ASKMD_MAX_FILE_MB": "-2"},
        None,
        ["ASKMD_MAX_FILE_MB='-2' (from environment): the size limit must be above 0"],
        id="max-mb-negative",
    ),
    pytest.param(
        {"ASKMD_MAX_FILE_MB": "nan"},
        None,
        ["ASKMD_MAX_FILE_MB='nan' (from environment) is not a finite number"],
        id="max-mb-nan",
    ),
    pytest.param(
        {"ASKMD_MAX_FILE_MB": "ten"},
        None,
        ["ASKMD_MAX_FILE_MB='ten' (from environment) is not a number"],
        id="max-mb-not-a-number",
    ),
    pytest.param(
        {},
        {"max_file_mb": 0},
        ["--max-file-mb 0: the size limit must be above 0"],
        id="max-mb-zero-from-flag",
    ),
]


@pytest.mark.parametrize(("environ", "overrides", "expected"), SINGLE_PROBLEM_CASES)
def test_validation_single_problem(environ, overrides, expected):
    assert problems(environ, None, overrides) == expected


def test_a_bad_dotenv_value_names_the_dotenv_file(tmp_path):
    path = dotenv(tmp_path, "ASKMD_CHUNK_SIZE=abc\nASKMD_CHUNK_OVERLAP=-3\n")
    assert problems({}, path) == [
        f"ASKMD_CHUNK_SIZE='abc' (from {path}) is not a whole number",
        f"ASKMD_CHUNK_OVERLAP='-3' (from {path}): the overlap cannot be negative",
    ]


def test_all_problems_at_once_from_the_environment(tmp_path):
    missing = tmp_path / "no-such-folder"
    assert problems(
        {
            "ASKMD_KNOWLEDGE_DIR": str(missing),
            "ASKMD_CHUNK_SIZE": "abc",
            "ASKMD_CHUNK_OVERLAP": "-1",
            "ASKMD_INCLUDE": ",,",
            "ASKMD_MAX_FILE_MB": "0",
        },
        need_knowledge_dir=True,
    ) == [
        "ASKMD_CHUNK_SIZE='abc' (from environment) is not a whole number",
        "ASKMD_CHUNK_OVERLAP='-1' (from environment): the overlap cannot be negative",
        "ASKMD_INCLUDE=',,' (from environment): at least one include glob is needed, e.g. *.md",
        "ASKMD_MAX_FILE_MB='0' (from environment): the size limit must be above 0",
        f"ASKMD_KNOWLEDGE_DIR={str(missing)!r} (from environment): the knowledge folder "
        "does not exist: create it, or point ASKMD_KNOWLEDGE_DIR or --knowledge at your notes",
    ]


def test_all_problems_at_once_across_layers(tmp_path):
    a_file = tmp_path / "notes.md"
    a_file.write_text("# not a folder\n", encoding="utf-8")
    path = dotenv(tmp_path, f"ASKMD_KNOWLEDGE_DIR={a_file}\nASKMD_MAX_FILE_MB=ten\n")
    assert problems(
        {"ASKMD_CHUNK_SIZE": "50", "ASKMD_CHUNK_OVERLAP": "1500"},
        path,
        {"include": ("*.md",)},
        need_knowledge_dir=True,
    ) == [
        f"ASKMD_MAX_FILE_MB='ten' (from {path}) is not a number",
        "ASKMD_CHUNK_SIZE='50' (from environment): the chunk size must be at least 100",
        "ASKMD_CHUNK_OVERLAP='1500' (from environment): " + OVERLAP_TOO_BIG.format(size=50),
        f"ASKMD_KNOWLEDGE_DIR={str(a_file)!r} (from {path}): the knowledge folder "
        "is not a folder: point ASKMD_KNOWLEDGE_DIR or --knowledge at your notes",
    ]


def test_a_bad_chunk_size_falls_back_to_the_default_for_the_overlap_check():
    assert problems({"ASKMD_CHUNK_SIZE": "big", "ASKMD_CHUNK_OVERLAP": "1000"}) == [
        "ASKMD_CHUNK_SIZE='big' (from environment) is not a whole number",
        "ASKMD_CHUNK_OVERLAP='1000' (from environment): " + OVERLAP_TOO_BIG.format(size=1000),
    ]


def test_size_below_minimum_is_one_line_not_two():
    """The default overlap is above 99 too, but the size is what to fix."""
    assert settings.MIN_CHUNK_SIZE == 100
    assert problems({"ASKMD_CHUNK_SIZE": "99"}) == [
        "ASKMD_CHUNK_SIZE='99' (from environment): the chunk size must be at least 100",
    ]


@pytest.mark.parametrize(
    ("make", "what"),
    [
        pytest.param(lambda p: None, "does not exist: create it, or point", id="missing"),
        pytest.param(
            lambda p: p.write_text("x", encoding="utf-8"), "is not a folder: point", id="file"
        ),
    ],
)
def test_knowledge_folder_must_be_a_folder(tmp_path, make, what):
    target = tmp_path / "kb"
    make(target)
    environ = {"ASKMD_KNOWLEDGE_DIR": str(target)}
    assert problems(environ, need_knowledge_dir=True) == [
        f"ASKMD_KNOWLEDGE_DIR={str(target)!r} (from environment): the knowledge folder "
        f"{what} ASKMD_KNOWLEDGE_DIR or --knowledge at your notes"
    ]
    # need_knowledge_dir=False skips only this check
    assert load_settings(environ, None, need_knowledge_dir=False) == Settings(knowledge_dir=target)


def test_knowledge_folder_problem_names_where_the_path_came_from(tmp_path):
    """Like every other line, the knowledge-folder line names the variable, its value and
    the layer it came from (here the .env file)."""
    missing = tmp_path / "gone"
    path = dotenv(tmp_path, f"ASKMD_KNOWLEDGE_DIR={missing}\n")
    [line] = problems({}, path, need_knowledge_dir=True)
    assert f"ASKMD_KNOWLEDGE_DIR={str(missing)!r} (from {path})" in line
    assert "does not exist" in line


def test_an_infinite_size_limit_is_rejected_like_any_bad_value():
    """float('inf') passes `> 0`, then Settings.max_file_bytes raises OverflowError (a
    traceback in rag) instead of a one-line AskmdError."""
    assert problems({"ASKMD_MAX_FILE_MB": "inf"})[0].startswith(
        "ASKMD_MAX_FILE_MB='inf' (from environment)"
    )


# --------------------------------------------------------------------------------------
# the object
# --------------------------------------------------------------------------------------


def test_settings_is_frozen():
    loaded = load_settings({}, None, need_knowledge_dir=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.chunk_size = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.knowledge_dir = Path("elsewhere")  # type: ignore[misc]
    assert loaded == Settings()


def test_every_field_has_a_documented_variable():
    assert [f.name for f in settings.variable_fields(Settings)] == list(settings.DOCS)
    names = [env for env, _ in settings.DOCS.values()]
    assert len(set(names)) == len(names)
    assert all(n.startswith("ASKMD_") or n in ("OPENAI_API_KEY", "OPENAI_BASE_URL") for n in names)


def test_the_api_key_is_not_shown_in_the_settings_repr():
    loaded = load_settings({"OPENAI_API_KEY": "sk-secret"}, None, need_knowledge_dir=False)
    assert loaded.openai_api_key == "sk-secret" and "sk-secret" not in repr(loaded)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), (" yes ", True), ("true", True), ("0", False), ("off", False)],
)
def test_follow_symlinks_is_off_unless_turned_on(raw, expected):
    assert Settings().follow_symlinks is False
    loaded = load_settings({"ASKMD_FOLLOW_SYMLINKS": raw}, None, need_knowledge_dir=False)
    assert loaded.follow_symlinks is expected


def test_a_bad_follow_symlinks_value_is_named():
    assert problems({"ASKMD_FOLLOW_SYMLINKS": "sometimes"}) == [
        "ASKMD_FOLLOW_SYMLINKS='sometimes' (from environment) is not 1 or 0"
    ]


def test_the_default_index_folder_follows_the_knowledge_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    loaded = load_settings({"ASKMD_KNOWLEDGE_DIR": str(tmp_path)}, None)
    assert loaded.index_dir.parent == tmp_path / "data" / "askmd"
    assert loaded.index_dir.name.startswith(tmp_path.name[:40])
    assert settings.default_text("index_dir") == ""  # .env.example: empty means per folder


def test_unknown_askmd_names_are_warned_about_once_with_the_nearest_known_one(
    tmp_path: Path, kdir: Path
) -> None:
    path = dotenv(tmp_path, "ASKMD_TOPK=3\nASKMD_CHUNK_SIZE=400\nOTHER=1\n")
    said: list[str] = []
    s = load_settings(
        {"ASKMD_KNOWLEDGE_DIR": str(kdir), "ASKMD_WACH": "0", "ASKMD_ZZZZZZZZ": "1"},
        path,
        warn=said.append,
    )
    assert s.top_k == 5 and s.chunk_size == 400  # the misspelled name changes nothing
    assert said == [
        f"unknown settings ignored: ASKMD_TOPK (from {path}; did you mean ASKMD_TOP_K?), "
        "ASKMD_WACH (from environment; did you mean ASKMD_WATCH?), "
        "ASKMD_ZZZZZZZZ (from environment)"
    ]
    quiet: list[str] = []
    load_settings({"ASKMD_TOP_K": "3"}, None, warn=quiet.append, need_knowledge_dir=False)
    assert quiet == []


def test_a_bad_chunk_size_is_reported_without_its_knock_on_overlap_error() -> None:
    assert problems({"ASKMD_CHUNK_SIZE": "-5"}) == [
        "ASKMD_CHUNK_SIZE='-5' (from environment): the chunk size must be at least 100"
    ]
    # a good size with a bad overlap is still reported
    assert problems({"ASKMD_CHUNK_SIZE": "300", "ASKMD_CHUNK_OVERLAP": "300"}) == [
        "ASKMD_CHUNK_OVERLAP='300' (from environment): the overlap must be smaller than the "
        "chunk size (300); the default is 200"
    ]
