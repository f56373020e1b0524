"""Retrieval evaluation: the queries file, the metrics on hand-computed rankings, and the
`eval` command end to end with the real local embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from askmd import evaluate
from askmd.errors import AskmdError
from askmd.evaluate import Miss, Query, read_queries
from askmd.search.hits import Hit
from tests.conftest import write_notes

JSON_KEYS = ["queries", "k", "hit@1", "hit@5", "hit@10", "recall@10", "mrr@10"]
GOOD = '{"id": "%s", "query": "%s", "relevant": ["%s"]}'


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------
# read_queries
# --------------------------------------------------------------------------------------


def test_a_good_file_is_read_in_order_and_blank_lines_are_skipped(tmp_path) -> None:
    path = write(
        tmp_path / "q.jsonl",
        "\n".join(
            [
                GOOD % ("ports", "which port?", "guides/ports.md"),
                "",
                "   \t",
                '{"query": "  how do I feed the starter?  ", "relevant": ["bread.md", "b/c.md"]}',
                '{"id": 7, "query": "数据库备份", "relevant": []}',
                "",
            ]
        ),
    )
    assert read_queries(path) == [
        Query("ports", "which port?", ("guides/ports.md",)),
        Query("4", "how do I feed the starter?", ("bread.md", "b/c.md")),  # id: the line
        Query("7", "数据库备份", ()),
    ]


BAD_LINES = [
    pytest.param("not json at all", id="not-json"),
    pytest.param('{"query": "q", "relevant": ["a.md"]', id="truncated-json"),
    pytest.param('{"id": "x", "relevant": ["a.md"]}', id="missing-query"),
    pytest.param('{"id": "x", "query": "q"}', id="missing-relevant"),
    pytest.param('{"query": "q", "relevant": "a.md"}', id="relevant-a-string"),
    pytest.param('{"query": "q", "relevant": {"a.md": 1}}', id="relevant-a-dict"),
    pytest.param('{"query": "q", "relevant": ["a.md", 3]}', id="relevant-not-strings"),
    pytest.param('{"query": "", "relevant": ["a.md"]}', id="empty-query"),
    pytest.param('{"query": "   ", "relevant": ["a.md"]}', id="blank-query"),
    pytest.param('["q", ["a.md"]]', id="a-list"),
    pytest.param('"q"', id="a-string"),
    pytest.param("null", id="null"),
    pytest.param('{"query": null, "relevant": ["a.md"]}', id="null-query"),
]


@pytest.mark.parametrize("bad", BAD_LINES)
def test_a_bad_line_is_one_error_naming_its_number(tmp_path, bad) -> None:
    path = write(tmp_path / "q.jsonl", GOOD % ("a", "q", "a.md") + "\n\n" + bad + "\n")
    with pytest.raises(AskmdError) as caught:
        read_queries(path)
    message = str(caught.value)
    assert f"{path} line 3 is not a query" in message
    assert '"relevant"' in message  # says what a line should look like
    assert "\n" not in message


def test_a_missing_file_is_an_error(tmp_path) -> None:
    with pytest.raises(AskmdError, match=r"cannot read the queries file .*: No such file"):
        read_queries(tmp_path / "nowhere.jsonl")


def test_a_folder_is_an_error(tmp_path) -> None:
    with pytest.raises(AskmdError, match="cannot read the queries file"):
        read_queries(tmp_path)


def test_a_file_that_is_not_utf8_is_an_error(tmp_path) -> None:
    path = write(
        tmp_path / "q.jsonl", '{"query": "caf\xe9", "relevant": ["a.md"]}\n'.encode("latin-1")
    )
    with pytest.raises(AskmdError, match="it is not UTF-8"):
        read_queries(path)


@pytest.mark.parametrize("text", ["", "\n", "\n  \n\t\n"])
def test_a_file_without_queries_is_an_error(tmp_path, text) -> None:
    path = write(tmp_path / "q.jsonl", text)
    with pytest.raises(AskmdError, match="has no queries"):
        read_queries(path)


def test_a_utf8_file_with_a_bom_is_read(tmp_path) -> None:
    path = write(tmp_path / "q.jsonl", "\ufeff" + GOOD % ("a", "q", "a.md") + "\n")
    assert read_queries(path) == [Query("a", "q", ("a.md",))]


# --------------------------------------------------------------------------------------
# evaluate, with a plain search function
# --------------------------------------------------------------------------------------


def hit(source: str, rank: int, piece: int = 0) -> Hit:
    return Hit(rank, 1.0 / rank, f"{source}#{piece}", source, "Title", 1, 2, "text")


def ranking(*chunks: str) -> list[Hit]:
    """Hits in this order; "x.md#1" is the second chunk of x.md."""
    out = []
    for rank, chunk in enumerate(chunks, start=1):
        source, _, piece = chunk.partition("#")
        out.append(hit(source, rank, int(piece or 0)))
    return out


OTHERS = [f"other{i}.md" for i in range(12)]
RESULTS = {
    # rank 1
    "first": ranking("a.md", "a.md#1", "x.md"),
    # x.md twice counts once: b.md is the third *file*
    "third": ranking("x.md", "x.md#1", "y.md", "b.md"),
    # c.md seventh, d.md never: recall 1/2
    "seventh": ranking(*OTHERS[:6], "c.md"),
    # e.md twelfth: past k=10, a miss
    "twelfth": ranking(*OTHERS[:11], "e.md"),
}
QUERIES = [
    Query("q1", "first", ("a.md",)),
    Query("q2", "third", ("b.md",)),
    Query("q3", "seventh", ("c.md", "d.md")),
    Query("q4", "twelfth", ("e.md",)),
]


def test_metrics_on_a_hand_computed_example() -> None:
    asked: list[tuple[str, int]] = []

    def search(query: str, n: int) -> list[Hit]:
        asked.append((query, n))
        return RESULTS[query]

    report = evaluate.evaluate(QUERIES, search, k=10)
    assert asked == [(q.query, 10 * evaluate.CHUNKS_PER_FILE) for q in QUERIES]
    assert report.queries == 4 and report.k == 10
    assert report.hit_at == {1: 1 / 4, 5: 2 / 4, 10: 3 / 4}
    assert report.recall_at_10 == pytest.approx((1 + 1 + 1 / 2 + 0) / 4)
    assert report.mrr_at_10 == pytest.approx((1 + 1 / 3 + 1 / 7 + 0) / 4)
    assert report.misses == [
        Miss("q4", "twelfth", ("e.md",), ("other0.md", "other1.md", "other2.md"))
    ]
    assert report.to_json() == {
        "queries": 4,
        "k": 10,
        "hit@1": 0.25,
        "hit@5": 0.5,
        "hit@10": 0.75,
        "recall@10": 0.625,
        "mrr@10": 0.369,
    }
    assert list(report.to_json()) == JSON_KEYS
    assert len(report.latencies_ms) == 4


def test_full_recall_when_every_relevant_file_is_in_the_top_ten() -> None:
    results = ranking("z.md", "d.md", "d.md#1", *OTHERS[:6], "c.md", "late.md")
    report = evaluate.evaluate(
        [Query("both", "q", ("c.md", "d.md", "late.md"))], lambda q, n: results, k=10
    )
    # files: z, d, other0..5, c (9th), late (10th): all three inside the ten
    assert report.recall_at_10 == 1.0
    assert report.mrr_at_10 == 0.5
    assert report.hit_at == {1: 0.0, 5: 1.0, 10: 1.0}
    assert report.misses == []


def test_files_are_ranked_by_their_best_chunk() -> None:
    hits = ranking("x.md#2", "y.md", "x.md#0", "z.md", "y.md#3")
    assert evaluate.rank_files(hits) == ["x.md", "y.md", "z.md"]


def test_a_query_with_nothing_found_is_a_miss_with_nothing_found() -> None:
    report = evaluate.evaluate([Query("none", "q", ("a.md",))], lambda q, n: [], k=10)
    assert report.to_json() == dict.fromkeys(JSON_KEYS, 0.0) | {"queries": 1, "k": 10}
    assert report.misses == [Miss("none", "q", ("a.md",), ())]


def test_k_decides_the_misses_and_each_metric_keeps_its_own_depth() -> None:
    asked: list[int] = []

    def search(query: str, n: int) -> list[Hit]:
        asked.append(n)
        return RESULTS[query]

    report = evaluate.evaluate(QUERIES, search, k=2)
    # b.md is the third file: a miss at k=2, yet inside the top 5 and the top 10
    assert report.hit_at == {1: 1 / 4, 5: 2 / 4, 10: 3 / 4}
    assert report.mrr_at_10 == pytest.approx((1 + 1 / 3 + 1 / 7 + 0) / 4)
    assert [m.id for m in report.misses] == ["q2", "q3", "q4"]
    assert set(asked) == {10 * evaluate.CHUNKS_PER_FILE}  # deep enough for hit@10
    deeper = evaluate.evaluate(QUERIES, lambda q, n: RESULTS[q], k=20)
    assert deeper.hit_at == report.hit_at and deeper.misses == []  # e.md is twelfth


def test_relevant_paths_that_name_no_indexed_file_are_listed_once() -> None:
    queries = [*QUERIES, Query("q5", "again", ("a.md", "/abs/a.md", "typo.md", "typo.md"))]
    indexed = {"a.md", "b.md", "c.md", "d.md", "e.md"}
    assert evaluate.unknown_paths(queries, indexed) == ["/abs/a.md", "typo.md"]
    assert evaluate.unknown_paths(QUERIES, indexed) == []


# --------------------------------------------------------------------------------------
# The eval command, end to end with the local embedder
# --------------------------------------------------------------------------------------

NOTES = {
    "guides/ports.md": "# Ports\n\nThe API listens on port 8420; metrics are on 9420.\n",
    "bread.md": "# Sourdough\n\nFeed the sourdough starter flour and water every day.\n",
    "taxes.md": "# Taxes\n\nFile the yearly tax return before the end of April.\n",
    "cat.md": "# Afternoons\n\nThe cat sat on the mat all afternoon.\n",
}
EVAL_QUERIES = [
    {"id": "port", "query": "which port does the API listen on?", "relevant": ["guides/ports.md"]},
    {"id": "bread", "query": "how often do I feed the starter?", "relevant": ["bread.md"]},
    {"id": "gone", "query": "zorblax quuxification", "relevant": ["missing.md"]},
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A knowledge folder, a queries file and one index dir shared by the CLI runs."""
    root = tmp_path_factory.mktemp("eval")
    write_notes(root / "kb", NOTES)
    lines = [json.dumps(q, ensure_ascii=False) for q in EVAL_QUERIES]
    write(root / "q.jsonl", lines[0] + "\n\n" + "\n".join(lines[1:]) + "\n")
    return root


def eval_cli(run_rag, folder: Path, *args: str, queries: str = "q.jsonl"):
    return run_rag(
        "--knowledge",
        str(folder / "kb"),
        "--index-dir",
        str(folder / "ix"),
        "eval",
        str(folder / queries),
        *args,
    )


def check_metrics(result, k: int) -> dict:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    metrics = json.loads(result.stdout)  # stdout is the JSON and nothing else
    assert list(metrics) == JSON_KEYS
    assert (metrics["queries"], metrics["k"]) == (3, k)
    for key in JSON_KEYS[2:]:
        assert 0.0 <= metrics[key] <= 1.0, key
    # Two of the three queries are answerable, and any retriever finds them in four notes.
    assert metrics["hit@10"] == metrics["recall@10"] == 0.6667
    return metrics


def test_eval_json_prints_exactly_the_metrics(run_rag, folder) -> None:
    check_metrics(eval_cli(run_rag, folder, "--json"), k=10)


def test_eval_keyword_retriever_with_k(run_rag, folder) -> None:
    metrics = check_metrics(
        eval_cli(run_rag, folder, "--retriever", "keyword", "-k", "5", "--json"), k=5
    )
    assert metrics == {"queries": 3, "k": 5} | dict.fromkeys(JSON_KEYS[2:], 0.6667)


def test_eval_dense_retriever_verbose_lists_the_miss(run_rag, folder) -> None:
    result = eval_cli(run_rag, folder, "--retriever", "dense", "--verbose")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "3 queries" in result.stdout and "k=10" in result.stdout
    shown = dict(
        line.split()
        for line in result.stdout.splitlines()
        if line.startswith(("hit@", "recall@", "mrr@"))
    )
    assert list(shown) == JSON_KEYS[2:]
    assert shown["hit@10"] == shown["recall@10"] == "0.667"
    assert "1 miss\n" in result.stdout
    misses = [line for line in result.stdout.splitlines() if line.startswith("miss ")]
    assert misses == ["miss gone: zorblax quuxification"]
    assert "wanted missing.md" in result.stdout
    assert result.stderr.splitlines()[-1] == (
        f"warning: {folder / 'q.jsonl'}: 1 relevant path not in the index (missing.md; paths "
        "are relative to the knowledge folder): scored as misses"
    )


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("bad.jsonl", GOOD % ("a", "q", "a.md") + '\n{"query": "q"}\n', "bad.jsonl line 2 is not"),
        ("latin1.jsonl", b'{"query": "caf\xe9", "relevant": []}\n', "it is not UTF-8"),
        ("empty.jsonl", "", "has no queries"),
        ("absent.jsonl", None, "cannot read the queries file"),
    ],
)
def test_a_bad_queries_file_is_one_error_line_and_exit_1(
    run_rag, tmp_path, name, content, expected
) -> None:
    if content is not None:
        write(tmp_path / name, content)
    write_notes(tmp_path / "kb", NOTES)
    result = run_rag(
        "--knowledge", str(tmp_path / "kb"), "--index-dir", str(tmp_path / "ix"), "eval", name
    )
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and expected in lines[0]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "ix").exists()  # refused before any indexing


def test_empty_queries_are_skipped_and_counted_when_asked_to(tmp_path) -> None:
    path = write(
        tmp_path / "q.jsonl",
        '{"id": "a", "query": "", "relevant": ["x.md"]}\n'
        '{"id": "b", "query": "ports", "relevant": ["y.md"]}\n'
        '{"id": "c", "query": "   ", "relevant": ["z.md"]}\n',
    )
    skipped: list[int] = []
    assert read_queries(path, skipped) == [Query("b", "ports", ("y.md",))]
    assert skipped == [1, 3]
