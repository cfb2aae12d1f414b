"""Tuning benchmark: the channel table of a collection against one search per query per
channel, then a 100-point search space with 5 folds, and the peak memory.

Run: ``uv run python benchmarks/tune_bench.py --collection DIR --store PATH
[--spaces hotmem-hash-v1,all-minilm-l6-v2]``, where ``PATH`` is a store kept by
``hotmem-eval --collection DIR --store PATH`` with every space given (so that nothing is
embedded here). ``collection_eval_bench.py --keep DIR --semantic`` makes the 5,000-document,
1,000-query collection of the issue, and its store.

Rows:

1. **channel table**: ``channel_table`` of every query over the spaces (what
   ``hotmem-eval tune`` computes once), against **searches**: every query searched once per
   space with a profile of that space (limit 10), the cost the issue bounds it by;
2. **tune**: ``tuning.tune`` of a 100-point search space (2 spaces x 5 weights x 5 floors x
   2 lexical weights, weighted fusion), 5 folds, nDCG@10, with the baselines' comparisons;
3. the peak RSS of the process.

Figures are local diagnostics.
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import hotmem
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, required=True)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--spaces", default=f"{hotmem.MODEL_NAME},{hotmem.SEMANTIC_MODEL}")
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
    with store:
        by_space = {
            hotmem.MODEL_NAME: hotmem.PROFILES["default"],
            hotmem.SEMANTIC_MODEL: hotmem.PROFILES["semantic"],
        }
        for space in spaces:  # warm each space's index and model once
            hotmem.search_memories(store, "warm", profile=by_space[space])
        started = time.perf_counter()
        for space in spaces:
            for q in queries:
                hotmem.search_memories(
                    store, q["query"], identifier=q["identifier"], limit=10, profile=by_space[space]
                )
        searches = time.perf_counter() - started
        started = time.perf_counter()
        table = channel_table(store, fixture.queries, spaces=spaces, min_cosine=min_cosine)
        built = time.perf_counter() - started
    started = time.perf_counter()
    tuned = tune(
        table, fixture, pool, objective="ndcg_at_k", k=10, folds=5, seed=0, baselines=baselines
    )
    tuning = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("| step | seconds | note |")
    print("|---|---:|---|")
    print(
        f"| searches, one per query per space | {searches:.1f} | {len(spaces)} x {len(queries):,} |"
    )
    print(
        f"| channel table | {built:.1f} | {table.num_rows:,} rows, min_cosine {min_cosine:g}; "
        f"{built / searches:.2f}x the searches |"
    )
    print(
        f"| tune, {len(pool)} candidates, 5 folds | {tuning:.1f} | out-of-fold nDCG@10 "
        f"{tuned.out_of_fold_mean:.3f}, chosen {tuned.chosen.to_dict()} |"
    )
    print(f"\npeak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main()
