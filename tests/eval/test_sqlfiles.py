"""The SQL files: registry, headers, and runs over Arrow data and Parquet files."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from hotmem_eval.errors import EvalError
from hotmem_eval.metric_registry import METRICS
from hotmem_eval.metrics import aggregate_metrics, per_query_metrics
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
from tests.eval.metric_frames import frames

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
    assert list(files) == ["per_query_metrics", "category_metrics"]
    assert [file.number for file in files.values()] == [1, 2]
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
def test_sql_matches_the_polars_engine(k: int) -> None:
    per_query, aggregate = sql_metrics(*DATA, k=k)
    expected = per_query_metrics(*DATA, k=k)
    assert_frame_equal(per_query, expected, abs_tol=1e-12, rel_tol=0)
    assert_frame_equal(aggregate, aggregate_metrics(expected), abs_tol=1e-12, rel_tol=0)


def test_sql_runs_over_parquet_files(tmp_path: Path) -> None:
    paths = {}
    for name, frame in DATA._asdict().items():
        paths[name] = tmp_path / f"{name}.parquet"
        frame.write_parquet(paths[name])
    per_query, aggregate = sql_metrics(**paths, k=5)
    expected = per_query_metrics(*DATA, k=5)
    assert_frame_equal(per_query, expected, abs_tol=1e-12, rel_tol=0)
    assert_frame_equal(aggregate, aggregate_metrics(expected), abs_tol=1e-12, rel_tol=0)


def test_sql_runs_over_arrow_tables_with_extra_columns() -> None:
    results = DATA.results.with_columns(grade=pl.lit(9, pl.Int8), components=pl.lit("x"))
    tables = [frame.to_arrow() for frame in (results, *DATA[1:])]
    per_query, _ = sql_metrics(*tables, k=5)
    assert_frame_equal(per_query, per_query_metrics(*DATA, k=5), abs_tol=1e-12, rel_tol=0)


def test_the_text_runs_as_is_after_set_variable() -> None:
    with duckdb.connect() as con:
        bind_inputs(con, **DATA._asdict())
        con.execute("SET VARIABLE k = 3")
        by_hand = con.sql(sql_file("per_query_metrics").text).pl()
        assert_frame_equal(by_hand, run_sql("per_query_metrics", con, k=3))


def test_per_query_sql_without_k_says_how_to_set_it() -> None:
    with duckdb.connect() as con:
        bind_inputs(con, **DATA._asdict())
        with pytest.raises(duckdb.Error, match="SET VARIABLE k"):
            con.sql(sql_file("per_query_metrics").text).pl()


@pytest.mark.parametrize("k", [0, True, 2.5])
def test_run_sql_rejects_a_bad_k(k: object) -> None:
    with duckdb.connect() as con, pytest.raises(EvalError, match="k to be an int >= 1"):
        run_sql("per_query_metrics", con, k=k)  # type: ignore[arg-type]


def test_category_sql_lists_every_metric_in_registry_order() -> None:
    empty = per_query_metrics(*frames({}))
    with duckdb.connect() as con:
        bind_inputs(con, per_query_metrics=empty)
        out = run_sql("category_metrics", con)
    assert out["category"].to_list() == ["overall"] * len(METRICS)
    assert out["metric"].to_list() == list(METRICS)
    assert out["query_count"].to_list() == [0] * len(METRICS)
