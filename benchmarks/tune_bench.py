"""Tuning benchmark: the channel table of a collection against one search per query per
channel, then a 100-point search space with 5 folds, and the peak memory.

Run: ``uv run python benchmarks/tune_bench.py --collection DIR --store PATH
[--spaces hotmem-hash-v1,all-minilm-l6-v2] [--repeats 3]``, where ``PATH`` is a store kept by
``hotmem-eval --collection DIR --store PATH`` with every space given (so that nothing is
embedded here). ``collection_eval_bench.py --keep DIR --semantic`` makes the 5,000-document,
1,000-query collection of the issue, and its store.

Rows:

1. **one search per query per channel** (the issue's bound): every query searched once with
   each single-channel profile the table holds a channel of: ``cosine-only`` (hotmem-hash-v1),
   ``semantic-only`` (all-minilm-l6-v2) and ``bm25-only`` (limit 10). Importance is a stored
   value, searched by no channel;
2. **one search per query per space** (what this benchmark compared with before): ``default``
   and ``semantic``, each searching its space and BM25;
3. **channel table**: ``channel_table`` of every query over the spaces, from the smallest
   floor of the candidates and built-in profiles (what ``hotmem-eval tune`` computes once);
4. **tune**: ``tuning.tune`` of a 100-point search space (2 spaces x 5 weights x 5 floors x
   2 lexical weights, weighted fusion), 5 folds, nDCG@10, with the baselines' comparisons;
5. the peak RSS of the process.

Rows 1 to 3 run ``--repeats`` times, interleaved, each from an empty cache of query vectors
(so each embeds every query once, as a first search or ``hotmem-eval tune`` does); the table
gives the best wall time and every run's, and the CPU time of the best (every thread of the
process: less moved by other processes on a shared machine than the wall time, though BLAS
and onnxruntime threads waiting for work count too). Figures are local diagnostics.
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

import hotmem
from hotmem.retrieval.prepared import _QUERY_VECTORS  # emptied before each step
from hotmem_eval.channel_frame import channel_table
from hotmem_eval.collection import load_collection
from hotmem_eval.ingest import kept_store
from hotmem_eval.search_space import candidates
from hotmem_eval.tuning import tune

SPACE = {
    "vector_weight": [0.2, 0.4, 0.6, 0.8, 1.0],
    "vector_floor": [0.2, 0.3, 0.4, 0.5, 0.6],
    "lexical_weight": [0.2, 0.6],
}


Timed = tuple[float, float]  # wall seconds, CPU seconds of the process (every thread)


def _timed(step: Callable[[], object]) -> Timed:
    """``step``'s wall and CPU seconds, from no kept query vector."""
    _QUERY_VECTORS.clear()
    wall, cpu = time.perf_counter(), time.process_time()
    step()
    return time.perf_counter() - wall, time.process_time() - cpu


def _searches(
    store: hotmem.MemoryStore, queries: list[dict[str, str | None]], profiles: list[str]
) -> None:
    """Search every query once with each of ``profiles``."""
    for name in profiles:
        for q in queries:
            hotmem.search_memories(
                store, str(q["query"]), identifier=q["identifier"], limit=10, profile=name
            )


def _shown(runs: list[Timed]) -> str:
    wall, cpu = min(runs)
    each = ", ".join(f"{w:.1f}" for w, _ in runs)
    return f"{wall:.1f} ({each}) | {cpu:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, required=True)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--spaces", default=f"{hotmem.MODEL_NAME},{hotmem.SEMANTIC_MODEL}")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    spaces = args.spaces.split(",")
    fixture = load_collection(args.collection)
    pool = candidates({**SPACE, "vector_space": spaces}, source="benchmark")
    baselines = [
        p for p in hotmem.PROFILES.values() if p.reranker is None and set(p.spaces) <= set(spaces)
    ]
    min_cosine = min(p.vector.floor for p in (*pool, *baselines) if p.vector is not None)
    store, reused = kept_store(
        args.store, fixture.corpus, spaces=[s for s in spaces if s != hotmem.MODEL_NAME]
    )
    print(
        f"{fixture.corpus.num_rows:,} documents, {fixture.queries.num_rows:,} queries, "
        f"{len(pool)} candidates, spaces {', '.join(spaces)}, store reused: {reused}\n"
    )
    queries = fixture.queries.select(["query", "identifier"]).to_pylist()
    by_channel = ["cosine-only", "semantic-only", "bm25-only"]
    by_channel = [n for n in by_channel if set(hotmem.PROFILES[n].spaces) <= set(spaces)]
    by_space = [n for n in ("default", "semantic") if set(hotmem.PROFILES[n].spaces) <= set(spaces)]
    channel_runs: list[Timed] = []
    space_runs: list[Timed] = []
    table_runs: list[Timed] = []
    tables: list[pa.Table] = []

    def build() -> None:
        tables[:] = [channel_table(store, fixture.queries, spaces=spaces, min_cosine=min_cosine)]

    with store:
        for name in by_space:  # load the index, each space and its model once
            hotmem.search_memories(store, "warm", profile=name)
        for _ in range(args.repeats):
            channel_runs.append(_timed(lambda: _searches(store, queries, by_channel)))
            space_runs.append(_timed(lambda: _searches(store, queries, by_space)))
            table_runs.append(_timed(build))
    [table] = tables
    started = time.perf_counter()
    tuned = tune(
        table, fixture, pool, objective="ndcg_at_k", k=10, folds=5, seed=0, baselines=baselines
    )
    tuning = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    built, channels, per_space = min(table_runs)[0], min(channel_runs)[0], min(space_runs)[0]
    print("| step | seconds, best (each run) | CPU seconds of the best | note |")
    print("|---|---:|---:|---|")
    print(
        f"| one search per query per channel | {_shown(channel_runs)} | "
        f"{', '.join(by_channel)}: {len(by_channel)} x {len(queries):,} |"
    )
    print(
        f"| one search per query per space | {_shown(space_runs)} | "
        f"{', '.join(by_space)}: {len(by_space)} x {len(queries):,} |"
    )
    print(
        f"| channel table | {_shown(table_runs)} | {table.num_rows:,} rows, min_cosine "
        f"{min_cosine:g}; {built / channels:.2f}x the searches per channel, "
        f"{built / per_space:.2f}x per space |"
    )
    print(
        f"| tune, {len(pool)} candidates, 5 folds | {tuning:.1f} | | out-of-fold nDCG@10 "
        f"{tuned.out_of_fold_mean:.3f}, chosen {tuned.chosen.to_dict()} |"
    )
    print(f"\npeak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main()
