"""One evaluation run: ingest, search, score, attribute misses, transfer, time, recommend.

``evaluate_profiles`` ingests the fixture once and evaluates every profile on that store (each
with its own transfer check), plus the ablation variants of the baseline (the first profile)
when asked: the variants are searched and scored only. ``evaluate`` is the one-profile case.
Nothing is written outside ``workdir`` (a temporary directory the caller owns): the store, the
snapshot packages, the hydrated copies and the cold-start processes all live there.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import polars as pl

import hotmem
from hotmem_eval.attribution import Miss, attribute_misses
from hotmem_eval.decision import Evidence, Recommendation, recommend
from hotmem_eval.errors import EvalError
from hotmem_eval.fixture_schema import DUPLICATE_CATEGORY
from hotmem_eval.fixtures import Fixture
from hotmem_eval.ingest import open_fixture_store
from hotmem_eval.metric_registry import METRICS
from hotmem_eval.metrics import aggregate_metrics, per_query_metrics
from hotmem_eval.runner import run_queries
from hotmem_eval.transfer import TransferOutcome, run_transfer

__all__ = [
    "ABLATED_CHANNELS",
    "Ablation",
    "EvalRun",
    "ablation_variants",
    "evaluate",
    "evaluate_profiles",
    "evidence_from",
]

#: The channels the ablation removes from the baseline, in turn (``hotmem.Profile.without``).
ABLATED_CHANNELS: Final = ("vector", "lexical", "importance")

# The registered metrics the decision rules read (a KeyError on import if one is renamed).
_RECALL = METRICS["recall_at_k"].name
_DUPLICATE_SLOTS = METRICS["duplicate_slot_rate_at_k"].name


@dataclass(frozen=True, slots=True)
class EvalRun:
    """Everything one profile's run measured; rendering and export read from here only."""

    fixture: Fixture
    profile: hotmem.Profile
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


@dataclass(frozen=True, slots=True)
class Ablation:
    """The baseline with each of its channels removed in turn, searched and scored.

    Attributes:
        baseline: the profile the channels are removed from.
        variants: (channel removed, the variant profile), in ``ABLATED_CHANNELS`` order; a
            channel the baseline lacks (or whose weight is 0) has no variant.
        per_query: ``per_query_metrics`` of the baseline and every variant, stacked, with a
            ``profile`` column (``comparison.compare_profiles``' input).
    """

    baseline: hotmem.Profile
    variants: tuple[tuple[str, hotmem.Profile], ...]
    per_query: pl.DataFrame


def ablation_variants(baseline: hotmem.Profile) -> tuple[tuple[str, hotmem.Profile], ...]:
    """(channel, ``baseline.without(channel)``) for each channel of ``ABLATED_CHANNELS`` whose
    removal changes the baseline (a channel it lacks, or weighs 0, has no variant) and leaves
    a retrieval channel."""
    unnamed = {**baseline.to_dict(), "name": None}
    variants = []
    for channel in ABLATED_CHANNELS:
        try:
            variant = baseline.without(channel)
        except hotmem.ValidationError:  # the last retrieval channel: nothing would be left
            continue
        if {**variant.to_dict(), "name": None} != unnamed:
            variants.append((channel, variant))
    return tuple(variants)


def _offset(
    progress: hotmem.ProgressCallback | None, done: int, total: int
) -> hotmem.ProgressCallback | None:
    if progress is None:
        return None
    return lambda current, _queries: progress(done + current, total)


def evaluate_profiles(
    fixture: Fixture,
    workdir: Path,
    profiles: Sequence[hotmem.Profile],
    *,
    top_k: int = 5,
    repeat: int = 1,
    progress: hotmem.ProgressCallback | None = None,
    ablation: bool = False,
) -> tuple[tuple[EvalRun, ...], Ablation | None]:
    """Evaluate every profile of ``profiles`` on one ingest of ``fixture`` (stores and
    packages under ``workdir``), and with ``ablation`` the baseline's variants too;
    ``progress`` is called with (searches done, searches) as the searches go.

    Raises:
        EvalError: as ``run_queries`` (non-deterministic retrieval), or a profile needs a
            vector space the ingest cannot build.
    """
    if not profiles:
        raise EvalError("expected at least one profile, found none")
    variants = ablation_variants(profiles[0]) if ablation else ()
    spaces = sorted({space for p in (*profiles, *(v for _, v in variants)) for space in p.spaces})
    total = fixture.queries.num_rows * (len(profiles) + len(variants))
    started = time.perf_counter()
    store = open_fixture_store(workdir / "source.db", fixture.corpus, spaces=spaces)
    ingest_s = time.perf_counter() - started
    runs = []
    with store:
        for number, profile in enumerate(profiles):
            done = number * fixture.queries.num_rows
            runs.append(
                _evaluate_one(
                    store,
                    fixture,
                    profile,
                    workdir / f"profile-{number}",
                    top_k=top_k,
                    repeat=repeat,
                    progress=_offset(progress, done, total),
                    ingest_s=ingest_s,
                )
            )
        frames = [runs[0].per_query.with_columns(profile=pl.lit(profiles[0].name))]
        for number, (_, variant) in enumerate(variants, start=len(profiles)):
            done = number * fixture.queries.num_rows
            searched = run_queries(
                store,
                fixture.queries,
                top_k=top_k,
                progress=_offset(progress, done, total),
                profile=variant,
            )
            per_query = per_query_metrics(
                pl.DataFrame(searched.results),
                fixture.qrels,
                fixture.queries,
                fixture.groups,
                k=top_k,
            )
            frames.append(per_query.with_columns(profile=pl.lit(variant.name)))
    found = Ablation(profiles[0], variants, pl.concat(frames)) if ablation else None
    return tuple(runs), found


def _evaluate_one(
    store: hotmem.MemoryStore,
    fixture: Fixture,
    profile: hotmem.Profile,
    workdir: Path,
    *,
    top_k: int,
    repeat: int,
    progress: hotmem.ProgressCallback | None,
    ingest_s: float,
) -> EvalRun:
    workdir.mkdir()
    run = run_queries(
        store, fixture.queries, top_k=top_k, repeat=repeat, progress=progress, profile=profile
    )
    misses = attribute_misses(
        store, fixture.queries, fixture.qrels, run.results, top_k=top_k, profile=profile
    )
    transfer = run_transfer(
        store, fixture.queries, run.results, workdir, top_k=top_k, profile=profile
    )
    results = pl.DataFrame(run.results)
    per_query = per_query_metrics(results, fixture.qrels, fixture.queries, fixture.groups, k=top_k)
    aggregate = aggregate_metrics(per_query)
    evidence = evidence_from(aggregate, transfer, top_k=top_k)
    return EvalRun(
        fixture=fixture,
        profile=profile,
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


def evaluate(
    fixture: Fixture,
    workdir: Path,
    *,
    top_k: int = 5,
    repeat: int = 1,
    progress: hotmem.ProgressCallback | None = None,
    profile: hotmem.Profile | None = None,
) -> EvalRun:
    """Run the whole evaluation of ``fixture`` under ``profile`` (``default`` when None) with
    stores and packages under ``workdir``; ``progress`` is called with (queries searched,
    queries) as the searches go."""
    chosen = profile if profile is not None else hotmem.PROFILES[hotmem.DEFAULT_PROFILE]
    runs, _ = evaluate_profiles(
        fixture, workdir, (chosen,), top_k=top_k, repeat=repeat, progress=progress
    )
    return runs[0]
