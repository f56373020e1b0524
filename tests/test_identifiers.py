"""Exact identifiers first: the chunk holding a looked-up error code, made-up word or
function name ranks above look-alikes, whatever the dense side thinks of them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from askmd.search import identifiers
from askmd.search.tuning import SHIPPED
from tests.conftest import synced_index

CODE = "\n".join(f"    value_{i} = compute(value_{i - 1}, factor={i})" for i in range(1, 40))
NOTES = {
    # The one note holding quokka0marmalade says it after a long code block, where its
    # vector barely sees it ...
    "long.md": (
        f"# Pipeline\n\n```python\n{CODE}\n```\n\n"
        "The quokka0marmalade rule applies to the last step.\n"
    ),
    # ... while five short notes say almost the same sentence with another word,
    **{
        f"short{i}.md": f"# Rule {i}\n\nThe quokka{i}marmalade rule applies to the last step.\n"
        for i in range(1, 6)
    },
    # and thirty more say "rule" at all lengths, so keyword scores spread.
    **{
        f"other{i}.md": f"# Other {i}\n\n"
        + " ".join(["Each team follows the rule that reviews happen before merging."] * (1 + i % 5))
        + f" Topic {i} is about gardening and weather.\n"
        for i in range(30)
    },
}


CODES = {
    "errors.md": (
        "# Error codes\n\n## LUM-E013\n\nThe license server refused the seat: check the "
        "seat count.\n\n## LUM-E014\n\nThe license server could not be reached: check the "
        "proxy settings.\n"
    ),
    "plugin.md": (
        "# Plugin lifecycle\n\nUse onLayoutReady to defer work until the workspace is ready."
        "\n\nUse onload for what must happen at once.\n"
    ),
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    return synced_index(tmp_path_factory.mktemp("identifiers"), NOTES)


@pytest.fixture(scope="module")
def codes(tmp_path_factory: pytest.TempPathFactory):
    return synced_index(tmp_path_factory.mktemp("codes"), {**NOTES, **CODES})


@pytest.mark.parametrize(
    ("query", "holder"),
    [
        ("quokka0marmalade rule", "long.md"),
        ("quokka3marmalade rule", "short3.md"),
    ],
)
@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
def test_the_chunk_holding_a_rare_identifier_ranks_first(
    index, query: str, holder: str, mode: str
) -> None:
    (term,) = identifiers.identifiers(query)
    hits = index.search(query, 3, mode=mode)

    assert hits[0].source == holder
    assert term in identifiers.terms(hits[0].text)


@pytest.mark.parametrize("query", ["what does LUM-E014 mean", "LUM-E014"])
def test_an_error_code_finds_its_own_section(codes, query: str) -> None:
    hits = codes.search(query, 3)
    assert "could not be reached" in hits[0].text


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("quokka0marmalade rule", ["quokka0marmalade"]),
        ("what does LUM-E013 mean?", ["lum-e013"]),
        ("LUM-E013是什么错误？", ["lum-e013"]),
        ("call onLayoutReady when", ["onlayoutready"]),
        ("edit config.yaml and src/app", ["config.yaml", "src/app"]),
        ("ERR_CONN_42", ["err_conn_42"]),
        ("How do I keep my Mac from going to sleep?", []),
        ("what is a vault", []),
        ("2024", []),
    ],
)
def test_identifier_shapes(query: str, expected: list[str]) -> None:
    assert identifiers.identifiers(query) == expected


def test_a_common_identifier_does_not_reorder(tmp_path: Path) -> None:
    """A word many chunks hold says nothing about which of them answers."""
    notes = {
        f"n{i}.md": f"# Note {i}\n\nWe use docker-compose for service {i}.\n" for i in range(8)
    }
    index = synced_index(tmp_path, notes)
    counts, total = index.manifest.frequencies(["docker-compose"])
    assert counts["docker-compose"] > identifiers.rare_limit(total)
    with_rule = [h.chunk_id for h in index.search("docker-compose service 3", 5)]
    index.tuning = replace(SHIPPED, exact_identifiers=False)
    without = [h.chunk_id for h in index.search("docker-compose service 3", 5)]
    assert with_rule == without
