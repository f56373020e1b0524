"""What a search found, on the terminal: the hits, related notes, /debug's table and the
judgement's reading, and the eval reports."""

from __future__ import annotations

from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

from askmd.answer.reasons import render
from askmd.interfaces.console import CITATION_STYLE, clean, lines, out, pages
from askmd.wording import plural


def show_hits(hits, query: str, full: bool = False) -> None:
    """Retrieved chunks, best first, each as `[n] score path › chain (lines a–b)` + text:
    in full for /sources (what an answer was built from), else cut at 600 characters."""
    if not hits:
        out.print(f"no chunks found for {escape(clean(query))!r}")
        return
    for hit in hits:
        title = Text.assemble(
            (f"[{hit.rank}] ", "bold cyan"),
            (f"{hit.score:.3f} ", "magenta"),
            (clean(hit.shown_source), "bold"),
            (pages(hit.page_start, hit.page_end), "green"),
            (f" › {clean(hit.heading_chain)}" if hit.heading_chain else "", ""),
            lines(hit),
        )
        text = clean(hit.text)
        snippet = text if full or len(text) <= 600 else text[:600].rstrip() + " …"
        out.print(title, soft_wrap=True)
        if hit.shown_in:
            out.print(Text(f"  {_shown_in(hit)}", style="dim"), soft_wrap=True)
        out.print(Panel(Text(snippet), border_style="dim"))


def show_related(found: dict) -> None:
    """`related`: the note, then each related note with its score, whether it is linked
    already, and why; a dim line when meaning was judged by words (vectors waiting)."""
    out.print(Text(clean(found["note"]), style="bold"), soft_wrap=True)
    if not found["related"]:
        out.print("  no related notes", style="dim")
    for r in found["related"]:
        line = Text.assemble(
            (f"  {r['score']:.4f} ", "magenta"),
            (clean(r["source"]), "bold"),
            (" (linked)" if r["linked"] else "", "cyan"),
            (f"  {', '.join(clean(w) for w in r['why'])}", "dim"),
        )
        out.print(line, soft_wrap=True)
    if any("similar words" in r["why"] for r in found["related"]):
        out.print("(vectors still being stored: similar by words until then)", style="dim")


def show_why(found: dict) -> None:
    """`why`: the verdict, the note's status, its best chunks' ranks, what ranked above."""
    out.print(Text(clean(found["verdict"]), style="bold"), soft_wrap=True)
    out.print(f"  status: {clean(str(found['status']))}", style="dim", soft_wrap=True)
    for name in found.get("closest_files", []):
        out.print(f"  closest file: {clean(name)}", soft_wrap=True)

    def rank(value, score) -> str:
        return "–" if value is None else f"{value} ({score})"

    for c in found.get("chunks", []):
        out.print(
            f"  {clean(c['heading_chain']) or '(top of the note)'}: keyword "
            f"{rank(c['keyword_rank'], c['keyword_score'])}, dense "
            f"{rank(c['dense_rank'], c['dense_score'])}, fused "
            f"{'–' if c['fused_rank'] is None else c['fused_rank']}"
            + (" (vector waiting)" if c["waiting_for_vector"] else ""),
            soft_wrap=True,
        )
    for rule in found.get("rules", []):
        out.print(f"  rule: {clean(rule)}", style="dim", soft_wrap=True)
    if found.get("above"):
        out.print("  ranked above it:", style="dim")
    for a in found.get("above", []):
        chain = f" › {clean(a['heading_chain'])}" if a["heading_chain"] else ""
        out.print(f"    [{a['rank']}] {a['score']:.3f} {clean(a['source'])}{chain}", soft_wrap=True)


def _shown_in(hit) -> str:
    """Where embeds show a hit's words (`![[Note#Heading]]`): `shown in a.md:12, b.md:3`."""
    return "shown in " + ", ".join(f"{clean(s)}:{line}" for s, line in hit.shown_in)


def show_debug(hits, query: str, backlinks: dict[str, int] | None = None) -> None:
    """/debug: the retrieved chunks as one table (rank, score, where, lines or pages, tags,
    how many notes link to the hit's note, the start of the text)."""
    if not hits:
        out.print(f"no chunks found for {escape(clean(query))!r}")
        return
    from rich.table import Table

    table = Table(title=f"retrieved for {clean(query)!r}", title_justify="left", expand=True)
    table.add_column("#", style=CITATION_STYLE, justify="right", no_wrap=True)
    table.add_column("score", style="magenta", justify="right", no_wrap=True)
    # as wide as the longest path (up to half the screen): a path cut at its hyphens
    # reads as two
    widest = min(max(len(clean(hit.shown_source)) for hit in hits), max(20, out.width // 2))
    table.add_column("source › heading chain", overflow="fold", width=max(widest, 24))
    table.add_column("lines", style="green", no_wrap=True)
    backlinks = backlinks or {}
    # Tags and inbound links only where the notes have them: a plain folder keeps its room.
    tagged = any(hit.tags for hit in hits)
    linked = any(backlinks.get(hit.source) for hit in hits)
    if tagged:
        table.add_column("tags", style="cyan", overflow="fold")
    if linked:
        table.add_column("links in", justify="right", no_wrap=True)
    table.add_column("text", ratio=3, style="dim")
    for hit in hits:
        where = clean(hit.shown_source + (f" › {hit.heading_chain}" if hit.heading_chain else ""))
        where += f"\n{_shown_in(hit)}" if hit.shown_in else ""
        snippet = " ".join(clean(hit.text).split())
        snippet = snippet if len(snippet) <= 160 else snippet[:159] + "…"
        span = f"{hit.line_start}–{hit.line_end}"
        if hit.page_start is not None:
            pages = (
                hit.page_start
                if hit.page_end in (None, hit.page_start)
                else (f"{hit.page_start}–{hit.page_end}")
            )
            span = f"p. {pages}"
        cells: list = [str(hit.rank), f"{hit.score:.3f}", Text(where), span]
        if tagged:
            cells.append(Text(clean(" ".join(f"#{t}" for t in hit.tags))))
        if linked:
            cells.append(str(backlinks.get(hit.source, 0)))
        table.add_row(*cells, Text(snippet))
    out.print(table)


def show_verdict(verdict) -> None:
    """/debug: whether an answer would answer from these passages, and what that rests on."""
    said = "answers" if verdict.answered else "declines: the notes don't seem to answer this"
    out.print(
        f"[dim]{said} (confidence {verdict.confidence:.2f}: best sentence similarity "
        f"{verdict.similarity:.2f} in {escape(verdict.model)}, coverage of the question's "
        f"words {verdict.coverage:.2f}; ASKMD_MIN_CONFIDENCE moves the line)[/]"
    )
    for reason in verdict.reasons:
        out.print(f"[dim]{escape(render(reason, form='debug'))}[/]")


def show_eval(report, verbose: bool = False) -> None:
    """The metrics, and with --verbose each query whose relevant file was not found."""
    queries = plural(report.queries, "query", "queries")
    out.print(f"[bold]{queries}[/], files ranked by their best chunk, k={report.k}")
    metrics = report.to_json()
    for name in ("hit@1", "hit@5", "hit@10", "recall@10", "mrr@10"):
        out.print(f"{name:<10} {metrics[name]:.3f}")
    out.print(
        f"[dim]search latency p50 {report.latency_p50:.1f} ms, "
        f"p95 {report.latency(0.95):.1f} ms; {plural(len(report.misses), 'miss', 'misses')}[/]"
    )
    if verbose:
        for miss in report.misses:
            out.print(
                f"[yellow]miss[/] {escape(clean(miss.id))}: {escape(clean(miss.query))}\n"
                f"     wanted {escape(clean(', '.join(miss.relevant)))}; "
                f"got {escape(clean(', '.join(miss.found)) or 'nothing')}",
                soft_wrap=True,
            )


def show_answers_eval(report, verbose: bool = False) -> None:
    """The answers' figures, overall and per language, a few lines each; with --verbose
    each question with its confidence."""
    found = report.to_json()
    for name, g in [("all", found), *found.get("by_lang", {}).items()]:
        out.print(
            f"[bold]{escape(name)}[/]: {plural(g['questions'], 'question')} "
            f"({g['unanswerable']} unanswerable, {g['answerable']} answerable)"
        )
        out.print(
            f"  declined  {_figure(g['declined_unanswerable'])} of the unanswerable, "
            f"{_figure(g['declined_answerable'])} of the answerable"
        )
        if g["answerable"]:
            out.print(
                f"  gold recall  {_figure(g['gold_recall'])} "
                f"(top chunk {_figure(g['top_chunk_recall'])}), "
                f"{_figure(g['answer_chars'], '{:.0f}')} characters "
                f"(top chunk {_figure(g['top_chunk_chars'], '{:.0f}')})"
            )
    out.print(f"[dim]time per question p50 {found['ms_p50'] or 0:.0f} ms[/]")
    if verbose:
        for a in found["asked"]:
            said = "answered" if a["answered"] else "declined"
            wrong = a["answered"] == a["unanswerable"]
            names = ", ".join(a["unmentioned"])
            kinds = ", ".join(a["lacking"])
            weighed = " and ".join(a["uncompared"])
            elsewhere = ", ".join(a["absent"])
            out.print(
                f"{'[yellow]' if wrong else ''}{escape(clean(a['id']))}: {said}"
                f"{'[/]' if wrong else ''} (confidence {_figure(a['confidence'])}"
                f", gold recall {_figure(a['gold_recall'])}"
                f"{', never mentioned: ' + escape(names) if names else ''}"
                f"{', no close sentence gives: ' + kinds if kinds else ''}"
                f"{', never compared: ' + escape(weighed) if weighed else ''}"
                f"{', not in the passages: ' + escape(elsewhere) if elsewhere else ''})",
                soft_wrap=True,
            )


def _figure(value: float | None, form: str = "{:.3f}") -> str:
    return "–" if value is None else form.format(value)
