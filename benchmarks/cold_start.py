"""Cold start benchmark: spawn to first result on a hydrated store, ours against the public
HotMem 0.2.3, beside a bare SQLite FTS5 floor.

Run: ``uv run python benchmarks/cold_start.py [--public-python /tmp/pubhotmem/bin/python]
[--size 10000] [--repeats 10] [--query 0] [--accelerators auto off]``

The public HotMem (``hotmem==0.2.3`` on PyPI, another project with the same design and the same
package name) is never installed in this project's environment. Give it a virtualenv of its own
outside the repository and pass that interpreter::

    python3 -m venv /tmp/pubhotmem && /tmp/pubhotmem/bin/pip install hotmem==0.2.3

Without ``--public-python`` its rows are skipped, with a note.

Both stores hold the same ``--size`` facts (``synthetic.heavy_memories``: same ids, identifiers,
importances and times) and each is hydrated from a snapshot package before it is measured:

- ours: ``store.add_many``, ``store.snapshot`` (one package file), ``hotmem.hydrate`` into a
  fresh path; the child runs ``import hotmem``, ``hotmem.open_store(path, accelerator=...)`` and
  ``hotmem.search_memories(store, query)`` (limit 5), with the default accelerator (``auto``:
  numpy when installed and the store is large enough) and with ``"off"`` (``--accelerators``
  may add ``numpy``, which forces numpy in);
- public: its own Python API, run by its interpreter: ``hotmem.swap.hydrate`` loads the facts
  from a JSONL file (its bulk load: each fact embedded, one transaction),
  ``hotmem.snapshot.snapshot`` writes its v2 package (a directory), and
  ``hotmem.snapshot.hydrate`` loads that into a fresh ``hotmem.db.MemoryDB``; the child runs
  ``MemoryDB(path)`` and ``hotmem.search.search_memories(db, query, top_k=5)``;
- floor: a child that opens our hydrated file with the standard library's ``sqlite3`` and runs
  one FTS5 ``MATCH`` on ``memories_fts`` (the query's words, each quoted, joined by ``OR``,
  ranked by BM25, top 5), nothing else;
- interpreter startup (``python -c pass``) of each interpreter, for context.

Each child prints its first result and exits. Wall time runs from just before the spawn to the
child's exit; CPU time is the child's user plus system time (``RUSAGE_CHILDREN`` deltas: one
child at a time). Children run in the temporary directory and cache their bytecode there
(``PYTHONPYCACHEPREFIX``), as an installed package has it; one untimed run of each fills that
cache and the page cache. Then the runs are interleaved (ours, public, floor, startup, repeated
``--repeats`` times) and the median and minimum of each are reported, with their ratio to the
public HotMem's medians. Last, one more run of ours (``auto``) under ``-X importtime`` gives the
ten modules of longest cumulative import time, the lazy imports of the first search included.

Everything is written under one temporary directory. Figures are local diagnostics for this
machine, not guarantees.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import heavy_memories, heavy_queries, public_record

import hotmem

OURS_CHILD = """
import sys
import hotmem
with hotmem.open_store(sys.argv[1], accelerator=sys.argv[3]) as store:
    results = hotmem.search_memories(store, sys.argv[2], limit=5)
print(results[0].memory_id, f"{results[0].score:.4f}", flush=True)
"""

PUBLIC_CHILD = """
import sys
from hotmem.db import MemoryDB
from hotmem.search import search_memories
db = MemoryDB(sys.argv[1])
results = search_memories(db, sys.argv[2], top_k=5)
db.close()
print(results[0]["memory_id"], f"{results[0]['score']:.4f}", flush=True)
"""

FLOOR_CHILD = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1])
rows = connection.execute(
    "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT 5",
    (sys.argv[2],),
).fetchall()
connection.close()
print("rowid", rows[0][0], flush=True)
"""

# Run by the public HotMem's interpreter: load the facts, snapshot, hydrate into a fresh store.
PUBLIC_SETUP = """
import json, sys
import hotmem
from hotmem.db import MemoryDB
from hotmem.snapshot import hydrate, snapshot
from hotmem.swap import hydrate as load_jsonl

facts, source, package, target = sys.argv[1:5]
db = MemoryDB(source)
loaded = load_jsonl(db, facts).loaded
exported = snapshot(db, package).exported
db.close()
db = MemoryDB(target)
hydrated = hydrate(db, package).loaded
count = db.count()
db.close()
print(json.dumps({
    "version": hotmem.__version__, "module": hotmem.__file__, "loaded": loaded,
    "exported": exported, "hydrated": hydrated, "count": count,
}))
"""

# The function words of the heavy question template ("What is the A of the B C?").
FLOOR_STOPWORDS = frozenset({"what", "is", "the", "of"})
IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)$")


@dataclass
class Variant:
    """One kind of child process, and what its runs measured."""

    name: str
    what: str
    argv: list[str]
    wall_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    first_result: str = ""


def run_child(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """Wall ms from spawn to exit, the child's CPU ms (user + system), and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    completed = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
    wall_s = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode != 0:
        raise RuntimeError(f"{argv[:2]} exited {completed.returncode}:\n{completed.stderr[-3000:]}")
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall_s * 1000, cpu_s * 1000, completed.stdout.strip()


def floor_expression(query: str) -> str:
    """The floor's FTS5 expression: the query's words, each quoted, joined by ``OR``."""
    words = [w for w in re.findall(r"[^\W_]+", query.casefold()) if w not in FLOOR_STOPWORDS]
    return " OR ".join(f'"{word}"' for word in dict.fromkeys(words))


def build_ours(memories: list[dict[str, Any]], directory: Path) -> tuple[Path, float]:
    """Our store: add_many, snapshot, hydrate into a fresh path; the target and the seconds."""
    start = time.perf_counter()
    with hotmem.open_store(directory / "ours-source.db") as store:
        store.add_many(memories)
        store.snapshot(directory / "ours.hotmem")
    target = directory / "ours-hydrated.db"
    report = hotmem.hydrate(directory / "ours.hotmem", target)
    seconds = time.perf_counter() - start
    with hotmem.open_store(target) as store:
        count = len(store)
    if report.record_count != len(memories) or count != len(memories):
        raise RuntimeError(f"ours hydrated {report.record_count} (store holds {count})")
    return target, seconds


def build_public(
    python: str, memories: list[dict[str, Any]], directory: Path, env: dict[str, str]
) -> tuple[Path, float, str]:
    """The public HotMem's store, built by its own interpreter; the target, the seconds and the
    version it reports."""
    facts = directory / "public-facts.jsonl"
    with facts.open("w") as out:
        for m in memories:
            out.write(json.dumps(public_record(m)) + "\n")
    target = directory / "public-hydrated.db"
    argv = [python, "-c", PUBLIC_SETUP, str(facts), str(directory / "public-source.db")]
    argv += [str(directory / "public-package"), str(target)]
    start = time.perf_counter()
    # Its tracer writes a JSON line to stderr for every fact embedded: captured, not shown.
    completed = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=directory)
    seconds = time.perf_counter() - start
    if completed.returncode != 0:
        raise RuntimeError(f"public HotMem setup failed:\n{completed.stderr[-3000:]}")
    info = json.loads(completed.stdout.strip().splitlines()[-1])
    if Path(info["module"]).resolve().is_relative_to(Path(__file__).resolve().parents[1]):
        raise RuntimeError(f"--public-python imports hotmem from this repository: {info}")
    if info["count"] != len(memories) or info["hydrated"] != len(memories):
        raise RuntimeError(f"public HotMem holds {info['count']} memories: {info}")
    return target, seconds, info["version"]


def import_breakdown(argv: list[str], env: dict[str, str], cwd: Path) -> None:
    """Print the ten modules of longest cumulative import time of one ``-X importtime`` run."""
    completed = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
    if completed.returncode != 0:
        raise RuntimeError(f"importtime run failed:\n{completed.stderr[-3000:]}")
    rows: list[tuple[int, int, int, str]] = []  # cumulative us, self us, depth, module
    for line in completed.stderr.splitlines():
        match = IMPORT_LINE.match(line)
        if match:
            self_us, cumulative_us, indent, module = match.groups()
            rows.append((int(cumulative_us), int(self_us), len(indent) // 2, module))
    by_package: dict[str, int] = defaultdict(int)
    for _, self_us, _, module in rows:
        by_package[module.split(".")[0]] += self_us
    total_ms = sum(by_package.values()) / 1000
    print(
        f"\nImports of one run of ours (accelerator auto) under `-X importtime`: {len(rows)} "
        f"modules, {total_ms:.1f} ms of import time in all (self times summed; importtime "
        "itself adds to them). The ten of longest cumulative time (a package includes its "
        "submodules; depth 0 is imported by the script itself):\n"
    )
    print("| module | depth | cumulative (ms) | self (ms) |")
    print("|---|---:|---:|---:|")
    for cumulative_us, self_us, depth, module in sorted(rows, reverse=True)[:10]:
        print(f"| {module} | {depth} | {cumulative_us / 1000:.1f} | {self_us / 1000:.1f} |")
    top = sorted(by_package.items(), key=lambda item: -item[1])[:8]
    summary = ", ".join(f"{package} {us / 1000:.1f}" for package, us in top)
    print(f"\nSelf time by top-level package (ms): {summary}.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--public-python",
        help="the interpreter of a virtualenv outside this repository with hotmem==0.2.3",
    )
    parser.add_argument("--size", type=int, default=10_000, help="memories in each store")
    parser.add_argument("--repeats", type=int, default=10, help="timed runs of each child")
    parser.add_argument(
        "--query", type=int, default=0, help="index of the query in synthetic.heavy_queries()"
    )
    parser.add_argument(
        "--accelerators",
        nargs="+",
        choices=["auto", "numpy", "off"],
        default=["auto", "off"],
        help="our accelerators to measure (auto uses numpy only from NUMPY_FROM memories)",
    )
    args = parser.parse_args()
    query = heavy_queries()[args.query]
    memories = heavy_memories(args.size)

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        env = {**os.environ, "PYTHONPYCACHEPREFIX": str(directory / "pycache")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        ours, ours_s = build_ours(memories, directory)
        setup = f"ours {ours_s:.1f} s"
        ours_argv = [sys.executable, "-c", OURS_CHILD, str(ours), query]
        variants = [
            Variant(f"ours, accelerator {a}", "open_store + search_memories", [*ours_argv, a])
            for a in args.accelerators
        ]
        public_name = ""
        if args.public_python:
            public, public_s, version = build_public(args.public_python, memories, directory, env)
            setup += f", public {public_s:.1f} s"
            public_name = f"public HotMem {version}"
            argv = [args.public_python, "-c", PUBLIC_CHILD, str(public), query]
            variants.append(Variant(public_name, "MemoryDB + search_memories", argv))
        else:
            print(
                "Note: the public HotMem rows are skipped. To include them, make a virtualenv "
                "outside this repository (python3 -m venv /tmp/pubhotmem && "
                "/tmp/pubhotmem/bin/pip install hotmem==0.2.3; never into this project's "
                "environment) and pass --public-python /tmp/pubhotmem/bin/python.\n"
            )
        floor_argv = [sys.executable, "-c", FLOOR_CHILD, str(ours), floor_expression(query)]
        variants.append(Variant("floor", "sqlite3 + one FTS5 MATCH (ours)", floor_argv))
        variants.append(
            Variant("startup, project python", "python -c pass", [sys.executable, "-c", "pass"])
        )
        if args.public_python:
            argv = [args.public_python, "-c", "pass"]
            variants.append(Variant("startup, public python", "python -c pass", argv))

        for variant in variants:  # untimed: fills the bytecode and page caches
            variant.first_result = run_child(variant.argv, env, directory)[2]
        for _ in range(args.repeats):
            for variant in variants:
                wall_ms, cpu_ms, _ = run_child(variant.argv, env, directory)
                variant.wall_ms.append(wall_ms)
                variant.cpu_ms.append(cpu_ms)

        reference = next((v for v in variants if v.name == public_name), None)
        print(
            f"{args.size:,} heavy memories hydrated from a snapshot package; query "
            f"{args.query}: {query!r} (floor MATCH: {floor_expression(query)}). "
            f"Setup (ingest, snapshot, hydrate): {setup}. {args.repeats} interleaved runs each.\n"
        )
        print(
            "| child | does | wall median (ms) | wall min (ms) | CPU median (ms) | CPU min (ms) "
            "| / public, wall | / public, CPU | first result |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---:|---|")
        for v in variants:
            wall, cpu = statistics.median(v.wall_ms), statistics.median(v.cpu_ms)
            ratios = "| | "
            if reference is not None:
                ratios = (
                    f"| {wall / statistics.median(reference.wall_ms):.2f} "
                    f"| {cpu / statistics.median(reference.cpu_ms):.2f} "
                )
            print(
                f"| {v.name} | {v.what} | {wall:.1f} | {min(v.wall_ms):.1f} | {cpu:.1f} "
                f"| {min(v.cpu_ms):.1f} {ratios}| {v.first_result} |"
            )
        import_breakdown(
            [sys.executable, "-X", "importtime", *ours_argv[1:], "auto"], env, directory
        )


if __name__ == "__main__":
    main()
