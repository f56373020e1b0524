"""PDF, Word, HTML and text files become Markdown notes with their locations; bad ones are
skipped with a one-line reason while the rest of the folder is indexed."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from askmd.read import notes
from askmd.read.formats import common
from askmd.read.formats.pdf import NO_TEXT
from chunker import split_note
from tests.conftest import ROOT, missing, write_notes

FIXTURES = ROOT / "tests" / "fixtures"


# --- making real files ---------------------------------------------------------------------


def chromium_pdf(html: str, target: Path, outline: bool = True) -> Path:
    """Print an HTML page to PDF with headless Chromium, as the fixtures are made."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        missing("chromium is not installed")
    page = target.with_suffix(".src.html")
    page.write_text(html, encoding="utf-8")
    flags = ["--generate-pdf-document-outline"] if outline else []
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
         *flags, f"--print-to-pdf={target}", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    page.unlink()
    return target


def pypdf_pdf(target: Path, pages: list[str | None], password: str = "") -> Path:
    """A PDF written by pypdf itself: one line of Helvetica text per page (None: a page
    with no text, as a scan is), optionally encrypted."""
    from pypdf import PdfWriter
    from pypdf.generic import DictionaryObject, NameObject, StreamObject

    writer = PdfWriter()
    font = writer._add_object(
        DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
            }
        )
    )
    for text in pages:
        page = writer.add_blank_page(612, 792)
        if text is None:
            continue
        stream = StreamObject()
        stream.set_data(f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode())
        page[NameObject("/Contents")] = writer._add_object(stream)
        fonts = DictionaryObject({NameObject("/F1"): font})
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): fonts})
    if password:
        writer.encrypt(user_password=password, algorithm="RC4-128")
    writer.write(target)
    return target


def zip_bomb(target: Path, unzipped_mb: int = 300) -> Path:
    """A .docx-named zip whose document.xml inflates to `unzipped_mb` MB of zeros."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        with z.open("word/document.xml", "w", force_zip64=True) as member:
            block = b"\0" * (1 << 20)
            for _ in range(unzipped_mb):
                member.write(block)
    return target


def lying_zip_bomb(target: Path, unzipped_mb: int, says: int = 100) -> Path:
    """A real Word file whose document.xml is a zip bomb, and whose headers (local and
    central) say it is `says` bytes: a check of the declared sizes lets it through."""
    with (
        zipfile.ZipFile(FIXTURES / "guide.docx") as real,
        zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z,
    ):
        for info in real.infolist():
            if info.filename != "word/document.xml":
                z.writestr(info, real.read(info))
        with z.open("word/document.xml", "w") as member:
            block = b"\0" * (1 << 20)
            for _ in range(unzipped_mb):
                member.write(block)
        where = z.getinfo("word/document.xml").header_offset
    data = bytearray(target.read_bytes())
    struct.pack_into("<I", data, where + 22, says)  # the local header's size
    central = data.find(b"PK\x01\x02", where)
    while central != -1:
        length = struct.unpack_from("<H", data, central + 28)[0]
        if data[central + 46 : central + 46 + length] == b"word/document.xml":
            struct.pack_into("<I", data, central + 24, says)  # the central directory's
        central = data.find(b"PK\x01\x02", central + 4)
    target.write_bytes(bytes(data))
    return target


def read(path: Path, max_bytes: int | None = 10 * 1048576) -> notes.Note:
    return notes.read(path.parent, path.name, max_bytes)


# --- each format ---------------------------------------------------------------------------


def test_pdf_outline_becomes_headings_and_chunks_know_their_pages() -> None:
    note = read(FIXTURES / "manual.pdf")
    assert note.title == "Brewer 3000 manual" and len(note.pages) == 3
    chunks = split_note(note, size=300, overlap=0)
    by_chain = {c.chain_text: c for c in chunks}
    assert {"Installation > Linux", "Maintenance > Descaling", "Troubleshooting > Error E7"} <= set(
        by_chain
    )
    # Each chapter was printed on its own page; its sections' chunks say so.
    for chain, page in [("Installation > Linux", 1), ("Maintenance > Gaskets", 2),
                        ("Troubleshooting > Weak coffee", 3)]:  # fmt: skip
        assert (by_chain[chain].page_start, by_chain[chain].page_end) == (page, page)
    assert "refill the tank" in by_chain["Troubleshooting > Error E7"].text.lower()  # ﬁ ligature


def test_docx_headings_lists_and_tables_are_markdown() -> None:
    note = read(FIXTURES / "guide.docx")
    assert note.pages == () and note.title == "Brewer 3000 quick guide"
    assert "## First start\n\n1. Fill the tank\n1. Switch the machine on" in note.text
    assert "- Rinse the portafilter after each shot\n- Wipe the steam wand" in note.text
    assert "| Setting | Default |\n| --- | --- |\n| Temperature | 93 °C |" in note.text
    chains = [c.chain_text for c in split_note(note)]
    assert "Quick guide > Cleaning > Settings" in chains
    assert all(c.page_start is None for c in split_note(note))


def test_html_keeps_content_drops_navigation_and_fences_pre(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text(
        "<html><head><title>Deploy</title><style>p{color:red}</style></head><body>"
        "<header>Site header quokkaheader</header><nav><a>Home</a> quokkanav</nav>"
        "<h1>Deploy</h1><p>Run the <b>deploy</b> script.</p>"
        "<h2>Steps</h2><ul><li>Build</li><li>Ship</li></ul>"
        "<pre>make deploy\n  --env prod</pre>"
        "<table><tr><th>Env</th><th>Host</th></tr><tr><td>prod</td><td>web1</td></tr></table>"
        "<script>var quokkascript = 1;</script><footer>quokkafooter</footer></body></html>",
        encoding="utf-8",
    )
    note = read(page)
    assert note.title == "Deploy"
    assert "quokka" not in note.text and "color" not in note.text
    assert "# Deploy\n\nRun the deploy script.\n\n## Steps\n\n- Build\n- Ship" in note.text
    assert "```\nmake deploy\n  --env prod\n```" in note.text
    assert "| Env | Host |\n| --- | --- |\n| prod | web1 |" in note.text
    assert [c.chain_text for c in split_note(note)] == ["Deploy", "Deploy > Steps"]


def test_txt_keeps_every_line_and_reads_no_markdown(tmp_path: Path) -> None:
    lines = ["server log", "# not a heading", "-----", "```", "line five"]
    (tmp_path / "log.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    note = read(tmp_path / "log.txt")
    chunks = split_note(note)
    assert [c.heading_chain for c in chunks] == [()]
    assert (chunks[0].line_start, chunks[0].line_end) == (1, 5)
    assert note.text.split("\n")[4] == "line five"


def test_chinese_pdf_comes_out_in_reading_order(tmp_path: Path) -> None:
    if not subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True).stdout:
        missing("no Chinese font for chromium to print with (apt install fonts-wqy-microhei)")
    sentence = "本手册介绍如何在系统上安装软件，首先下载安装包然后运行安装程序并重新启动计算机。"
    paragraph = sentence * 4  # wraps over several printed lines
    html = f'<html><head><meta charset="utf-8"></head><body><h1>安装指南</h1><p>{paragraph}</p>'
    html += "<h2>配置</h2><p>配置文件位于主目录中。</p></body></html>"
    note = read(chromium_pdf(html, tmp_path / "zh.pdf"))
    # In reading order, and a line printed full width is joined to the next: the
    # paragraph is one line again, not cut inside a word.
    assert paragraph in note.text.split("\n")
    assert "# 安装指南" in note.text and "## 配置" in note.text
    assert "配置文件位于主目录中。" in note.text.split("\n")


# A manual printed with no outline: headings are only bigger type, and each paragraph
# wraps over several printed lines. "Chain care" starts page 2.
BIKE_HTML = """<html><head><meta charset="utf-8"><style>body { width: 30em }</style></head>
<body><h1>Bicycle care</h1><h2>Brake pads</h2>
<p>Check the pads every month. Disc pads need replacing below 1.5 mm of material. Rim pads
wear faster in the rain and should be checked after every wet ride.</p>
<h2 style="break-before: page">Chain care</h2>
<p>Clean the chain with a rag, then oil it lightly, one drop on each roller of the chain,
turning the pedals backwards.</p><h3>Storage</h3><p>Keep the bike dry.</p></body></html>"""


def test_pdf_wrapped_lines_are_sentences_and_big_type_is_headings(tmp_path: Path) -> None:
    from askmd.answer.sentences import sentences

    note = read(chromium_pdf(BIKE_HTML, tmp_path / "bike.pdf", outline=False))
    lines = note.text.split("\n")
    # A paragraph wrapped over printed lines is one line again: its sentences are whole.
    assert (
        "Check the pads every month. Disc pads need replacing below 1.5 mm of material. "
        "Rim pads wear faster in the rain and should be checked after every wet ride."
    ) in lines
    assert "# Bicycle care" in lines and "## Brake pads" in lines and "### Storage" in lines
    chunks = {c.chain_text: c for c in split_note(note, size=300, overlap=0)}
    assert set(chunks) == {
        "Bicycle care > Brake pads", "Bicycle care > Chain care",
        "Bicycle care > Chain care > Storage",
    }  # fmt: skip
    # The pages stay right after the joining.
    assert (
        chunks["Bicycle care > Brake pads"].page_start,
        chunks["Bicycle care > Brake pads"].page_end,
    ) == (1, 1)
    assert chunks["Bicycle care > Chain care"].page_start == 2
    assert chunks["Bicycle care > Chain care > Storage"].page_end == 2
    # A heading is never a sentence an extractive answer could quote.
    quotable = [s for c in chunks.values() for s in sentences(c.text)]
    assert "Disc pads need replacing below 1.5 mm of material." in quotable
    assert not {"Bicycle care", "Brake pads", "Chain care", "Storage"} & set(quotable)


def test_an_extractive_answer_from_a_pdf_quotes_whole_sentences_and_no_heading(
    run_rag, tmp_path: Path
) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    chromium_pdf(BIKE_HTML, kb / "bike.pdf", outline=False)
    where = ("--knowledge", str(kb), "--index-dir", str(tmp_path / "ix"))
    asked = run_rag(*where, "ask", "when do disc brake pads need replacing?", "--json")
    assert asked.returncode == 0, asked.stderr
    result = json.loads(asked.stdout)
    assert "Disc pads need replacing below 1.5 mm of material. [1]" in result["answer"]
    for heading in ("Bicycle care", "Brake pads", "Chain care", "Storage"):
        assert f"{heading} [" not in result["answer"]
    assert result["references"][0]["page_start"] == 1


# --- bad files -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "make", "reason"),
    [
        ("locked.pdf", lambda p: pypdf_pdf(p, ["secret"], password="pw"), "encrypted PDF"),
        ("scan.pdf", lambda p: pypdf_pdf(p, [None, None]), NO_TEXT),
        ("cut.pdf", lambda p: p.write_bytes((FIXTURES / "manual.pdf").read_bytes()[:3000]),
         "not a readable PDF"),
        ("junk.pdf", lambda p: p.write_bytes(b"%PDF-1.7\n" + b"\x8f" * 500), "not a readable PDF"),
        ("text.docx", lambda p: p.write_text("just text"), "not a zip archive"),
        ("bomb.docx", lambda p: zip_bomb(p, 60), "a zip bomb?"),
    ],
)  # fmt: skip
def test_a_bad_file_is_one_line_reason(tmp_path: Path, name, make, reason) -> None:
    make(tmp_path / name)
    with pytest.raises(notes.Unreadable) as caught:
        read(tmp_path / name)
    message = str(caught.value)
    assert reason in message and "\n" not in message and len(message) < 200


def test_a_zip_bomb_is_refused_before_it_is_inflated(tmp_path: Path) -> None:
    """300 MB of zeros weigh 300 kB zipped: refused from the sizes the zip declares."""
    import tracemalloc

    bomb = zip_bomb(tmp_path / "bomb.docx", 300)
    tracemalloc.start()
    try:
        with pytest.raises(notes.Unreadable, match="would unzip to 300 MB"):
            read(bomb)
        assert tracemalloc.get_traced_memory()[1] < 20 * 1048576
    finally:
        tracemalloc.stop()


def test_a_zip_whose_headers_lie_about_its_sizes_is_refused_in_bounded_memory(
    tmp_path: Path,
) -> None:
    """300 MB of zeros declared as 100 bytes: what is inflated is counted, not what the
    zip says, so the read stops at once (zipfile inflated it all before its CRC check)."""
    bomb = lying_zip_bomb(tmp_path / "liar.docx", 300)
    probe = (
        "import re, sys; sys.path.insert(0, sys.argv[2]); from askmd.read import notes\n"
        "from pathlib import Path\n"
        "try: notes.read(Path(sys.argv[1]).parent, 'liar.docx', 10 << 20)\n"
        "except notes.Unreadable as e: print(e)\n"
        "print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(bomb), str(ROOT)],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout.splitlines()  # fmt: skip
    reason, max_rss_kb = out[0], int(out[1])
    assert "word/document.xml" in reason and "100 bytes" in reason, reason
    assert max_rss_kb < 200 * 1024, f"{max_rss_kb // 1024} MB to refuse a lying zip"


def test_a_2000_page_pdf_is_read_in_bounded_memory(tmp_path: Path) -> None:
    big = pypdf_pdf(
        tmp_path / "big.pdf", [f"Page {i} is about widget {i}." for i in range(1, 2001)]
    )
    # VmHWM, the peak of this process's own memory map: ru_maxrss would also count the
    # pages of the test process it was forked from (Linux keeps the larger across exec).
    probe = (
        "import re, sys; sys.path.insert(0, sys.argv[2]); from askmd.read import notes;"
        "from pathlib import Path;"
        "n = notes.read(Path(sys.argv[1]).parent, 'big.pdf', 10 << 20);"
        "peak = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1);"
        "print(len(n.pages), peak)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(big), str(ROOT)],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout.split()  # fmt: skip
    pages, max_rss_kb = int(out[0]), int(out[1])
    assert pages == 2000
    assert max_rss_kb < 200 * 1024, f"{max_rss_kb // 1024} MB for a 2,000-page PDF"


def test_html_size_limit_is_on_its_text_not_its_markup(tmp_path: Path) -> None:
    """An 8 MB export of mostly scripts and markup is read under a 1 MB limit (the limit is
    on its text, the file may weigh 10 times it); text over the limit is a one-line skip."""
    script = "<script>" + "var x = 1;" * 700_000 + "</script>"
    rows = "".join(f"<div class='r'><span>row {i}</span></div>" for i in range(20_000))
    page = tmp_path / "export.html"
    page.write_text(f"<html><body>{script}<h1>Export</h1>{rows}</body></html>")
    note = read(page, max_bytes=1 << 20)
    assert note.text.startswith("# Export\n\nrow 0") and "var x" not in note.text
    with pytest.raises(notes.Unreadable, match=r"7.5 MB, over the 5 MB limit for HTML files"):
        read(page, max_bytes=(1 << 20) // 2)
    wordy = tmp_path / "wordy.html"
    wordy.write_text("<p>" + "words " * 50_000 + "</p>")
    with pytest.raises(notes.Unreadable, match=r"^its text is over the 0.1 MB limit"):
        read(wordy, max_bytes=(1 << 20) // 10)


# --- end to end ----------------------------------------------------------------------------


def test_index_skips_each_bad_file_with_a_reason_and_cites_pages(run_rag, tmp_path: Path) -> None:
    kb = write_notes(tmp_path / "kb", {"plain.md": "# Plain\n\nQuokkas live on Rottnest.\n"})
    shutil.copy(FIXTURES / "manual.pdf", kb / "manual.pdf")
    shutil.copy(FIXTURES / "guide.docx", kb / "guide.docx")
    (kb / "notes.txt").write_text("The backup runs at 02:00 every night.\n")
    pypdf_pdf(kb / "locked.pdf", ["secret"], password="pw")
    pypdf_pdf(kb / "scan.pdf", [None])
    (kb / "cut.pdf").write_bytes((FIXTURES / "manual.pdf").read_bytes()[:3000])
    (kb / "text.docx").write_text("just text")
    zip_bomb(kb / "bomb.docx", 60)
    where = ("--knowledge", str(kb), "--index-dir", str(tmp_path / "ix"))

    result = run_rag(*where, "index", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    skipped = {s["path"]: s["reason"] for s in report["files_skipped"]}
    assert set(skipped) == {"locked.pdf", "scan.pdf", "cut.pdf", "text.docx", "bomb.docx"}
    assert skipped["scan.pdf"] == NO_TEXT
    assert all("\n" not in r for r in skipped.values())

    found = run_rag(*where, "search", "What does error E7 mean?", "--json")
    top = json.loads(found.stdout)["results"][0]
    assert top["source"] == "manual.pdf" and (top["page_start"], top["page_end"]) == (3, 3)
    assert top["heading_chain"] == "Troubleshooting > Error E7"
    found = run_rag(*where, "search", "backup at night", "--json")
    top = json.loads(found.stdout)["results"][0]
    assert top["source"] == "notes.txt" and top["page_start"] is None

    shown = run_rag(*where, "search", "What does error E7 mean?")
    assert "manual.pdf p. 3 › Troubleshooting > Error E7" in shown.stdout
    asked = run_rag(*where, "ask", "What does error E7 mean?", "--json")
    refs = json.loads(asked.stdout)["references"]
    assert refs and (refs[0]["source"], refs[0]["page_start"]) == ("manual.pdf", 3)
    shown = run_rag(*where, "ask", "What does error E7 mean?")
    assert "manual.pdf p. 3 › Troubleshooting > Error E7" in shown.stdout
    assert "manual.pdf p. 3 › Troubleshooting > Error E7 (lines" not in shown.stdout

    again = json.loads(run_rag(*where, "index", "--json").stdout)
    assert again["files_skipped"] == report["files_skipped"]


def test_every_skip_reason_reads_as_a_sentence(run_rag, tmp_path: Path) -> None:
    """Reasons are phrases of all kinds ("a zip bomb? …", "its text is over …", "cannot be
    read …"): joined as "NAME is REASON" they read "… is would unzip to 60 MB"."""
    kb = write_notes(tmp_path / "kb", {"plain.md": "# Plain\n\nQuokkas.\n"})
    zip_bomb(kb / "bomb.docx", 60)
    (kb / "wordy.html").write_text("<p>" + "words " * 50_000 + "</p>")
    (kb / "scan.pdf").write_bytes(b"")
    where = ("--knowledge", str(kb), "--index-dir", str(tmp_path / "ix"))
    result = run_rag(*where, "index", ASKMD_MAX_FILE_MB="0.1")
    assert result.returncode == 0, result.stderr
    for start in ("bomb.docx: a zip bomb?", "wordy.html: its text is over the 0.1 MB limit"):
        assert f"warning: {start}" in result.stderr, result.stderr
    for name in ("bomb.docx", "wordy.html", "scan.pdf"):
        assert f"{name} is " not in result.stderr
    shown = run_rag(*where, "chunk", str(kb / "bomb.docx"))
    assert shown.stderr.startswith(f"error: {kb / 'bomb.docx'}: a zip bomb?"), shown.stderr


def test_chunk_command_shows_what_was_extracted(run_rag) -> None:
    result = run_rag("chunk", str(FIXTURES / "manual.pdf"), "--json")
    assert result.returncode == 0, result.stderr
    chunks = json.loads(result.stdout)["chunks"]
    assert {c["page_start"] for c in chunks} == {1, 2, 3}
    bad = run_rag("chunk", str(FIXTURES / "README.md").replace("README.md", "nope.pdf"))
    assert bad.returncode != 0 and "does not exist" in bad.stderr


def test_an_unchanged_pdf_is_not_read_again(run_rag, tmp_path: Path) -> None:
    """The size/mtime gate of notes holds for converted files: a PDF whose bytes are
    swapped for junk of the same size and mtime is trusted, not converted again."""
    kb = tmp_path / "kb"
    kb.mkdir()
    pdf = Path(shutil.copy(FIXTURES / "manual.pdf", kb / "manual.pdf"))
    where = ("--knowledge", str(kb), "--index-dir", str(tmp_path / "ix"))
    first = json.loads(run_rag(*where, "index", "--json").stdout)
    assert first["files_skipped"] == [] and first["chunks_total"] > 0
    st = pdf.stat()
    pdf.write_bytes(b"\x8f" * st.st_size)
    os.utime(pdf, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = json.loads(run_rag(*where, "index", "--json").stdout)
    assert again["files_skipped"] == [] and again["chunks_total"] == first["chunks_total"]
    os.utime(pdf, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # now it is looked at
    third = json.loads(run_rag(*where, "index", "--json").stdout)
    assert [s["path"] for s in third["files_skipped"]] == ["manual.pdf"]


def test_http_ingest_takes_a_pdf_as_base64_and_refuses_a_bad_one(tmp_path: Path) -> None:
    import base64

    from tests.conftest import NOTES
    from tests.serving import Server

    with Server(tmp_path, NOTES) as server:
        api = server.client()
        pdf = base64.b64encode((FIXTURES / "manual.pdf").read_bytes()).decode()
        sent = api.post(
            "/api/v1/ingest", json={"file_name": "docs/manual.pdf", "content_base64": pdf}
        )
        assert sent.status_code == 200, sent.text
        assert sent.json()["status"] == "created" and sent.json()["chunks"] > 0
        assert (server.kb / "docs/manual.pdf").read_bytes() == (
            FIXTURES / "manual.pdf"
        ).read_bytes()
        found = api.post("/api/v1/search", json={"query": "error E7 pump ran dry", "top_k": 1})
        top = found.json()["results"][0]
        assert (top["source"], top["page_start"]) == ("docs/manual.pdf", 3)

        scan = tmp_path / "scan.pdf"
        pypdf_pdf(scan, [None])
        body = {
            "file_name": "scan.pdf",
            "content_base64": base64.b64encode(scan.read_bytes()).decode(),
        }
        refused = api.post("/api/v1/ingest", json=body)
        assert refused.status_code == 422 and NO_TEXT in refused.text
        assert not (server.kb / "scan.pdf").exists()
        liar = lying_zip_bomb(tmp_path / "liar.docx", 30)
        body = {
            "file_name": "liar.docx",
            "content_base64": base64.b64encode(liar.read_bytes()).decode(),
        }
        refused = api.post("/api/v1/ingest", json=body)
        assert refused.status_code == 422 and "100 bytes its header says" in refused.text
        assert not (server.kb / "liar.docx").exists()
        junk = api.post("/api/v1/ingest", json={"file_name": "x.pdf", "content_base64": "%%%"})
        assert junk.status_code == 400 and "not valid base64" in junk.text
        both = {"file_name": "y.md", "content": "# Y\n", "content_base64": "IyBZCg=="}
        assert api.post("/api/v1/ingest", json=both).status_code == 400
        text = {"file_name": "z.md", "content": "# Z\n\nStill takes JSON text.\n"}
        assert api.post("/api/v1/ingest", json=text).json()["status"] == "created"


def test_a_real_world_pdf_reads_by_its_outline_and_cites_the_right_page() -> None:
    """A PDF made by other tools than ours (the freedesktop.org MIME spec, 17 pages): its
    bookmarks become the heading chain, and a chunk's pages hold its words."""
    from pypdf import PdfReader

    path = FIXTURES / "shared-mime-info-spec.pdf"
    note = read(path)
    assert len(note.pages) == 17
    chunks = split_note(note, 1000, 200)
    chains = {c.chain_text for c in chunks}
    assert "2. Unified system > 2.4. The glob files" in chains
    pages = PdfReader(path).pages
    for chunk in chunks:
        if chunk.chain_text != "2. Unified system > 2.4. The glob files":
            continue
        words = [w for w in chunk.text.split() if w.isalpha() and len(w) > 6][:5]
        shown = " ".join(
            pages[n - 1].extract_text() for n in range(chunk.page_start, chunk.page_end + 1)
        )
        assert words and all(w in shown for w in words), (chunk.page_start, words)


def test_deeply_nested_html_reads_as_fast_as_flat_html(tmp_path: Path) -> None:
    """40,000 nested <div>s took the HTML parser seconds (its time grows with the square
    of the depth); past a depth the tags are dropped before parsing, the text kept."""
    n = 40_000
    nested = tmp_path / "nested.html"
    nested.write_text("<html><body>" + "<div>a " * n + "deepest" + "</div>" * n + "</body></html>")
    flat = tmp_path / "flat.html"
    flat.write_text("<html><body>" + "<div>a </div>" * n + "deepest</body></html>")
    started = time.perf_counter()
    flat_note = read(flat)
    flat_seconds = time.perf_counter() - started
    started = time.perf_counter()
    note = read(nested)
    nested_seconds = time.perf_counter() - started
    assert "deepest" in note.text and note.text.count("a") >= n
    assert "deepest" in flat_note.text
    assert nested_seconds < 10 * max(flat_seconds, 0.05), (nested_seconds, flat_seconds)


def test_a_file_that_takes_too_long_to_read_is_skipped_with_a_reason(
    tmp_path: Path, monkeypatch
) -> None:
    """Every reader stops at its time budget: the file is skipped, saying why."""
    monkeypatch.setattr(common, "READ_SECONDS", 0.0)
    shutil.copy(FIXTURES / "manual.pdf", tmp_path / "manual.pdf")
    shutil.copy(FIXTURES / "guide.docx", tmp_path / "guide.docx")
    (tmp_path / "page.html").write_text("<p>" + "words " * 1000 + "</p>" * 3)
    for name in ("manual.pdf", "guide.docx", "page.html"):
        with pytest.raises(notes.Unreadable, match=r"^too slow to read \(over 0 s"):
            read(tmp_path / name)
