"""The metric engine: per-query and per-category retrieval metrics from canonical frames.

Pure functions over polars frames, with no I/O of their own. pyarrow Tables are converted;
``results`` may also be a LazyFrame such as a Parquet scan, so that rows ranked beyond k are
never read into memory. The metrics, their formulas and their order live in
``hotmem_eval.metric_registry``; the per-query statistics they are computed from, and the
input checks, in ``hotmem_eval.metric_statistics``.

Inputs (canonical columns; other columns are ignored):

- ``results``: ``query_id``, ``rank`` (1-based, unique per query), ``memory_id``,
  ``identifier`` (of the returned memory). Only ``rank <= k`` counts; a memory appears at
  most once in a query's top k.
- ``qrels``: ``query_id``, ``memory_id``, ``grade`` (0..3), one row per pair at most.
- ``queries``: ``query_id`` (unique), ``category``, ``identifier`` (the scope searched; null
  means unscoped). Every query is here, whatever it returned or was graded.
- ``groups``: ``query_id``, ``memory_id``, ``group_id``; a pair absent here is its own group.

Cost: one filter over ``results``, then work proportional to ``queries x k``; no Python loop
runs per query or per row.
"""

from __future__ import annotations

import functools
from typing import Final

import polars as pl

from hotmem_eval.errors import EvalError
from hotmem_eval.metric_registry import APPLICABILITY, METRICS, OVERALL
from hotmem_eval.metric_statistics import (
    GROUPS_COLUMNS,
    QRELS_COLUMNS,
    QUERIES_COLUMNS,
    RESULTS_COLUMNS,
    FrameLike,
    breaches,
    canonical,
    canonical_lazy,
    per_qrels,
    per_slots,
    raise_on_breach,
    statistics,
)

__all__ = [
    "AGGREGATE_COLUMNS",
    "ENGINE",
    "PER_QUERY_COLUMNS",
    "aggregate_metrics",
    "per_query_metrics",
]

#: The long per-query output: every (query, metric) pair exactly once.
PER_QUERY_COLUMNS: Final[dict[str, pl.DataType]] = {
    "query_id": pl.String(),
    "category": pl.String(),
    "metric": pl.String(),
    "value": pl.Float64(),
    "numerator": pl.Int64(),
    "denominator": pl.Int64(),
    "applicable": pl.Boolean(),
}
#: The aggregate output: every (category, metric) pair, "overall" first.
AGGREGATE_COLUMNS: Final[dict[str, pl.DataType]] = {
    "category": pl.String(),
    "metric": pl.String(),
    "value": pl.Float64(),
    "numerator": pl.Int64(),
    "denominator": pl.Int64(),
    "query_count": pl.Int64(),
}

_QID = "query_id"
#: Polars 2 collects on the streaming engine by default. The in-memory engine is faster on
#: these joins and group-bys at every size measured (1k to 100k queries), and its float sums
#: do not depend on thread scheduling, so a run is reproducible bit for bit.
ENGINE: Final = "in-memory"


#: Below this many queries, common-subplan elimination costs more planning time than the shared
#: work it saves (measured at 1k queries x 100 results: 10.1 ms with it, 7.1 ms without; equal at
#: 3k; at 10k it saves a quarter). Either way the result is the same, bit for bit.
SMALL_PLAN_QUERIES: Final = 2_000
_SMALL_PLAN = pl.QueryOptFlags(comm_subplan_elim=False, comm_subexpr_elim=False)


def _optimizations(query_count: int) -> pl.QueryOptFlags:
    return _SMALL_PLAN if query_count < SMALL_PLAN_QUERIES else pl.QueryOptFlags()


def per_query_metrics(
    results: FrameLike,
    qrels: FrameLike,
    queries: FrameLike,
    groups: FrameLike,
    *,
    k: int = 5,
) -> pl.DataFrame:
    """Every metric of ``METRICS`` for every query, one row per (query, metric).

    Parameters:
        results, qrels, queries, groups: the canonical input frames (see the module docstring),
            as polars DataFrames or pyarrow Tables. ``results`` may also be a LazyFrame, such
            as ``pl.scan_parquet(...)``: only its rows ranked <= k are then read.
        k: the run's top-k; slots ranked beyond it are ignored.

    Returns:
        A frame of ``PER_QUERY_COLUMNS`` sorted by metric (registry order), then ``query_id``
        (byte order). Where ``applicable`` is false, ``value``, ``numerator`` and
        ``denominator`` are null; a query that returned nothing still has all its rows, with
        each metric's default (recall 0, success 0, fpr 0, ...).

    Raises:
        EvalError: ``k`` is not an int >= 1; a frame misses a column or has one that does not
            cast; or an input rule is broken (duplicate keys, grade outside 0..3, rank < 1,
            a memory twice in a query's top k, rows of a query absent from ``queries``, a
            category named "overall").
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise EvalError(f"expected k to be an int >= 1, found k={k!r}")
    results_lf = canonical_lazy(results, RESULTS_COLUMNS, "results")
    qrels_df = canonical(qrels, QRELS_COLUMNS, "qrels")
    queries_df = canonical(queries, QUERIES_COLUMNS, "queries")
    queries_lf = queries_df.lazy()
    groups_lf = canonical(groups, GROUPS_COLUMNS, "groups").lazy()
    qrel_counts = per_qrels(qrels_df.lazy())
    slot_counts = per_slots(results_lf, qrels_df.lazy(), queries_lf, groups_lf, k)
    # No query has more graded memories than qrels has rows: the ideal ranking's table of
    # discounts need not be longer, however large k is.
    depth = min(k, qrels_df.height)
    try:
        wide, found = pl.collect_all(
            [
                _wide(statistics(queries_lf, qrel_counts, slot_counts, depth)),
                breaches(queries_lf, groups_lf, qrel_counts, slot_counts),
            ],
            engine=ENGINE,
            optimizations=_optimizations(queries_df.height),
        )
    except pl.exceptions.PolarsError as error:
        # Only a lazy ``results`` gets here: its casts and its source are read at collect.
        raise EvalError(
            f"expected a readable results frame of {RESULTS_COLUMNS}: {error}"
        ) from error
    raise_on_breach(found)
    return _long(wide)


def aggregate_metrics(per_query: FrameLike) -> pl.DataFrame:
    """Per-category and overall metrics from the output of ``per_query_metrics``.

    A category's ``value`` is the mean of its applicable queries' values (macro), except for
    the metrics registered ``pooled`` (the two slot rates), whose value is
    sum(numerator) / sum(denominator) over applicable queries: a query with no filled slot
    then adds nothing, where a mean would need its undefined 0/0. ``numerator`` and
    ``denominator`` are the pooled integer sums for metrics that carry a ratio (so success
    reads "7/8"), null for the others (MRR, nDCG). A category where no query is applicable
    reports ``value``, ``numerator`` and ``denominator`` null and ``query_count`` 0.

    Returns:
        A frame of ``AGGREGATE_COLUMNS``: one row per (category, metric) for "overall" and for
        every category present, "overall" first then the categories in byte order, metrics in
        registry order.

    Raises:
        EvalError: a column is missing or does not cast, or a metric is not registered.
    """
    frame = canonical(per_query, PER_QUERY_COLUMNS, "per_query").lazy()
    applicable = pl.col("applicable")
    # A float sum depends on the order of its terms, so values are accumulated in a fixed
    # order (sorted values within a category, categories by name for overall) and give the
    # same bits however the rows came in. A plain sort().sum() would not do: the optimiser
    # drops a sort before an order-free sum.
    sums = frame.group_by("category", "metric").agg(
        query_count=applicable.sum().cast(pl.Int64),
        numerator=pl.col("numerator").filter(applicable).sum(),
        denominator=pl.col("denominator").filter(applicable).sum(),
        value_sum=pl.col("value").filter(applicable).sort().cum_sum().last(),
    )
    overall = sums.group_by("metric").agg(
        pl.col("query_count", "numerator", "denominator").sum(),
        value_sum=pl.col("value_sum").fill_null(0.0).sort_by("category").cum_sum().last(),
        category=pl.lit(OVERALL),
    )
    grid = (
        pl.concat([pl.LazyFrame({"category": [OVERALL]}), sums.select(pl.col("category").unique())])
        .join(pl.LazyFrame({"metric": list(METRICS)}), how="cross")
        .join(
            pl.concat([sums, overall], how="diagonal"),
            on=["category", "metric"],
            how="left",
        )
    )
    metric, count = pl.col("metric"), pl.col("query_count").fill_null(0)
    ratio = metric.is_in([name for name, m in METRICS.items() if m.has_ratio]) & (count > 0)
    pooled = metric.is_in([name for name, m in METRICS.items() if m.aggregation == "pooled"])
    numerator, denominator = pl.col("numerator"), pl.col("denominator")
    value = (
        pl.when(pooled)
        .then(pl.when(ratio & (denominator > 0)).then(numerator / denominator))
        .otherwise(pl.when(count > 0).then(pl.col("value_sum") / count))
    )
    result, unknown = pl.collect_all(
        [
            grid.select(
                "category",
                "metric",
                value=value.cast(pl.Float64),
                numerator=pl.when(ratio).then(numerator).cast(pl.Int64),
                denominator=pl.when(ratio).then(denominator).cast(pl.Int64),
                query_count=count.cast(pl.Int64),
            ).sort(pl.col("category") != OVERALL, "category", metric.cast(pl.Enum(list(METRICS)))),
            sums.filter(~metric.is_in(list(METRICS))).select(metric.min(), pl.len()),
        ],
        engine=ENGINE,
    )
    if unknown["len"][0]:
        raise EvalError(
            f"expected per_query metrics of METRICS, found metric={unknown['metric'][0]!r}"
        )
    return result


def _wide(statistics: pl.LazyFrame) -> pl.LazyFrame:
    """Every metric's value (and numerator/denominator) as columns, one row a query."""
    return statistics.select(_QID, "category", **_wide_columns())


@functools.cache
def _wide_columns() -> dict[str, pl.Expr]:
    """The expressions of ``_wide``; built once, as the registry never changes."""
    columns: dict[str, pl.Expr] = {
        f"applies_to.{scope}": predicate() for scope, (_, predicate) in APPLICABILITY.items()
    }
    for name, metric in METRICS.items():
        exprs = metric.exprs()
        columns[f"{name}.value"] = exprs.value.cast(pl.Float64)
        if exprs.numerator is not None and exprs.denominator is not None:
            columns[f"{name}.numerator"] = exprs.numerator.cast(pl.Int64)
            columns[f"{name}.denominator"] = exprs.denominator.cast(pl.Int64)
    return columns


def _long(wide: pl.DataFrame) -> pl.DataFrame:
    """Wide metric columns to rows: every (query, metric) once, metric-major.

    One block of rows per metric, in registry order, each block in ``query_id`` order (as
    ``wide`` is): the columns are only stacked, never gathered or sorted.
    """
    queries = wide.height
    no_ratio = pl.repeat(None, queries, dtype=pl.Int64, eager=True)

    def stacked(column: str) -> pl.Series:
        return pl.concat(
            [
                wide[f"{name}.{column}"] if metric.has_ratio else no_ratio
                for name, metric in METRICS.items()
            ]
        )

    long = pl.DataFrame(
        {
            _QID: pl.concat([wide[_QID]] * len(METRICS), rechunk=False),
            "category": pl.concat([wide["category"]] * len(METRICS), rechunk=False),
            "metric": pl.concat(
                [pl.repeat(name, queries, dtype=pl.String, eager=True) for name in METRICS]
            ),
            "value": pl.concat([wide[f"{name}.value"] for name in METRICS]),
            "numerator": stacked("numerator"),
            "denominator": stacked("denominator"),
            "applicable": pl.concat(
                [wide[f"applies_to.{metric.applies_to}"] for metric in METRICS.values()]
            ),
        }
    )
    applicable = pl.col("applicable")
    return long.with_columns(pl.when(applicable).then(pl.col("value", "numerator", "denominator")))
