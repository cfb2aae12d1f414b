"""The SQL files: registry, headers, and runs over Arrow data and Parquet files."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from hotmem_eval.errors import EvalError
from hotmem_eval.metric_registry import METRICS, metrics_frame
from hotmem_eval.metrics import per_query_metrics
from hotmem_eval.sqlfiles import (
    HEADER_KEYS,
    SQL_DIR,
    bind_inputs,
    parse_header,
    run_sql,
    sql_file,
    sql_files,
    sql_metrics,
)
from tests.eval.metric_frames import expected, frames

DATA = frames(
    {
        "q1": ("exact_lexical", "acme"),
        "q2": ("near_duplicate_diversity", None),
        "q3": ("negative_or_no_answer", None),
        "q4": ("exact_lexical", None),
    },
    ranked={"q1": ["b", "x", "a", "y", "z", "c"], "q2": ["a", "b", "c"], "q3": ["x"]},
    grades={"q1": {"a": 3, "b": 2, "c": 1}, "q4": {"a": 2}},
    groups={"q2": {"a": "g", "b": "g"}},
    identifiers={"x": "globex"},
)


def test_registry_lists_the_files_in_number_order() -> None:
    files = sql_files()
    assert list(files) == ["per_query_metrics", "category_metrics", "paired_deltas"]
    assert [file.number for file in files.values()] == [1, 2, 3]
    for file in files.values():
        assert file.path.parent == SQL_DIR
        assert file.path.name == f"{file.number:03d}_{file.name}.sql"
        assert file.version >= 1
        assert file.inputs
        assert file.output
        assert file.text.startswith(f"-- name: {file.name}\n-- version: {file.version}\n")


@pytest.mark.parametrize("key", ["per_query_metrics", 1, "001", "001_per_query_metrics"])
def test_sql_file_by_name_number_or_stem(key: str | int) -> None:
    assert sql_file(key) is sql_files()["per_query_metrics"]


def test_sql_file_unknown_key() -> None:
    with pytest.raises(EvalError, match="key='nope'"):
        sql_file("nope")


HEADER = "-- name: x\n-- version: 2\n-- inputs: t\n-- output: rows\n"
PARSED = {"name": "x", "version": "2", "inputs": "t", "output": "rows"}

# (id, text, expected header or error pattern)
HEADER_CASES = [
    ("complete", HEADER + "SELECT 1", PARSED),
    ("extra_key_kept", HEADER + "-- owner: eval\nSELECT 1", {**PARSED, "owner": "eval"}),
    (
        "stops_at_first_other_line",
        "-- name: x\n\n-- version: 2\n",
        "missing \\['version', 'inputs', 'output'\\]",
    ),
    (
        "missing_output",
        "-- name: x\n-- version: 2\n-- inputs: t\n",
        "f.sql:1: .*missing \\['output'\\]",
    ),
    ("repeated_key", "-- name: x\n-- name: y\n", "f.sql:2: expected one 'name'"),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [case[1:] for case in HEADER_CASES],
    ids=[case[0] for case in HEADER_CASES],
)
def test_parse_header(text: str, expected: dict[str, str] | str) -> None:
    if isinstance(expected, dict):
        assert parse_header(text, "f.sql") == expected
        assert set(HEADER_KEYS) <= set(expected)
    else:
        with pytest.raises(EvalError, match=expected):
            parse_header(text, "f.sql")


# (id, files written, error pattern)
BAD_DIRECTORY_CASES = [
    ("misnamed", {"1_x.sql": HEADER}, "expected a file name NNN_name.sql"),
    ("name_differs", {"001_y.sql": HEADER}, "001_y.sql:1: expected name: y"),
    (
        "version_not_int",
        {"001_x.sql": HEADER.replace("version: 2", "version: two")},
        "integer version",
    ),
    (
        "number_twice",
        {"001_x.sql": HEADER, "001_z.sql": HEADER.replace("x", "z")},
        "one SQL file per number",
    ),
]


@pytest.mark.parametrize(
    ("files", "message"),
    [case[1:] for case in BAD_DIRECTORY_CASES],
    ids=[case[0] for case in BAD_DIRECTORY_CASES],
)
def test_bad_sql_directory(tmp_path: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(EvalError, match=message):
        sql_files(tmp_path)


@pytest.mark.parametrize("k", [1, 3, 5])
def test_sql_matches_the_reference(k: int) -> None:
    per_query, aggregate = sql_metrics(*DATA, k=k)
    expected_per_query, expected_aggregate = expected(DATA, k=k)
    assert_frame_equal(per_query, expected_per_query, abs_tol=1e-12, rel_tol=0)
    assert_frame_equal(aggregate, expected_aggregate, abs_tol=1e-12, rel_tol=0)


def test_sql_overall_figures_written_out() -> None:
    _, aggregate = sql_metrics(*DATA, k=5)
    overall = {
        row["metric"]: (row["value"], row["numerator"], row["denominator"], row["query_count"])
        for row in aggregate.filter(pl.col("category") == "overall").iter_rows(named=True)
    }
    # q1 (scoped to acme) returned [b, x, a, y, z] of grades {a: 3, b: 2, c: 1}; q4 returned
    # nothing of {a: 2}; q2 (near-duplicate, graded nothing, so negative too) returned [a, b, c]
    # with a and b in group g; q3 (negative) returned [x]. x is in globex, the others in acme.
    ndcg_q1 = (2 + 3 / 2) / (3 + 2 / math.log2(3) + 1 / 2)
    assert overall == {
        "recall_at_1": (pytest.approx(0.25), 1, 3, 2),
        "recall_at_k": (pytest.approx(0.5), 2, 3, 2),
        "success_at_1": (pytest.approx(0.5), 1, 2, 2),
        "success_at_k": (pytest.approx(0.5), 1, 2, 2),
        "mrr_at_k": (pytest.approx(0.5), None, None, 2),
        "ndcg_at_k": (pytest.approx(ndcg_q1 / 2), None, None, 2),
        # q1 holds 2 relevant of 5 slots, at ranks 1 and 3: P@5 2/5, AP@5 (1 + 2/3) / 2; q4 0.
        "precision_at_k": (pytest.approx(0.2), 2, 10, 2),
        "ap_at_k": (pytest.approx((1 + 2 / 3) / 2 / 2), None, None, 2),
        # No groups: q1 finds both of its singleton groups, q4 neither; alpha-nDCG is binary.
        "group_recall_at_k": (pytest.approx(0.5), 2, 3, 2),
        "alpha_ndcg_at_k": (pytest.approx(1.5 / (1 + 1 / math.log2(3)) / 2), None, None, 2),
        "negative_fpr_at_k": (pytest.approx(1.0), 2, 2, 2),
        "negative_returned_at_k": (pytest.approx(2.0), 4, 2, 2),
        "duplicate_slot_rate_at_k": (pytest.approx(1 / 3), 1, 3, 1),
        "scope_leak_rate_at_k": (pytest.approx(1 / 5), 1, 5, 1),
    }


def test_sql_runs_over_parquet_files(tmp_path: Path) -> None:
    paths = {}
    for name, frame in DATA._asdict().items():
        paths[name] = tmp_path / f"{name}.parquet"
        frame.write_parquet(paths[name])
    metrics_path = tmp_path / "metrics.parquet"
    metrics_frame().write_parquet(metrics_path)
    per_query, aggregate = sql_metrics(**paths, k=5, metrics=metrics_path)
    expected_per_query, expected_aggregate = expected(DATA, k=5)
    assert_frame_equal(per_query, expected_per_query, abs_tol=1e-12, rel_tol=0)
    assert_frame_equal(aggregate, expected_aggregate, abs_tol=1e-12, rel_tol=0)


def test_sql_runs_over_arrow_tables_with_extra_columns() -> None:
    results = DATA.results.with_columns(grade=pl.lit(9, pl.Int8), components=pl.lit("x"))
    tables = [frame.to_arrow() for frame in (results, *DATA[1:])]
    per_query, _ = sql_metrics(*tables, k=5, metrics=metrics_frame().to_arrow())
    assert_frame_equal(per_query, expected(DATA, k=5)[0], abs_tol=1e-12, rel_tol=0)


def test_the_text_runs_as_is_after_set_variable() -> None:
    with duckdb.connect() as con:
        bind_inputs(con, metrics=metrics_frame(), **DATA._asdict())
        con.execute("SET VARIABLE k = 3")
        con.execute("SET VARIABLE relevant_grade = 2")
        per_query = con.sql(sql_file("per_query_metrics").text).pl()
        con.register("per_query_metrics", per_query)
        aggregate = con.sql(sql_file("category_metrics").text).pl()
    expected_per_query, expected_aggregate = expected(DATA, k=3)
    assert_frame_equal(per_query, expected_per_query, abs_tol=1e-12, rel_tol=0)
    assert_frame_equal(aggregate, expected_aggregate, abs_tol=1e-12, rel_tol=0)


def test_per_query_sql_without_k_says_how_to_set_it() -> None:
    with duckdb.connect() as con:
        bind_inputs(con, metrics=metrics_frame(), **DATA._asdict())
        con.execute("SET VARIABLE relevant_grade = 2")
        with pytest.raises(duckdb.Error, match="SET VARIABLE k"):
            con.sql(sql_file("per_query_metrics").text).pl()


def test_per_query_sql_without_relevant_grade_says_how_to_set_it() -> None:
    # No default: a collection's rule (2 native, 1 BEIR/TREC) is never guessed.
    with duckdb.connect() as con:
        bind_inputs(con, metrics=metrics_frame(), **DATA._asdict())
        con.execute("SET VARIABLE k = 5")
        with pytest.raises(duckdb.Error, match="SET VARIABLE relevant_grade = 2"):
            con.sql(sql_file("per_query_metrics").text).pl()


@pytest.mark.parametrize("k", [0, True, 2.5, 2**31])
def test_run_sql_rejects_a_bad_k(k: object) -> None:
    with duckdb.connect() as con, pytest.raises(EvalError, match="k to be an int >= 1"):
        run_sql("per_query_metrics", con, k=k)  # type: ignore[arg-type]


@pytest.mark.parametrize("relevant_grade", [0, True, "2", 2**31])
def test_run_sql_rejects_a_bad_relevant_grade(relevant_grade: object) -> None:
    with (
        duckdb.connect() as con,
        pytest.raises(EvalError, match="relevant_grade to be an int >= 1"),
    ):
        run_sql("per_query_metrics", con, relevant_grade=relevant_grade)  # type: ignore[arg-type]


def test_category_sql_lists_every_metric_in_registry_order() -> None:
    empty = per_query_metrics(*frames({}))
    with duckdb.connect() as con:
        bind_inputs(con, metrics=metrics_frame(), per_query_metrics=empty)
        out = run_sql("category_metrics", con)
    assert out["category"].to_list() == ["overall"] * len(METRICS)
    assert out["metric"].to_list() == list(METRICS)
    assert out["query_count"].to_list() == [0] * len(METRICS)


def test_sql_order_follows_the_metrics_input() -> None:
    reversed_registry = metrics_frame().with_columns(
        metric_order=pl.len() + 1 - pl.col("metric_order")
    )
    per_query, aggregate = sql_metrics(*DATA, k=5, metrics=reversed_registry)
    order = list(reversed(METRICS))
    assert per_query["metric"].unique(maintain_order=True).to_list() == order
    assert aggregate["metric"].unique(maintain_order=True).to_list() == order


_REGISTRY = metrics_frame()
_EXTRA = _REGISTRY.tail(1).with_columns(
    metric=pl.lit("map_at_k"), metric_order=pl.lit(len(METRICS) + 1, pl.Int64)
)

# (id, metrics input, error pattern): the SQL refuses a registry it does not match.
BAD_METRICS_CASES = [
    (
        "metric_removed",
        _REGISTRY.filter(pl.col("metric") != "mrr_at_k"),
        "found metric='mrr_at_k' missing from it",
    ),
    ("metric_added", pl.concat([_REGISTRY, _EXTRA]), "found none for metric='map_at_k'"),
    (
        "unknown_applies_to",
        _REGISTRY.with_columns(applies_to=pl.lit("everyone")),
        "found applies_to='everyone' for metric='",
    ),
    (
        "unknown_aggregation",
        _REGISTRY.with_columns(aggregation=pl.lit("median")),
        "found aggregation='median' for metric='",
    ),
]


@pytest.mark.parametrize(
    ("metrics", "message"),
    [case[1:] for case in BAD_METRICS_CASES],
    ids=[case[0] for case in BAD_METRICS_CASES],
)
def test_sql_refuses_a_metrics_input_it_does_not_match(metrics: pl.DataFrame, message: str) -> None:
    with pytest.raises(duckdb.Error, match=message):
        sql_metrics(*DATA, k=5, metrics=metrics)


def test_category_sql_refuses_a_per_query_metric_not_in_metrics() -> None:
    per_query = per_query_metrics(*DATA).with_columns(
        metric=pl.when(pl.col("metric") == "ndcg_at_k").then(pl.lit("map_at_k")).otherwise("metric")
    )
    with duckdb.connect() as con:
        bind_inputs(con, metrics=metrics_frame(), per_query_metrics=per_query)
        with pytest.raises(duckdb.Error, match="found metric='map_at_k'"):
            run_sql("category_metrics", con)


def test_sql_of_no_queries_gives_no_rows_and_an_empty_overall() -> None:
    per_query, aggregate = sql_metrics(*frames({}), k=5)
    assert_frame_equal(per_query, per_query_metrics(*frames({})))
    assert aggregate["metric"].to_list() == list(METRICS)
    assert aggregate["query_count"].to_list() == [0] * len(METRICS)
