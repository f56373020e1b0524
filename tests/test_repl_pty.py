"""The REPL in a real pseudo-terminal: live streaming, Ctrl-C, Ctrl-D, line editing.

A scripted OpenAI-compatible server gives both the embeddings and the chat replies; the
chat reply can be slow, so that Ctrl-C lands while the answer is still streaming.
"""

from __future__ import annotations

import io
import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import NOTES, ROOT, clean_env, index_once, missing, write_notes
from tests.openai_server import ChatScript, OpenAIServer

try:
    import pexpect
except ImportError:  # pragma: no cover - pexpect is in requirements-dev.txt
    pexpect = None

PROMPT = "\n› "  # at the start of a line: a heading chain has "Ports › Metrics"
# The prompt as readline redraws it after Ctrl-C: it may move the cursor over the space
# instead of writing it, and escape sequences are taken out of the plain text.
PROMPT_AGAIN = "\n›"
ROWS, COLS = 40, 100
SLOW_PIECES, SLOW_DELAY = 40, 0.2  # a whole slow answer takes 8 s
ANSWER = ["The API ", "listens ", "on port ", "8420 ", "[1]", "."]
ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[=>()][0-9A-Za-z]?"
)


def plain(text: str) -> str:
    """Terminal output without escape sequences and carriage returns."""
    return ANSI.sub("", text).replace("\r", "")


def _in_select(pid: int) -> bool:
    """Whether the main thread sleeps in select()/poll(), readline's wait for a key. A
    sleeping state alone is not enough: waiting for the GIL while the watcher or the
    vector filler holds it is sleeping too, and a SIGINT then is read late."""
    try:
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return True  # no wchan to read: the state alone must do
    return wchan in ("", "0") or "poll" in wchan or "select" in wchan


class Term:
    """A child in a pseudo-terminal, read as plain text (colours and cursor moves removed)."""

    def __init__(self, child) -> None:
        self.child = child
        self.log = io.StringIO()  # everything the child wrote, as it came
        child.logfile_read = self.log
        self.seen = 0  # how far into the plain text the last wait matched

    @property
    def screen(self) -> str:
        return plain(self.log.getvalue())

    def wait(self, text: str, timeout: float = 30) -> str:
        """Read until `text` appears after the last match; the plain output up to its end."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen
            found = screen.find(text, self.seen)
            if found != -1:
                shown, self.seen = screen[self.seen : found + len(text)], found + len(text)
                return shown
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{text!r} not shown within {timeout} s:\n{screen}")
            try:
                self.child.read_nonblocking(4096, timeout=min(0.05, left))
            except pexpect.TIMEOUT:
                pass
            except pexpect.EOF:
                raise AssertionError(f"the program ended before {text!r}:\n{screen}") from None

    def idle(self, timeout: float = 3.0) -> None:
        """Wait until the program is blocked waiting for a key.

        Needed before Ctrl-C at the prompt: CPython's readline looks at signals only when
        its select() is interrupted, so a SIGINT that lands between drawing the prompt and
        entering select() waits for the next Ctrl-C. A person is never that fast; a test is.
        """
        stat = Path(f"/proc/{self.child.pid}/stat")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                state = stat.read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):  # no /proc: give it time instead
                time.sleep(0.5)
                return
            if state == "S" and _in_select(self.child.pid):
                return
            time.sleep(0.01)

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def ask(self, line: str) -> str:
        """Type a line, wait for the next prompt; what was shown in between, as plain text."""
        self.child.sendline(line)
        self.wait(line)  # the echo
        return self.wait(PROMPT)

    def quit_with_eof(self) -> None:
        """Ctrl-D at the prompt: the program ends with exit status 0."""
        self.child.sendeof()
        self.child.expect(pexpect.EOF)
        self.child.close()
        assert self.child.exitstatus == 0, self.screen


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(dimension=16) as s:
        yield s


def askmd_env(server: OpenAIServer) -> dict[str, str]:
    return clean_env(
        ASKMD_EMBEDDING_BACKEND="openai",
        ASKMD_EMBEDDING_MODEL="test-embed",
        ASKMD_LLM_MODEL="test-chat",
        OPENAI_BASE_URL=server.url,
        OPENAI_API_KEY="k",
    )


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ports = {"guides/ports.md": NOTES["guides/ports.md"]}
    return write_notes(tmp_path_factory.mktemp("notes") / "kb", ports)


@pytest.fixture(scope="module")
def built_index(kb: Path, server: OpenAIServer) -> Path:
    """The index of `kb`, built once: each test copies it, so the REPL starts in a blink."""
    return index_once(kb, askmd_env(server))


@pytest.fixture
def repl(tmp_path: Path, kb: Path, built_index: Path, server: OpenAIServer):
    """Start `python rag.py` (the REPL) in a pseudo-terminal; wait for its first prompt."""
    if pexpect is None or not hasattr(pexpect, "spawn"):
        missing("pexpect (with pty support) is not installed")
    index_dir = tmp_path / "ix"
    shutil.copytree(built_index, index_dir)
    children = []

    def start(script: ChatScript) -> Term:
        server.routes["/v1/chat/completions"] = script
        server.requests.clear()
        env = askmd_env(server)
        # A real terminal: rich shows the live view only where the terminal can redraw.
        env.update(TERM="xterm-256color", COLUMNS=str(COLS), LINES=str(ROWS))
        child = pexpect.spawn(
            sys.executable,
            [str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(index_dir)],
            env=env,
            cwd=str(tmp_path),
            dimensions=(ROWS, COLS),
            encoding="utf-8",
            timeout=30,
        )
        children.append(child)
        term = Term(child)
        term.wait(PROMPT)
        return term

    yield start
    for child in children:
        if child.isalive():
            child.terminate(force=True)
        child.close()


def test_ctrl_c_cancels_a_streaming_answer(repl, server: OpenAIServer) -> None:
    script = ChatScript([f"word{i} " for i in range(SLOW_PIECES)], delay=SLOW_DELAY)
    term = repl(script)
    question = "Which port does the API listen on?"
    term.child.sendline(question)
    term.wait("word2")  # the answer is on screen while it is being written
    term.child.sendintr()
    interrupted = time.monotonic()
    term.wait("(cancelled)", timeout=4)
    term.wait(PROMPT, timeout=4)
    back = time.monotonic() - interrupted
    assert back < 4, f"the prompt came back {back:.1f} s after Ctrl-C"
    assert term.child.isalive()

    # The request was ended: the server noticed the closed connection and stopped sending.
    assert script.ended.wait(3)
    assert script.sent < SLOW_PIECES
    assert script.questions == [question]

    # The REPL goes on: a command works, and so does the next question.
    assert "/sources" in term.ask("/help")
    script.pieces, script.delay = ANSWER, 0.0
    shown = term.ask("What about the metrics?")
    assert "The API listens on port 8420 [1]." in shown
    assert "[1] guides/ports.md" in shown
    assert script.questions == [question, "What about the metrics?"]
    # The cancelled exchange was not kept: no history, so no rewrite of the follow-up.
    assert not any(
        r.body["messages"][-1]["content"].endswith("Rewritten question:")
        for r in server.requests
        if r.path == "/v1/chat/completions"
    )
    term.quit_with_eof()


def test_ctrl_d_at_the_prompt_quits_with_status_0(repl) -> None:
    term = repl(ChatScript(ANSWER))
    term.child.sendeof()
    term.child.expect(pexpect.EOF, timeout=10)
    term.child.close()
    assert term.child.exitstatus == 0
    assert term.child.signalstatus is None


@pytest.mark.parametrize("word", ["quit", "exit", ":q", "退出", " Exit "])
def test_a_bare_quit_or_exit_leaves_instead_of_being_asked(repl, word: str) -> None:
    script = ChatScript(ANSWER)
    term = repl(script)
    term.child.sendline(word)
    term.child.expect(pexpect.EOF, timeout=10)
    term.child.close()
    assert term.child.exitstatus == 0
    assert script.questions == []  # not answered as a question


def test_ctrl_c_at_an_empty_prompt_does_not_quit(repl) -> None:
    script = ChatScript(ANSWER)
    term = repl(script)
    for _ in range(2):
        term.idle()
        term.child.sendintr()
        term.wait(PROMPT_AGAIN, timeout=5)
        assert term.child.isalive()
    assert "/sources" in term.ask("/help")
    assert script.questions == []
    term.quit_with_eof()


def test_a_streamed_answer_ends_with_the_checked_text_and_references(repl) -> None:
    script = ChatScript(ANSWER, delay=0.05)
    term = repl(script)
    shown = term.ask("Which port does the API listen on?")
    assert script.questions == ["Which port does the API listen on?"]
    final = shown.rfind("The API listens on port 8420 [1].")
    assert final != -1, shown
    reference = re.search(r"^\[1\] guides/ports\.md › Ports.* \(lines \d+–\d+\)$", shown, re.M)
    assert reference and reference.start() > final, shown
    assert "warning" not in shown

    # A citation of a source that was not given is removed: only the warning names it.
    script.pieces = ["Port 8420 ", "[1]", "[7]", "."]
    shown = term.ask("And on which port are the metrics?")
    answer_part, *warnings = shown.split("warning:")
    assert "Port 8420 [1]." in answer_part
    assert any("[7]" in w and "removed" in w for w in warnings)
    assert "[7]" not in answer_part.rsplit("Port 8420", 1)[1]
    term.quit_with_eof()


def test_up_arrow_recalls_the_last_question_and_history_is_saved(repl, tmp_path: Path) -> None:
    script = ChatScript(ANSWER)
    term = repl(script)
    question = "Which port does the API listen on?"
    assert "[1] guides/ports.md" in term.ask(question)
    term.send("\x1b[A")  # Up: the previous line comes back, ready to edit
    term.wait(question)
    term.send("\r")
    assert "[1] guides/ports.md" in term.wait(PROMPT)
    assert script.questions == [question, question]
    term.quit_with_eof()

    history = tmp_path / "ix" / "history"
    assert history.is_file()
    assert question in history.read_text(encoding="utf-8")


def test_sources_after_debug_shows_what_debug_found(repl) -> None:
    term = repl(ChatScript(ANSWER))
    term.ask("Which port does the API listen on?")
    before = term.ask("/sources")
    assert "Ports (lines 1–3)" in before.split("[2]")[0], before
    debugged = term.ask("/debug which metrics")
    assert "Metrics" in debugged.split("│ 2 │")[0], debugged
    shown = term.ask("/sources")
    assert "Ports > Metrics (lines 5–7)" in shown.split("[2]")[0], shown
    term.quit_with_eof()
