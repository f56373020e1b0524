"""Streamed answers over HTTP against a scripted LLM: the client leaving stops the model,
and follow-up questions carry their history to it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import ASK_JSON_FIELDS, NOTES, write_notes
from tests.openai_server import ChatScript, OpenAIServer
from tests.serving import Served

SLOW_PIECES, SLOW_DELAY = 40, 0.2  # a whole slow answer takes 8 s
CHAT = "/v1/chat/completions"


@pytest.fixture(scope="module")
def llm() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def url(tmp_path_factory, llm: OpenAIServer) -> Iterator[str]:
    root = tmp_path_factory.mktemp("stream")
    knowledge = write_notes(root / "kb", NOTES)
    env = {"OPENAI_BASE_URL": llm.url, "OPENAI_API_KEY": "sk-test", "ASKMD_LLM_MODEL": "m1"}
    with Served(knowledge, root / "ix", **env) as server:
        yield server.url


@pytest.fixture
def script(llm: OpenAIServer) -> ChatScript:
    llm.reset()
    chat = ChatScript(["The API ", "listens on ", "8420 ", "[1]."])
    llm.routes[CHAT] = chat
    return chat


def events(response: httpx.Response) -> Iterator[tuple[str, dict]]:
    name = ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            yield name, json.loads(line[6:])


def test_leaving_mid_answer_stops_the_model(url: str, script: ChatScript) -> None:
    script.pieces, script.delay = [f"word{i} " for i in range(SLOW_PIECES)], SLOW_DELAY
    body = {"question": "What port does the API listen on?", "stream": True}
    with httpx.Client(base_url=url, timeout=30) as http:
        with http.stream("POST", "/api/v1/ask", json=body) as response:
            for name, data in events(response):
                if name == "token" and "word2" in data["text"]:
                    break  # leave: the connection closes here
        left = time.monotonic()
        assert script.ended.wait(5), "the model was still asked for the rest of the answer"
        assert time.monotonic() - left < 5
        assert script.sent < SLOW_PIECES
        assert http.get("/api/v1/health").json() == {"status": "ok"}  # and it serves on


def test_the_stream_is_tokens_then_one_done_with_checked_citations(
    url: str, script: ChatScript
) -> None:
    script.pieces = ["Port 8420 ", "[1] ", "and ", "[9]."]
    body = {"question": "What port does the API listen on?", "stream": True}
    with httpx.stream("POST", url + "/api/v1/ask", json=body, timeout=30) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        seen = list(events(response))
    names = [name for name, _ in seen]
    assert names[0] == "retrieved" and names[-1] == "done"
    assert names[1:-1] == ["token"] * 4  # each piece as the model sent it
    assert "".join(data["text"] for name, data in seen if name == "token") == "".join(script.pieces)
    done = seen[-1][1]
    assert list(done) == ASK_JSON_FIELDS
    assert done["mode"] == "llm" and done["citations"] == [1] and done["invalid_citations"] == [9]
    assert "[9]" not in done["answer"]
    assert done["references"][0]["source"] == seen[0][1]["results"][0]["source"]


@pytest.mark.parametrize(
    "history",
    [
        [{"question": "What port does the API listen on?", "answer": "8420 [1]"}],
        [
            {"role": "user", "content": "What port does the API listen on?"},
            {"role": "assistant", "content": "8420 [1]"},
        ],
    ],
    ids=["pairs", "messages"],
)
def test_a_follow_up_is_rewritten_with_its_history(
    url: str, script: ChatScript, llm: OpenAIServer, history: list[dict]
) -> None:
    body = {"question": "and the metrics?", "history": history}
    reply = httpx.post(url + "/api/v1/ask", json=body, timeout=30)
    assert reply.status_code == 200, reply.text
    asked = [r.body["messages"] for r in llm.requests if r.path == CHAT]
    assert len(asked) == 2  # the rewrite, then the answer
    rewrite = asked[0][-1]["content"]
    assert "What port does the API listen on?" in rewrite and "and the metrics?" in rewrite
    assert reply.json()["question"] == "and the metrics?"


def test_a_history_item_without_a_question_is_a_400(url: str, script: ChatScript) -> None:
    body = {"question": "and the metrics?", "history": [{"answer": "8420"}]}
    reply = httpx.post(url + "/api/v1/ask", json=body, timeout=30)
    assert reply.status_code == 400
    assert "history" in reply.json()["error"]
