"""sql/003_paired_deltas.sql: the per-query deltas of two profiles, as the polars builder's."""

from __future__ import annotations

import functools
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hypothesis import given
from polars.testing import assert_frame_equal

from hotmem_eval.comparison import paired_deltas
from hotmem_eval.metric_registry import METRICS, metrics_frame
from hotmem_eval.sqlfiles import bind_inputs, sql_file
from tests.eval.test_comparison import PER_QUERY, _without, two_profiles


def sql_deltas(
    per_query: pl.DataFrame | Path,
    baseline: str | None,
    candidate: str | None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pl.DataFrame:
    """Run the file on ``con`` (a fresh connection by default) with these inputs bound."""
    if con is None:
        with duckdb.connect() as fresh:
            return sql_deltas(per_query, baseline, candidate, fresh)
    bind_inputs(con, metrics=metrics_frame(), per_query_metrics=per_query)
    if baseline is not None:
        con.execute("SET VARIABLE baseline = ?", [baseline])
    if candidate is not None:
        con.execute("SET VARIABLE candidate = ?", [candidate])
    return con.sql(sql_file("paired_deltas").text).pl()


@functools.cache
def shared_connection() -> duckdb.DuckDBPyConnection:
    """One connection for the property test's examples (opening one costs more than a query)."""
    return duckdb.connect()


def test_header() -> None:
    file = sql_file(3)
    assert (file.name, file.version) == ("paired_deltas", 2)
    assert "per_query_metrics(profile, query_id" in file.inputs
    assert file.output.startswith("one row per (query_id, metric) paired")


@pytest.mark.parametrize(("baseline", "candidate"), [("base", "cand"), ("cand", "base")])
def test_sql_agrees_with_the_polars_builder(baseline: str, candidate: str) -> None:
    expected = paired_deltas(PER_QUERY, profiles=[baseline, candidate], metrics=list(METRICS))
    # Subtraction is one IEEE operation in both engines: the same bits, not just close.
    assert_frame_equal(sql_deltas(PER_QUERY, baseline, candidate), expected, check_exact=True)


def test_sql_pairs_a_query_with_no_category_as_the_builder() -> None:
    # Version 2: a null category (the query has none) matches itself in the other profile.
    per_query = PER_QUERY.with_columns(
        category=pl.when(pl.col("query_id") == "q3").then(None).otherwise("category")
    )
    expected = paired_deltas(per_query, profiles=["base", "cand"], metrics=list(METRICS))
    assert expected["category"].null_count() > 0
    assert_frame_equal(sql_deltas(per_query, "base", "cand"), expected, check_exact=True)


@pytest.mark.slow
@given(two_profiles())
def test_sql_agrees_on_random_frames(per_query: pl.DataFrame) -> None:
    expected = paired_deltas(per_query, profiles=["a", "b"], metrics=list(METRICS))
    got = sql_deltas(per_query, "a", "b", shared_connection())
    assert_frame_equal(got, expected, check_exact=True)


def test_sql_runs_over_exported_parquet(tmp_path: Path) -> None:
    path = tmp_path / "per_query_metrics.parquet"
    PER_QUERY.write_parquet(path)
    expected = paired_deltas(PER_QUERY, profiles=["base", "cand"], metrics=list(METRICS))
    assert_frame_equal(sql_deltas(path, "base", "cand"), expected, check_exact=True)


# (id, per_query, baseline, candidate, error pattern)
BAD_CASES = [
    ("no_baseline", PER_QUERY, None, "cand", "needs the baseline profile: SET VARIABLE baseline"),
    (
        "no_candidate",
        PER_QUERY,
        "base",
        None,
        "needs the candidate profile: SET VARIABLE candidate",
    ),
    ("absent", PER_QUERY, "base", "rrf", "expected rows of profile 'rrf' in per_query_metrics"),
    (
        "query_missing",
        _without(PER_QUERY, "cand", "q3"),
        "base",
        "cand",
        f"found {len(METRICS)} only in the baseline, e.g. query_id='q3' metric='{min(METRICS)}'",
    ),
    (
        "query_extra",
        _without(PER_QUERY, "base", "q3"),
        "base",
        "cand",
        f"found {len(METRICS)} only in the candidate, e.g. query_id='q3' metric='{min(METRICS)}'",
    ),
    (
        "unknown_metric",
        PER_QUERY.with_columns(metric=pl.lit("map_at_k")),
        "base",
        "cand",
        "found metric='map_at_k'",
    ),
]


@pytest.mark.parametrize(
    ("per_query", "baseline", "candidate", "message"),
    [case[1:] for case in BAD_CASES],
    ids=[case[0] for case in BAD_CASES],
)
def test_sql_refuses_what_the_builder_refuses(
    per_query: pl.DataFrame, baseline: str | None, candidate: str | None, message: str
) -> None:
    with pytest.raises(duckdb.Error, match=message):
        sql_deltas(per_query, baseline, candidate)
