"""The core is silent: only the interfaces talk to the terminal.

An MCP server speaks its protocol over stdout, where one stray byte breaks it, and a
watcher runs beside a REPL that is streaming an answer. So everything below the
interfaces reports through what its caller passes in (a progress object, a `show`
function), never by importing console.py or printing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from askmd.pipeline import Index
from askmd.settings import load_settings
from tests.conftest import ROOT, write_notes

# The modules that face a user and may print; everything else is the core.
INTERFACES = {
    "rag",
    "cli",
    "cli_common",
    "commands",
    "repl",
    "__main__",
    "console",
    "answer_display",
    "found_display",
    "server",
    "api",
    "mcp_server",
    "mcp_schema",
    "mcp_stdio",
}


STAGES = {"askmd", "askmd.read", "askmd.index", "askmd.search", "askmd.answer", "askmd.interfaces"}


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside a function (askmd's by their own
    name: `from askmd.interfaces import console` and `from askmd.interfaces.console import
    x` are both `console`)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(_own_name(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module in STAGES and not node.level:
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(_own_name(node.module))
    return names


def _own_name(module: str) -> str:
    parts = module.split(".")
    return parts[-1] if parts[0] == "askmd" and len(parts) > 1 else parts[0]


def printing_calls(path: Path) -> list[int]:
    """Lines that call print() or write to sys.stdout directly."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "print":
            lines.append(node.lineno)
        elif isinstance(func, ast.Attribute) and "sys.stdout" in ast.unparse(func):
            lines.append(node.lineno)
    return lines


MODULES = [*ROOT.glob("*.py"), *(ROOT / "askmd").rglob("*.py")]
CORE = sorted(p for p in MODULES if p.stem not in INTERFACES)


def test_the_core_is_more_than_a_few_modules() -> None:
    assert {"pipeline", "indexer", "exchange", "grounding"} <= {p.stem for p in CORE}


@pytest.mark.parametrize("path", CORE, ids=lambda p: p.stem)
def test_no_core_module_imports_console(path: Path) -> None:
    assert "console" not in imported_modules(path)


@pytest.mark.parametrize("path", CORE, ids=lambda p: p.stem)
def test_no_core_module_prints(path: Path) -> None:
    assert printing_calls(path) == []


def module_graph() -> dict[str, set[str]]:
    """askmd's modules by dotted name, each with the askmd modules it imports: at the top,
    inside a function or only for type checking, all alike."""
    names = {}
    for path in (ROOT / "askmd").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        names[name.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    inner = f"{node.module}.{alias.name}"
                    found.add(inner if inner in names else node.module)
        graph[name] = {m for m in found if m in names and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a loop."""
    reach = {name: set() for name in graph}
    for start in graph:
        todo = list(graph[start])
        while todo:
            name = todo.pop()
            if name not in reach[start]:
                reach[start].add(name)
                todo.extend(graph[name])
    groups = {
        frozenset({a, *(b for b in reach[a] if a in reach[b])}) for a in graph if a in reach[a]
    }
    return sorted(sorted(g) for g in groups)


def test_no_module_imports_one_that_imports_it_back() -> None:
    """Type-only imports count: a loop of them still ties the modules' designs together."""
    assert cycles(module_graph()) == []


def test_a_sync_search_and_ask_write_nothing_to_stdout(tmp_path: Path, capfd) -> None:
    """Run in-process, the way an MCP server would, with the file descriptors captured
    (so a C library writing to fd 1 counts too)."""
    knowledge = write_notes(
        tmp_path / "kb",
        {
            "ops/ports.md": "# Ports\n\nThe API listens on port 8088 behind the proxy.\n",
            "ops/keys.md": "# Keys\n\nRotate the S3 keys every ninety days.\n",
        },
    )
    settings = load_settings(
        environ={},
        dotenv_path=None,
        overrides={"knowledge_dir": knowledge, "index_dir": tmp_path / "ix"},
    )
    index = Index(settings)
    capfd.readouterr()
    report = index.sync()
    (knowledge / "ops" / "ports.md").write_text("# Ports\n\nThe API uses port 9090.\n")
    index.sync(paths=["ops/ports.md"])
    hits = index.search("which port does the API use", 3)
    result = index.ask("which port does the API use?", [], 3)
    out, _ = capfd.readouterr()
    assert report.files_added == 2
    assert hits and hits[0].source == "ops/ports.md"
    assert "9090" in result.text
    assert out == ""
