"""What the benches share: where the data is, opening an index, timing, scoring, tables,
question sets and the tiny folder every smoke case indexes.

One module, so a bench imports only this and the package: a bench that imported another
bench broke whenever that one changed, and nothing noticed.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from askmd import evaluate
from askmd.pipeline import Index
from askmd.settings import load_settings

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"  # the shared data sets, beside the clone
PARAPHRASE = ROOT / "bench" / "paraphrase"
ANSWERS = ROOT / "bench" / "answers"
RAG = [sys.executable, str(ROOT / "rag.py")]
POOL = 100  # candidates taken of each retriever when rules are scored offline

# The Chinese question sets of bench/paraphrase, and where their notes sit in the mixed
# folder (the Obsidian docs under en/, the Chinese tldr pages under zh/).
ANSWER_SETS = (  # (file in bench/answers, knowledge folder under the data folder)
    ("obsidian-en.jsonl", "obsidian-dev-docs/en"),
    ("obsidian-zh.jsonl", "obsidian-dev-docs/en"),
    ("obsidian-en-typed.jsonl", "obsidian-dev-docs/en"),
    ("obsidian-unanswerable.jsonl", "obsidian-dev-docs/en"),
    ("tldr-zh.jsonl", "tldr/pages.zh"),
    ("tldr-zh-typed.jsonl", "tldr/pages.zh"),
    ("tldr-zh-unanswerable.jsonl", "tldr/pages.zh"),
    ("tldr-en-of-zh.jsonl", "tldr/pages.zh"),
)
ZH_SETS = (
    ("ZH->EN all", "obsidian-zh.jsonl", ("cross-zh", "cross-zh-hard"), "en/"),
    ("ZH->EN hard", "obsidian-zh.jsonl", ("cross-zh-hard",), "en/"),
    ("ZH all", "tldr-zh.jsonl", ("plain", "hard"), "zh/"),
    ("ZH hard", "tldr-zh.jsonl", ("hard",), "zh/"),
)


def open_index(kb: Path, ix: Path, environ: dict[str, str] | None = None, **sync) -> Index:
    """The index of folder `kb` in `ix` with the default settings (or `environ`), synced."""
    settings = load_settings(
        environ=environ or {}, dotenv_path=None, overrides={"knowledge_dir": kb, "index_dir": ix}
    )
    index = Index(settings)
    report = index.sync(**sync)
    print(f"# {kb}: {json.dumps(report.to_json())}", file=sys.stderr, flush=True)
    return index


def add_index_variants(parser: argparse.ArgumentParser) -> None:
    """The options that ask over a variant of the index: as while its vectors are stored,
    or with other search settings."""
    parser.add_argument(
        "--keyword-only",
        action="store_true",
        help="answer as while the vectors are still stored (an index of its own)",
    )
    parser.add_argument(
        "--tuning", action="append", default=[], help="FIELD=VALUE of the search's tuning"
    )


def tuned(values: list[str]):
    """The shipped SearchTuning with NAME=VALUE fields (Python literals) replaced: a
    variant for one run's index."""
    import ast
    from dataclasses import replace

    from askmd.search.tuning import SHIPPED

    fields = (v.split("=", 1) for v in values)
    return replace(SHIPPED, **{name: ast.literal_eval(value) for name, value in fields})


def set_constants(constants: list[str]) -> None:
    """MODULE.NAME=VALUE (a Python literal): a module's constant for this run, to measure
    what it earns."""
    import ast
    import importlib

    for constant in constants:
        name, value = constant.split("=", 1)
        module, attribute = name.rsplit(".", 1)
        setattr(importlib.import_module(module), attribute, ast.literal_eval(value))


def half(qid: str) -> str:
    """The half a question belongs to, by its id alone: fixed before any tuning. Rules
    and cut-offs are chosen on dev; test says whether they stay."""
    return "dev" if hashlib.sha256(qid.encode()).digest()[0] < 128 else "test"


def rewrapped(kb: Path, width: int, root: Path) -> Path:
    """A copy of folder `kb` (under `root`) with its Markdown prose hard-wrapped at
    `width` columns, as many people keep notes: paragraphs and list items are wrapped
    (a CJK character is two columns and may end a line); front matter, headings, code,
    tables, quotes and blank lines are kept as they are. Made once per width."""
    out = root / f"{kb.name}-wrapped-{width}"
    if out.is_dir():
        return out
    for path in kb.rglob("*"):
        target = out / path.relative_to(kb)
        if path.is_dir():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix.lower() != ".md":
            shutil.copy2(path, target)
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        target.write_text(_wrap_markdown(text, width), encoding="utf-8")
    return out


_ITEM = re.compile(r"^(\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?)(.*)$")
_KEPT = re.compile(r"^\s*(?:#|\||>|<|!\[|```|~~~|---|\*\*\*|[-:| ]+$)")
_TOKEN = re.compile(r"[\u3000-\u9fff\uff00-\uffef]|[^\s\u3000-\u9fff\uff00-\uffef]+|\s+")


def _wrap_markdown(text: str, width: int) -> str:
    lines = text.split("\n")
    out: list[str] = []
    fenced = front = False
    for i, line in enumerate(lines):
        if i == 0 and line.strip() == "---":
            front = True
        elif front and line.strip() in ("---", "..."):
            front = False
            out.append(line)
            continue
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if front or fenced or not line.strip() or _KEPT.match(line) or line.startswith("    "):
            out.append(line)
            continue
        item = _ITEM.match(line)
        lead, said = (item.group(1), item.group(2)) if item else ("", line.strip())
        out += _wrap_line(said, width, lead, " " * len(lead))
    return "\n".join(out)


def _wrap_line(text: str, width: int, first: str, rest: str) -> list[str]:
    """Greedy wrapping by display width: between Latin words, or after any CJK character."""
    lines, current = [], first
    for token in _TOKEN.findall(text):
        wide = sum(2 if "\u3000" <= c <= "\uffef" else 1 for c in token)
        shown = sum(2 if "\u3000" <= c <= "\uffef" else 1 for c in current)
        if not token.isspace() and shown + wide > width and current.strip():
            lines.append(current.rstrip())
            current = rest
        if token.isspace() and current == rest:
            continue
        current += token
    lines.append(current.rstrip())
    return lines


def open_mixed(kb: Path, ix: Path, rebuild: bool = False):
    """The index of `kb` synced and warmed up, with its multilingual side collection and
    model: (index, side store, side model)."""
    index = open_index(kb, ix, rebuild=rebuild)
    index.search("warm up", 1)
    side = index.store.side(index.embedder.companion_id)
    side.open_existing()
    return index, side, index.embedder.companion()


def labelled_set(doc: str, argv: list[str] | None = None) -> tuple[Index, list]:
    """The command line of the benches over a labelled set (corpus, queries, --index-dir,
    --limit, --embedding-model): the corpus indexed (or reused), and its queries."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("queries")
    parser.add_argument("--index-dir")
    parser.add_argument("--limit", type=int, default=0, help="only the first N queries")
    parser.add_argument("--embedding-model", default="", help="e.g. use-multilingual")
    args = parser.parse_args(argv)
    index = open_index(
        Path(args.corpus),
        Path(args.index_dir or tempfile.mkdtemp(prefix="askmd-fusion-")),
        {"ASKMD_EMBEDDING_MODEL": args.embedding_model},
    )
    queries = evaluate.read_queries(Path(args.queries), [])
    return index, queries[: args.limit or None]


def tiny_labelled_set(tmp: Path) -> list[str]:
    """The arguments of `labelled_set` for the tiny English notes and their two questions."""
    data, sets = tiny_data(tmp / "data"), tiny_sets(tmp / "sets")
    corpus = data / "obsidian-dev-docs" / "en"
    return [str(corpus), str(sets / "obsidian-en.jsonl"), "--index-dir", str(tmp / "ix")]


# --- question sets ------------------------------------------------------------------


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def load(name: str | Path, kinds: tuple[str, ...], folder: Path = PARAPHRASE) -> list[dict]:
    """The raw rows of a paraphrase set whose `kind` is one of `kinds`."""
    return [r for r in rows(folder / name) if r["kind"] in kinds]


def load_set(path: Path, kinds: tuple[str, ...]) -> list[evaluate.Query]:
    """The queries of the wanted kinds, read by the same reader `rag.py eval` uses."""
    kind_of = {str(r["id"]): r["kind"] for r in rows(path)}
    return [q for q in evaluate.read_queries(path) if kind_of[q.id] in kinds]


# --- timing -------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(name: str, values: list[float]) -> dict:
    """One JSON line: median, 95th percentile and max of `values` (ms)."""
    row = {
        "measure": name,
        "n": len(values),
        "p50_ms": round(statistics.median(values), 1),
        "p95_ms": round(percentile(values, 0.95), 1),
        "max_ms": round(max(values), 1),
    }
    print(json.dumps(row, ensure_ascii=False), flush=True)
    return row


def time_searches(index: Index, questions: list[str], pause: float) -> None:
    """Each question searched three times, `pause` s apart, after one search timed apart
    (the process's first, which reads the dictionary): median and 95th percentile."""
    started = time.perf_counter()
    index.search(questions[0], 10)  # dictionary, models and store warm
    first = (time.perf_counter() - started) * 1000
    times = []
    for _ in range(3):
        for q in questions:
            time.sleep(pause)
            started = time.perf_counter()
            index.search(q, 10)
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    print(
        f"{len(questions)} questions x 3, {pause} s apart: first search {first:.0f} ms; "
        f"p50 {statistics.median(times):.1f} ms, p95 {times[int(0.95 * (len(times) - 1))]:.1f} ms\n"
    )


# --- ranking and scoring, offline on candidate lists ---------------------------------


def files(chunks: list[str]) -> list[str]:
    """Files in the order of their best chunk, as `rag.py eval` ranks them."""
    return list(dict.fromkeys(c.split("#", 1)[0] for c in chunks))


def scaled(pairs: list[tuple[str, float]]) -> dict[str, float]:
    if not pairs:
        return {}
    values = [v for _, v in pairs]
    low, high = min(values), max(values)
    return {c: (v - low) / (high - low) if high > low else 1.0 for c, v in pairs}


def fuse(dense, keyword, alpha: float) -> list[str]:
    """alpha * dense + (1 - alpha) * keyword, each min-max scaled; ties to keyword."""
    d, kw = scaled(dense), scaled(keyword)
    score = {c: alpha * d.get(c, 0.0) + (1 - alpha) * kw.get(c, 0.0) for c in {*d, *kw}}
    return sorted(score, key=lambda c: (-score[c], -kw.get(c, 0.0)))


def score(runs: list[tuple[list[str], set[str]]]) -> dict[str, float]:
    out = {"hit@1": 0.0, "hit@5": 0.0, "hit@10": 0.0, "mrr@10": 0.0}
    for ranked, relevant in runs:
        ranks = [i for i, f in enumerate(ranked[:10], start=1) if f in relevant]
        first = ranks[0] if ranks else 99
        out["hit@1"] += first <= 1
        out["hit@5"] += first <= 5
        out["hit@10"] += first <= 10
        out["mrr@10"] += 1 / first if ranks else 0.0
    return {k: round(v / max(1, len(runs)), 2) for k, v in out.items()}


def print_table(table: dict[tuple[str, str], list]) -> None:
    """One Markdown row per (set, ranking): hit@1, hit@5, hit@10 and MRR@10 of its runs."""
    print("| set | ranking | n | hit@1 | hit@5 | hit@10 | MRR@10 |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for (label, rule), runs in table.items():
        s = score(runs)
        print(
            f"| {label} | {rule} | {len(runs)} | {s['hit@1']:.2f} | {s['hit@5']:.2f} | "
            f"{s['hit@10']:.2f} | {s['mrr@10']:.2f} |",
            flush=True,
        )


# --- a language model that answers at once ------------------------------------------


class InstantLLM(BaseHTTPRequestHandler):
    """An OpenAI-compatible server that streams a fixed cited reply in 20 pieces at once,
    so a measure covers everything but the model."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i in range(20):
            delta = {"content": f"word{i} " + ("[1]" if i == 19 else "")}
            chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args: object) -> None:
        pass


# --- Markdown pages as other formats, for the readers -------------------------------


def to_html(docs: list[tuple[str, str]], breaks: bool) -> str:
    """Headings, paragraphs and code lines of each Markdown page; one printed page each."""
    style = "<style>h1{break-before:page} h1:first-of-type{break-before:auto}</style>"
    parts = [f'<html><head><meta charset="utf-8"><title>pages</title>{style if breaks else ""}']
    parts.append("</head><body>")
    for _, text in docs:
        for line in text.splitlines():
            heading = re.match(r"^(#{1,4}) (.*)", line)
            if heading:
                level = len(heading.group(1))
                parts.append(f"<h{level}>{html.escape(heading.group(2))}</h{level}>")
            elif line.startswith("`") and line.endswith("`"):
                parts.append(f"<pre>{html.escape(line.strip('`'))}</pre>")
            elif line.strip():
                parts.append(f"<p>{html.escape(line.lstrip('>- ').strip())}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def to_docx(docs: list[tuple[str, str]], target: Path) -> None:
    """Headings, bullets and paragraphs of each Markdown page in one Word document."""
    import docx

    document = docx.Document()
    for _, text in docs:
        for line in text.splitlines():
            heading = re.match(r"^(#{1,4}) (.*)", line)
            if heading:
                document.add_heading(heading.group(2), level=len(heading.group(1)))
            elif line.startswith("- "):
                document.add_paragraph(line[2:], style="List Bullet")
            elif line.strip():
                document.add_paragraph(line.lstrip("> ").strip("`"))
    document.save(str(target))


def print_pdf(page: Path, target: Path) -> None:
    """The HTML page printed to PDF by headless Chromium, with an outline of its headings."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("error: printing the PDF needs Chromium (Debian: apt install chromium)")
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
         "--generate-pdf-document-outline", f"--print-to-pdf={target}", page.as_uri()],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip


# --- the smoke cases' data ----------------------------------------------------------

TINY_NOTES = {
    "en/backups.md": (
        "# Backups\n\nDatabase backups run every night at 02:00 and are kept for 30 days.\n\n"
        "## Restore\n\nTo restore the database to a point in time, run `pg-restore --at TIME`.\n"
    ),
    "en/deploy.md": (
        "# Deploy\n\nThe API listens on port 8080. Deploy with `make release` from main.\n\n"
        "## Keys\n\nRotate the S3 access keys every 90 days with `keys rotate`.\n"
    ),
    "en/garden.md": "# Garden\n\nWater the tomatoes in the morning, before the heat.\n",
    "zh/backups.md": (
        "# 备份\n\n数据库备份每天夜里两点运行，保留三十天。\n\n## 恢复\n\n用 `pg-restore` 恢复。\n"
    ),
    "zh/deploy.md": "# 部署\n\nAPI 监听 8080 端口。每九十天轮换一次访问密钥。\n",
}
TINY_SETS = {  # file: (id, query, kind, relevant note under en/ or zh/, gold answer)
    "obsidian-en.jsonl": (
        ("1", "how long are database backups kept", "plain", "backups.md", "kept for 30 days"),
        ("2", "which port does the API listen on", "hard", "deploy.md", "port 8080"),
    ),
    "obsidian-zh.jsonl": (
        ("3", "数据库备份保留多久", "cross-zh", "backups.md", "kept for 30 days"),
        ("4", "API 监听哪个端口", "cross-zh-hard", "deploy.md", "port 8080"),
    ),
    "tldr-zh.jsonl": (
        ("5", "备份保留多久", "plain", "backups.md", "保留三十天"),
        ("6", "部署 端口", "hard", "deploy.md", "API 监听 8080 端口"),
    ),
    "tldr-cross.jsonl": (("7", "how long are backups kept", "cross", "backups.md", "保留三十天"),),
}


def tiny_folder(root: Path, english_only: bool = False) -> Path:
    """A five-note folder, English under en/ and Chinese under zh/ (the mixed layout);
    `english_only` leaves zh/ out, so a process indexing it never loads the second model."""
    for name, text in TINY_NOTES.items():
        if english_only and name.startswith("zh/"):
            continue
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def tiny_sets(folder: Path) -> Path:
    """The paraphrase set files of bench/paraphrase in small, in the same format (with a
    gold answer each, as bench/answers has): a bench reads them unchanged."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, questions in TINY_SETS.items():
        with (folder / name).open("w", encoding="utf-8") as out:
            for qid, query, kind, note, answer in questions:
                lang = "zh" if any("\u4e00" <= c <= "\u9fff" for c in query) else "en"
                row = {"id": qid, "query": query, "kind": kind, "relevant": [note], "lang": lang}
                out.write(json.dumps({**row, "answers": [answer]}, ensure_ascii=False) + "\n")
    unanswerable = {"id": "u1", "query": "how much does the garden cost", "kind": "near"}
    unanswerable.update({"relevant": [], "unanswerable": True, "lang": "en"})
    for name in ("obsidian-unanswerable.jsonl", "tldr-zh-unanswerable.jsonl"):
        (folder / name).write_text(json.dumps(unanswerable) + "\n", encoding="utf-8")
    return folder


def tiny_data(root: Path) -> Path:
    """The shared data folder in small: the tiny notes where the benches look for the
    Obsidian docs (obsidian-dev-docs/en) and the Chinese tldr pages (tldr/pages.zh), and
    both together as the mixed folder (mixed/en, mixed/zh)."""
    tiny_folder(root / "mixed")
    for name, text in TINY_NOTES.items():
        part, file = name.split("/")
        there = root / {"en": "obsidian-dev-docs/en", "zh": "tldr/pages.zh"}[part] / file
        there.parent.mkdir(parents=True, exist_ok=True)
        there.write_text(text, encoding="utf-8")
    return root


def keyword_index(folder: Path, index_dir: Path) -> dict:
    """A fresh keyword-only index, as the command line builds it: its report, and the
    whole process's wall seconds."""
    shutil.rmtree(index_dir, ignore_errors=True)
    started = time.perf_counter()
    done = subprocess.run(
        [*RAG, "--knowledge", str(folder), "--index-dir", str(index_dir), "index",
         "--keyword-only", "--json"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    report = json.loads(done.stdout)
    return {**report, "process_seconds": round(time.perf_counter() - started, 1)}
