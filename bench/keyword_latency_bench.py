"""Keyword search latency at documentation-set size, by the document frequency of the terms.

Builds a keyword-only manifest for a folder (notes read, chunked and recorded with their
postings exactly as a sync records them, but nothing embedded: postings do not need
vectors), then times `Manifest.keyword` on queries of rare, mid-frequency and common
terms and on the real questions of SciFact and CMRC, with the retriever's candidate pool
(retriever.MIN_POOL). `--exact` times the full-scan reference query as well, for the
before/after table. The manifest stays in --index-dir to be reused; its meta rows are set
as a sync would set them, so `python rag.py --knowledge FOLDER --index-dir IDX index`
takes its no-change path on it (see `--no-change`).

    python bench/bigfolder.py --mb 200
    nice -n 10 python bench/keyword_latency_bench.py --folder /tmp/askmd-big-200 --exact
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import chunker  # noqa: E402
from askmd.index import index_home, indexer  # noqa: E402
from askmd.index.manifest import MANIFEST, FileRecord, Manifest, chunk_row  # noqa: E402
from askmd.read import notes  # noqa: E402
from askmd.search.retriever import MIN_POOL, is_cjk_query  # noqa: E402
from askmd.settings import load_settings  # noqa: E402
from askmd.terms import content_terms  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
GROUP_CHUNKS = indexer.GROUP_CHUNKS
# Bands by the share of chunks holding a term: rare terms are in at most 0.05% of them
# (about 100 at 220k chunks), common ones in more than 2%.
RARE, COMMON = 0.0005, 0.02


def settings_for(folder: Path, index_dir: Path):
    overrides = {"knowledge_dir": folder, "index_dir": index_dir}
    return load_settings(environ={}, dotenv_path=None, overrides=overrides)


def build(folder: Path, index_dir: Path) -> dict:
    """Record every note's chunks and postings; return the phase timings."""
    settings = settings_for(folder, index_dir)
    index_home.record_owner(index_dir, folder)
    manifest = Manifest(index_dir / MANIFEST)
    manifest.forget_all()
    started = time.perf_counter()
    found, _ = notes.find(folder, settings.include, settings.exclude)
    walk = time.perf_counter() - started
    read = split = rows = record = 0.0
    chunks_total = 0
    current: dict[str, indexer.Current] = {}
    group: list = []
    size = 0

    def flush() -> None:
        nonlocal record
        t = time.perf_counter()
        manifest.record(group)
        record += time.perf_counter() - t

    for source in found:
        t0 = time.perf_counter()
        note = notes.read(folder, source, settings.max_file_bytes)
        st = (folder / source).stat()
        t1 = time.perf_counter()
        chunks = chunker.split_note(note, settings.chunk_size, settings.chunk_overlap)
        t2 = time.perf_counter()
        chunk_rows = []
        for c in chunks:
            text = c.embedding_text
            digest = hashlib.sha1(text.encode()).hexdigest()
            chunk_rows.append(
                chunk_row(
                    c.id, digest, text, title=c.title, aliases=note.aliases, chain=c.heading_chain
                )
            )
        t3 = time.perf_counter()
        read, split, rows = read + t1 - t0, split + t2 - t1, rows + t3 - t2
        rec = FileRecord(source, note.md5, st.st_size, st.st_mtime_ns, len(chunks))
        current[source] = indexer.Current(note.md5, st.st_size, st.st_mtime_ns, None)
        group.append((rec, chunk_rows))
        size += len(chunks)
        chunks_total += len(chunks)
        if size >= GROUP_CHUNKS:
            flush()
            group, size = [], 0
    if group:
        flush()
    t = time.perf_counter()
    manifest.pack()  # as a sync does at its end
    pack = time.perf_counter() - t
    mark_synced(settings, manifest, current)
    total = time.perf_counter() - started
    manifest.close()
    return {
        "files": len(found),
        "chunks": chunks_total,
        "seconds": round(total, 1),
        "walk": round(walk, 2),
        "read": round(read, 1),
        "chunk": round(split, 1),
        "terms": round(rows, 1),
        "record": round(record, 1),
        "pack": round(pack, 1),
        "chunks_per_s_keyword_phase": round(chunks_total / total),
        "chunks_per_s_record": round(chunks_total / record),
    }


def mark_synced(settings, manifest: Manifest, current: dict) -> None:
    """The meta rows a sync writes, so a no-change `index` takes its fast path."""
    fp = indexer.fingerprint(settings)
    manifest.set(
        gate=indexer.gate(fp, current),
        fingerprint=fp,
        embedder=indexer.embedder_id(settings),
        companion=indexer.companion_id(settings),
        last_sync=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )


def regate(folder: Path, index_dir: Path) -> None:
    """Mark a built manifest synced under this checkout's fingerprint (files as recorded)."""
    manifest = Manifest(index_dir / MANIFEST)
    current = {
        s: indexer.Current(r.md5, r.size, r.mtime_ns, None) for s, r in manifest.files().items()
    }
    mark_synced(settings_for(folder, index_dir), manifest, current)
    manifest.close()


def frequencies(manifest: Manifest, index_dir: Path) -> dict[str, int]:
    """Every term's document frequency (cached beside the manifest: a full scan)."""
    path = index_dir / "df.json"
    if path.exists() and path.stat().st_mtime >= (index_dir / MANIFEST).stat().st_mtime:
        return json.loads(path.read_text())
    df = dict(manifest.db.execute("SELECT term, COUNT(*) FROM postings GROUP BY term"))
    path.write_text(json.dumps(df))
    return df


def queries(df: dict[str, int], chunks: int, n: int, seed: int) -> dict[str, list[list[str]]]:
    """Search terms per band: three terms of that band, or those of the shared sets' real
    questions. Band terms are taken as indexed (already stemmed), not tokenised again."""
    rng = random.Random(seed)
    bands: dict[str, list[str]] = {"rare": [], "mid": [], "common": []}
    for term, count in df.items():
        share = count / chunks
        band = "rare" if share <= RARE else "common" if share > COMMON else "mid"
        if count > 1:  # a term of one chunk is a typo or a number, not a query
            bands[band].append(term)
    out: dict[str, list[list[str]]] = {}
    for band, words in bands.items():
        words.sort()
        out[band] = [rng.sample(words, 3) for _ in range(n)] if len(words) >= 3 else []
    out["rare+common"] = [
        [rng.choice(bands["rare"]), *rng.sample(bands["common"], 2), rng.choice(bands["mid"])]
        for _ in range(n)
    ]
    for name, path in (("scifact", "scifact"), ("cmrc", "cmrc2018")):
        lines = (DATA / path / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        picked = rng.sample(lines, min(n, len(lines)))
        out[f"{name} questions"] = [content_terms(json.loads(line)["query"]) for line in picked]
    return out


def _cjk(terms: list[str]) -> bool:
    return is_cjk_query(" ".join(terms))


def time_queries(
    manifest: Manifest, texts: list[list[str]], exact: bool, limit: int
) -> tuple[float, float, float, float]:
    """p50, p95 and max wall ms of one query each (after a warm-up pass), and the p95 of
    the CPU ms this thread spent: on a shared machine the wall time mostly measures the
    other processes."""
    search = manifest._keyword_exact if exact else manifest.keyword
    for terms in texts[:3]:
        search(terms, limit, cjk=_cjk(terms))
    took, cpu = [], []
    for terms in texts:
        t, c = time.perf_counter(), time.thread_time()
        search(terms, limit, cjk=_cjk(terms))
        took.append((time.perf_counter() - t) * 1000)
        cpu.append((time.thread_time() - c) * 1000)
    return statistics.median(took), _p95(took), max(took), _p95(cpu)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def agreement(manifest: Manifest, texts: list[list[str]], limit: int) -> int:
    """How many queries get a different top `limit` from the fast path than the reference."""
    differ = 0
    for terms in texts:
        cjk = _cjk(terms)
        fast = manifest.keyword(terms, limit, cjk=cjk)
        ref = manifest._keyword_exact(terms, limit, cjk=cjk)
        if [c for c, _ in fast] != [c for c, _ in ref] or any(
            abs(a - b) > 1e-9 for (_, a), (_, b) in zip(fast, ref, strict=True)
        ):
            differ += 1
    return differ


def no_change(folder: Path, index_dir: Path, runs: int) -> list[float]:
    """Wall seconds of `rag.py index` with nothing changed, process start included."""
    took = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, str(ROOT / "rag.py"), "--knowledge", str(folder),
             "--index-dir", str(index_dir), "index"],
            check=True, capture_output=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )  # fmt: skip
        took.append(time.perf_counter() - t)
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--index-dir", type=Path, default=None)
    parser.add_argument("--rebuild", action="store_true", help="build the manifest again")
    parser.add_argument("--queries", type=int, default=60, help="queries per band")
    parser.add_argument("--limit", type=int, default=MIN_POOL)
    parser.add_argument("--exact", action="store_true", help="time the full-scan query too")
    parser.add_argument("--no-change", type=int, default=0, help="runs of a no-change index")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--bands", default="", help="comma-separated bands to time (default all)")
    parser.add_argument("--regate", action="store_true", help="only mark the manifest synced")
    args = parser.parse_args()
    index_dir = args.index_dir or Path(f"/tmp/askmd-kwbench-{args.folder.name}")
    if args.regate:
        regate(args.folder, index_dir)
        return 0
    if args.rebuild or not (index_dir / MANIFEST).exists():
        print(json.dumps({"build": build(args.folder, index_dir)}), flush=True)
    manifest = Manifest(index_dir / MANIFEST)
    chunks = manifest.db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
    df = frequencies(manifest, index_dir)
    sets = queries(df, chunks, args.queries, args.seed)
    print(f"chunks {chunks}, terms {len(df)}, limit {args.limit}")
    print(f"{'band':<18}{'max df':>8}  {'fast p50':>9}{'p95':>8}{'max':>8}{'cpu95':>7}", end="")
    print(f"  {'full p50':>9}{'p95':>8}{'max':>8}{'cpu95':>7}  differ" if args.exact else "")
    for band, texts in sets.items():
        if args.bands and band not in args.bands.split(","):
            continue
        top = max(max((df.get(t, 0) for t in q), default=0) for q in texts)
        p50, p95, worst, cpu = time_queries(manifest, texts, False, args.limit)
        line = f"{band:<18}{top:>8}  {p50:>9.1f}{p95:>8.1f}{worst:>8.1f}{cpu:>7.1f}"
        if args.exact:
            e50, e95, eworst, ecpu = time_queries(manifest, texts, True, args.limit)
            line += f"  {e50:>9.1f}{e95:>8.1f}{eworst:>8.1f}{ecpu:>7.1f}"
            line += f"  {agreement(manifest, texts, 10)}"
        print(line, flush=True)
    if args.no_change:
        took = no_change(args.folder, index_dir, args.no_change)
        print("no-change index (s):", " ".join(f"{t:.2f}" for t in took))
    return 0


if __name__ == "__main__":
    sys.exit(main())
