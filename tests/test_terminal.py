"""What askmd writes to a terminal: bytes per streamed answer, Ctrl-C, escapes in notes.

The REPL runs in a real pseudo-terminal against the scripted OpenAI-compatible server
(tests/openai_server.py), which gives both the embeddings and the streamed replies.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import NOTES, ROOT, index_once, missing, write_notes
from tests.openai_server import ChatScript, OpenAIServer
from tests.test_repl_pty import COLS, PROMPT, ROWS, Term, askmd_env

try:
    import pexpect
except ImportError:  # pragma: no cover - pexpect is in requirements-dev.txt
    pexpect = None


CSI = re.compile(
    r"\x1b\[([0-9;?]*)([ -/]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[=>()][0-9A-Za-z]?"
)


def final_screen(log: str, width: int = COLS) -> str:
    """What a terminal shows after `log`: text placed, wrapped, moved and erased as a
    terminal would (cursor moves, line and screen erases; colours ignored; no scrolling
    limit, so nothing is lost off the top)."""
    lines: list[list[str]] = [[]]
    row = col = 0
    pos = 0
    for match in [*CSI.finditer(log), None]:
        end = match.start() if match else len(log)
        for char in log[pos:end]:
            if char == "\r":
                col = 0
            elif char == "\n":
                row += 1
            elif char == "\b":
                col = max(0, col - 1)
            elif char >= " ":
                if col >= width:
                    row, col = row + 1, 0
                while len(lines) <= row:
                    lines.append([])
                line = lines[row]
                line.extend(" " * (col + 1 - len(line)))
                line[col] = char
                col += 1
            while len(lines) <= row:
                lines.append([])
        if match is None:
            break
        pos = match.end()
        if match.group(3) is None:
            continue
        params, final = match.group(1), match.group(3)
        n = int(params) if params.isdigit() else None
        if final == "A":
            row = max(0, row - (n or 1))
        elif final == "B":
            row += n or 1
        elif final == "C":
            col += n or 1
        elif final == "D":
            col = max(0, col - (n or 1))
        elif final == "G":
            col = (n or 1) - 1
        elif final == "K":
            line = lines[row]
            if n == 2:
                line.clear()
            elif n == 1:
                line[: col + 1] = " " * min(len(line), col + 1)
            else:
                del line[col:]
        elif final == "J":
            del lines[row][col:]
            del lines[row + 1 :]
        while len(lines) <= row:
            lines.append([])
    return "\n".join("".join(line).rstrip() for line in lines)


@pytest.fixture(scope="module")
def server():
    with OpenAIServer(dimension=16) as s:
        yield s


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_notes(tmp_path_factory.mktemp("notes") / "kb", dict(NOTES))


@pytest.fixture(scope="module")
def built_index(kb: Path, server: OpenAIServer) -> Path:
    return index_once(kb, askmd_env(server))


@pytest.fixture
def repl(tmp_path: Path, kb: Path, built_index: Path, server: OpenAIServer):
    """Start the REPL in a pseudo-terminal on a copy of the built index."""
    if pexpect is None or not hasattr(pexpect, "spawn"):
        missing("pexpect (with pty support) is not installed")
    index_dir = tmp_path / "ix"
    shutil.copytree(built_index, index_dir)
    children = []

    def start(script: ChatScript, knowledge: Path = kb) -> Term:
        server.routes["/v1/chat/completions"] = script
        env = askmd_env(server)
        env.update(TERM="xterm-256color", COLUMNS=str(COLS), LINES=str(ROWS))
        args = [str(ROOT / "rag.py"), "--knowledge", str(knowledge), "--index-dir", str(index_dir)]
        child = pexpect.spawn(
            sys.executable, args, env=env, cwd=str(tmp_path), dimensions=(ROWS, COLS),
            encoding="utf-8", timeout=30,
        )  # fmt: skip
        children.append(child)
        term = Term(child)
        term.wait(PROMPT)
        return term

    yield start
    for child in children:
        if child.isalive():
            child.terminate(force=True)
        child.close()


def long_answer() -> list[str]:
    """About 3,000 characters of Markdown in 3-character tokens: paragraphs, a list, citations."""

    # Every sentence differs, so the guard against a looping model never cuts it short.
    def paragraph(part: int) -> str:
        return " ".join(
            f"Part {part}, note {i}: the API listens on port {8420 + i} and the metrics on "
            f"{9420 + i} [1]."
            for i in range(6)
        )

    items = "".join(f"- step {i}: feed the starter and wait an hour [2]\n" for i in range(12))
    text = "".join(
        paragraph(2 * n) + "\n\n" + items + "\n" + paragraph(2 * n + 1) + "\n\n" for n in range(2)
    )
    text += "Done [1]."
    return [text[i : i + 3] for i in range(0, len(text), 3)]


def test_a_long_streamed_answer_is_appended_not_redrawn(repl) -> None:
    pieces = long_answer()
    answer = "".join(pieces)
    term = repl(ChatScript(pieces, delay=0.003))
    term.child.sendline("Which port does the API listen on?")
    term.wait("Which port does the API listen on?")
    before = len(term.log.getvalue())
    term.wait("[1] guides/ports.md")
    term.wait(PROMPT)
    log = term.log.getvalue()
    written = log[before:].encode()
    ups = len(re.findall(rb"\x1b\[\d*A", written))
    print(f"\n{len(answer)} answer chars: {len(written)} bytes written, {ups} cursor-ups")
    assert len(written) <= 4 * len(answer.encode()) + 3000, len(written)
    # What stays on screen is the answer once, as Markdown (bullets), then the references.
    screen = final_screen(log)
    assert screen.count("step 11: feed the starter") == 2, screen  # the list is there twice
    assert screen.count("• step 11: feed the starter") == 2, screen
    assert "- step" not in screen, screen
    assert screen.index("Done [1].") < screen.index("[1] guides/ports.md")
    term.quit_with_eof()


def test_the_wait_for_an_answer_is_named_and_then_gone_from_the_screen(repl) -> None:
    """Searching and reading the notes can take seconds (a first question in another
    language loads a model): a spinner names the wait until the answer or the model's
    stream begins, and leaves nothing behind."""
    term = repl(ChatScript(["The API listens on port 8420 [1]."], delay=0.05))
    term.child.sendline("Which port does the API listen on?")
    term.wait("[1] guides/ports.md")
    term.wait(PROMPT)
    log = term.log.getvalue()
    assert "searching your notes…" in log
    screen = final_screen(log)
    assert "searching your notes" not in screen and "passages…" not in screen, screen
    assert screen.index("port 8420") < screen.index("[1] guides/ports.md")
    term.quit_with_eof()


def test_ctrl_c_keeps_the_partial_answer_with_its_references(repl) -> None:
    pieces = ["Metrics are served ", "on 9420 [2].\n\n"] + [f"word{i} " for i in range(40)]
    script = ChatScript(pieces, delay=0.2)
    term = repl(script)
    term.child.sendline("Which port do the metrics use?")
    term.wait("word2")
    term.child.sendintr()
    term.wait("(cancelled)", timeout=4)
    term.wait(PROMPT, timeout=4)
    screen = final_screen(term.log.getvalue())
    shown = screen[screen.index("Which port do the metrics use?") :]
    assert "Metrics are served on 9420 [2]." in shown, shown
    assert "word2" in shown, shown
    cancelled = shown.index("(cancelled)")
    assert shown.index("word2") < cancelled
    assert re.search(r"^\[2\] guides/ports\.md", shown[cancelled:], re.M), shown
    # the next question stands alone: the cut-off answer was not kept as history
    script.pieces, script.delay = ["Port 8420 [1]."], 0.0
    assert "Port 8420 [1]." in term.ask("and the API?")
    term.quit_with_eof()


# --- escape sequences in notes and file names ----------------------------------------------

ESCAPES = {
    "clipboard": "\x1b]52;c;cm0gLXJmIH4=\x07",
    "title": "\x1b]0;pwned\x1b\\",
    "clear": "\x1b[2J",
    "c1": "\x9b31m",
    "cr": "overwritten\rX",
    "bell": "\x07",
}
HOSTILE = (
    "# Ports\n\nThe API listens on port 8420 "
    + " ".join(ESCAPES.values())
    + " end of the hostile line.\n"
)
RAW = re.compile(r"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f]")


def no_raw_controls(text: str) -> None:
    """No control character but newline, tab and a CR before a newline survives."""
    assert not RAW.search(text), repr(RAW.search(text))
    assert not re.search(r"\r(?!\n)", text), "a lone CR"


@pytest.fixture(scope="module")
def hostile_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    kb = tmp_path_factory.mktemp("hostile") / "kb"
    write_notes(kb, {"ports.md": HOSTILE, "bread.md": NOTES["bread.md"]})
    (kb / "evil\x1b]0;title\x07.md").write_text("# Evil\n\nport 8420 in a bad name\n")
    return kb


def run(kb: Path, server: OpenAIServer, *args: str, llm: bool = False):
    env = askmd_env(server)
    if not llm:
        env = {k: v for k, v in env.items() if k != "ASKMD_LLM_MODEL"}
        env["ASKMD_LLM_MODEL"] = ""
    return subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir",
         str(kb.parent / "ix"), *args],
        env=env, capture_output=True, timeout=60, cwd=kb.parent,
    )  # fmt: skip


def test_escape_sequences_in_notes_are_shown_not_obeyed_down_a_pipe(hostile_kb, server) -> None:
    server.routes["/v1/chat/completions"] = ChatScript(["It is 8420 ", "\x1b]0;x\x07 [1]."])
    for args in (["search", "port 8420 hostile"], ["ask", "port 8420 hostile"]):
        result = run(hostile_kb, server, *args, llm=args[0] == "ask")
        out, err = result.stdout.decode(), result.stderr.decode()
        assert result.returncode == 0, err
        no_raw_controls(out)
        no_raw_controls(err)
        for shown in ("␛]52;c;cm0gLXJmIH4=␇", "␛]0;pwned␛\\", "␛[2J", "\\x9b31m", "8420"):
            assert shown in out, out
        if args[0] == "search":
            assert "evil␛]0;title␇.md" in out
        else:
            assert "It is 8420 ␛]0;x␇ [1]." in out
    result = run(hostile_kb, server, "search", "port 8420 hostile", "--json")
    assert "\x9b" not in result.stdout.decode() and "\\u009b" in result.stdout.decode()
    texts = [r["text"] for r in json.loads(result.stdout)["results"]]
    assert any("\x1b]52;c;" in t for t in texts)  # JSON keeps the text exactly, escaped


BIDI = re.compile("[\u061c\u200b\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069\ufeff]")


def test_bidi_and_invisible_characters_are_shown_not_obeyed(tmp_path, server) -> None:
    """A name "evil<U+202E>gnp.md" read as "evildm.png"; text-direction and invisible
    characters in notes reached answers as they were. Shown as \\u202e, as C1 ones are."""
    kb = write_notes(tmp_path / "kb", {"bread.md": NOTES["bread.md"]})
    (kb / "evil\u202egnp.md").write_text(
        "# Evil\n\nThe vault port is 8421 \u2066isolated\u2069 and\u200bhidden"
        " \u202ereversed\u202c here.\n"
    )
    for args in (["search", "vault port 8421"], ["ask", "which is the vault port?"]):
        result = run(kb, server, *args)
        out = result.stdout.decode()
        assert result.returncode == 0, result.stderr.decode()
        assert not BIDI.search(out), repr(BIDI.search(out))
        assert not BIDI.search(result.stderr.decode())
        assert "evil\\u202egnp.md" in out and "8421" in out, out
        assert "\\u2066isolated\\u2069" in out and "and\\u200bhidden" in out
    result = run(kb, server, "search", "vault port 8421", "--json")
    assert not BIDI.search(result.stdout.decode())
    found = json.loads(result.stdout)["results"][0]
    assert found["source"] == "evil\u202egnp.md" and "\u200b" in found["text"]  # exact


def test_escape_sequences_in_notes_are_shown_not_obeyed_in_the_repl(
    hostile_kb, server, tmp_path
) -> None:
    if pexpect is None or not hasattr(pexpect, "spawn"):
        missing("pexpect (with pty support) is not installed")
    server.routes["/v1/chat/completions"] = ChatScript(["Port 8420 [1].\x1b[2J"])
    env = askmd_env(server)
    env.update(TERM="xterm-256color", COLUMNS=str(COLS), LINES=str(ROWS))
    args = [str(ROOT / "rag.py"), "--knowledge", str(hostile_kb), "--index-dir", str(tmp_path)]
    child = pexpect.spawn(
        sys.executable, args, env=env, dimensions=(ROWS, COLS), timeout=30, encoding="utf-8"
    )
    term = Term(child)
    try:
        term.wait(PROMPT)
        for line in ("/debug port 8420 hostile", "which port?", "/sources"):
            term.ask(line)
        output = term.log.getvalue()
        answers = output[output.index("/debug") :]
        assert "␛]52;c;" in answers and "end of the hostile line" in answers
        assert "evil␛]0;title␇.md" in answers
        assert "␛[2J" in answers  # from the model's reply
        for sequence in ESCAPES.values():  # none reaches the terminal as it is
            assert sequence not in answers
        assert "\x1b]" not in answers and "\x07" not in answers and "\x9b" not in answers
        term.quit_with_eof()
    finally:
        if child.isalive():
            child.terminate(force=True)


# --- sync progress and reports -----------------------------------------------------------


def test_index_progress_counts_files_and_ctrl_c_says_what_was_kept(tmp_path, server) -> None:
    if pexpect is None or not hasattr(pexpect, "spawn"):
        missing("pexpect (with pty support) is not installed")
    kb = write_notes(
        tmp_path / "kb", {f"n{i:03}.md": f"# Note {i}\n\nfact {i}\n" for i in range(300)}
    )
    server.force("/v1/embeddings", delay=0.7, times=20)
    env = askmd_env(server)
    env.update(TERM="xterm-256color", COLUMNS=str(COLS), LINES=str(ROWS))
    args = [str(ROOT / "rag.py"), "--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    child = pexpect.spawn(
        sys.executable, [*args, "index"], env=env, dimensions=(ROWS, COLS), encoding="utf-8"
    )
    term = Term(child)
    try:
        term.wait("300/300")  # every file counted as it is chunked, before any embedding ends
        term.wait("left", timeout=20)  # an estimate from the first batch on
        child.sendintr()
        said = term.wait("run again to continue", timeout=10)
        child.expect(pexpect.EOF, timeout=10)
        child.close()
        assert child.exitstatus == 130
        kept = re.search(
            r"interrupted: (\d+) chunks? kept \(([\d,]+) with vectors\), run again to continue",
            said,
        )
        assert kept and int(kept.group(1)) == 300 and int(kept.group(2)) < 300, said
        after = term.screen.split("run again to continue", 1)[1]
        assert "vectors" not in after and "files" not in after, after  # the bar was stopped
    finally:
        if child.isalive():
            child.terminate(force=True)
    again = run(kb, server, "--index-dir", str(tmp_path / "ix"), "index", "--json")
    assert json.loads(again.stdout)["chunks_total"] == 300


def test_reindex_says_what_was_rebuilt_warns_once_and_counts_right(tmp_path, server) -> None:
    kb = write_notes(tmp_path / "kb", {"fm.md": "---\ntitle: [oops\n---\nBody line\n"})
    env = askmd_env(server)
    args = ["--knowledge", str(kb), "--index-dir", str(tmp_path / "ix")]
    result = subprocess.run(
        [sys.executable, str(ROOT / "rag.py"), *args],
        input="/reindex\n/reindex\n", env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    said = result.stderr + result.stdout
    assert said.count("front matter is not valid YAML") == 1, said
    assert said.count("rebuilt: 1 file, 1 chunk (all from cache)") == 2, said
    assert "indexed: 1 added, 0 changed, 0 deleted, 0 unchanged; 1 chunk embedded" in said
    assert "asked for" not in said and "1 chunks" not in said and "1 files" not in said


def test_a_long_step_with_no_count_is_named_beside_the_files_bar(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Sorting the postings and packing common terms take a minute on a big folder with
    the files bar already full: the bar says what is happening, and stops saying it."""
    import io

    from rich.console import Console

    from askmd.interfaces import console

    screen = io.StringIO()
    monkeypatch.setattr(console, "err", Console(file=screen, force_terminal=True, width=100))
    progress = console.SyncProgress()
    progress.start(3, 0)
    for _ in range(3):
        progress.chunked(1)
    progress.step("sorting the keyword index")
    progress.bar.refresh()
    assert "sorting the keyword index…" in screen.getvalue()
    progress.step("")
    assert progress.bar.tasks[0].fields["eta"] == ""
    progress.finish()


def test_ctrl_c_stops_the_sync_bars_before_saying_what_was_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The "interrupted:" line is the last thing shown: a bar still running (a sync that
    has not reached its own finish) is stopped first, and is not started again after."""
    import io

    from rich.console import Console

    from askmd.interfaces import console

    screen = io.StringIO()
    monkeypatch.setattr(console, "err", Console(file=screen, force_terminal=True, width=100))
    progress = console.SyncProgress()
    progress.start(3, 0)
    progress.filling(10)
    progress.advance(chunks=4)
    console.interrupted(10, 4)
    progress.filling(6)  # what an unwinding sync may still report
    progress.advance(chunks=2)
    progress.finish()
    after = screen.getvalue().split("run again to continue", 1)[1]
    assert "vectors" not in after and "files" not in after, after


def test_vectors_of_another_kind_get_a_bar_of_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Window vectors an older index lacks are computed with no file to read: their count
    is drawn (the files and vectors bars are not, having nothing to count)."""
    import io

    from rich.console import Console

    from askmd.interfaces import console

    screen = io.StringIO()
    monkeypatch.setattr(console, "err", Console(file=screen, force_terminal=True, width=100))
    progress = console.SyncProgress()
    progress.counting("window vectors", total=1286)
    progress.counting("window vectors", done=200)
    progress.bar.refresh()
    shown = screen.getvalue()
    assert "window vectors" in shown and "200/1286" in shown, shown
    assert "files" not in shown
    progress.finish()
