"""Paired comparison of retrieval profiles on the same fixture, from their per-query metrics.

Pure functions over polars frames (pyarrow Tables and LazyFrames are converted), no I/O. The
statistics are those of ``hotmem_eval.paired``.

Input: ``per_query``, the long per-query frame of ``metrics.per_query_metrics`` for each
profile, stacked, with a ``profile`` column added: one row per (profile, query_id, metric),
columns ``profile``, ``query_id``, ``category``, ``metric``, ``value``, ``applicable``
(``PROFILE_PER_QUERY_COLUMNS``; others such as ``numerator`` are ignored). Rules, each refused
with ``EvalError`` saying what was expected and found:

- ``profile``, ``query_id`` and ``metric`` are non-null (a null ``category``: a query without
  one, compared in ``overall`` only); every metric is one of
  ``METRICS``; no category is named ``overall``; (profile, query_id, metric) is unique;
  a non-null ``value`` is finite and in ``[0, MAX_VALUE]`` (every metric is a rate in
  [0, 1] or a count of top-k slots, k at most ``hotmem.MAX_LIMIT``): a value such as 1e308
  would overflow the paired sums.
- Every profile named in ``profiles`` has rows, and the same (query_id, category, metric,
  applicable) rows as the baseline (``profiles[0]``): the profiles ran on the same fixture.
  Rows of profiles not named are ignored.

Pairing is by ``query_id``: a query is paired for a metric where the metric applies and both
profiles' values are non-null (a slot rate is null where a query filled no slot; such a query
drops out of that metric's pairs). Only the per-query rows are read: nothing is re-ranked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import polars as pl

import hotmem
from hotmem_eval.errors import EvalError
from hotmem_eval.metric_registry import METRICS, OVERALL, Better
from hotmem_eval.metric_statistics import FrameLike, canonical
from hotmem_eval.paired import (
    TOLERANCE,
    bootstrap_ci,
    holm_adjust,
    mean,
    sign_flip_test,
)

__all__ = [
    "COMPARED_METRICS",
    "COMPARISON_COLUMNS",
    "GROUP_METRICS",
    "MAX_VALUE",
    "PAIRED_DELTA_COLUMNS",
    "PROFILE_PER_QUERY_COLUMNS",
    "Better",
    "compare_profiles",
    "compared_metrics",
    "paired_deltas",
]

#: The metrics compared, in registry order, with which way each improves (a candidate wins a
#: query where its value is better): the registry's ``compared`` metrics.
COMPARED_METRICS: Final[dict[str, Better]] = {
    name: metric.better for name, metric in METRICS.items() if metric.compared
}

#: The largest per-query value: a count of top-k slots, k at most ``hotmem.MAX_LIMIT``.
MAX_VALUE: Final = float(hotmem.MAX_LIMIT)
#: The input: per-query metrics of several profiles (other columns are ignored).
PROFILE_PER_QUERY_COLUMNS: Final[dict[str, pl.DataType]] = {
    "profile": pl.String(),
    "query_id": pl.String(),
    "category": pl.String(),
    "metric": pl.String(),
    "value": pl.Float64(),
    "applicable": pl.Boolean(),
}
#: One paired query of one metric: delta = candidate_value - baseline_value.
PAIRED_DELTA_COLUMNS: Final[dict[str, pl.DataType]] = {
    "baseline": pl.String(),
    "candidate": pl.String(),
    "query_id": pl.String(),
    "category": pl.String(),
    "metric": pl.String(),
    "baseline_value": pl.Float64(),
    "candidate_value": pl.Float64(),
    "delta": pl.Float64(),
}
#: One (baseline, candidate, scope, metric) comparison.
COMPARISON_COLUMNS: Final[dict[str, pl.DataType]] = {
    "baseline": pl.String(),
    "candidate": pl.String(),
    "scope": pl.String(),
    "metric": pl.String(),
    "n": pl.Int64(),
    "baseline_mean": pl.Float64(),
    "candidate_mean": pl.Float64(),
    "delta": pl.Float64(),
    "wins": pl.Int64(),
    "losses": pl.Int64(),
    "ties": pl.Int64(),
    "p_value": pl.Float64(),
    "p_adjusted": pl.Float64(),
    "method": pl.String(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
}

#: The metrics that read a fixture's near-duplicate groups: without groups (a collection of
#: the field's formats) they restate recall and nDCG, so comparisons leave them out.
GROUP_METRICS: Final = ("group_recall_at_k", "alpha_ndcg_at_k")


def compared_metrics(groups: bool) -> tuple[str, ...]:
    """The metrics ``compare_profiles`` compares for a fixture with (or without) near-duplicate
    groups: every one of ``COMPARED_METRICS``, or all but ``GROUP_METRICS``."""
    return tuple(m for m in COMPARED_METRICS if groups or m not in GROUP_METRICS)


_KEY = ["query_id", "category", "metric", "applicable"]


def paired_deltas(
    per_query: FrameLike,
    *,
    profiles: Sequence[str],
    metrics: Sequence[str] = tuple(COMPARED_METRICS),
) -> pl.DataFrame:
    """Per paired query and metric, each candidate's value minus the baseline's.

    Parameters:
        per_query: per-query metrics of the profiles (the module docstring's contract).
        profiles: the baseline first, then the candidates, each compared with the baseline.
        metrics: the metrics paired, of ``METRICS``; the compared ones by default.

    Returns:
        A frame of ``PAIRED_DELTA_COLUMNS``, one row per (candidate, metric, paired query),
        sorted by candidate (``profiles`` order), metric (registry order), ``query_id`` (byte
        order). ``delta`` is ``candidate_value - baseline_value`` (one float subtraction).

    Raises:
        EvalError: ``profiles`` is not two or more distinct names, a metric of ``metrics`` is
            not registered, or ``per_query`` breaks a rule of the module docstring.
    """
    unknown = [name for name in metrics if name not in METRICS]
    if unknown:
        raise EvalError(f"expected metrics of METRICS, found {unknown}")
    return _deltas(_checked(per_query, profiles), profiles, metrics)


def _deltas(frame: pl.DataFrame, profiles: Sequence[str], metrics: Sequence[str]) -> pl.DataFrame:
    order = {name: position for position, name in enumerate(METRICS)}
    paired = frame.filter(
        pl.col("metric").is_in(list(metrics)),
        pl.col("applicable"),
        pl.col("value").is_not_null(),
    )
    baseline = profiles[0]
    base = paired.filter(pl.col("profile") == baseline).select(
        "query_id", "category", "metric", baseline_value="value"
    )
    parts = []
    for position, candidate in enumerate(profiles[1:]):
        values = paired.filter(pl.col("profile") == candidate).select(
            "query_id", "metric", candidate_value="value"
        )
        parts.append(
            base.join(values, on=["query_id", "metric"], how="inner").with_columns(
                baseline=pl.lit(baseline, pl.String),
                candidate=pl.lit(candidate, pl.String),
                delta=pl.col("candidate_value") - pl.col("baseline_value"),
                candidate_order=pl.lit(position),
                metric_order=pl.col("metric").replace_strict(order, return_dtype=pl.Int64),
            )
        )
    stacked = pl.concat(parts).sort("candidate_order", "metric_order", "query_id")
    return stacked.select(
        pl.col(column).cast(dtype) for column, dtype in PAIRED_DELTA_COLUMNS.items()
    )


def compare_profiles(
    per_query: FrameLike, *, profiles: Sequence[str], metrics: Sequence[str] = ()
) -> pl.DataFrame:
    """The paired comparison of every candidate with the baseline, per scope and metric.

    For each candidate of ``profiles[1:]``, each scope (``overall``, then every category of
    the fixture in byte order) and each metric of ``metrics`` (``COMPARED_METRICS`` when
    empty; always in registry order), one
    row over the n queries paired in that scope (``paired_deltas``), with d = candidate -
    baseline per query:

    - ``baseline_mean``, ``candidate_mean``: the means of the paired values (macro, so for
      the pooled slot rates they can differ from the category figure of ``aggregate_metrics``).
    - ``delta``: the mean of d. ``wins``, ``losses``, ``ties``: queries where the candidate is
      better, worse, or within ``TOLERANCE`` (the direction is ``COMPARED_METRICS``'s).
    - ``p_value``, ``method``: ``paired.sign_flip_test`` of d (two-sided).
    - ``p_adjusted``: Holm-adjusted across the categories of one (candidate, metric), the
      family being the categories with a p-value; for ``overall`` it is ``p_value`` (not part
      of the family: it pools the same queries).
    - ``ci_low``, ``ci_high``: ``paired.bootstrap_ci`` of the mean of d (95%).

    A scope with no paired query has ``n`` 0, wins/losses/ties 0 and every other value null.

    Returns:
        A frame of ``COMPARISON_COLUMNS`` ordered by candidate, scope, metric.

    Raises:
        EvalError: as ``paired_deltas``, or a metric is not one of ``COMPARED_METRICS``.
    """
    unknown = [m for m in metrics if m not in COMPARED_METRICS]
    if unknown:
        raise EvalError(f"expected metrics of {list(COMPARED_METRICS)}, found {unknown[0]!r}")
    compared = {m: b for m, b in COMPARED_METRICS.items() if not metrics or m in metrics}
    frame = _checked(per_query, profiles)
    deltas = _deltas(frame, profiles, tuple(compared))
    categories = sorted(
        frame.filter(pl.col("profile") == profiles[0])["category"].drop_nulls().unique().to_list()
    )
    # The deltas come in query_id order within a (candidate, metric), so every cell lists its
    # differences in query_id order: the order the sign-flip test's draws are matched with.
    cells: dict[tuple[str, str, str], list[tuple[float, float, float]]] = {}
    for candidate, category, metric, b, c, d in deltas.select(
        "candidate", "category", "metric", "baseline_value", "candidate_value", "delta"
    ).iter_rows():
        if category is not None:  # a query without a category counts in overall only
            cells.setdefault((candidate, category, metric), []).append((b, c, d))
        cells.setdefault((candidate, OVERALL, metric), []).append((b, c, d))
    rows = []
    for candidate in profiles[1:]:
        for scope in (OVERALL, *categories):
            for metric, better in compared.items():
                triples = cells.get((candidate, scope, metric), [])
                rows.append(_comparison(profiles[0], candidate, scope, metric, better, triples))
    _adjust(rows)
    return pl.DataFrame(rows, schema=COMPARISON_COLUMNS, orient="row")


def _comparison(
    baseline: str,
    candidate: str,
    scope: str,
    metric: str,
    better: Better,
    triples: list[tuple[float, float, float]],
) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(COMPARISON_COLUMNS)
    row.update(baseline=baseline, candidate=candidate, scope=scope, metric=metric)
    row.update(n=len(triples), wins=0, losses=0, ties=0)
    if not triples:
        return row
    baseline_values, candidate_values, differences = zip(*triples, strict=True)
    sign = 1.0 if better == "higher" else -1.0
    wins = sum(1 for d in differences if sign * d > TOLERANCE)
    losses = sum(1 for d in differences if sign * d < -TOLERANCE)
    test = sign_flip_test(differences)
    ci_low, ci_high = bootstrap_ci(differences)
    row.update(
        baseline_mean=mean(baseline_values),
        candidate_mean=mean(candidate_values),
        delta=mean(differences),
        wins=wins,
        losses=losses,
        ties=len(triples) - wins - losses,
        p_value=test.p_value,
        method=test.method,
        ci_low=ci_low,
        ci_high=ci_high,
    )
    return row


def _adjust(rows: list[dict[str, Any]]) -> None:
    """Fill ``p_adjusted``: Holm across the categories of each (candidate, metric)."""
    families: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        if row["scope"] == OVERALL:
            row["p_adjusted"] = row["p_value"]
        else:
            families.setdefault((row["candidate"], row["metric"]), []).append(row)
    for family in families.values():
        for row, adjusted in zip(
            family, holm_adjust([row["p_value"] for row in family]), strict=True
        ):
            row["p_adjusted"] = adjusted


def _checked(per_query: FrameLike, profiles: Sequence[str]) -> pl.DataFrame:
    """``per_query`` in ``PROFILE_PER_QUERY_COLUMNS``, restricted to ``profiles``, checked."""
    names = list(profiles) if not isinstance(profiles, str) else [profiles]
    if (
        len(names) < 2
        or len(set(names)) != len(names)
        or not all(isinstance(name, str) and name for name in names)
    ):
        raise EvalError(
            "expected profiles to be two or more distinct non-empty names, baseline first, "
            f"found profiles={profiles!r}"
        )
    frame = canonical(per_query, PROFILE_PER_QUERY_COLUMNS, "per_query")
    for column in ("profile", "query_id", "metric", "applicable"):  # category: null = none
        nulls = frame[column].null_count()
        if nulls:
            raise EvalError(f"expected per_query {column} non-null, found {nulls} null(s)")
    present = set(frame["profile"].unique().to_list())
    absent = [name for name in names if name not in present]
    if absent:
        raise EvalError(
            f"expected per_query rows of every profile of profiles={names!r}, "
            f"found none of {absent} (present: {sorted(present)})"
        )
    frame = frame.filter(pl.col("profile").is_in(names))
    _check_values(frame)
    _check_coverage(frame, names)
    return frame


def _check_values(frame: pl.DataFrame) -> None:
    metric, value = pl.col("metric"), pl.col("value")
    unknown = frame.filter(~metric.is_in(list(METRICS)))
    if unknown.height:
        raise EvalError(
            f"expected per_query metrics of METRICS, found metric={unknown['metric'][0]!r}"
        )
    if frame.filter(pl.col("category") == OVERALL).height:
        raise EvalError(f"expected no per_query category named {OVERALL!r}, found one")
    repeated = frame.filter(pl.struct("profile", "query_id", "metric").is_duplicated())
    if repeated.height:
        first = repeated.sort("profile", "query_id", "metric").row(0, named=True)
        raise EvalError(
            "expected (profile, query_id, metric) unique in per_query, found "
            f"{repeated.height} repeated row(s), e.g. profile={first['profile']!r}, "
            f"query_id={first['query_id']!r}, metric={first['metric']!r}"
        )
    infinite = frame.filter(value.is_not_null() & ~value.is_finite())
    outside = frame.filter(value.is_not_null() & ~value.is_between(0.0, MAX_VALUE))
    if infinite.height or outside.height:
        first = (
            (infinite if infinite.height else outside)
            .sort("profile", "query_id", "metric")
            .row(0, named=True)
        )
        expected = "finite per_query values" if infinite.height else "per_query values in "
        expected += "" if infinite.height else f"[0, {MAX_VALUE:g}]"
        raise EvalError(
            f"expected {expected}, found value={first['value']!r} for "
            f"profile={first['profile']!r}, query_id={first['query_id']!r}, "
            f"metric={first['metric']!r}"
        )


def _check_coverage(frame: pl.DataFrame, names: list[str]) -> None:
    """Refuse a profile whose (query_id, category, metric, applicable) rows differ."""
    baseline = frame.filter(pl.col("profile") == names[0]).select(_KEY)
    for candidate in names[1:]:
        rows = frame.filter(pl.col("profile") == candidate).select(_KEY)
        only_candidate = rows.join(baseline, on=_KEY, how="anti", nulls_equal=True)
        only_baseline = baseline.join(rows, on=_KEY, how="anti", nulls_equal=True)
        if only_candidate.height or only_baseline.height:
            raise EvalError(
                f"expected profile {candidate!r} to cover the same queries as the baseline "
                f"{names[0]!r} (rows of query_id, category, metric, applicable), found "
                f"{only_candidate.height} row(s) only in {candidate!r}"
                f"{_example(only_candidate)} and {only_baseline.height} only in "
                f"{names[0]!r}{_example(only_baseline)}"
            )


def _example(rows: pl.DataFrame) -> str:
    if not rows.height:
        return ""
    first: Mapping[str, Any] = rows.sort(_KEY).row(0, named=True)
    return (
        f" (e.g. query_id={first['query_id']!r}, category={first['category']!r}, "
        f"metric={first['metric']!r}, applicable={first['applicable']!r})"
    )
