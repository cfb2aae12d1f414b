"""Store speed benchmark: ingest rate and search latency, with and without the numpy scan.

Run: ``uv run python benchmarks/store_bench.py [--sizes 10000 100000 1000000]
[--workload heavy|synthetic ...] [--queries 50]``

Two workloads (``synthetic.py``): ``synthetic`` (questions matching about 23 % of the store
lexically) and ``heavy`` (a Zipf vocabulary: 25 keyword and 25 question queries matching about
60 % of the store, the case where bounding the BM25 work matters). Each size is ingested once
through the public ``add_many`` into a store file in a temporary directory; the same file is
then searched with ``accelerator="off"`` (the standard-library scan) and ``"numpy"``. Latency
is per ``search_memories`` call (limit 5; unscoped and scoped to one of 50 identifiers) after
one warm-up query that loads the index; ``search memory`` is the peak of Python allocations
(tracemalloc, numpy's included) during ten searches of a separate pass, against the bytes of
the vectors.

Beside each size, the physical references measured in the same run: a numpy float32 scan of
the same vectors with top 5 (``numpy scan``), and raw SQLite loading the same rows
(``executemany`` into the HotMem tables, then one FTS5 index build), as rows/s. Ingest is
broken down into validation, hash-v1 embedding and SQLite. Figures are local diagnostics for
this machine, not guarantees.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import heavy_memories, heavy_queries, synthetic_memories, synthetic_queries

import hotmem
from hotmem.embedding.hash_v1 import embed_bytes
from hotmem.models import memory_from_mapping
from hotmem.store.rows import memory_row

WORKLOADS: dict[str, tuple[Callable[[int], list[dict]], Callable[[int], list[str]]]] = {
    "synthetic": (synthetic_memories, lambda n: synthetic_queries(n)),
    "heavy": (heavy_memories, lambda n: heavy_queries(keyword=n // 2, question=n - n // 2)),
}


def quantile(samples: list[float], q: float) -> float:
    """Linear-interpolation quantile (the 'inclusive' method of numpy's default)."""
    return statistics.quantiles(sorted(samples), n=100, method="inclusive")[int(q * 100) - 1]


def lexical_share(store: hotmem.MemoryStore, queries: list[str]) -> float:
    """The mean share of the store a query matches lexically."""
    from hotmem import lexical
    from hotmem.retrieval.query import lexical_query

    total = len(store)
    shares = []
    for query in queries:
        terms = lexical_query(query)
        matches = lexical.all_matches(store.connection, terms) if terms else {}
        shares.append(len(matches) / total)
    return statistics.fmean(shares)


def searches(path: Path, queries: list[str], accelerator: str) -> dict[str, float]:
    with hotmem.open_store(path, accelerator=accelerator) as store:  # type: ignore[arg-type]
        start = time.perf_counter()
        hotmem.search_memories(store, queries[0])
        cold_s = time.perf_counter() - start
        vector_bytes = len(store.vector_index().vectors)
        unscoped, scoped = [], []
        for i, query in enumerate(queries):
            start = time.perf_counter()
            hotmem.search_memories(store, query)
            unscoped.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            hotmem.search_memories(store, query, identifier=f"org-{i % 50:03d}")
            scoped.append((time.perf_counter() - start) * 1000)
        # Memory in a pass of its own: tracemalloc slows every allocation down.
        tracemalloc.start()
        for query in queries[:10]:
            hotmem.search_memories(store, query)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return {
        "cold_ms": cold_s * 1000,
        "p50": quantile(unscoped, 0.50),
        "p95": quantile(unscoped, 0.95),
        "scoped_p95": quantile(scoped, 0.95),
        "memory_ratio": peak / vector_bytes,
    }


def numpy_scan_p95(path: Path, queries: list[str]) -> float:
    """A bare numpy float32 scan of the store's vectors with top 5: the physical reference."""
    with hotmem.open_store(path, accelerator="off") as store:
        vectors = store.vector_index().vectors
    matrix = np.frombuffer(vectors, dtype="<f4").reshape(-1, hotmem.DIMENSION)
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


def bench(workload: str, size: int, query_count: int) -> None:
    make_memories, make_queries = WORKLOADS[workload]
    memories = make_memories(size)
    queries = make_queries(query_count)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        with hotmem.open_store(path) as store:
            start = time.perf_counter()
            store.add_many(memories)
            ingest = size / (time.perf_counter() - start)
            share = lexical_share(store, queries)
        parts = ingest_parts(memories)
        reference = numpy_scan_p95(path, queries)
        for accelerator in ("off", "numpy"):
            r = searches(path, queries, accelerator)
            print(
                f"| {workload} | {size:,} | {share:.0%} | {accelerator} | {ingest:,.0f} "
                f"| {r['cold_ms']:.0f} | {r['p50']:.1f} | {r['p95']:.1f} "
                f"| {r['scoped_p95']:.1f} | {r['memory_ratio']:.2f} | {reference:.2f} "
                f"| {parts['validate']:,.0f} / {parts['embed']:,.0f} / {parts['sqlite']:,.0f} |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--workload", nargs="+", choices=sorted(WORKLOADS), default=["heavy"])
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    print(
        "| workload | memories | lexical match | accelerator | ingest (memories/s) "
        "| first query incl. index load (ms) | search p50 (ms) | search p95 (ms) "
        "| scoped p95 (ms) | search memory / vector bytes | numpy scan p95 (ms) "
        "| validate / embed / raw SQLite (rows/s) |"
    )
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for workload in args.workload:
        for size in args.sizes:
            bench(workload, size, args.queries)


if __name__ == "__main__":
    main()
