"""The web page in a real headless Chromium (Debian's `chromium`, driven by playwright with
its executable path: no browser download), against the real server.

The LLM is the scripted OpenAI-compatible server on 127.0.0.1, which sends the answer in
pieces with pauses, so the test can see the answer growing before it is complete.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import NOTES, missing
from tests.openai_server import OpenAIServer
from tests.serving import Server

ANSWER = "The API listens on port 8420 [1]. Metrics use another port [2]."
TOKEN = "page-test-token-0123456789abcdef"
PHONE = {"width": 375, "height": 740}


def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        missing("Debian's chromium is not installed (apt-get install chromium)")
    return path


def wait_text(page, selector: str, text: str) -> None:
    """Wait until the element shows `text` (no script evaluation: the page's CSP forbids it)."""
    page.locator(selector).filter(has_text=text).wait_for()


@pytest.fixture(scope="module")
def browser() -> Iterator:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright is not installed (pip install -r requirements-dev.txt)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        yield browser
        browser.close()


def slow_answer(body: dict) -> Iterator[dict]:
    """The chat route: ANSWER in word-sized pieces, 60 ms apart (a rewrite gets the
    question back, so follow-ups search for it)."""
    text = ANSWER
    if "Rewrite" in body["messages"][0]["content"]:
        text = body["messages"][-1]["content"]
    for piece in text.split(" "):
        time.sleep(0.06)
        yield {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "delta": {"content": piece + " "}, "finish_reason": None}],
        }


@pytest.fixture(scope="module")
def llm() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        server.routes["/v1/chat/completions"] = slow_answer
        server.routes["/v1/models"] = lambda body: {"object": "list", "data": [{"id": "m1"}]}
        yield server


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm: OpenAIServer) -> Iterator[Server]:
    env = {"OPENAI_BASE_URL": llm.url, "OPENAI_API_KEY": "sk-test"}
    with Server(tmp_path_factory.mktemp("web"), NOTES, **env) as server:
        yield server


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1000, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.errors = errors
    yield page
    context.close()


def test_a_question_streams_an_answer_whose_citation_opens_its_reference(site, page) -> None:
    page.goto(site.url)
    assert page.evaluate("document.activeElement.id") == "question"  # ready to type
    page.keyboard.type("What port does the API listen on?")
    page.keyboard.press("Enter")
    answer = page.locator(".turn .answer").first
    # Mid-stream: part of the answer is shown while the page still marks it busy.
    page.wait_for_function(
        "() => { const a = document.querySelector('.turn .answer');"
        " return a.getAttribute('aria-busy') === 'true' && a.textContent.includes('API'); }"
    )
    page.wait_for_selector(".turn .references li")
    assert answer.get_attribute("aria-busy") == "false"
    assert "8420" in answer.inner_text()
    # The retrieved chunks were shown too.
    assert page.locator(".turn .retrieved li").count() >= 1
    # Keyboard only: Tab to the first citation in the answer and open it.
    citation = answer.locator("button.cite").first
    assert citation.inner_text() == "[1]"
    citation.focus()
    page.keyboard.press("Enter")
    dialog = page.locator("dialog#reference")
    dialog.wait_for(state="visible")
    assert "guides/ports.md" in dialog.inner_text()
    assert "Ports" in page.locator("#ref-where").inner_text()
    assert "8420" in page.locator("#ref-text").inner_text()
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")
    assert page.errors == []


def test_the_reference_list_quotes_each_cited_source(site, page) -> None:
    page.goto(site.url)
    page.fill("#question", "Which port is the API on?")
    page.click("#ask")
    page.wait_for_selector(".turn .references li")
    items = page.locator(".turn .references li")
    assert items.count() >= 1
    first = items.first.inner_text()
    assert "guides/ports.md" in first and "lines" in first


def test_a_note_pasted_into_the_page_is_indexed_and_found(site, page) -> None:
    page.goto(site.url)
    page.click("#add summary")
    page.fill("#file-name", "pasted/kiln.md")
    page.fill("#content", "# Kiln\n\nThe kiln is fired to cone 6 every Thursday.\n")
    page.click("#add-form button[type=submit]")
    wait_text(page, "#add-status", "created")
    assert (site.kb / "pasted/kiln.md").read_text().startswith("# Kiln")
    wait_text(page, "#stats", "3 notes")


def test_an_uploaded_file_fills_the_note_box(site, page, tmp_path: Path) -> None:
    upload = tmp_path / "glaze.md"
    upload.write_text("# Glaze\n\nCeladon glaze needs reduction.\n", encoding="utf-8")
    page.goto(site.url)
    page.click("#add summary")
    page.set_input_files("#upload", str(upload))
    page.wait_for_function("() => document.querySelector('#content').value.includes('Celadon')")
    assert page.input_value("#file-name") == "glaze.md"


def test_an_uploaded_pdf_is_indexed_at_once(site, page) -> None:
    page.goto(site.url)
    page.click("#add summary")
    page.fill("#file-name", "manuals/brewer.pdf")
    page.set_input_files("#upload", str(Path(__file__).parent / "fixtures" / "manual.pdf"))
    wait_text(page, "#add-status", "manuals/brewer.pdf: created")
    assert (site.kb / "manuals/brewer.pdf").read_bytes()[:5] == b"%PDF-"
    assert page.input_value("#content") == ""  # binary: not shown as text


def test_at_phone_width_nothing_scrolls_sideways(site, browser) -> None:
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(site.url)
    page.fill("#question", "What port does the API listen on?")
    page.click("#ask")
    page.wait_for_selector(".turn .references li")
    page.click(".turn .retrieved summary")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"]
    box = page.locator("#ask").bounding_box()
    assert box is not None and box["height"] >= 40  # big enough to tap
    context.close()


def box(page, selector: str) -> dict:
    found = page.locator(selector).first.bounding_box()
    assert found is not None, selector
    return found


def test_at_phone_size_the_ask_box_stays_small_while_reading_and_opens_on_focus(
    site, browser, tmp_path: Path
) -> None:
    viewport = {"width": 375, "height": 667}
    context = browser.new_context(viewport=viewport, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(site.url)
    page.fill("#question", "What port does the API listen on?")
    page.keyboard.press("Enter")
    page.wait_for_selector(".turn .references li")
    page.wait_for_selector("#ask:not([disabled])")
    reading = box(page, "#ask-form")
    assert reading["height"] / viewport["height"] < 0.15, reading  # once a third
    heading = page.locator(".turn .references h3")
    heading.evaluate("node => node.scrollIntoView({block: 'end'})")
    page.wait_for_timeout(300)
    shown, ask_box = box(page, ".turn .references h3"), box(page, "#ask-form")
    assert heading.is_visible() and shown["y"] >= 0
    assert shown["y"] + shown["height"] <= ask_box["y"], (shown, ask_box)  # not under it
    page.screenshot(path=str(tmp_path / "phone-reading.png"))
    page.focus("#question")
    page.wait_for_timeout(200)
    focused = box(page, "#ask-form")
    assert focused["height"] > reading["height"] * 1.5
    assert page.locator("label[for=question]").is_visible()
    assert page.locator("#new").is_visible()
    page.screenshot(path=str(tmp_path / "phone-focused.png"))
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    context.close()


def test_a_server_with_a_token_asks_for_it_then_works(tmp_path, browser) -> None:
    with Server(tmp_path, NOTES, ASKMD_API_TOKEN=TOKEN) as server:
        context = browser.new_context()
        page = context.new_page()
        page.goto(server.url)
        page.wait_for_selector("#token-form:not([hidden])")
        page.fill("#token", TOKEN)
        page.keyboard.press("Enter")
        wait_text(page, "#stats", "2 notes")
        page.fill("#question", "What port does the API listen on?")
        page.keyboard.press("Enter")
        page.wait_for_selector(".turn .references li")
        assert "8420" in page.locator(".turn .answer").inner_text()
        context.close()


# An answer in the Markdown an LLM writes: a fence inside a list item, nested lists, a
# table, Chinese, and HTML quoted from a note (which must stay text).
MARKDOWN_ANSWER = """\
- To embed a note: [1]
  ```md
  ![[Internal links]]
  ```
- You can also link to a heading [1]
- Or to a block [2]
  - nested one [1]
  - nested two [2]

| setting | port |
| --- | --- |
| API | 8420 [1] |

端口是 8420。[1]

<img src=x onerror="window.injected=1"><script>window.injected=2</script>
"""


def markdown_answer(body: dict) -> Iterator[dict]:
    """The chat route: MARKDOWN_ANSWER in 7-character pieces, so fences arrive split."""
    for start in range(0, len(MARKDOWN_ANSWER), 7):
        time.sleep(0.005)
        piece = MARKDOWN_ANSWER[start : start + 7]
        yield {
            "id": "c2",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
        }


def test_markdown_in_an_answer_renders_as_markdown_with_citations_clickable(
    site, llm: OpenAIServer, page
) -> None:
    llm.routes["/v1/chat/completions"] = markdown_answer
    try:
        page.goto(site.url)
        page.fill("#question", "What port does the API listen on?")
        page.click("#ask")
        page.wait_for_selector(".turn .references li")
    finally:
        llm.routes["/v1/chat/completions"] = slow_answer
    answer = page.locator(".turn .answer").first
    # The fence is one code block inside the first item, and nothing after it is code.
    assert "```" not in answer.inner_text()
    code = answer.locator("li pre code")
    assert code.count() == 1 and code.inner_text().strip() == "![[Internal links]]"
    assert answer.locator("pre li, pre button").count() == 0
    also = answer.locator("li", has_text="You can also link to a heading")
    assert also.locator("button.cite").count() == 1
    assert answer.locator("ul ul li").count() == 2  # the nested list
    assert answer.locator("table td button.cite").count() == 1
    assert answer.locator("th").first.inner_text() == "setting"
    chinese = answer.locator("p", has_text="端口是 8420。")
    assert chinese.locator("button.cite").inner_text() == "[1]"
    # HTML quoted from a note is shown as text, never run.
    assert answer.locator("img, script").count() == 0
    assert "<img src=x" in answer.inner_text()
    assert page.evaluate("window.injected") is None
    # A citation in a nested item opens its reference.
    answer.locator("ul ul li", has_text="nested two").locator("button.cite").click()
    dialog = page.locator("dialog#reference")
    dialog.wait_for(state="visible")
    assert page.locator("#ref-title").inner_text().startswith("[2] ")
    assert page.errors == []


def test_a_question_the_notes_do_not_answer_is_declined_with_pointers(site, page) -> None:
    page.goto(site.url)
    page.fill("#question", "What is the capital of Australia?")
    page.click("#ask")
    page.locator(".turn .nearest li").first.wait_for()

    turn = page.locator(".turn").first
    assert "Your notes don't seem to answer this." in turn.locator(".answer").inner_text()
    assert "Closest in your notes:" in turn.locator(".nearest").inner_text()
    assert turn.locator(".references").is_hidden()
    assert turn.locator(".answer button.cite").count() == 0
    assert page.errors == []
