"""One evaluation run: ingest, search, score, attribute misses, transfer, time, recommend.

``evaluate_profiles`` ingests the fixture once and evaluates every profile on that store (each
with its own transfer check), plus the ablation variants of the baseline (the first profile)
when asked: the variants are searched and scored only. ``evaluate`` is the one-profile case.
The transfer package is made, and the searches that need no model (re-runs in the hydrated
copy, the variants), are done by a child process while the profiles are searched here
(``transfer.PendingPackage``). Nothing is written outside ``workdir`` (a temporary directory
the caller owns): the store, the snapshot packages, the hydrated copies, the child's files and
the cold-start processes all live there.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow as pa

import hotmem
from hotmem_eval.ablation import ABLATED_CHANNELS, Ablation, ablation_variants
from hotmem_eval.attribution import Miss, attribute_misses
from hotmem_eval.channel_frame import channel_table, complete_for
from hotmem_eval.decision import Evidence, Recommendation, recommend
from hotmem_eval.errors import EvalError
from hotmem_eval.fixture_schema import DUPLICATE_CATEGORY
from hotmem_eval.fixtures import Fixture
from hotmem_eval.ingest import kept_store, open_fixture_store
from hotmem_eval.metric_registry import METRICS, OVERALL
from hotmem_eval.metrics import aggregate_metrics, per_query_metrics
from hotmem_eval.runner import QueryRun, run_queries
from hotmem_eval.stages import Stages, Stopwatch, offset
from hotmem_eval.transfer import PendingPackage, TransferOutcome, rerun_transfer, sampled_queries

__all__ = [
    "ABLATED_CHANNELS",
    "Ablation",
    "EvalRun",
    "ablation_variants",
    "evaluate",
    "evaluate_profiles",
    "evidence_from",
    "metrics_at",
]

# The registered metrics the decision rules read (a KeyError on import if one is renamed).
_RECALL = METRICS["recall_at_k"].name
_DUPLICATE_SLOTS = METRICS["duplicate_slot_rate_at_k"].name
#: A run's stages, in the order of ``EvalRun.stages_s``.
_STAGES = ("query_embedding", "search", "misses", "transfer", "metrics")


@dataclass(frozen=True, slots=True)
class EvalRun:
    """Everything one profile's run measured; rendering and export read from here only.

    Attributes:
        top_k: the run's first cutoff (the smallest of ``cutoffs``): the k of ``per_query``,
            ``aggregate``, the misses and the recommendation.
        cutoffs: every cutoff of the run, ascending; the searches returned ``max(cutoffs)``.
        per_query, aggregate: the metrics at ``top_k`` (with their ``k`` column).
        per_query_by_k, aggregate_by_k: the metrics at every cutoff, stacked (``k`` column).
    """

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
    cutoffs: tuple[int, ...] = ()
    per_query_by_k: pl.DataFrame | None = None
    aggregate_by_k: pl.DataFrame | None = None
    stages_s: dict[str, float] = field(default_factory=dict)


def metrics_at(
    results: pl.DataFrame, fixture: Fixture, cutoffs: Sequence[int]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The per-query and aggregate metrics of ``results`` at every cutoff, stacked (their
    ``k`` column tells them apart), with the fixture's relevant grade."""
    per_query = pl.concat(
        [
            per_query_metrics(
                results,
                fixture.qrels,
                fixture.queries,
                fixture.groups,
                k=k,
                relevant_grade=fixture.relevant_grade,
            )
            for k in cutoffs
        ]
    )
    aggregate = pl.concat([aggregate_metrics(per_query.filter(pl.col("k") == k)) for k in cutoffs])
    return per_query, aggregate


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
        categories=frozenset(str(c) for c in aggregate["category"].unique()) - {OVERALL},
    )


def _source_store(
    fixture: Fixture,
    workdir: Path,
    spaces: Sequence[str],
    store_path: Path | None,
    stages: Stages,
) -> tuple[hotmem.MemoryStore, bool]:
    """The store the profiles search: built in ``workdir``, or kept at ``store_path``."""
    if store_path is None:
        store = open_fixture_store(
            workdir / "source.db", fixture.corpus, spaces=spaces, progress=stages.ingest
        )
        return store, False
    return kept_store(
        store_path, fixture.corpus, spaces=spaces, progress=stages.ingest or stages.spaces
    )


def evaluate_profiles(
    fixture: Fixture,
    workdir: Path,
    profiles: Sequence[hotmem.Profile],
    *,
    top_k: int = 5,
    cutoffs: Sequence[int] = (),
    repeat: int = 1,
    progress: hotmem.ProgressCallback | None = None,
    ablation: bool = False,
    store_path: Path | None = None,
    transfer_sample: int | None = None,
    stages: Stages | None = None,
    channels: bool = False,
) -> tuple[tuple[EvalRun, ...], Ablation | None, pa.Table | None]:
    """Evaluate every profile of ``profiles`` on one ingest of ``fixture`` (stores and
    packages under ``workdir``; the searched store kept at ``store_path`` when given, and
    reused from there), and with ``ablation`` the baseline's variants too; with ``channels``,
    compute the channel table complete for the profiles too (``channel_frame.complete_for``).

    ``cutoffs`` are the run's k (``top_k`` alone when empty): every search returns the
    largest, the metrics are computed at each, and the smallest is the k of the misses and
    the recommendation. ``transfer_sample`` limits the transfer check to that many queries
    (``sampled_queries``). ``progress`` (or ``stages.search``) is called with (searches done,
    searches) as the searches go.

    Raises:
        EvalError: as ``run_queries`` (non-deterministic retrieval), or a profile needs a
            vector space the ingest cannot build.
        UsageError: ``store_path`` holds a store of other memories.
    """
    if not profiles:
        raise EvalError("expected at least one profile, found none")
    ks = tuple(sorted(set(cutoffs or (top_k,))))
    stages = stages or Stages(search=progress)
    variants = ablation_variants(profiles[0]) if ablation else ()
    spaces = sorted({space for p in (*profiles, *(v for _, v in variants)) for space in p.spaces})
    total = fixture.queries.num_rows * (len(profiles) + len(variants))
    started = time.perf_counter()
    store, reused = _source_store(fixture, workdir, spaces, store_path, stages)
    ingest_s = time.perf_counter() - started
    sampled = sampled_queries(fixture.queries, transfer_sample)
    (workdir / "transfer").mkdir()
    with store:
        package = PendingPackage(
            store,
            workdir / "transfer",
            sampled,
            top_k=ks[-1],
            profiles=profiles,
            variants=[variant for _, variant in variants],
            all_queries=fixture.queries,
            variant_k=ks[0],
        )
        try:
            searched = [
                _searched_one(
                    store,
                    fixture,
                    profile,
                    cutoffs=ks,
                    repeat=repeat,
                    progress=offset(stages.search, number * fixture.queries.num_rows, total),
                )
                for number, profile in enumerate(profiles)
            ]
            frames = [searched[0].per_query.with_columns(profile=pl.lit(profiles[0].name))]
            done = len(profiles) * fixture.queries.num_rows
            frames += _variant_frames(
                store, fixture, variants, package, ks[0], (stages.search, done, total)
            )
            table = _channels(store, fixture, profiles, stages.channels) if channels else None
            kept = 0.0 if reused else ingest_s
            runs = tuple(
                _transferred(one, package, n, sampled, kept) for n, one in enumerate(searched)
            )
        finally:
            package.close()
    found = Ablation(profiles[0], variants, pl.concat(frames)) if ablation else None
    return runs, found, table


def _variant_frames(
    store: hotmem.MemoryStore,
    fixture: Fixture,
    variants: Sequence[tuple[str, hotmem.Profile]],
    package: PendingPackage,
    top_k: int,
    progress: tuple[hotmem.ProgressCallback | None, int, int],
) -> list[pl.DataFrame]:
    """The per-query metrics of each variant at ``top_k``, with a ``profile`` column: the
    variants the package's child does not search are searched here first, then the others
    are read from its answer (``progress``: the callback, the searches done before the
    variants' and the run's searches; the child's are shown when its answer comes)."""
    callback, done, total = progress
    queries = fixture.queries.num_rows
    found: dict[int, pa.Table] = {}
    for number, (_, variant) in enumerate(variants):
        if not package.searches_variant(number):
            found[number] = run_queries(
                store,
                fixture.queries,
                top_k=top_k,
                progress=offset(callback, done, total),
                profile=variant,
            ).results
            done += queries
    for number in range(len(variants)):
        if number not in found:
            found[number] = package.variant(number)
            done += queries
            if callback is not None:
                callback(done, total)
    frames = []
    for number, (_, variant) in enumerate(variants):
        per_query, _ = metrics_at(pl.DataFrame(found[number]), fixture, (top_k,))
        frames.append(per_query.with_columns(profile=pl.lit(variant.name)))
    return frames


def _channels(
    store: hotmem.MemoryStore,
    fixture: Fixture,
    profiles: Sequence[hotmem.Profile],
    progress: hotmem.ProgressCallback | None,
) -> pa.Table:
    spaces, min_cosine = complete_for(profiles)
    return channel_table(
        store, fixture.queries, spaces=spaces, min_cosine=min_cosine, progress=progress
    )


@dataclass(frozen=True, slots=True)
class _Searched:
    """One profile's searches of the source store, their misses and metrics: all of its run
    but the transfer check (``_transferred``)."""

    fixture: Fixture
    profile: hotmem.Profile
    cutoffs: tuple[int, ...]
    repeat: int
    run: QueryRun
    results: pl.DataFrame
    misses: tuple[Miss, ...]
    per_query: pl.DataFrame
    per_query_by_k: pl.DataFrame
    aggregate_by_k: pl.DataFrame
    laps: dict[str, float]


def _searched_one(
    store: hotmem.MemoryStore,
    fixture: Fixture,
    profile: hotmem.Profile,
    *,
    cutoffs: tuple[int, ...],
    repeat: int,
    progress: hotmem.ProgressCallback | None,
) -> _Searched:
    top_k, depth = cutoffs[0], cutoffs[-1]
    clock = Stopwatch()
    run = run_queries(
        store, fixture.queries, top_k=depth, repeat=repeat, progress=progress, profile=profile
    )
    clock.lap("search", within={"query_embedding": run.embedding_s})
    misses = attribute_misses(
        store,
        fixture.queries,
        fixture.qrels,
        run.results,
        top_k=top_k,
        profile=profile,
        relevant_grade=fixture.relevant_grade,
    )
    clock.lap("misses")
    results = pl.DataFrame(run.results)
    per_query_by_k, aggregate_by_k = metrics_at(results, fixture, cutoffs)
    per_query = per_query_by_k.filter(pl.col("k") == top_k)
    clock.lap("metrics")
    return _Searched(
        fixture,
        profile,
        cutoffs,
        repeat,
        run,
        results,
        tuple(misses),
        per_query,
        per_query_by_k,
        aggregate_by_k,
        clock.laps,
    )


def _transferred(
    one: _Searched,
    package: PendingPackage,
    number: int,
    transfer_queries: pa.Table,
    ingest_s: float,
) -> EvalRun:
    """``one`` (the ``number``-th profile) with its transfer check: its ``transfer_queries``
    as the package's child re-ran them in the hydrated copy, compared with its own."""
    top_k, depth = one.cutoffs[0], one.cutoffs[-1]
    started = time.perf_counter()
    sampled_ids = set(transfer_queries.column("query_id").to_pylist())
    ran, made = one.run.results, package.made()
    source = ran.filter(pa.array([q in sampled_ids for q in ran.column("query_id").to_pylist()]))
    rerun = package.reran(number)
    transfer = rerun_transfer(
        made, transfer_queries, source, top_k=depth, profile=one.profile, rerun=rerun
    )
    laps = {**one.laps, "transfer": time.perf_counter() - started}
    aggregate = one.aggregate_by_k.filter(pl.col("k") == top_k)
    evidence = evidence_from(aggregate, transfer, top_k=top_k)
    return EvalRun(
        fixture=one.fixture,
        profile=one.profile,
        top_k=top_k,
        repeat=one.repeat,
        results=one.results,
        per_query=one.per_query,
        aggregate=aggregate,
        misses=one.misses,
        transfer=transfer,
        latencies_ms=one.run.latencies_ms,
        ingest_s=ingest_s,
        evidence=evidence,
        recommendation=recommend(evidence),
        cutoffs=one.cutoffs,
        per_query_by_k=one.per_query_by_k,
        aggregate_by_k=one.aggregate_by_k,
        stages_s={name: laps[name] for name in _STAGES},
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
    runs, _, _ = evaluate_profiles(
        fixture, workdir, (chosen,), top_k=top_k, repeat=repeat, progress=progress
    )
    return runs[0]
