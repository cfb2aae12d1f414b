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
"""

from __future__ import annotations

import argparse
import json
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

from synthetic import heavy_memories, heavy_queries, synthetic_memories, synthetic_queries

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--workload", nargs="+", choices=sorted(WORKLOADS), default=["heavy"])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument(
        "--accelerators", nargs="+", choices=["off", "numpy", "auto"], default=["off", "numpy"]
    )
    args = parser.parse_args()
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
