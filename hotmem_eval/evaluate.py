"""One evaluation run: ingest, search, score, attribute misses, transfer, time, recommend.

``evaluate`` touches nothing outside ``workdir`` (a temporary directory the caller owns): the
store, the snapshot package, the hydrated copy and the cold-start process all live there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl

import hotmem
from hotmem_eval.attribution import Miss, attribute_misses
from hotmem_eval.decision import Evidence, Recommendation, recommend
from hotmem_eval.fixture_schema import DUPLICATE_CATEGORY
from hotmem_eval.fixtures import Fixture
from hotmem_eval.ingest import open_fixture_store
from hotmem_eval.metric_registry import METRICS
from hotmem_eval.metrics import aggregate_metrics, per_query_metrics
from hotmem_eval.runner import run_queries
from hotmem_eval.transfer import TransferOutcome, run_transfer

__all__ = ["EvalRun", "evaluate", "evidence_from"]

# The registered metrics the decision rules read (a KeyError on import if one is renamed).
_RECALL = METRICS["recall_at_k"].name
_DUPLICATE_SLOTS = METRICS["duplicate_slot_rate_at_k"].name


@dataclass(frozen=True, slots=True)
class EvalRun:
    """Everything one run measured; rendering and export read from here only."""

    fixture: Fixture
    top_k: int
    repeat: int
    results: pl.DataFrame
    per_query: pl.DataFrame
    aggregate: pl.DataFrame
    misses: tuple[Miss, ...]
    transfer: TransferOutcome
    latencies_ms: tuple[float, ...]
    ingest_s: float
    evidence: Evidence
    recommendation: Recommendation


def evidence_from(aggregate: pl.DataFrame, transfer: TransferOutcome, *, top_k: int) -> Evidence:
    """The numbers the decision rules read, taken from the aggregate metrics."""
    recall = aggregate.filter(pl.col("metric") == _RECALL)
    duplicate = aggregate.filter(
        (pl.col("metric") == _DUPLICATE_SLOTS) & (pl.col("category") == DUPLICATE_CATEGORY)
    )
    numerator = duplicate["numerator"][0] if duplicate.height else None
    denominator = duplicate["denominator"][0] if duplicate.height else None
    return Evidence(
        top_k=top_k,
        equivalent_queries=transfer.equivalent_queries,
        total_queries=transfer.total_queries,
        recall_at_k=dict(zip(recall["category"], recall["value"], strict=True)),
        duplicate_slots=int(numerator or 0),
        filled_slots=int(denominator or 0),
    )


def evaluate(
    fixture: Fixture,
    workdir: Path,
    *,
    top_k: int = 5,
    repeat: int = 1,
    progress: hotmem.ProgressCallback | None = None,
) -> EvalRun:
    """Run the whole evaluation of ``fixture`` with stores and packages under ``workdir``;
    ``progress`` is called with (queries searched, queries) as the searches go."""
    started = time.perf_counter()
    store = open_fixture_store(workdir / "source.db", fixture.corpus)
    ingest_s = time.perf_counter() - started
    with store:
        run = run_queries(store, fixture.queries, top_k=top_k, repeat=repeat, progress=progress)
        misses = attribute_misses(store, fixture.queries, fixture.qrels, run.results, top_k=top_k)
        transfer = run_transfer(store, fixture.queries, run.results, workdir, top_k=top_k)
    results = pl.DataFrame(run.results)
    per_query = per_query_metrics(results, fixture.qrels, fixture.queries, fixture.groups, k=top_k)
    aggregate = aggregate_metrics(per_query)
    evidence = evidence_from(aggregate, transfer, top_k=top_k)
    return EvalRun(
        fixture=fixture,
        top_k=top_k,
        repeat=repeat,
        results=results,
        per_query=per_query,
        aggregate=aggregate,
        misses=tuple(misses),
        transfer=transfer,
        latencies_ms=run.latencies_ms,
        ingest_s=ingest_s,
        evidence=evidence,
        recommendation=recommend(evidence),
    )
