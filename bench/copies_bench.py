"""Notes made from one template: do identical vectors hide the other notes from dense search?

    python -m bench.copies_bench [--copies 50,100,200,300,500,1000,2000] [--jitter 0,0.001]

For each number of copies and each store.JITTER, a fresh folder holds that many empty
daily notes made from one template (two chunks each, so two groups of identical vectors)
and three short notes; each of those is asked about in words it does not use. Reported:
the rank of the right note in the dense top 10 (0: not there) and the cold index time.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from askmd.index import store
from askmd.pipeline import Index
from askmd.settings import load_settings

TEMPLATE = (
    "# Daily note\n\n## Tasks\n\nNothing planned yet, fill this in during the day.\n\n"
    "## Log\n\nWrite what happened today here.\n"
)
NOTES = {
    "power.md": "# Power\n\nTo keep the machine awake, disable suspend.\n",
    "garden.md": "# Garden\n\nWater tomatoes in the morning, before the heat.\n",
    "bread.md": "# Bread\n\nLet the dough rise overnight in the fridge.\n",
}
QUESTIONS = (
    ("stop the computer sleeping", "power.md"),
    ("when should I irrigate my vegetables", "garden.md"),
    ("leaving yeast loaves to prove in the refrigerator", "bread.md"),
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", default="50,100,200,300,500,1000,2000")
    parser.add_argument("--jitter", default="0,0.001")
    args = parser.parse_args(argv)
    chosen = store.JITTER
    print("| copies | JITTER | ranks (power, garden, bread) | index s |")
    print("| ---: | ---: | --- | ---: |")
    for copies in (int(c) for c in args.copies.split(",")):
        for jitter in (float(j) for j in args.jitter.split(",")):
            store.JITTER = jitter
            with tempfile.TemporaryDirectory() as tmp:
                kb = Path(tmp) / "kb"
                (kb / "daily").mkdir(parents=True)
                for day in range(copies):
                    (kb / "daily" / f"{day:04d}.md").write_text(TEMPLATE, encoding="utf-8")
                for name, text in NOTES.items():
                    (kb / name).write_text(text, encoding="utf-8")
                overrides = {"knowledge_dir": kb, "index_dir": Path(tmp) / "ix"}
                index = Index(load_settings(environ={}, dotenv_path=None, overrides=overrides))
                started = time.perf_counter()
                index.sync()
                took = time.perf_counter() - started
                ranks = []
                for question, note in QUESTIONS:
                    found = [h.source for h in index.search(question, 10, mode="dense")]
                    ranks.append(found.index(note) + 1 if note in found else 0)
                index.manifest.close()
            print(f"| {copies} | {jitter:g} | {', '.join(map(str, ranks))} | {took:.1f} |")
    store.JITTER = chosen


def smoke(tmp: Path) -> None:
    """Five copies, the shipped jitter."""
    main(["--copies", "5", "--jitter", str(store.JITTER)])


if __name__ == "__main__":
    main()
