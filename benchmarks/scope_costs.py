"""What a scoped search's lexical channel costs both ways: the scope read whole, or the bounds.

Run: ``uv run python benchmarks/scope_costs.py [--size 100000] [--workload heavy|synthetic]``

A scope of at most an eighth of the store either reads its own matches' BM25 whole
(``topk._scope_top_k``) or takes the bounded path, which reads terms over the whole store
(``topk._scope_budget`` chooses by cost). This builds a store of ``--size`` memories of the
workload (``synthetic.py``, 50 identifiers, through the public ``add_many``) in a temporary
directory and runs the workload's queries twice, each scoped to one identifier, with the
choice forced each way (the second pass timed, numpy on). It prints the mean and p95 of both,
and a least-squares fit of the bounded path's time against the matches it read whole
(``bm25.term_shares``): the fixed part is what ``bm25.BOUNDED_ENTRIES`` stands for, the slope
what numpy's form of the reads says a match costs (``share_arrays.Arrays.match_entries``;
``reads.Dicts.match_entries`` for the standard library's), both in doclist entries of 0.07 µs
(``fts_costs.py``).
Figures are local diagnostics, not guarantees.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import heavy_memories, heavy_queries, synthetic_memories, synthetic_queries

import hotmem
from hotmem import bm25, topk
from hotmem.reads import DICTS
from hotmem.share_arrays import ARRAYS

WORKLOADS: dict[str, tuple[Callable[[int], list[dict]], Callable[[], list[str]]]] = {
    "heavy": (heavy_memories, heavy_queries),
    "synthetic": (synthetic_memories, lambda: synthetic_queries(50)),
}


@contextmanager
def forced(whole: bool) -> Iterator[None]:
    """Every small scope read whole, or every one through the bounds."""
    budget = topk._scope_budget
    topk._scope_budget = (lambda *_: -1.0) if whole else (lambda *_: None)  # type: ignore[assignment]
    try:
        yield
    finally:
        topk._scope_budget = budget  # type: ignore[assignment]


def timed(store: hotmem.MemoryStore, queries: list[str]) -> list[tuple[float, int]]:
    """(µs, matches read whole) of each scoped search, second pass."""
    read = [0]
    shares = bm25.term_shares

    def counted(*args: Any, **kwargs: Any) -> dict[int, float] | None:
        found = shares(*args, **kwargs)
        read[0] += 0 if found is None else len(found)
        return found

    bm25.term_shares = counted  # type: ignore[assignment]
    try:
        samples = []
        for rep in range(2):
            for i, query in enumerate(queries):
                read[0] = 0
                start = time.perf_counter()
                hotmem.search_memories(store, query, identifier=f"org-{i % 50:03d}")
                if rep:
                    samples.append(((time.perf_counter() - start) * 1e6, read[0]))
        return samples
    finally:
        bm25.term_shares = shares  # type: ignore[assignment]


def fit(samples: list[tuple[float, int]]) -> tuple[float, float]:
    """Least squares ``µs = fixed + slope * matches``."""
    xs = [float(m) for _, m in samples]
    ys = [t for t, _ in samples]
    slope, fixed = statistics.linear_regression(xs, ys) if len(set(xs)) > 1 else (0.0, ys[0])
    return fixed, slope


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="memories in the store")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="heavy")
    args = parser.parse_args()
    make_memories, make_queries = WORKLOADS[args.workload]
    queries = make_queries()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scopes.db"
        with hotmem.open_store(path) as store:
            store.add_many(make_memories(args.size))
        with hotmem.open_store(path, accelerator="numpy") as store:
            hotmem.search_memories(store, queries[0])
            with forced(whole=True):
                whole = timed(store, queries)
            with forced(whole=False):
                bounded = timed(store, queries)
    print(f"{args.workload}, {args.size:,} memories, {len(queries)} queries scoped to 1/50\n")
    print("| scope read | mean (ms) | p95 (ms) |")
    print("|---|---:|---:|")
    for label, samples in (("whole", whole), ("through the bounds", bounded)):
        times = sorted(t / 1000 for t, _ in samples)
        p95 = statistics.quantiles(times, n=20, method="inclusive")[-1]
        print(f"| {label} | {statistics.fmean(times):.1f} | {p95:.1f} |")
    fixed, slope = fit(bounded)
    print(
        f"\nthrough the bounds: {fixed / 1000:.1f} ms + {slope:.3f} µs a match read whole "
        f"({fixed / 0.07:,.0f} + {slope / 0.07:.0f} entries of 0.07 µs; "
        f"bm25.BOUNDED_ENTRIES = {bm25.BOUNDED_ENTRIES:,}; a match: {ARRAYS.match_entries} "
        f"entries in numpy's arrays, {DICTS.match_entries} in dicts)"
    )


if __name__ == "__main__":
    main()
