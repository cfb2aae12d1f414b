"""TREC run and qrels files: the exact text written, the round trip, every reader problem, the
tie order, and the paired comparison of two TREC runs."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from hotmem_eval.compare_runs import compare_trec_runs, trec_per_query
from hotmem_eval.errors import EvalError, FixtureError, Problem, UsageError
from hotmem_eval.metrics import per_query_metrics
from hotmem_eval.trec_output import (
    TREC_QRELS_COLUMNS,
    TREC_RUN_COLUMNS,
    check_run_names,
    check_trec_ids,
    qrels_text,
    rank_as_trec_eval,
    run_text,
    write_qrels,
    write_run,
)
from hotmem_eval.trec_read import MAX_PROBLEMS, read_qrels, read_run

RESULTS = pl.DataFrame(
    {
        "query_id": ["q2", "q1", "q10", "q1"],
        "rank": [1, 2, 1, 1],
        "memory_id": ["m-a", "m-b", "m-c", "m-d"],
        "score": [0.5, 0.1 + 0.2, 1e-05, 1.0],
        "identifier": ["x", "x", "x", "x"],  # ignored
    },
    schema_overrides={"rank": pl.Int32},
)
QRELS = pl.DataFrame(
    {
        "query_id": ["q2", "q1", "q1", "q10"],
        "memory_id": ["m-a", "m-d", "m-b", "m-x"],
        "grade": [0, 3, 1, 12],
    },
    schema_overrides={"grade": pl.Int32},
)


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


# --- writing ------------------------------------------------------------------------------


def test_run_text_is_six_columns_in_query_then_rank_order() -> None:
    # Byte order of the ids: q1 < q10 < q2. Scores are repr(float): 0.1 + 0.2 keeps its digits.
    assert run_text(RESULTS, "bm25-only") == (
        "q1 Q0 m-d 1 1.0 bm25-only\n"
        "q1 Q0 m-b 2 0.30000000000000004 bm25-only\n"
        "q10 Q0 m-c 1 1e-05 bm25-only\n"
        "q2 Q0 m-a 1 0.5 bm25-only\n"
    )


def test_qrels_text_is_four_columns_sorted_by_ids() -> None:
    assert qrels_text(QRELS) == ("q1 0 m-b 1\nq1 0 m-d 3\nq10 0 m-x 12\nq2 0 m-a 0\n")


def test_the_writers_write_the_text_as_utf8_with_newlines(tmp_path: Path) -> None:
    results = RESULTS.with_columns(memory_id=pl.lit("mémoire-") + pl.col("memory_id"))
    write_run(results, tmp_path / "run.trec", "default")
    write_qrels(QRELS, tmp_path / "qrels.trec")
    assert (tmp_path / "run.trec").read_bytes() == run_text(results, "default").encode()
    assert (tmp_path / "qrels.trec").read_bytes() == qrels_text(QRELS).encode()


def test_an_empty_run_is_an_empty_file(tmp_path: Path) -> None:
    write_run(RESULTS.clear(), tmp_path / "run.trec", "default")
    assert (tmp_path / "run.trec").read_bytes() == b""
    assert read_run(tmp_path / "run.trec").height == 0


@pytest.mark.parametrize(
    "name",
    ["", "two words", "a/b", "../up", ".hidden", "-flag", "+plus", "tab\t", "é", "x" * 65],
)
def test_a_run_name_that_is_not_a_safe_file_name_is_refused(name: str) -> None:
    with pytest.raises(UsageError) as raised:
        run_text(RESULTS, name)
    assert str(raised.value) == (
        f"cannot write a TREC run named {name!r}: its name is the file name runs/<name>.trec "
        "and the run's sixth column, so it must be 1..64 ASCII letters, digits, '.', '_', '+' "
        "or '-', starting with a letter, digit or '_'"
    )


def test_safe_run_names_pass() -> None:
    check_run_names(["default", "bm25-only", "rrf", "default-no-vector", "_x.1+2", "a" * 64])


def test_run_names_equal_but_for_case_are_refused() -> None:
    with pytest.raises(UsageError) as raised:
        check_run_names(["default", "rrf", "Default"])
    assert str(raised.value) == (
        "cannot write TREC runs named 'default' and 'Default': on a case-insensitive file "
        "system they are one file"
    )


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        ("memory_id", "two words", "holds whitespace or NUL, which would split a column"),
        ("memory_id", "tab\there", "holds whitespace or NUL, which would split a column"),
        ("memory_id", "nbsp\xa0here", "holds whitespace or NUL, which would split a column"),
        ("memory_id", "nul\x00", "holds whitespace or NUL, which would split a column"),
        ("memory_id", "", "is empty"),
        ("query_id", "line\nbreak", "holds whitespace or NUL, which would split a column"),
        ("query_id", "#7", "starts with '#', which trec_eval reads as a comment line"),
    ],
)
def test_an_id_that_would_change_the_columns_is_refused(
    column: str, value: str, reason: str
) -> None:
    results = RESULTS.with_columns(
        pl.when(pl.col("memory_id") == "m-c")
        .then(pl.lit(value))
        .otherwise(pl.col(column))
        .alias(column)
    )
    with pytest.raises(UsageError) as raised:
        run_text(results, "default")
    assert str(raised.value) == f"cannot write the TREC run: {column}={value!r} {reason}"
    qrels = QRELS.with_columns(
        pl.when(pl.col("memory_id") == "m-x")
        .then(pl.lit(value))
        .otherwise(pl.col(column))
        .alias(column)
    )
    with pytest.raises(UsageError) as raised:
        qrels_text(qrels)
    assert str(raised.value) == f"cannot write the TREC qrels: {column}={value!r} {reason}"


def test_ids_can_be_checked_before_a_run() -> None:
    check_trec_ids(["q1", "q2"], ["#1", "mémoire", "m-2"])
    with pytest.raises(UsageError) as raised:
        check_trec_ids(["q1"], ["m 2", "a b"])
    assert str(raised.value) == (
        "cannot write the TREC files: memory_id='a b' holds whitespace or NUL, which would "
        "split a column"
    )


def test_a_hash_inside_a_memory_id_is_written() -> None:
    results = RESULTS.with_columns(memory_id=pl.lit("#") + pl.col("memory_id"))
    assert run_text(results, "default").startswith("q1 Q0 #m-d 1 1.0 default\n")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"score": [0.5, math.inf, 1.0, 1.0]},
            "expected finite run scores, found score=inf",
        ),
        (
            {"score": [0.5, math.nan, 1.0, 1.0]},
            "expected finite run scores, found score=nan",
        ),
        (
            {"score": [0.5, None, 1.0, 1.0]},
            "expected run score non-null, found 1 null(s)",
        ),
        (
            {"memory_id": ["m-a", "m-d", "m-c", "m-d"]},
            "expected each (query_id, memory_id) once in the run, found query_id='q1', "
            "memory_id='m-d' 2 times",
        ),
        (
            {"rank": [1, 1, 1, 1]},
            "expected each (query_id, rank) once in the run, found a repeat",
        ),
    ],
)
def test_a_results_frame_that_breaks_a_rule_is_refused(
    change: dict[str, list[object]], message: str
) -> None:
    results = RESULTS.with_columns(
        pl.Series(name, values, dtype=RESULTS.schema[name]) for name, values in change.items()
    )
    with pytest.raises(EvalError) as raised:
        run_text(results, "default")
    assert str(raised.value) == message


def test_a_missing_column_and_a_negative_grade_are_refused() -> None:
    with pytest.raises(EvalError, match="score"):
        run_text(RESULTS.drop("score"), "default")
    with pytest.raises(EvalError) as raised:
        qrels_text(QRELS.with_columns(grade=pl.lit(-1, pl.Int32)))
    assert str(raised.value) == "expected grades >= 0, found grade=-1"


# --- the round trip -----------------------------------------------------------------------

_ID = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=8).filter(
    lambda s: "\x00" not in s and not any(c.isspace() for c in s)
)
_QUERY_ID = _ID.filter(lambda s: not s.startswith("#"))


_FINITE = st.floats(allow_nan=False, allow_infinity=False)
#: Few distinct values, so that ties are common; -0.0 ties with 0.0.
_TIED = st.sampled_from([0.0, -0.0, 0.5, 1.0])


@st.composite
def result_frames(draw: st.DrawFn, scores: st.SearchStrategy[float] = _FINITE) -> pl.DataFrame:
    """Results of a few queries: unique memories per query, ranks 1..n, finite scores."""
    rows = []
    for query_id in draw(st.lists(_QUERY_ID, max_size=4, unique=True)):
        memories = draw(st.lists(_ID, max_size=5, unique=True))
        values = draw(st.lists(scores, min_size=len(memories), max_size=len(memories)))
        rows += [
            (query_id, rank, memory_id, score)
            for rank, (memory_id, score) in enumerate(zip(memories, values, strict=True), 1)
        ]
    return pl.DataFrame(
        rows,
        schema={
            "query_id": pl.String,
            "rank": pl.Int64,
            "memory_id": pl.String,
            "score": pl.Float64,
        },
        orient="row",
    )


@given(result_frames())
@example(
    pl.DataFrame(
        schema={
            "query_id": pl.String,
            "rank": pl.Int64,
            "memory_id": pl.String,
            "score": pl.Float64,
        }
    )
)
@example(
    pl.DataFrame(
        {
            "query_id": ["q", "q", "q"],
            "rank": [1, 2, 3],
            "memory_id": ["a", "b", "c"],
            "score": [-0.0, 5e-324, 1.7976931348623157e308],
        }
    )
)
def test_a_written_run_reads_back_as_the_same_rows(results: pl.DataFrame) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "run.trec"
        write_run(results, path, "run-1")
        back = read_run(path)
    assert back.schema == pl.Schema(TREC_RUN_COLUMNS)
    expected = results.sort("query_id", "rank").with_columns(run_name=pl.lit("run-1"))
    assert_frame_equal(back, expected)
    # Bit for bit, -0.0 included.
    assert [math.copysign(1, s) for s in back["score"]] == [
        math.copysign(1, s) for s in expected["score"]
    ]


@given(
    st.dictionaries(st.tuples(_QUERY_ID, _ID), st.integers(0, 2**31 - 1), min_size=1, max_size=12)
)
def test_written_qrels_read_back_as_the_same_rows(grades: dict[tuple[str, str], int]) -> None:
    qrels = pl.DataFrame(
        [(q, m, g) for (q, m), g in grades.items()], schema=TREC_QRELS_COLUMNS, orient="row"
    )
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "qrels.trec"
        write_qrels(qrels, path)
        back = read_qrels(path)
    assert_frame_equal(back, qrels.sort("query_id", "memory_id"))


def test_reading_skips_blank_lines_a_bom_and_carriage_returns(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "run.trec",
        "\ufeffq1 Q0 d1 1 2.5 r\r\n\n   \r\nq1\tQ0  d2\t7\t+1.5E+2 r\r\nq2 x d3 -3 .5 r",
    )
    assert read_run(path).rows() == [
        ("q1", 1, "d1", 2.5, "r"),
        ("q1", 7, "d2", 150.0, "r"),
        ("q2", -3, "d3", 0.5, "r"),
    ]
    qrels = write(tmp_path, "qrels", "q2 0 d1 2\r\n\nq1 iter d9 0\n")
    assert read_qrels(qrels).rows() == [("q1", "d9", 0), ("q2", "d1", 2)]


# --- reader problems ----------------------------------------------------------------------

RUN_COLUMNS = (
    "2: expected 6 whitespace-separated columns (query_id Q0 memory_id rank score run_name), found "
)
QRELS_COLUMNS = (
    "2: expected 4 whitespace-separated columns (query_id iteration memory_id grade), found "
)
RUN_PROBLEMS = [
    (
        "q1 Q0 d1 1 2.0\n",
        [RUN_COLUMNS + "5"],
    ),
    (
        "q1 Q0 d1 1 2.0 r extra\n",
        [RUN_COLUMNS + "7"],
    ),
    ("q1 Q0 d2 1.0 2.0 r\n", ["2: expected an integer rank, found rank='1.0'"]),
    ("q1 Q0 d2 one 2.0 r\n", ["2: expected an integer rank, found rank='one'"]),
    ("q1 Q0 d2 2 abc r\n", ["2: expected a finite decimal score, found score='abc'"]),
    ("q1 Q0 d2 2 nan r\n", ["2: expected a finite decimal score, found score='nan'"]),
    ("q1 Q0 d2 2 inf r\n", ["2: expected a finite decimal score, found score='inf'"]),
    ("q1 Q0 d2 2 1e999 r\n", ["2: expected a finite decimal score, found score='1e999'"]),
    ("q1 Q0 d2 2 1_0 r\n", ["2: expected a finite decimal score, found score='1_0'"]),
    ("q1 Q0 d2 2 0x1p3 r\n", ["2: expected a finite decimal score, found score='0x1p3'"]),
    (
        "q1 Q0 d2 x y r\n",
        [
            "2: expected an integer rank, found rank='x'",
            "2: expected a finite decimal score, found score='y'",
        ],
    ),
    (
        "q1 Q0 d1 2 1.0 r\n",
        [
            "2: expected each memory once per query, found query_id='q1', memory_id='d1' again "
            "(first on line 1)"
        ],
    ),
    (
        "q1 Q0 d2 2 1.0 other\n",
        ["2: expected one run name per file, found run_name='other' (line 1: 'r')"],
    ),
    (
        b"q1 Q0 d\xff 2 1.0 r\n",
        ["2: expected UTF-8 text, found byte 0xff at column 8 (invalid start byte)"],
    ),
]


@pytest.mark.parametrize(("second_line", "problems"), RUN_PROBLEMS)
def test_every_run_problem_is_reported_with_its_line(
    tmp_path: Path, second_line: str | bytes, problems: list[str]
) -> None:
    first = b"q1 Q0 d1 1 3.0 r\n"
    rest = second_line if isinstance(second_line, bytes) else second_line.encode()
    path = write(tmp_path, "run.trec", first + rest + b"q2 Q0 d1 1 1.0 r\n")
    with pytest.raises(FixtureError) as raised:
        read_run(path)
    assert [str(p) for p in raised.value.problems] == [f"{path}:{p}" for p in problems]


QRELS_PROBLEMS = [
    (
        "q1 0 d2\n",
        [QRELS_COLUMNS + "3"],
    ),
    (
        "q1 0 d2 1 x\n",
        [QRELS_COLUMNS + "5"],
    ),
    (
        "q1 0 d2 1.5\n",
        ["2: expected an integer grade up to 2147483647, found grade='1.5'"],
    ),
    (
        "q1 0 d2 high\n",
        ["2: expected an integer grade up to 2147483647, found grade='high'"],
    ),
    (
        "q1 0 d2 2147483648\n",
        ["2: expected an integer grade up to 2147483647, found grade='2147483648'"],
    ),
    (
        "q1 0 d1 0\n",
        [
            "2: expected one grade per (query_id, memory_id), found query_id='q1', "
            "memory_id='d1' again (first on line 1)"
        ],
    ),
]


@pytest.mark.parametrize(("second_line", "problems"), QRELS_PROBLEMS)
def test_every_qrels_problem_is_reported_with_its_line(
    tmp_path: Path, second_line: str, problems: list[str]
) -> None:
    path = write(tmp_path, "qrels", "q1 0 d1 1\n" + second_line + "q2 0 d1 1\n")
    with pytest.raises(FixtureError) as raised:
        read_qrels(path)
    assert [str(p) for p in raised.value.problems] == [f"{path}:{p}" for p in problems]


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_qrels_without_a_judgment_are_refused(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, "qrels", text)
    with pytest.raises(FixtureError) as raised:
        read_qrels(path)
    assert str(raised.value) == f"{path}: expected at least one judgment line, found none"


@pytest.mark.parametrize(("reader", "kind"), [(read_run, "run"), (read_qrels, "qrels")])
def test_a_file_that_cannot_be_read_is_one_problem(
    tmp_path: Path, reader: Callable[[Path], pl.DataFrame], kind: str
) -> None:
    with pytest.raises(FixtureError) as raised:
        reader(tmp_path / "absent")
    assert (
        str(raised.value)
        == f"{tmp_path / 'absent'}: expected a TREC {kind} file, found no such file"
    )
    with pytest.raises(FixtureError) as raised:
        reader(tmp_path)
    assert str(raised.value) == f"{tmp_path}: expected a TREC {kind} file, found a directory"


def test_a_reader_stops_after_max_problems(tmp_path: Path) -> None:
    path = write(tmp_path, "run.trec", "bad line\n" * (MAX_PROBLEMS + 5))
    with pytest.raises(FixtureError) as raised:
        read_run(path)
    problems = [str(p) for p in raised.value.problems]
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1] == f"{path}: stopped reading at line {MAX_PROBLEMS + 1}, after 20 problems"
    # Exactly MAX_PROBLEMS, with nothing after them: no "stopped" line.
    path = write(tmp_path, "run2.trec", "bad line\n" * MAX_PROBLEMS + "\n")
    with pytest.raises(FixtureError) as raised:
        read_run(path)
    assert len(raised.value.problems) == MAX_PROBLEMS


# --- ties ---------------------------------------------------------------------------------


def test_ties_are_written_as_ranked_and_trec_eval_reverses_them(tmp_path: Path) -> None:
    """HotMem breaks a score tie by memory_id ascending; trec_eval by document id descending.

    The file keeps our ranks and our equal scores; trec_eval (and ir_measures) reads the tied
    pair the other way round, so the relevant m-b is first for it and second in our report.
    """
    results = pl.DataFrame(
        {"query_id": ["q", "q"], "rank": [1, 2], "memory_id": ["m-a", "m-b"], "score": [0.5, 0.5]}
    )
    assert run_text(results, "default") == "q Q0 m-a 1 0.5 default\nq Q0 m-b 2 0.5 default\n"
    write_run(results, tmp_path / "run.trec", "default")
    run = read_run(tmp_path / "run.trec")
    assert rank_as_trec_eval(run)["memory_id"].to_list() == ["m-b", "m-a"]

    qrels = pl.DataFrame(
        {"query_id": ["q"], "memory_id": ["m-b"], "grade": [1]},
        schema=TREC_QRELS_COLUMNS,
    )
    queries = pl.DataFrame(
        {"query_id": ["q"], "category": [None], "identifier": [None]},
        schema={"query_id": pl.String, "category": pl.String, "identifier": pl.String},
    )
    groups = pl.DataFrame(
        schema={"query_id": pl.String, "memory_id": pl.String, "group_id": pl.String}
    )
    ours = per_query_metrics(
        results.with_columns(identifier=pl.lit(None, pl.String)),
        qrels,
        queries,
        groups,
        k=2,
        relevant_grade=1,
    )
    theirs = trec_per_query(run, qrels, k=2, relevant_grade=1)
    rr = pl.col("metric") == "mrr_at_k"
    assert ours.filter(rr)["value"].to_list() == [0.5]
    assert theirs.filter(rr)["value"].to_list() == [1.0]


@given(result_frames(_TIED))
def test_trec_eval_order_is_a_sort_by_score_then_memory_id_descending(run: pl.DataFrame) -> None:
    # The naive reference: stable sorts, last key first (str order is code point order, which
    # is UTF-8 byte order, strcmp's).
    rows = sorted(run.iter_rows(), key=lambda row: row[2], reverse=True)
    rows.sort(key=lambda row: row[3], reverse=True)
    rows.sort(key=lambda row: row[0])
    ranks: dict[str, int] = {}
    expected = []
    for query_id, _, memory_id, score in rows:
        ranks[query_id] = ranks.get(query_id, 0) + 1
        expected.append((query_id, ranks[query_id], memory_id, score))
    assert rank_as_trec_eval(run).rows() == expected


def test_ir_measures_reads_the_files_and_breaks_ties_as_the_docstring_says(
    tmp_path: Path,
) -> None:
    import ir_measures
    from ir_measures import AP, RR, R, nDCG
    from ir_measures import P as Precision

    # q: m-a and m-b tie; only m-b (and m-c, below them) is relevant.
    results = pl.DataFrame(
        {
            "query_id": ["q", "q", "q", "r"],
            "rank": [1, 2, 3, 1],
            "memory_id": ["m-a", "m-b", "m-c", "x"],
            "score": [0.5, 0.5, 0.1, 1.0],
        }
    )
    qrels = pl.DataFrame(
        {"query_id": ["q", "q", "r"], "memory_id": ["m-b", "m-c", "y"], "grade": [1, 2, 1]},
        schema=TREC_QRELS_COLUMNS,
    )
    write_run(results, tmp_path / "run.trec", "default")
    write_qrels(qrels, tmp_path / "qrels.trec")
    measured = {
        (m.query_id, str(m.measure)): m.value
        for m in ir_measures.iter_calc(
            [nDCG @ 2, AP @ 2, Precision @ 2, R @ 2, RR @ 2],
            list(ir_measures.read_trec_qrels(str(tmp_path / "qrels.trec"))),
            list(ir_measures.read_trec_run(str(tmp_path / "run.trec"))),
        )
    }
    theirs = trec_per_query(
        read_run(tmp_path / "run.trec"), read_qrels(tmp_path / "qrels.trec"), k=2, relevant_grade=1
    )
    value = {(q, metric): v for q, metric, v in theirs.select("query_id", "metric", "value").rows()}
    # pytrec_eval's measures rank m-b first, as rank_as_trec_eval does.
    for metric, measure in [
        ("ndcg_at_k", "nDCG@2"),
        ("ap_at_k", "AP@2"),
        ("precision_at_k", "P@2"),
        ("recall_at_k", "R@2"),
    ]:
        for query_id in ("q", "r"):
            expected = value[(query_id, metric)]
            assert measured[(query_id, measure)] == pytest.approx(expected, rel=0, abs=1e-12)
    assert value[("q", "ap_at_k")] == 0.5  # m-b relevant at rank 1: (1/2) * (1/1)
    # RR@2 comes from the msmarco provider: ties by id ascending, m-a first, as HotMem ranks.
    assert (measured[("q", "RR@2")], value[("q", "mrr_at_k")]) == (0.5, 1.0)


def test_trec_eval_order_is_score_then_memory_id_descending_whatever_the_ranks() -> None:
    run = pl.DataFrame(
        {
            "query_id": ["q2", "q1", "q1", "q1", "q1"],
            "rank": [9, 1, 1, 1, 1],
            "memory_id": ["x", "b", "c", "a", "d"],
            "score": [1.0, 0.0, 2.0, -0.0, 0.0],
        }
    )
    assert rank_as_trec_eval(run).rows() == [
        ("q1", 1, "c", 2.0),
        ("q1", 2, "d", 0.0),  # -0.0 ties with 0.0, as in C
        ("q1", 3, "b", 0.0),
        ("q1", 4, "a", -0.0),
        ("q2", 1, "x", 1.0),
    ]


# --- comparing two TREC runs --------------------------------------------------------------

TREC_QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq3 0 d4 1\nq3 0 d5 1\n"
# base: q1 d2 (not relevant) then d1; q2 d3; q3 d4 then d9 (unjudged); q9 is not judged.
RUN_A = (
    "q1 Q0 d2 1 2.0 base\nq1 Q0 d1 2 1.0 base\nq2 Q0 d3 1 5.0 base\n"
    "q3 Q0 d4 1 1.0 base\nq3 Q0 d9 2 0.5 base\nq9 Q0 d1 1 1.0 base\n"
)
# cand: q1 d1 first; nothing for q2; q3 ties d4 and d5, both relevant. Ranks are ignored.
RUN_B = "q1 Q0 d1 7 3.0 cand\nq1 Q0 d2 7 1.0 cand\nq3 Q0 d4 7 0.7 cand\nq3 Q0 d5 7 0.7 cand\n"


def test_two_trec_runs_compare_over_the_judged_queries(tmp_path: Path) -> None:
    qrels = write(tmp_path, "qrels.txt", TREC_QRELS)
    a, b = write(tmp_path, "a.trec", RUN_A), write(tmp_path, "b.trec", RUN_B)
    out = compare_trec_runs(a, b, qrels, ks=[2])
    lines = out.splitlines()
    assert lines[:5] == [
        "# cand against base",
        "",
        f"RUN_A {a} (baseline), RUN_B {b} (candidate), judged by {qrels}: 3 judged queries, "
        "relevant grade >= 1, cutoffs 2.",
        "RUN_A ranks 3 of the judged queries, RUN_B 2 (a judged query a run does not rank "
        "returned nothing); queries not judged are left out (1 in RUN_A, 0 in RUN_B).",
        "Each run is ranked as trec_eval ranks it: by score descending, ties by memory_id "
        "descending.",
    ]
    # Per query (q1, q2, q3) at k = 2, base then cand:
    # recall 1, 1, 1/2 | 1, 0, 1      RR 1/2, 1, 1 | 1, 0, 1
    # nDCG (linear gain) 1/log2(3), 1, 1/(1 + 1/log2(3)) | 1, 0, 1
    # P@2 1/2, 1/2, 1/2 | 1, 0, 1     AP@2 1/2, 1, 1/2 | 1, 0, 1
    # Two non-zero differences of opposite sign: every sign assignment reaches |sum|, p = 1.
    for row in [
        "| R@2 | overall | 3 | 0.833 | 0.667 | -0.167 | 1/1/1 | 1.000 | 1.000 |",
        "| MRR@2 | overall | 3 | 0.833 | 0.667 | -0.167 | 1/1/1 | 1.000 | 1.000 |",
        "| nDCG@2 | overall | 3 | 0.748 | 0.667 | -0.081 | 2/1/0 | 1.000 | 1.000 |",
        "| P@2 | overall | 3 | 0.500 | 0.500 | 0.000 | 1/1/1 | 1.000 | 1.000 |",
        "| AP@2 | overall | 3 | 0.667 | 0.667 | 0.000 | 2/1/0 | 1.000 | 1.000 |",
    ]:
        assert row in lines
    table = [line for line in lines if line.startswith("| ") and "---" not in line]
    assert {line.split(" | ")[1] for line in table[1:]} == {"overall"}
    assert [line.split(" | ")[0] for line in table[1:]] == [
        "| R@1",
        "| R@2",
        "| MRR@2",
        "| nDCG@2",
        "| P@2",
        "| AP@2",
    ]  # no group metric: TREC qrels have no groups
    assert "## k =" not in out


def test_a_negative_grade_is_left_out_of_a_comparison_with_a_warning(tmp_path: Path) -> None:
    plain = write(tmp_path, "plain.txt", TREC_QRELS)
    pooled = write(tmp_path, "pooled.txt", TREC_QRELS + "q1 0 d9 -1\nq4 0 d1 -2\n")
    a, b = write(tmp_path, "a.trec", RUN_A), write(tmp_path, "b.trec", RUN_B)
    before = compare_trec_runs(a, b, plain, ks=[2]).splitlines()
    after = compare_trec_runs(a, b, pooled, ks=[2]).splitlines()
    warning = (
        f"Warning: {pooled}:6: 2 judgements with a negative grade left out (this line is the "
        "first): trec_eval reads a negative grade as pooled but not judged, never relevant."
    )
    assert after[5] == warning
    assert after[:2] + after[3:5] + after[6:] == before[:2] + before[3:]
    only = write(tmp_path, "only.txt", "q1 0 d1 -1\n")
    with pytest.raises(FixtureError) as raised:
        compare_trec_runs(a, b, only, ks=[2])
    assert [str(p) for p in raised.value.problems] == [
        f"{only}: expected at least one judgment line, found only 1 with a negative grade"
    ]


def test_several_cutoffs_give_one_table_each(tmp_path: Path) -> None:
    qrels = write(tmp_path, "qrels.txt", TREC_QRELS)
    a, b = write(tmp_path, "a.trec", RUN_A), write(tmp_path, "b.trec", RUN_B)
    out = compare_trec_runs(a, b, qrels, ks=[2, 1, 2])
    assert "cutoffs 1, 2." in out
    assert out.index("## k = 1") < out.index("| MRR@1 | overall | 3 | 0.667 | 0.667 |")
    assert out.index("## k = 2") < out.index("| MRR@2 | overall | 3 | 0.833 | 0.667 |")


def test_runs_of_one_name_are_told_apart_by_file(tmp_path: Path) -> None:
    qrels = write(tmp_path, "qrels.txt", TREC_QRELS)
    a = write(tmp_path, "a.trec", RUN_A)
    b = write(tmp_path, "b.trec", RUN_B.replace("cand", "base"))
    out = compare_trec_runs(a, b, qrels, ks=[2])
    assert out.startswith("# base@b.trec against base@a.trec\n")


def test_problems_of_all_three_files_are_reported_together(tmp_path: Path) -> None:
    qrels = write(tmp_path, "qrels.txt", "q1 0 d1 2.5\n")
    a = write(tmp_path, "a.trec", "q1 Q0 d1 1 x base\n")
    with pytest.raises(FixtureError) as raised:
        compare_trec_runs(a, tmp_path / "b.trec", qrels, ks=[10])
    assert [str(p) for p in raised.value.problems] == [
        f"{qrels}:1: expected an integer grade up to 2147483647, found grade='2.5'",
        f"{a}:1: expected a finite decimal score, found score='x'",
        f"{tmp_path / 'b.trec'}: expected a TREC run file, found no such file",
    ]


@pytest.mark.parametrize(
    ("ks", "grade", "message"),
    [
        ([], 1, "expected one or more cutoffs k >= 1, found ks=[]"),
        ([10, 0], 1, "expected one or more cutoffs k >= 1, found ks=[10, 0]"),
        ([True], 1, "expected one or more cutoffs k >= 1, found ks=[True]"),
        ([10], 0, "expected relevant_grade to be an int >= 1, found relevant_grade=0"),
    ],
)
def test_cutoffs_and_the_relevant_grade_are_checked_first(
    tmp_path: Path, ks: list[int], grade: int, message: str
) -> None:
    with pytest.raises(UsageError) as raised:
        compare_trec_runs(
            tmp_path / "a", tmp_path / "b", tmp_path / "q", ks=ks, relevant_grade=grade
        )
    assert str(raised.value) == message


def test_the_relevant_grade_decides_which_queries_pair(tmp_path: Path) -> None:
    qrels = write(tmp_path, "qrels.txt", TREC_QRELS)
    a, b = write(tmp_path, "a.trec", RUN_A), write(tmp_path, "b.trec", RUN_B)
    # Only q2's d3 is graded 2: one positive query, which cand does not rank.
    out = compare_trec_runs(a, b, qrels, ks=[2], relevant_grade=2)
    assert "| MRR@2 | overall | 1 | 1.000 | 0.000 | -1.000 | 0/1/0 | 1.000 | 1.000 |" in out
    out = compare_trec_runs(a, b, qrels, ks=[2], relevant_grade=3)
    assert out.endswith("No query was paired.\n")


def test_negative_grades_are_left_out_with_one_warning(tmp_path: Path) -> None:
    """As trec_eval reads them (pooled, not judged) and as the collection reader does."""
    path = write(tmp_path, "qrels", "q1 0 d1 1\nq1 0 d2 -1\nq2 0 d1 -2\nq2 0 d3 0\n")
    warnings: list[Problem] = []
    assert read_qrels(path, warnings).rows() == [("q1", "d1", 1), ("q2", "d3", 0)]
    assert [str(w) for w in warnings] == [
        f"{path}:2: 2 judgements with a negative grade left out (this line is the first): "
        "trec_eval reads a negative grade as pooled but not judged, never relevant"
    ]
    assert read_qrels(path).height == 2  # without a list, the warning is not kept
