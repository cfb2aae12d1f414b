"""The retrieval metrics, by name, in report order: each one's formula, scope and aggregation.

A metric is a function over the per-query statistics frame built by ``hotmem_eval.metrics``
(one row a query; columns in ``STATISTICS``). It returns polars expressions for its value and,
where the value is a ratio of counts, its integer numerator and denominator. Its docstring is the
formula; the ``@_metric`` decorator records in which queries it applies, how its per-query
values are aggregated, its report label and table, which way it improves, whether profiles are
compared on it and whether the baseline gates it, and adds it to ``METRICS`` in definition
order: the metric order of every output and of ``docs/metrics.md``.

``METRICS`` is the one source of these facts. The SQL files read them as an input relation
named ``metrics`` (``metrics_frame``): ``sql/001_per_query_metrics.sql`` holds only each
metric's formula, and takes its order and applicability from there.

"Relevant" means graded ``relevant_grade`` or more (a keyword of every engine; by default
``RELEVANT_GRADE``, 2, the native fixture's rule; BEIR and TREC collections use 1, as trec_eval
does); "graded" means graded 1 or more. A query's "groups" are its near-duplicate groups (the
``groups`` input: a memory in no group is its own group); a group is relevant when it holds a
memory relevant to the query. Relevance stays a memory's own grade: an ungraded member of a
relevant group is not relevant.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

import polars as pl

from hotmem_eval.fixture_schema import DUPLICATE_CATEGORY
from hotmem_eval.statistics_columns import STATISTICS

__all__ = [
    "ALPHA",
    "APPLICABILITY",
    "METRICS",
    "METRICS_COLUMNS",
    "OVERALL",
    "REPORT_TABLES",
    "STATISTICS",
    "Aggregation",
    "Applicability",
    "Better",
    "Metric",
    "MetricExprs",
    "metrics_frame",
]

#: Which queries a metric is defined on.
Applicability = Literal["positive", "negative", "near_duplicate", "scoped"]
#: ``macro``: the mean of the per-query values. ``pooled``: sum(numerator) / sum(denominator).
Aggregation = Literal["macro", "pooled"]
Better = Literal["higher", "lower"]  # which way a metric improves

#: The report's metrics tables, in order: title -> what it groups (a metric names its table).
_RELEVANCE, _PRECISION, _OTHER = "Relevance", "Precision", "Diversity, false positives and scope"
REPORT_TABLES: Final[dict[str, str]] = {
    _RELEVANCE: "whether and how high the relevant memories rank",
    _PRECISION: "how much of the top k is relevant",
    _OTHER: "distinct answers, answers to unanswerable queries, memories from another scope",
}

#: The category name of the row that aggregates every query. No query category may use it.
OVERALL: Final = "overall"
#: alpha of ``alpha_ndcg_at_k``: each earlier relevant slot of a group halves the next one's gain.
ALPHA: Final = 0.5


def _positive() -> pl.Expr:
    return pl.col("relevant_total") > 0


def _negative() -> pl.Expr:
    return pl.col("graded_total") == 0


def _near_duplicate() -> pl.Expr:
    # A query with no category (null) is not a near-duplicate query.
    return pl.col("category").eq_missing(DUPLICATE_CATEGORY)


def _scoped() -> pl.Expr:
    return pl.col("identifier").is_not_null()


#: For each applicability, the text the docs show and the polars predicate over statistics.
APPLICABILITY: Final[dict[Applicability, tuple[str, Callable[[], pl.Expr]]]] = {
    "positive": ("queries with at least one memory graded >= relevant_grade", _positive),
    "negative": ("queries with no memory graded >= 1", _negative),
    "near_duplicate": (f"queries of category {DUPLICATE_CATEGORY!r}", _near_duplicate),
    "scoped": ("queries with a non-null identifier (scope)", _scoped),
}


@dataclass(frozen=True, slots=True)
class MetricExprs:
    """A metric's per-query value, and its integer numerator/denominator (None if no ratio)."""

    value: pl.Expr
    numerator: pl.Expr | None = None
    denominator: pl.Expr | None = None


@dataclass(frozen=True, slots=True)
class Metric:
    """One registered metric.

    Attributes:
        name: the canonical metric name (the ``metric`` column).
        description: one line saying what it measures.
        formula: the formula, as written in the defining function's docstring.
        applies_to: the queries it is defined on; elsewhere its value is null.
        aggregation: how a category's value is made from per-query values.
        has_ratio: whether the metric carries an integer numerator and denominator.
        exprs: builds the polars expressions over the statistics frame.
        label: the short report header; ``{k}`` stands for the cutoff (the ``k`` column).
        report_table: the report's table that shows it (of ``REPORT_TABLES``), or None.
        better: which way it improves (a paired comparison's wins and losses).
        compared: whether a paired comparison of profiles compares it.
        gated: whether the baseline's directional check forbids it to fall.
    """

    name: str
    description: str
    formula: str
    applies_to: Applicability
    aggregation: Aggregation
    has_ratio: bool
    exprs: Callable[[], MetricExprs]
    label: str
    report_table: str | None
    better: Better
    compared: bool
    gated: bool

    @property
    def in_report(self) -> bool:  # whether a report's metrics table shows it
        return self.report_table is not None


METRICS: Final[dict[str, Metric]] = {}


def _metric(
    *,
    applies_to: Applicability,
    label: str,
    report_table: str | None,
    aggregation: Aggregation = "macro",
    better: Better = "higher",
    compared: bool = True,
    gated: bool = False,
) -> Callable[[Callable[[], MetricExprs]], Callable[[], MetricExprs]]:
    assert report_table is None or report_table in REPORT_TABLES, report_table

    def register(build: Callable[[], MetricExprs]) -> Callable[[], MetricExprs]:
        summary, _, formula = inspect.cleandoc(build.__doc__ or "").partition("\n")
        METRICS[build.__name__] = Metric(
            name=build.__name__,
            description=summary.strip(),
            formula=formula.strip(),
            applies_to=applies_to,
            aggregation=aggregation,
            has_ratio=build().numerator is not None,
            exprs=build,
            label=label,
            report_table=report_table,
            better=better,
            compared=compared,
            gated=gated,
        )
        return build

    return register


def _count(name: str) -> pl.Expr:
    return pl.col(name).cast(pl.Int64)


def _fraction(numerator: pl.Expr, denominator: pl.Expr) -> MetricExprs:
    """numerator / denominator, null when the denominator is 0."""
    value = pl.when(denominator > 0).then(numerator / denominator).cast(pl.Float64)
    return MetricExprs(value=value, numerator=numerator, denominator=denominator)


def _indicator(condition: pl.Expr) -> MetricExprs:
    """1/1 when the condition holds, else 0/1."""
    hit = condition.cast(pl.Int64)
    return MetricExprs(value=hit.cast(pl.Float64), numerator=hit, denominator=pl.lit(1, pl.Int64))


@_metric(applies_to="positive", label="R@1", report_table=_RELEVANCE)
def recall_at_1() -> MetricExprs:
    """Share of the query's relevant memories found at rank 1.

    recall@1 = |relevant in top 1| / |relevant|
    """
    return _fraction(_count("relevant_at_1"), _count("relevant_total"))


@_metric(applies_to="positive", label="R@{k}", report_table=_RELEVANCE, gated=True)
def recall_at_k() -> MetricExprs:
    """Share of the query's relevant memories found in the top k (trec_eval ``recall``).

    recall@k = |relevant in top k| / |relevant|
    """
    return _fraction(_count("relevant_at_k"), _count("relevant_total"))


@_metric(applies_to="positive", label="S@1", report_table=None, compared=False)
def success_at_1() -> MetricExprs:
    """Whether a relevant memory is at rank 1.

    success@1 = 1 if |relevant in top 1| > 0 else 0
    """
    return _indicator(pl.col("relevant_at_1") > 0)


@_metric(applies_to="positive", label="S@{k}", report_table=_RELEVANCE, compared=False)
def success_at_k() -> MetricExprs:
    """Whether any relevant memory is in the top k.

    success@k = 1 if |relevant in top k| > 0 else 0
    """
    return _indicator(pl.col("relevant_at_k") > 0)


@_metric(applies_to="positive", label="MRR@{k}", report_table=_RELEVANCE, gated=True)
def mrr_at_k() -> MetricExprs:
    """Reciprocal rank of the first relevant memory within the top k.

    rr@k = 1 / rank of the first relevant memory if it is in the top k, else 0
    """
    rank = pl.col("first_relevant_rank")
    return MetricExprs(value=pl.when(rank.is_not_null()).then(1.0 / rank).otherwise(0.0))


@_metric(applies_to="positive", label="nDCG@{k}", report_table=_RELEVANCE)
def ndcg_at_k() -> MetricExprs:
    """Normalised discounted cumulative gain at k, linear gain (trec_eval ``ndcg_cut``).

    DCG@k = sum over top-k slots i of grade_i / log2(rank_i + 1)
    IDCG@k = the same sum over all graded memories sorted by grade descending, cut at k
    nDCG@k = DCG@k / IDCG@k, and 0 when IDCG@k = 0
    """
    ideal = pl.col("ideal_dcg")
    return MetricExprs(value=pl.when(ideal > 0).then(pl.col("dcg") / ideal).otherwise(0.0))


@_metric(applies_to="positive", label="P@{k}", report_table=_PRECISION)
def precision_at_k() -> MetricExprs:
    """Share of the top k slots holding a relevant memory (trec_eval ``P``).

    precision@k = |relevant in top k| / k  (k, not the slots filled: an unfilled slot counts
                  as not relevant)
    """
    return _fraction(_count("relevant_at_k"), _count("k"))


@_metric(applies_to="positive", label="AP@{k}", report_table=_PRECISION)
def ap_at_k() -> MetricExprs:
    """Average precision cut at k (trec_eval ``map_cut``; its category mean is MAP@k).

    AP@k = (1 / |relevant|) * sum over ranks i <= k holding a relevant memory of
           |relevant in top i| / i
    """
    relevant = pl.col("relevant_total")
    return MetricExprs(
        value=pl.when(relevant > 0).then(pl.col("precision_sum") / relevant).otherwise(0.0)
    )


@_metric(
    applies_to="positive",
    label="group R@{k}",
    report_table=_OTHER,
    gated=True,
)
def group_recall_at_k() -> MetricExprs:
    """Share of the query's relevant groups with a relevant memory in the top k (subtopic recall).

    group_recall@k = |relevant groups with a relevant memory in top k| / |relevant groups|
    """
    return _fraction(_count("relevant_groups_at_k"), _count("relevant_groups"))


@_metric(applies_to="positive", label="α-nDCG@{k}", report_table=_OTHER)
def alpha_ndcg_at_k() -> MetricExprs:
    """nDCG at k whose gain halves for each earlier relevant slot of the same group (alpha 0.5).

    gain_i = (1 - alpha)^c_i if slot i holds a relevant memory, else 0, where c_i = number of
             earlier slots holding a relevant memory of slot i's group; alpha = 0.5
    alpha-DCG@k = sum over top-k slots i of gain_i / log2(rank_i + 1)
    ideal = alpha-DCG@k of the greedy ranking of the relevant memories (at each rank the
            largest gain left, ties by memory_id), cut at k
    alpha-nDCG@k = alpha-DCG@k / ideal, and 0 when ideal = 0
    """
    ideal = pl.col("ideal_alpha_dcg")
    return MetricExprs(value=pl.when(ideal > 0).then(pl.col("alpha_dcg") / ideal).otherwise(0.0))


@_metric(
    applies_to="negative",
    label="neg FPR@{k}",
    report_table=_OTHER,
    better="lower",
)
def negative_fpr_at_k() -> MetricExprs:
    """Whether a query with no answer returned anything in the top k (false positive).

    fpr@k = 1 if filled top-k slots > 0 else 0
    """
    return _indicator(pl.col("filled_slots") > 0)


@_metric(
    applies_to="negative",
    label="neg returned@{k}",
    report_table=None,
    better="lower",
    compared=False,
)
def negative_returned_at_k() -> MetricExprs:
    """Number of memories a query with no answer returned in the top k.

    returned@k = filled top-k slots  (its category mean is the mean number returned)
    """
    filled = _count("filled_slots")
    return MetricExprs(
        value=filled.cast(pl.Float64), numerator=filled, denominator=pl.lit(1, pl.Int64)
    )


@_metric(
    applies_to="near_duplicate",
    aggregation="pooled",
    label="dup slots@{k}",
    report_table=_OTHER,
    better="lower",
)
def duplicate_slot_rate_at_k() -> MetricExprs:
    """Share of filled top-k slots spent on a near-duplicate of an earlier slot.

    dup@k = |slots whose group already filled an earlier slot| / |filled slots|,
            null when no slot is filled
    """
    return _fraction(_count("duplicate_slots"), _count("filled_slots"))


@_metric(
    applies_to="scoped",
    aggregation="pooled",
    label="scope leak@{k}",
    report_table=_OTHER,
    better="lower",
)
def scope_leak_rate_at_k() -> MetricExprs:
    """Share of filled top-k slots holding a memory from outside the query's scope.

    leak@k = |slots whose memory identifier != query identifier| / |filled slots|,
             null when no slot is filled
    """
    return _fraction(_count("leaked_slots"), _count("filled_slots"))


#: The columns of ``metrics_frame``: the relation the SQL files read as ``metrics``.
METRICS_COLUMNS: Final[dict[str, pl.DataType]] = {
    "metric": pl.String(),
    "metric_order": pl.Int64(),
    "description": pl.String(),
    "formula": pl.String(),
    "applies_to": pl.String(),
    "aggregation": pl.String(),
    "has_ratio": pl.Boolean(),
    "label": pl.String(),
    "in_report": pl.Boolean(),
    "report_table": pl.String(),
    "better": pl.String(),
    "compared": pl.Boolean(),
    "gated": pl.Boolean(),
}


def metrics_frame(metrics: Mapping[str, Metric] = METRICS) -> pl.DataFrame:
    """The registry as a relation, one row a metric in registry order (``METRICS_COLUMNS``).

    ``metric_order`` counts from 1. ``.to_arrow()`` gives it as an Arrow table.

    Args:
        metrics: the registry to tabulate; tests pass an altered one.
    """
    fields = list(METRICS_COLUMNS)[2:]  # after metric and metric_order: Metric's attributes
    rows = [
        {"metric": metric.name, "metric_order": order, **{f: getattr(metric, f) for f in fields}}
        for order, metric in enumerate(metrics.values(), start=1)
    ]
    return pl.DataFrame(rows, schema=METRICS_COLUMNS)
