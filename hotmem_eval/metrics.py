"""The metric engine: per-query and per-category retrieval metrics from canonical frames.

Pure functions over polars frames, with no I/O of their own. pyarrow Tables are converted;
``results`` may also be a LazyFrame such as a Parquet scan, so that rows ranked beyond k are
never read into memory. The metrics, their formulas and their order live in
``hotmem_eval.metric_registry``; the per-query statistics they are computed from, and the
input checks, in ``hotmem_eval.metric_statistics`` (and ``group_statistics`` for the groups).

Inputs (canonical columns; other columns are ignored):

- ``results``: ``query_id``, ``rank`` (1-based, unique per query), ``memory_id``,
  ``identifier`` (of the returned memory). Only ``rank <= k`` counts; a memory appears at
  most once in a query's top k.
- ``qrels``: ``query_id``, ``memory_id``, ``grade`` (an integer >= 0, int8 or int32), one row
  per pair at most. Relevant means graded ``relevant_grade`` or more, graded means 1 or more.
- ``queries``: ``query_id`` (unique), ``category`` (null: the query has none; it counts in
  "overall" only), ``identifier`` (the scope searched; null means unscoped). Every query is
  here, whatever it returned or was graded.
- ``groups``: ``query_id``, ``memory_id``, ``group_id``; a pair absent here is its own group.
  Group recall and alpha-nDCG read the groups of every relevant memory, returned or not.

Cost: one filter over ``results``, then work proportional to ``queries x k``; no Python loop
runs per query or per row (the aggregate finishes each (category, metric) cell in Python).
"""

from __future__ import annotations

import decimal
import functools
from collections import defaultdict
from collections.abc import Iterable
from typing import Final, NamedTuple

import polars as pl

from hotmem_eval.errors import EvalError
from hotmem_eval.fixture_schema import RELEVANT_GRADE
from hotmem_eval.group_statistics import grouped_members
from hotmem_eval.metric_registry import APPLICABILITY, METRICS, OVERALL
from hotmem_eval.metric_statistics import (
    GROUPS_COLUMNS,
    QRELS_COLUMNS,
    QUERIES_COLUMNS,
    RESULTS_COLUMNS,
    FrameLike,
    InputRules,
    canonical,
    canonical_lazy,
    per_qrels,
    per_slots,
    statistics,
)

__all__ = [
    "AGGREGATE_COLUMNS",
    "ENGINE",
    "MAX_K",
    "PER_QUERY_COLUMNS",
    "aggregate_metrics",
    "per_query_metrics",
]

#: The largest k (and relevant_grade): ``k`` is an Int32 column, as ``rank`` is.
MAX_K: Final = 2**31 - 1
#: The long per-query output: every (query, metric) pair exactly once, at the call's k.
PER_QUERY_COLUMNS: Final[dict[str, pl.DataType]] = {
    "k": pl.Int32(),
    "query_id": pl.String(),
    "category": pl.String(),
    "metric": pl.String(),
    "value": pl.Float64(),
    "numerator": pl.Int64(),
    "denominator": pl.Int64(),
    "applicable": pl.Boolean(),
}
#: The aggregate output: every (k, category, metric), "overall" first within a k.
AGGREGATE_COLUMNS: Final[dict[str, pl.DataType]] = {
    "k": pl.Int32(),
    "category": pl.String(),
    "metric": pl.String(),
    "value": pl.Float64(),
    "numerator": pl.Int64(),
    "denominator": pl.Int64(),
    "query_count": pl.Int64(),
}

_QID = "query_id"
#: How a category's values are summed: as fixed-point decimals with 20 places (128-bit), so the
#: sum is exact and the same in any row order. Polars converts a float to it to within about
#: 1e-16 of the value; a sum may reach 1e18 (values are at most 1, or a count of slots).
VALUE_SUM: Final = pl.Decimal(38, 20)
#: Polars 2 collects on the streaming engine by default. The in-memory engine is faster on
#: these joins and group-bys at every size measured (1k to 100k queries), and its float sums
#: do not depend on thread scheduling, so a run is reproducible bit for bit.
ENGINE: Final = "in-memory"


#: Every intermediate result shared by two plans is materialised before they run, so no plan
#: has a common subplan to eliminate, and looking for one is pure planning cost (per-query
#: metrics, 1k queries x 100 results: 5.0 ms without the search, 5.2 ms with it; 100k: 176 vs
#: 185 ms). The result is the same either way, bit for bit.
OPTIMIZATIONS: Final = pl.QueryOptFlags(comm_subplan_elim=False, comm_subexpr_elim=False)


def per_query_metrics(
    results: FrameLike,
    qrels: FrameLike,
    queries: FrameLike,
    groups: FrameLike,
    *,
    k: int = 5,
    relevant_grade: int = RELEVANT_GRADE,
) -> pl.DataFrame:
    """Every metric of ``METRICS`` for every query, one row per (query, metric).

    Parameters:
        results, qrels, queries, groups: the canonical input frames (see the module docstring),
            as polars DataFrames or pyarrow Tables. ``results`` may also be a LazyFrame, such
            as ``pl.scan_parquet(...)``: only its rows ranked <= k are then read.
        k: the cutoff; slots ranked beyond it are ignored. Every row's ``k`` column holds it.
        relevant_grade: the smallest grade that counts as relevant (the fixture's rule: 2
            for the native fixture, 1 for BEIR and TREC collections, as trec_eval).

    Returns:
        A frame of ``PER_QUERY_COLUMNS`` sorted by metric (registry order), then ``query_id``
        (byte order). Where ``applicable`` is false, ``value``, ``numerator`` and
        ``denominator`` are null; a query that returned nothing still has all its rows, with
        each metric's default (recall 0, success 0, fpr 0, ...).

    Raises:
        EvalError: ``k`` or ``relevant_grade`` is not an int in 1..MAX_K; a frame misses a
            column or has one that does not cast; or an input rule is broken (duplicate keys,
            a negative grade, rank < 1, a memory twice in a query's top k, rows of a query
            absent from ``queries``, a category named "overall").
    """
    _check_positive("k", k)
    _check_positive("relevant_grade", relevant_grade)
    results_lf = canonical_lazy(results, RESULTS_COLUMNS, "results")
    qrels_df = canonical(qrels, QRELS_COLUMNS, "qrels")
    queries_df = canonical(queries, QUERIES_COLUMNS, "queries")
    groups_df = canonical(groups, GROUPS_COLUMNS, "groups")
    qrels_lf, queries_lf, groups_lf = qrels_df.lazy(), queries_df.lazy(), groups_df.lazy()
    try:
        qrel_counts, slot_counts, members = pl.collect_all(
            [
                per_qrels(qrels_lf, relevant_grade=relevant_grade, k=k),
                per_slots(
                    results_lf, qrels_lf, queries_lf, groups_lf, k, relevant_grade=relevant_grade
                ),
                grouped_members(qrels_lf, groups_lf, relevant_grade=relevant_grade),
            ],
            engine=ENGINE,
            optimizations=OPTIMIZATIONS,
        )
    except pl.exceptions.PolarsError as error:
        # Only a lazy ``results`` gets here: its casts and its source are read at collect.
        raise EvalError(
            f"expected a readable results frame of {RESULTS_COLUMNS}: {error}"
        ) from error
    rules = InputRules.of(queries_df, groups_df, qrel_counts, slot_counts)
    # No query has more graded memories than qrels has rows: the ideal ranking's table of
    # discounts need not be longer, however large k is.
    depth = min(k, qrels_df.height)
    # The statistics are joined in the same collect as the rule checks (they cannot fail on
    # broken input, only be wrong), and thrown away if a rule is broken.
    stats, *counts = pl.collect_all(
        [
            statistics(
                queries_lf, qrel_counts.lazy(), slot_counts.lazy(), members, k=k, depth=depth
            ),
            *rules.count_plans(),
        ],
        engine=ENGINE,
        optimizations=OPTIMIZATIONS,
    )
    rules.raise_on_breach(counts)
    return pl.concat(
        [stats.lazy().select("k", _QID, "category", **block) for block in _blocks()]
    ).collect(engine=ENGINE, optimizations=OPTIMIZATIONS)


def _check_positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_K:
        raise EvalError(
            f"expected {name} to be an int >= 1 (at most {MAX_K}), found {name}={value!r}"
        )


def aggregate_metrics(per_query: FrameLike) -> pl.DataFrame:
    """Per-category and overall metrics from the output of ``per_query_metrics``.

    A category's ``value`` is the mean of its applicable queries' values (macro), except for
    the metrics registered ``pooled`` (the two slot rates), whose value is
    sum(numerator) / sum(denominator) over applicable queries: a query with no filled slot
    then adds nothing, where a mean would need its undefined 0/0. ``numerator`` and
    ``denominator`` are the pooled integer sums for metrics that carry a ratio (so success
    reads "7/8"), null for the others (MRR, nDCG). A category where no query is applicable
    reports ``value``, ``numerator`` and ``denominator`` null and ``query_count`` 0.

    ``per_query`` may stack the outputs of several calls at different k: each k is aggregated
    on its own. "overall" spans every query of a k, those with a null category (no category)
    included; a null category has no row of its own.

    Returns:
        A frame of ``AGGREGATE_COLUMNS``: one row per (k, category, metric) for "overall" and
        for every non-null category present at that k; k ascending, then "overall" first and
        the categories in byte order, metrics in registry order. With no rows at all, the
        "overall" rows alone, with a null k (there is no k to report).

    Raises:
        EvalError: a column is missing or does not cast, a k is null, or a metric is not
            registered.
    """
    frame = canonical(per_query, PER_QUERY_COLUMNS, "per_query").lazy()
    metric = pl.col("metric")
    # One group-by over the applicable rows does the work proportional to the queries; the
    # rest is a few operations per (k, category, metric) cell, done in Python. Values are
    # summed as fixed-point decimals (``VALUE_SUM``): integer addition is exact, so a sum,
    # unlike a float sum, does not depend on the order of its terms, and a category gives the
    # same bits however its rows came in.
    try:
        cells, blocks, checks = pl.collect_all(
            [
                frame.filter(pl.col("applicable"))
                .group_by("k", "category", "metric")
                .agg(
                    query_count=pl.len().cast(pl.Int64),
                    numerator=pl.col("numerator").sum(),
                    denominator=pl.col("denominator").sum(),
                    value_sum=pl.col("value").cast(VALUE_SUM).sum(),
                ),
                # Every category of every k, even one with no applicable query.
                frame.group_by("k").agg(categories=pl.col("category").drop_nulls().unique()),
                frame.select(
                    unknown_metric=metric.filter(~metric.is_in(list(METRICS))).min(),
                    null_metrics=metric.null_count(),
                    null_ks=pl.col("k").null_count(),
                ),
            ],
            engine=ENGINE,
            optimizations=OPTIMIZATIONS,
        )
    except pl.exceptions.PolarsError as error:
        raise EvalError(
            f"expected per_query values that are finite and sum within {VALUE_SUM}: {error}"
        ) from error
    unknown, null_metrics, null_ks = checks.row(0)
    if null_metrics or unknown is not None:
        found = None if null_metrics else unknown
        raise EvalError(f"expected per_query metrics of METRICS, found metric={found!r}")
    if null_ks:
        raise EvalError(f"expected per_query k non-null, found {null_ks} null k(s)")
    sums = {(k, category, name): _Sums(*cell) for k, category, name, *cell in cells.iter_rows()}
    categories: dict[int | None, list[str]] = {
        k: sorted(found) for k, found in sorted(blocks.iter_rows())
    } or {None: []}
    rows = []
    for k, names in categories.items():
        rows.extend(_block_rows(k, names, sums))
    return pl.DataFrame(rows, schema=AGGREGATE_COLUMNS, orient="row")


def _block_rows(
    k: int | None, categories: list[str], sums: dict[tuple[int | None, str | None, str], _Sums]
) -> list[tuple[object, ...]]:
    """The aggregate rows of one k: "overall" (null categories included), then each category."""
    by_metric: dict[str, list[_Sums]] = defaultdict(list)
    for (cut, _, name), cell in sums.items():
        if cut == k:
            by_metric[name].append(cell)
    rows = [_aggregate_row(k, OVERALL, name, _Sums.total(by_metric[name])) for name in METRICS]
    rows.extend(
        _aggregate_row(k, category, name, sums.get((k, category, name), _NO_QUERY))
        for category in categories
        for name in METRICS
    )
    return rows


class _Sums(NamedTuple):
    """One (category, metric) cell: applicable queries and the sums over them."""

    query_count: int
    numerator: int
    denominator: int
    value_sum: decimal.Decimal  # exact: a sum of VALUE_SUM decimals

    @classmethod
    def total(cls, cells: Iterable[_Sums | None]) -> _Sums:
        """The cells added up (exactly, so in any order)."""
        count = numerator = denominator = 0
        value_sum = decimal.Decimal(0)
        for cell in cells:
            if cell is not None:
                count += cell.query_count
                numerator += cell.numerator
                denominator += cell.denominator
                value_sum = _EXACT.add(value_sum, cell.value_sum)
        return cls(count, numerator, denominator, value_sum)


_NO_QUERY: Final = _Sums(0, 0, 0, decimal.Decimal(0))
#: Wide enough that adding two VALUE_SUM decimals never rounds (they have at most 39 digits).
_EXACT: Final = decimal.Context(prec=80)


def _aggregate_row(k: int | None, category: str, name: str, cell: _Sums) -> tuple[object, ...]:
    """One row of ``AGGREGATE_COLUMNS``: the pooled or macro value of a cell."""
    metric = METRICS[name]
    count = cell.query_count
    ratio = metric.has_ratio and count > 0
    if metric.aggregation == "pooled":
        value = cell.numerator / cell.denominator if ratio and cell.denominator > 0 else None
    else:
        # The exact mean, rounded once to a float.
        value = float(_EXACT.divide(cell.value_sum, count)) if count > 0 else None
    return (
        k,
        category,
        name,
        value,
        cell.numerator if ratio else None,
        cell.denominator if ratio else None,
        count,
    )


@functools.cache
def _blocks() -> tuple[dict[str, pl.Expr], ...]:
    """Per metric, in registry order, the columns of its block of ``per_query_metrics`` rows.

    The blocks are computed from the statistics frame (one row a query, in ``query_id`` order)
    and stacked: the output is metric-major without a sort. Built once, as the registry never
    changes.
    """
    blocks = []
    for name, metric in METRICS.items():
        applicable = APPLICABILITY[metric.applies_to][1]()
        exprs = metric.exprs()

        blocks.append(
            {
                "metric": pl.lit(name, pl.String),
                "value": _where(applicable, exprs.value, pl.Float64()),
                "numerator": _where(applicable, exprs.numerator, pl.Int64()),
                "denominator": _where(applicable, exprs.denominator, pl.Int64()),
                "applicable": applicable,
            }
        )
    return tuple(blocks)


def _where(applicable: pl.Expr, expr: pl.Expr | None, dtype: pl.DataType) -> pl.Expr:
    """``expr`` cast to ``dtype`` where ``applicable``, else null; all null for no ``expr``."""
    if expr is None:
        return pl.lit(None, dtype)
    return pl.when(applicable).then(expr.cast(dtype))
