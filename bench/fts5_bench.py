"""askmd's keyword engine (BM25F over its own postings) against SQLite FTS5 over the same
chunks and the same search terms: ranking quality, build time, latency and size.

    nice -n 10 python -m bench.fts5_bench                        # every quality set
    nice -n 10 python -m bench.fts5_bench --sets scifact,workdocs --json
    python -m bench.bigfolder --mb 200 --out /tmp/askmd-big-200
    nice -n 10 python -m bench.fts5_bench --sets none --big /tmp/askmd-big-200 --rebuild

Each folder gets a keyword-only askmd index (`rag.py index --keyword-only`, cached under
--work) and, in a file of its own, a contentless FTS5 table, one row per indexed chunk
(rowid = the manifest's document number), columns title, aliases, headings and body: the
space-joined terms askmd computes for each field (prepare.prepare and chunk_row, run
again on the notes). The tokenizer splits on spaces alone, so FTS5 holds exactly those
terms: checked against the postings (every term's document count) and, on a sample of
chunks, token by token. A question's `content_terms` become an OR of quoted terms ranked
by `bm25(fts, *FIELD_WEIGHTS, 1)`, against `Manifest.keyword(terms, pool, cjk=...)`.
Files rank by their best chunk (as `rag.py eval` ranks them) for MRR@10 and hit@5, with
the pool an evaluation's search asks for; overlap@10: the share of the top 10 files the
engines share. `--big` times both builds, both engines' queries (interleaved, the bands of
keyword_latency_bench, pool retriever.MIN_POOL) and measures each index's size.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import time
from collections import Counter
from pathlib import Path

from askmd.evaluate import CHUNKS_PER_FILE
from askmd.index import prepare
from askmd.index.manifest import MANIFEST, Manifest
from askmd.index.manifest_keywords import FIELD_WEIGHTS
from askmd.search.retriever import MIN_POOL, is_cjk_query
from askmd.settings import load_settings
from askmd.terms import content_terms
from bench.common import DATA, PARAPHRASE, ROOT, keyword_index, percentile, rows

WORK = Path("/tmp/fts5-bench")
HELDOUT = ROOT / "bench" / "heldout"
POOL = max(MIN_POOL, 4 * 10 * CHUNKS_PER_FILE)  # what an evaluation's search of 50 asks for
COLUMNS = ("title", "aliases", "headings", "body")  # ChunkRow.fields, then its terms
WEIGHTS = (*FIELD_WEIGHTS, 1.0)
# Terms are letters, digits and the joiners -_.:/ (askmd.terms); every category but
# separators, controls and format characters is a token character, so spaces alone split.
TOKENIZE = "unicode61 remove_diacritics 0 categories 'L* N* M* P* S* Co Cn'"
GROUP = 256  # chunks per commit, as askmd's keyword phase commits (GROUP_CHUNKS)
RARE, COMMON = 0.0005, 0.02  # keyword_latency_bench's bands of document frequency
KEYWORD_TABLES = ("documents", "postings", "packed", "packed_gone")


def quality_sets(data: Path, cmrc_sample: int, seed: int) -> dict[str, tuple[Path, list]]:
    """name: (notes folder, [(question, its relevant files)]), questions with one at least."""
    cmrc = asked(data / "cmrc2018/queries.jsonl")
    out = {
        "scifact": (data / "scifact/corpus", asked(data / "scifact/queries.jsonl")),
        "cmrc2018": (data / "cmrc2018/corpus", random.Random(seed).sample(cmrc, cmrc_sample)),
    }
    for name, file, folder in (
        ("obsidian-en", "obsidian-en.jsonl", "obsidian-dev-docs/en"),
        ("tldr-zh", "tldr-zh.jsonl", "tldr/pages.zh"),
        ("tldr-cross", "tldr-cross.jsonl", "tldr/pages.zh"),
    ):  # bench.paraphrase_bench's "all" rows: plain and hard, or cross
        out[name] = (data / folder, asked(PARAPHRASE / file, ("plain", "hard", "cross")))
    held = [(p.name, p) for p in sorted(HELDOUT.iterdir()) if (p / "queries.jsonl").is_file()]
    for name, folder in [*held, ("personal-b", data / "personal-b")]:
        out[name] = (folder / "notes", asked(folder / "queries.jsonl"))
    return out


def asked(path: Path, kinds: tuple[str, ...] = ()) -> list[tuple[str, set[str]]]:
    """(question, relevant files) of a set's answerable questions (of these kinds)."""
    return [
        (q["query"], set(q["relevant"]))
        for q in rows(path)
        if q["query"].strip() and q.get("relevant") and (not kinds or q["kind"] in kinds)
    ]


def askmd_index(folder: Path, ix: Path, rebuild: bool) -> dict:
    """A keyword-only askmd index of the folder (built once), and the report of its build."""
    report = ix.with_name(ix.name + ".build.json")
    if rebuild or not (ix / MANIFEST).exists() or not report.exists():
        report.write_text(json.dumps(keyword_index(folder, ix)))
    return json.loads(report.read_text())


def build_fts5(folder: Path, ix: Path, out: Path) -> dict:
    """The FTS5 file of the chunks the manifest holds, their fields' terms computed again
    as askmd computes them (prepare.prepare, in worker processes for a big folder)."""
    for stale in (out, out.with_name(out.name + "-wal"), out.with_name(out.name + "-shm")):
        stale.unlink(missing_ok=True)
    ro = sqlite3.connect(f"file:{ix / MANIFEST}?mode=ro", uri=True)
    doc_of = {
        chunk: (doc, n) for doc, chunk, n in ro.execute("SELECT doc, chunk, length FROM documents")
    }
    sources = ro.execute("SELECT source FROM documents GROUP BY source ORDER BY MIN(doc)")
    settings = load_settings(environ={}, dotenv_path=None, overrides={"knowledge_dir": folder})
    jobs = [
        prepare.Job(folder, s, settings.max_file_bytes, settings.chunk_size, settings.chunk_overlap)
        for (s,) in sources
    ]
    ro.close()
    db = sqlite3.connect(out)
    db.executescript("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
    db.execute(
        f"CREATE VIRTUAL TABLE fts USING fts5({', '.join(COLUMNS)}, content='', "
        f'detail=full, tokenize="{TOKENIZE}")'
    )
    db.execute("CREATE TABLE docs (doc INTEGER PRIMARY KEY, chunk TEXT NOT NULL)")
    db.commit()
    started, writing, seen, sample = time.perf_counter(), 0.0, Counter(), []
    workers = prepare.workers() if len(jobs) >= prepare.WORKERS_FROM_NOTES else 0
    ready = prepare.prepared_in_workers(jobs, workers) if workers else map(prepare.prepare, jobs)
    batch: list[tuple] = []

    def flush() -> float:
        t = time.perf_counter()
        db.executemany(f"INSERT INTO fts (rowid, {', '.join(COLUMNS)}) VALUES (?, ?, ?, ?, ?)",
                       [row[:1] + row[2:] for row in batch])  # fmt: skip
        db.executemany("INSERT INTO docs VALUES (?, ?)", [row[:2] for row in batch])
        db.commit()
        batch.clear()
        return time.perf_counter() - t

    for done in ready:
        for row in done.rows or []:
            if row.id not in doc_of:
                seen["chunks not in the manifest"] += 1
                continue
            doc, length = doc_of[row.id]
            seen["chunks whose length differs"] += length != len(row.terms)
            batch.append((doc, row.id, *(" ".join(f) for f in (*row.fields, row.terms))))
            if len(sample) < 500 and doc % 7 == 0:
                sample.append(batch[-1][2:])
        if len(batch) >= GROUP:
            writing += flush()
    writing += flush()
    built = time.perf_counter()
    db.execute("INSERT INTO fts (fts) VALUES ('optimize')")
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    chunks = db.execute("SELECT COUNT(*) FROM docs").fetchone()[0]
    db.close()
    return {
        "seconds": time.perf_counter() - started,
        "insert_seconds": writing,
        "optimize_seconds": time.perf_counter() - built,
        "chunks": chunks,
        "manifest_chunks": len(doc_of),
        **seen,
        "sample_token_mismatches": token_check(sample),
    }


def token_check(rows: list[tuple[str, ...]]) -> list[str]:
    """The fields whose FTS5 tokens are not their askmd terms, one by one (at most 5)."""
    db = sqlite3.connect(":memory:")
    db.execute(f'CREATE VIRTUAL TABLE t USING fts5(x, tokenize="{TOKENIZE}")')
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    fields = [f for row in rows for f in row if f]
    db.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", enumerate(fields, start=1))
    tokens: dict[int, list[str]] = {}
    for term, doc in db.execute("SELECT term, doc FROM v ORDER BY doc, offset"):
        tokens.setdefault(doc, []).append(term)
    wrong = [f for i, f in enumerate(fields, start=1) if tokens.get(i, []) != f.split(" ")]
    return [f"{len(wrong)} of {len(fields)} fields"] + [w[:120] for w in wrong[:5]]


def vocabulary_check(ix: Path, out: Path, df: dict[str, int]) -> dict:
    """Every term's document count in FTS5 against askmd's postings."""
    db = sqlite3.connect(f"file:{out}?mode=ro", uri=True)
    db.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, fts, 'row')")
    fts = dict(db.execute("SELECT term, doc FROM temp.v"))
    differ = sorted(t for t in {*df, *fts} if df.get(t) != fts.get(t))
    return {"terms": len(df), "fts5_terms": len(fts), "differ": len(differ), "examples": differ[:8]}


def frequencies(ix: Path) -> dict[str, int]:
    """Every term's document count in askmd's postings (cached: a full scan)."""
    cache = ix.with_name(ix.name + ".df.json")
    if cache.exists() and cache.stat().st_mtime >= (ix / MANIFEST).stat().st_mtime:
        return json.loads(cache.read_text())
    ro = sqlite3.connect(f"file:{ix / MANIFEST}?mode=ro", uri=True)
    df = dict(ro.execute("SELECT term, COUNT(*) FROM postings GROUP BY term"))
    cache.write_text(json.dumps(df))
    return df


class Fts5:
    """FTS5 keyword search: an OR of the question's terms, best bm25 first."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        self.db.execute("PRAGMA cache_size = -262144")  # the manifest's (CACHE_KIB)
        weights = ", ".join(str(w) for w in WEIGHTS)
        self.sql = (
            f"SELECT d.chunk, -f.s FROM (SELECT rowid AS doc, bm25(fts, {weights}) AS s "
            "FROM fts WHERE fts MATCH ? ORDER BY s, rowid LIMIT ?) AS f "
            "JOIN docs AS d USING (doc) ORDER BY f.s, f.doc"
        )

    def keyword(self, terms: list[str], limit: int) -> list[tuple[str, float]]:
        unique = sorted(set(terms))
        match = " OR ".join(f'"{t}"' for t in unique)
        return self.db.execute(self.sql, (match, limit)).fetchall() if unique else []


def quality(manifest: Manifest, fts: Fts5, queries: list) -> dict:
    """MRR@10 and hit@5 of both engines' files, and how far their top 10 files agree."""
    sums = Counter()
    for question, relevant in queries:
        terms = content_terms(question)
        found = manifest.keyword(terms, POOL, cjk=is_cjk_query(question)), fts.keyword(terms, POOL)
        ours, theirs = (list(dict.fromkeys(c.rsplit("#", 1)[0] for c, _ in f))[:10] for f in found)
        for name, files in (("ours", ours), ("fts5", theirs)):
            rank = next((i for i, f in enumerate(files, start=1) if f in relevant), 0)
            sums[f"{name} mrr@10"] += 1 / rank if rank else 0.0
            sums[f"{name} hit@5"] += 0 < rank <= 5
        sums["overlap@10"] += len(set(ours) & set(theirs)) / max(len(ours), len(theirs), 1)
        sums["same top file"] += ours[:1] == theirs[:1]
    return {"queries": len(queries), **{k: v / max(1, len(queries)) for k, v in sums.items()}}


def bands(df: dict[str, int], chunks: int, n: int, seed: int, data: Path) -> dict[str, list]:
    """keyword_latency_bench's query mix: three terms of one band of document frequency,
    rare + common + mid terms, and real SciFact and CMRC questions."""
    rng = random.Random(seed)
    by: dict[str, list[str]] = {"rare": [], "mid": [], "common": []}
    for term, count in df.items():
        share = count / chunks
        if count > 1:
            by["rare" if share <= RARE else "common" if share > COMMON else "mid"].append(term)
    rare, mid, common = (sorted(w) for w in by.values())
    out = {b: [rng.sample(w, 3) for _ in range(n)] if len(w) >= 3 else [] for b, w in
           (("rare", rare), ("mid", mid), ("common", common))}  # fmt: skip
    if rare and mid and len(common) > 1:
        out["rare+common"] = [
            [rng.choice(rare), *rng.sample(common, 2), rng.choice(mid)] for _ in range(n)
        ]
    for name, folder in (("scifact", "scifact"), ("cmrc", "cmrc2018")):
        if not (data / folder / "queries.jsonl").is_file():
            continue
        lines = (data / folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        picked = rng.sample(lines, min(n, len(lines)))
        out[f"{name} questions"] = [content_terms(json.loads(line)["query"]) for line in picked]
    return out


def latency(manifest: Manifest, fts: Fts5, texts: list[list[str]]) -> dict:
    """Wall and CPU ms of each engine, the two interleaved (which goes first alternates)."""
    engines = {
        "ours": lambda t: manifest.keyword(t, MIN_POOL, cjk=is_cjk_query(" ".join(t))),
        "fts5": lambda t: fts.keyword(t, MIN_POOL),
    }
    for terms in texts[:3]:
        for search in engines.values():
            search(terms)
    wall: dict[str, list[float]] = {k: [] for k in engines}
    cpu: dict[str, list[float]] = {k: [] for k in engines}
    overlap = 0.0
    for i, terms in enumerate(texts):
        found = {}
        for name in list(engines)[:: 1 if i % 2 else -1]:
            t, c = time.perf_counter(), time.thread_time()
            found[name] = engines[name](terms)
            wall[name].append((time.perf_counter() - t) * 1000)
            cpu[name].append((time.thread_time() - c) * 1000)
        tops = [{chunk for chunk, _ in found[n][:10]} for n in engines]
        overlap += len(tops[0] & tops[1]) / max(len(tops[0]), len(tops[1]), 1)
    row: dict = {"queries": len(texts), "overlap@10 chunks": overlap / max(1, len(texts))}
    for name in engines:
        row[f"{name} p50"] = statistics.median(wall[name])
        row[f"{name} p95"] = percentile(wall[name], 0.95)
        row[f"{name} cpu p95"] = percentile(cpu[name], 0.95)
    row["p50 ratio fts5/ours"] = row["fts5 p50"] / row["ours p50"]
    return row


def sizes(ix: Path, out: Path) -> dict:
    """Bytes of askmd's keyword tables (with their indexes) and of the FTS5 file."""
    ro = sqlite3.connect(f"file:{ix / MANIFEST}?mode=ro", uri=True)
    names = [
        n
        for (n, t) in ro.execute("SELECT name, tbl_name FROM sqlite_master")
        if t in KEYWORD_TABLES
    ]
    pages = dict(ro.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"))
    fts = sqlite3.connect(f"file:{out}?mode=ro", uri=True)
    theirs = dict(fts.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"))
    return {
        "ours keyword tables": sum(pages.get(n, 0) for n in names),
        "ours by table": {n: pages[n] for n in names if n in pages},
        "ours manifest file": (ix / MANIFEST).stat().st_size,
        "fts5 file": out.stat().st_size,
        "fts5 by table": theirs,
    }


def run_folder(folder: Path, work: Path, key: str, rebuild: bool) -> tuple[Path, Path, dict]:
    """Both indexes of one folder, built (in this order) when missing or asked to."""
    ix, out = work / key, work / f"{key}-fts5.sqlite3"
    built = not (ix / MANIFEST).exists() or rebuild
    report = {"askmd": askmd_index(folder, ix, rebuild)}
    saved = work / f"{key}-fts5.build.json"
    if built or not out.exists() or not saved.exists():
        saved.write_text(json.dumps(build_fts5(folder, ix, out)))
    report["fts5"] = json.loads(saved.read_text())
    report["vocabulary"] = vocabulary_check(ix, out, frequencies(ix))
    return ix, out, report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="all", help="comma-separated set names, or none")
    parser.add_argument("--big", type=Path, help="a big folder (bench.bigfolder) to time")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--work", type=Path, default=WORK, help="where the indexes are cached")
    parser.add_argument("--rebuild", action="store_true", help="build the indexes again")
    parser.add_argument("--cmrc-sample", type=int, default=500)
    parser.add_argument("--queries", type=int, default=60, help="latency queries per band")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--json", action="store_true", help="one JSON object, not tables")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    results: dict = {"pool": POOL, "weights": dict(zip(COLUMNS, WEIGHTS, strict=True))}
    every = quality_sets(args.data, args.cmrc_sample, args.seed) if args.sets != "none" else {}
    wanted = list(every) if args.sets == "all" else [s for s in args.sets.split(",") if s in every]
    for name in wanted:
        folder, queries = every[name]
        key = "set-" + str(folder.relative_to(folder.anchor)).replace("/", "_")
        ix, out, report = run_folder(folder, args.work, key, args.rebuild)
        manifest = Manifest(ix / MANIFEST, read_only=True)
        found = {**quality(manifest, Fts5(out), queries), "build": report}
        manifest.close()
        results.setdefault("quality", {})[name] = found
        if not args.json:
            print(json.dumps({name: found}), flush=True)
    if args.big:
        ix, out, report = run_folder(args.big, args.work, f"big-{args.big.name}", args.rebuild)
        big = results["big"] = {"build": report, "latency": {}, "sizes": sizes(ix, out)}
        manifest, fts = Manifest(ix / MANIFEST, read_only=True), Fts5(out)
        chunks = big["chunks"] = manifest.db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
        mix = bands(frequencies(ix), chunks, args.queries, args.seed, args.data)
        for band, texts in ((b, t) for b, t in mix.items() if t):
            big["latency"][band] = latency(manifest, fts, texts)
            if not args.json:
                print(json.dumps({band: big["latency"][band]}), flush=True)
        manifest.close()
    if args.json:
        print(json.dumps(results, indent=1, ensure_ascii=False))
    else:
        print_tables(results)


def print_tables(results: dict) -> None:
    if results.get("quality"):
        print("\n| set | n | MRR@10 ours | FTS5 | diff | hit@5 ours | FTS5 | diff | overlap@10 |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, q in results.get("quality", {}).items():
        mrr, hit = (q[f"fts5 {m}"] - q[f"ours {m}"] for m in ("mrr@10", "hit@5"))
        print(f"| {name} | {q['queries']} | {q['ours mrr@10']:.3f} | {q['fts5 mrr@10']:.3f} | "
              f"{mrr:+.3f} | {q['ours hit@5']:.3f} | {q['fts5 hit@5']:.3f} | {hit:+.3f} | "
              f"{q['overlap@10']:.2f} |")  # fmt: skip
    if "big" in results:
        print(f"\nchunks: {results['big']['chunks']}")
        print("\n| band | n | ours p50 | p95 | FTS5 p50 | p95 | FTS5/ours p50 | overlap@10 |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for band, r in results["big"]["latency"].items():
            print(f"| {band} | {r['queries']} | {r['ours p50']:.1f} | {r['ours p95']:.1f} | "
                  f"{r['fts5 p50']:.1f} | {r['fts5 p95']:.1f} | {r['p50 ratio fts5/ours']:.2f} | "
                  f"{r['overlap@10 chunks']:.2f} |")  # fmt: skip
        print(json.dumps({k: results["big"][k] for k in ("build", "sizes")}, indent=1))


def smoke(tmp: Path) -> None:
    """The tiny folder as the big one, three queries a band."""
    from bench.common import tiny_data, tiny_folder

    main(["--sets", "none", "--big", str(tiny_folder(tmp / "kb")), "--work", str(tmp / "w"),
          "--data", str(tiny_data(tmp / "data")), "--queries", "3"])  # fmt: skip


if __name__ == "__main__":
    main()
