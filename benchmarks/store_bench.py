"""Store speed benchmark: bulk ingest rate and search latency at 1k, 10k and 100k memories.

Run: ``uv run python benchmarks/store_bench.py [--sizes 1000 10000 100000] [--queries 200]``

Ingest is timed through the public ``add_many`` (validation, embedding, SQLite insert and FTS5
indexing, one transaction) into a store file in a temporary directory. Search latency is
timed per ``search_memories`` call (limit 5, unscoped and scoped) after one warm-up query
that loads the vector index; the cold index load is reported separately. Quantiles use
linear interpolation. Figures are local diagnostics for this machine, not guarantees.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import synthetic_memories, synthetic_queries

import hotmem


def quantile(samples: list[float], q: float) -> float:
    """Linear-interpolation quantile (the 'inclusive' method of numpy's default)."""
    ordered = sorted(samples)
    return statistics.quantiles(ordered, n=100, method="inclusive")[int(q * 100) - 1]


def bench(size: int, query_count: int) -> dict[str, float]:
    memories = synthetic_memories(size)
    queries = synthetic_queries(query_count)
    with tempfile.TemporaryDirectory() as tmp, hotmem.open_store(Path(tmp) / "bench.db") as store:
        start = time.perf_counter()
        store.add_many(memories)
        ingest_s = time.perf_counter() - start
        start = time.perf_counter()
        hotmem.search_memories(store, queries[0])
        cold_s = time.perf_counter() - start
        tracemalloc.start()
        store._index = None  # measure the index's own footprint
        store.vector_index()
        index_bytes = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        unscoped, scoped = [], []
        for i, query in enumerate(queries):
            start = time.perf_counter()
            hotmem.search_memories(store, query)
            unscoped.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            hotmem.search_memories(store, query, identifier=f"org-{i % 50:03d}")
            scoped.append((time.perf_counter() - start) * 1000)
    return {
        "size": size,
        "ingest_per_s": size / ingest_s,
        "cold_first_query_ms": cold_s * 1000,
        "index_mib": index_bytes / 2**20,
        "p50_ms": quantile(unscoped, 0.50),
        "p95_ms": quantile(unscoped, 0.95),
        "scoped_p50_ms": quantile(scoped, 0.50),
        "scoped_p95_ms": quantile(scoped, 0.95),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    print(
        "| memories | ingest (memories/s) | first query incl. index load (ms) | index (MiB) "
        "| search p50 (ms) | search p95 (ms) | scoped p50 (ms) | scoped p95 (ms) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in args.sizes:
        r = bench(size, args.queries)
        print(
            f"| {r['size']:,} | {r['ingest_per_s']:,.0f} | {r['cold_first_query_ms']:.1f} "
            f"| {r['index_mib']:.1f} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} "
            f"| {r['scoped_p50_ms']:.2f} | {r['scoped_p95_ms']:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
