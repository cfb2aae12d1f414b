"""Store speed benchmark: ingest, the first search of a new process, warm searches, the search
right after an add, and resident memory, with and without numpy.

Run: ``uv run python benchmarks/store_bench.py [--sizes 10000 100000 1000000]
[--workload heavy|synthetic ...] [--queries 50] [--accelerators off numpy]``

Two workloads (``synthetic.py``): ``synthetic`` (questions matching about a quarter of the store
lexically) and ``heavy`` (a Zipf vocabulary: 25 keyword and 25 question queries matching about
60 % of the store). Each size is ingested once through the public ``add_many`` into a store
file in a temporary directory. For each accelerator, a copy of that file is searched by two
fresh processes, the path agents hit:

1. the first opens the store (no index image yet: a full load, which writes the image) and
   times ``import hotmem``, ``open_store`` and the first search (``first search, full load``);
2. the second opens it again and times the same (``first search,
   from image``), then 50 searches (limit 5) whose terms are read on first use (``first pass``
   p95), the same 50 again (``warm`` p50/p95), 50 searches scoped to one of 50
   identifiers (``scoped`` p95), and 50 rounds of ``add`` then search (``after add`` p50/p95:
   the agent loop, each search refreshing the index with the memory just written). It reports
   its resident memory after the first search (``VmRSS``) against the issue's budget: twice
   the vector bytes, plus the postings it holds, plus the resident memory of an interpreter
   that imported ``hotmem`` and numpy (measured in a third process).

Beside each size, the physical references measured in the same run: a numpy float32 scan of
the same vectors with top 5 (``numpy scan``), and raw SQLite loading the same rows
(``executemany`` into the HotMem tables, then one FTS5 index build), as rows/s. Ingest is
broken down into validation, hash-v1 embedding and SQLite. Figures are local diagnostics for
this machine, not guarantees.

``--write-path`` measures the write path instead, against the public HotMem 0.2.3
(``--public-python``, its interpreter in a virtualenv outside this repository, as
``cold_start.py`` says) and raw SQLite: at each size, a store already holding that many heavy
memories gets ``--adds`` single adds (``store.add``; the public ``hotmem.swap.add_memory``),
timed after one untimed add (lazy imports and first statements),
and an empty store ingests a JSONL file of that many memories (``hotmem import FILE`` itself,
run by ``hotmem.cli.main`` in a fresh process and in one that has numpy loaded, where the batch
embedding runs; and the API alone: ``json.loads`` of each line into ``add_stream``; the public
``hotmem.swap.hydrate``). Raw SQLite runs on a copy of
our store (same schema, triggers and pragmas): one ``BEGIN IMMEDIATE``, ``INSERT`` and
``COMMIT`` per add, with the hash embedding computed and with the vectors given; in bulk,
``json.loads``, the embedding and one ``executemany`` with the FTS index built in one
statement. ``--before-src`` adds our code at another commit (a ``src`` directory, e.g. from
``git archive``), run with it first on ``PYTHONPATH``. Every run is a fresh child process on a
fresh copy of the prepared store, timed with ``time.process_time`` around the operation alone;
the runs are interleaved (each implementation once, ``--repeats`` times) and the medians are
reported.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import (
    heavy_memories,
    heavy_queries,
    public_record,
    synthetic_memories,
    synthetic_queries,
)

import hotmem
from hotmem.embedding.hash_v1 import embed_bytes
from hotmem.models import memory_from_mapping
from hotmem.retrieval.query import lexical_query
from hotmem.store.rows import memory_row

WORKLOADS: dict[str, tuple[Callable[[int], list[dict]], Callable[[int], list[str]]]] = {
    "synthetic": (synthetic_memories, lambda n: synthetic_queries(n)),
    "heavy": (heavy_memories, lambda n: heavy_queries(keyword=n // 2, question=n - n // 2)),
}

# Run in a fresh process: argv = store path, accelerator, queries (JSON), "first" or "all".
CHILD = r"""
import json, sys, time
start = time.perf_counter()
import hotmem
from hotmem.retrieval.search import index_of

def rss_kb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))

path, accelerator, queries, mode = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
store = hotmem.open_store(path, accelerator=accelerator)
hotmem.search_memories(store, queries[0])
found = {"first_ms": (time.perf_counter() - start) * 1000, "rss_kb": rss_kb()}
if mode == "all":
    with store.reading() as connection:
        index = index_of(store, connection)
    found["vector_bytes"] = len(index.rowids) * 256
    found["postings_bytes"] = sum(
        p.positions.itemsize * len(p.positions) + p.frequencies.itemsize * len(p.frequencies)
        for column in index.lexical.values() for p in column.postings.values()
    )
    def timed(search):
        start = time.perf_counter()
        search()
        return (time.perf_counter() - start) * 1000
    found["first_pass"] = [timed(lambda: hotmem.search_memories(store, q)) for q in queries]
    found["warm"] = [timed(lambda: hotmem.search_memories(store, q)) for q in queries]
    found["scoped"] = [
        timed(lambda: hotmem.search_memories(store, q, identifier=f"org-{i % 50:03d}"))
        for i, q in enumerate(queries)
    ]
    after = []
    for i, q in enumerate(queries):
        store.add(f"fresh memory {i} about {q}", identifier="org-001")
        after.append(timed(lambda: hotmem.search_memories(store, q)))
    found["after_add"] = after
store.close()
print(json.dumps(found))
"""
BASELINE = r"""
import numpy, hotmem
with open("/proc/self/status") as status:
    print(next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")))
"""


def quantile(samples: list[float], q: float) -> float:
    """Linear-interpolation quantile (the 'inclusive' method of numpy's default)."""
    return statistics.quantiles(sorted(samples), n=100, method="inclusive")[int(q * 100) - 1]


def lexical_share(store: hotmem.MemoryStore, queries: list[str]) -> float:
    """The mean share of the store a query matches in the word index."""
    shares = []
    with store.reading() as connection:
        for query in queries:
            expression = lexical_query(query).words_expression
            matches = 0
            if expression is not None:
                matches = connection.execute(
                    "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (expression,)
                ).fetchone()[0]
            shares.append(matches / len(store))
    return statistics.fmean(shares)


def child(path: Path, accelerator: str, queries: list[str], mode: str) -> dict:
    argv = [sys.executable, "-c", CHILD, str(path), accelerator, json.dumps(queries), mode]
    done = subprocess.run(argv, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def numpy_scan_p95(path: Path, queries: list[str]) -> float:
    """A bare numpy float32 scan of the store's vectors with top 5: the physical reference."""
    with hotmem.open_store(path) as store, store.reading() as connection:
        blobs = [row[0] for row in connection.execute("SELECT embedding FROM memories")]
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(-1, hotmem.DIMENSION)
    samples = []
    for query in queries:
        q = np.asarray(hotmem.embed(query), dtype=np.float32)
        start = time.perf_counter()
        scores = matrix @ q
        top = np.argpartition(scores, -5)[-5:]
        top[np.argsort(-scores[top])]
        samples.append((time.perf_counter() - start) * 1000)
    return quantile(samples, 0.95)


def ingest_parts(memories: list[dict]) -> dict[str, float]:
    """Rates of each part of ingest, on the same memories: validation, embedding, SQLite."""
    start = time.perf_counter()
    validated = [memory_from_mapping(m) for m in memories]
    validate_s = time.perf_counter() - start
    start = time.perf_counter()
    for memory in validated:
        embed_bytes(memory.fact)
    embed_s = time.perf_counter() - start
    rows = [memory_row(m) for m in validated]
    with tempfile.TemporaryDirectory() as tmp, hotmem.open_store(Path(tmp) / "raw.db") as store:
        connection = store.connection
        start = time.perf_counter()
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("INSERT INTO hotmem_fts_deferred (after_rowid) VALUES (0)")
        connection.executemany(
            "INSERT INTO memories (memory_id, identifier, fact, importance, tags, created_at, "
            "embedding) VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        connection.execute("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')")
        connection.execute("DELETE FROM hotmem_fts_deferred")
        connection.execute("COMMIT")
        sqlite_s = time.perf_counter() - start
    n = len(memories)
    return {"validate": n / validate_s, "embed": n / embed_s, "sqlite": n / sqlite_s}


def bench(workload: str, size: int, query_count: int, accelerators: list[str]) -> None:
    make_memories, make_queries = WORKLOADS[workload]
    memories = make_memories(size)
    queries = make_queries(query_count)
    baseline_kb = int(
        subprocess.run(
            [sys.executable, "-c", BASELINE], check=True, capture_output=True, text=True
        ).stdout
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        with hotmem.open_store(path) as store:
            start = time.perf_counter()
            store.add_many(memories)
            ingest = size / (time.perf_counter() - start)
            share = lexical_share(store, queries)
        parts = ingest_parts(memories)
        reference = numpy_scan_p95(path, queries)
        for accelerator in accelerators:
            copy = Path(tmp) / f"{accelerator}.db"
            shutil.copyfile(path, copy)
            full = child(copy, accelerator, queries, "first")
            r = child(copy, accelerator, queries, "all")
            budget_kb = (2 * r["vector_bytes"] + r["postings_bytes"]) / 1024 + baseline_kb
            copy.unlink()
            print(
                f"| {workload} | {size:,} | {share:.0%} | {accelerator} | {ingest:,.0f} "
                f"| {full['first_ms']:.0f} | {r['first_ms']:.0f} "
                f"| {quantile(r['first_pass'], 0.95):.1f} "
                f"| {quantile(r['warm'], 0.5):.1f} | {quantile(r['warm'], 0.95):.1f} "
                f"| {quantile(r['scoped'], 0.95):.1f} "
                f"| {quantile(r['after_add'], 0.5):.1f} | {quantile(r['after_add'], 0.95):.1f} "
                f"| {r['rss_kb'] / 1024:.0f} / {budget_kb / 1024:.0f} | {reference:.2f} "
                f"| {parts['validate']:,.0f} / {parts['embed']:,.0f} / {parts['sqlite']:,.0f} |",
                flush=True,
            )


# Run by each implementation's interpreter: argv = mode ("add" or "bulk"), the store, the
# memories (JSONL, in that implementation's fields), how many to add; prints the CPU seconds.
WRITE_CHILDREN = {
    "ours": r"""
import json, sys, time
import hotmem
mode, path, source, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if mode.endswith("-numpy"):  # a process that has numpy loaded: the batch embedding
    import numpy
    mode = mode.removesuffix("-numpy")
if mode == "bulk":  # what `hotmem import FILE` runs: read, validate, add, in one transaction
    from hotmem.cli import main
    start = time.process_time()
    assert main(["--db", path, "import", source]) == 0
    cpu = time.process_time() - start
    with hotmem.open_store(path) as store:
        assert len(store) >= count
    print(cpu)
    sys.exit(0)
with hotmem.open_store(path) as store:
    if mode == "add":
        with open(source) as lines:
            items = [json.loads(line) for _, line in zip(range(count + 1), lines)]
        for m in [items.pop()]:  # one untimed add first: lazy imports, first statements
            store.add(m["fact"], identifier=m["identifier"], importance=m["importance"])
        start = time.process_time()
        for m in items:
            store.add(m["fact"], identifier=m["identifier"], importance=m["importance"])
    else:  # bulk-api: the library's own path
        start = time.process_time()
        with open(source) as lines:
            store.add_stream(json.loads(line) for line in lines)
    cpu = time.process_time() - start
    assert len(store) >= count
print(cpu)
""",
    "public": r"""
import json, sys, time
from hotmem.db import MemoryDB
from hotmem.swap import add_memory, hydrate
mode, path, source, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
db = MemoryDB(path)
if mode == "add":
    with open(source) as lines:
        items = [json.loads(line) for _, line in zip(range(count + 1), lines)]
    for m in [items.pop()]:  # one untimed add first, as ours
        add_memory(db, m["identifier"], m["fact_text"], importance=m["importance"])
    start = time.process_time()
    for m in items:
        add_memory(db, m["identifier"], m["fact_text"], importance=m["importance"])
else:
    start = time.process_time()
    hydrate(db, source)
cpu = time.process_time() - start
assert db.count() >= count
db.close()
print(cpu)
""",
    "raw": r"""
import hashlib, json, sqlite3, sys, time
from hotmem.embedding.hash_v1 import embed_bytes
from hotmem.store import schema
mode, path, source, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
given = mode.endswith("-given")
sql = ("INSERT INTO memories (memory_id, identifier, fact, importance, tags, created_at, "
       "embedding) VALUES (?, ?, ?, ?, ?, ?, ?)")
connection = sqlite3.connect(path, isolation_level=None)
connection.execute("PRAGMA synchronous = NORMAL")
with open(source) as lines:
    if mode.startswith("add"):
        items = [json.loads(line) for _, line in zip(range(count + 1), lines)]
        vectors = [embed_bytes(m["fact"]) for m in items] if given else None
        # Ids spread over the index as ours (a content hash) and the public's (uuid4) are.
        ids = [f"mem-{hashlib.sha256(b'%d' % k).hexdigest()[:20]}" for k in range(len(items))]
        def add(k, m):
            vector = vectors[k] if vectors else embed_bytes(m["fact"])
            connection.execute("BEGIN IMMEDIATE")
            connection.execute(sql, (ids[k], m["identifier"], m["fact"], m["importance"],
                                     "[]", "2026-01-01T00:00:00.000000Z", vector))
            connection.execute("COMMIT")
        add(count, items.pop())  # one untimed add first, as ours
        start = time.process_time()
        for k, m in enumerate(items):
            add(k, m)
    else:
        start = time.process_time()
        rows = []
        for line in lines:
            m = json.loads(line)
            rows.append((m["memory_id"], m["identifier"], m["fact"], m["importance"], "[]",
                         m["created_at"], embed_bytes(m["fact"])))
        connection.execute("BEGIN IMMEDIATE")
        connection.execute(schema.DEFER_FTS, (0,))
        connection.executemany(sql, rows)
        connection.execute(schema.INDEX_ROWS_AFTER, (0,))
        connection.execute(schema.RESUME_FTS)
        connection.execute("COMMIT")
cpu = time.process_time() - start
connection.close()
print(cpu)
""",
}


def write_path(args: argparse.Namespace) -> None:
    """The ``--write-path`` tables: single adds and bulk ingest, every implementation."""
    here = Path(__file__).resolve().parents[1]
    ours_env = {**os.environ, "PYTHONPATH": str(here / "src")}
    runs: dict[str, tuple[str, str, dict[str, str]]] = {"ours": ("ours", sys.executable, ours_env)}
    if args.before_src:
        before_env = {**os.environ, "PYTHONPATH": str(Path(args.before_src).resolve())}
        runs["ours, before"] = ("ours", sys.executable, before_env)
    if args.public_python:
        public = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # its own hotmem
        runs["public HotMem 0.2.3"] = ("public", args.public_python, public)
    runs["raw SQLite"] = ("raw", sys.executable, ours_env)
    print("| memories | operation | implementation | CPU median (µs a memory) | runs (s) |")
    print("|---:|---|---|---:|---|")
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            _write_path_size(Path(tmp), size, runs, args)


def _write_path_size(tmp: Path, size: int, runs: dict, args: argparse.Namespace) -> None:
    memories = heavy_memories(size)
    fresh = heavy_memories(args.adds + 1, seed=99)  # and one untimed add first
    files = {"ours": tmp / "ours.jsonl", "public": tmp / "public.jsonl"}
    for kind, rows in (("ours", memories), ("public", list(map(public_record, memories)))):
        files[kind].write_text("".join(json.dumps(r) + "\n" for r in rows))
    adds = {"ours": tmp / "adds.jsonl", "public": tmp / "public-adds.jsonl"}
    adds["ours"].write_text("".join(json.dumps(m) + "\n" for m in fresh))
    adds["public"].write_text("".join(json.dumps(public_record(m)) + "\n" for m in fresh))
    prepared = {"ours": tmp / "ours.db", "public": tmp / "public.db"}
    if "add" in args.operations:
        with hotmem.open_store(prepared["ours"]) as store:
            store.add_stream(memories)
        if "public HotMem 0.2.3" in runs:
            _child(runs["public HotMem 0.2.3"], "bulk", prepared["public"], files["public"], size)
    with hotmem.open_store(tmp / "empty.db"):
        pass
    cases = [("add", args.adds, "one add"), ("bulk", size, "bulk, parse + add")]
    for mode, count, operation in [case for case in cases if case[0] in args.operations]:
        found: dict[str, list[float]] = {}
        for _ in range(args.repeats):
            for name, run in runs.items():
                kind = run[0]
                for variant, suffix in _VARIANTS.get((kind, mode), [(mode, "")]):
                    if variant in ("bulk-numpy", "bulk-api") and name != "ours":
                        continue  # ours at this commit only
                    data = kind if kind == "public" else "ours"
                    source = (adds if mode == "add" else files)[data]
                    base = (
                        prepared[data]
                        if mode == "add"
                        else tmp / ("empty.db" if data == "ours" else "none")
                    )
                    copy = tmp / "run.db"
                    for side in ("", "-wal", "-shm"):
                        Path(f"{copy}{side}").unlink(missing_ok=True)
                    if base.exists():
                        shutil.copyfile(base, copy)
                    label = name + suffix
                    found.setdefault(label, []).append(_child(run, variant, copy, source, count))
        for label, seconds in found.items():
            median = statistics.median(seconds) / count * 1e6
            shown = ", ".join(f"{s:.3f}" for s in seconds)
            print(f"| {size:,} | {operation} | {label} | {median:,.0f} | {shown} |", flush=True)


# (implementation kind, operation) -> the children run, each with its label's suffix.
_VARIANTS = {
    ("raw", "add"): [("add", ""), ("add-given", ", vectors given")],
    ("ours", "bulk"): [
        ("bulk", ", hotmem import"),
        ("bulk-numpy", ", hotmem import, numpy loaded"),
        ("bulk-api", ", json.loads + add_stream"),
    ],
}


def _child(
    run: tuple[str, str, dict[str, str]], mode: str, path: Path, source: Path, count: int
) -> float:
    kind, python, env = run
    argv = [python, "-c", WRITE_CHILDREN[kind], mode, str(path), str(source), str(count)]
    # The public HotMem's tracer writes a JSON line to stderr for every fact: captured.
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=path.parent)
    if done.returncode != 0:
        raise RuntimeError(f"{kind} {mode} failed:\n{done.stderr[-3000:]}")
    return float(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--write-path", action="store_true", help="adds and bulk ingest instead")
    parser.add_argument("--public-python", help="the public HotMem 0.2.3's interpreter")
    parser.add_argument("--before-src", help="a src directory of our code at another commit")
    parser.add_argument("--adds", type=int, default=500)
    parser.add_argument("--operations", nargs="+", choices=["add", "bulk"], default=["add", "bulk"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workload", nargs="+", choices=sorted(WORKLOADS), default=["heavy"])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument(
        "--accelerators", nargs="+", choices=["off", "numpy", "auto"], default=["off", "numpy"]
    )
    args = parser.parse_args()
    if args.write_path:
        write_path(args)
        return
    print(
        "| workload | memories | lexical match | accelerator | ingest (memories/s) "
        "| first search, full load (ms) | first search, from image (ms) "
        "| first pass p95 (ms) | warm p50 (ms) | warm p95 (ms) | scoped p95 (ms) "
        "| after add p50 (ms) | after add p95 (ms) | resident / budget (MB) | numpy scan p95 (ms) "
        "| validate / embed / raw SQLite (rows/s) |"
    )
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for workload in args.workload:
        for size in args.sizes:
            bench(workload, size, args.queries, args.accelerators)


if __name__ == "__main__":
    main()
