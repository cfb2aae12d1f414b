"""The metric engines on any graded collection: the relevant grade, grades above 3, queries
without a category, and the ``k`` column of outputs at several cutoffs (issue 29, decisions 1,
2 and 4). Each case is checked in the three engines: polars, the SQL files and the reference."""

from __future__ import annotations

import math
from typing import Any

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from hotmem_eval.metric_registry import METRICS, metrics_frame
from hotmem_eval.metrics import aggregate_metrics, per_query_metrics
from hotmem_eval.sqlfiles import bind_inputs, run_sql, sql_metrics
from tests.eval.metric_frames import Frames, expected, frames

LEX = "exact_lexical"
DUP = "near_duplicate_diversity"


def engines(
    data: Frames, *, k: int = 5, relevant_grade: int = 2
) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
    """(per_query, aggregate) of each engine."""
    per_query = per_query_metrics(*data, k=k, relevant_grade=relevant_grade)
    return {
        "polars": (per_query, aggregate_metrics(per_query)),
        "sql": sql_metrics(*data, k=k, relevant_grade=relevant_grade),
        "reference": expected(data, k=k, relevant_grade=relevant_grade),
    }


def _row(frame: pl.DataFrame, **keys: Any) -> dict[str, Any]:
    (row,) = frame.filter(**keys).rows(named=True)
    return row


# -- the relevant grade -------------------------------------------------------------------------

#: Grades a 3, b 2, c 2, d 1, e 3; returned [b, x, a, d, c, e]: at k = 5, e is missing.
GRADED = frames(
    {"q": (LEX, None)},
    ranked={"q": ["b", "x", "a", "d", "c", "e"]},
    grades={"q": {"a": 3, "b": 2, "c": 2, "d": 1, "e": 3}},
)

# (id, relevant_grade, metric, (value, numerator, denominator)) for GRADED at k = 5.
RELEVANT_GRADE_CASES = [
    # 1 (BEIR, TREC): d counts; relevant at ranks 1, 3, 4 and 5 of five relevant memories.
    ("grade_1_recall", 1, "recall_at_k", (4 / 5, 4, 5)),
    ("grade_1_precision", 1, "precision_at_k", (4 / 5, 4, 5)),
    ("grade_1_ap", 1, "ap_at_k", ((1 + 2 / 3 + 3 / 4 + 4 / 5) / 5, None, None)),
    ("grade_1_mrr", 1, "mrr_at_k", (1.0, None, None)),
    # 2 (the native fixture): a, b, c, e; found at ranks 1, 3 and 5.
    ("grade_2_recall", 2, "recall_at_k", (3 / 4, 3, 4)),
    ("grade_2_ap", 2, "ap_at_k", ((1 + 2 / 3 + 3 / 5) / 4, None, None)),
    # 3: a and e; a found at rank 3 only.
    ("grade_3_recall", 3, "recall_at_k", (1 / 2, 1, 2)),
    ("grade_3_recall_1", 3, "recall_at_1", (0.0, 0, 2)),
    ("grade_3_precision", 3, "precision_at_k", (1 / 5, 1, 5)),
    ("grade_3_ap", 3, "ap_at_k", (1 / 3 / 2, None, None)),
    ("grade_3_mrr", 3, "mrr_at_k", (1 / 3, None, None)),
    ("grade_3_group_recall", 3, "group_recall_at_k", (1 / 2, 1, 2)),
    ("grade_3_alpha_ndcg", 3, "alpha_ndcg_at_k", (0.5 / (1 + 1 / math.log2(3)), None, None)),
]


@pytest.mark.parametrize(
    ("relevant_grade", "metric", "hand"),
    [case[1:] for case in RELEVANT_GRADE_CASES],
    ids=[case[0] for case in RELEVANT_GRADE_CASES],
)
def test_relevant_grade_decides_relevance(
    relevant_grade: int, metric: str, hand: tuple[float, int | None, int | None]
) -> None:
    value, numerator, denominator = hand
    for engine, (per_query, _) in engines(GRADED, relevant_grade=relevant_grade).items():
        row = _row(per_query, metric=metric)
        assert row["applicable"] is True, engine
        assert row["value"] == pytest.approx(value, abs=1e-12), engine
        assert (row["numerator"], row["denominator"]) == (numerator, denominator), engine


def test_ndcg_reads_every_grade_whatever_the_relevant_grade() -> None:
    """nDCG's gain is the grade itself, every grade >= 1 (trec_eval ndcg_cut): the relevant
    grade decides only where it applies."""
    dcg = 2 + 3 / 2 + 1 / math.log2(5) + 2 / math.log2(6)
    ideal = 3 + 3 / math.log2(3) + 2 / 2 + 2 / math.log2(5) + 1 / math.log2(6)
    for relevant_grade in (1, 2, 3):
        for engine, (per_query, _) in engines(GRADED, relevant_grade=relevant_grade).items():
            value = _row(per_query, metric="ndcg_at_k")["value"]
            assert value == pytest.approx(dcg / ideal, abs=1e-12), (engine, relevant_grade)


def test_a_query_with_no_memory_at_the_relevant_grade_is_not_positive() -> None:
    # Graded (so not negative either) but nothing reaches grade 4: no positive metric applies.
    for engine, (per_query, aggregate) in engines(GRADED, relevant_grade=4).items():
        applicable = per_query.filter(pl.col("applicable"))["metric"].to_list()
        assert applicable == [], engine
        overall = _row(aggregate, category="overall", metric="ap_at_k")
        assert (overall["value"], overall["query_count"]) == (None, 0), engine


# -- grades above 3 -----------------------------------------------------------------------------

#: Grades 300 (beyond int8), 7 and 1; returned [b, a].
WIDE = frames(
    {"q": (LEX, None)}, ranked={"q": ["b", "a"]}, grades={"q": {"a": 300, "b": 7, "c": 1}}
)


def test_grades_above_3_count_with_their_value() -> None:
    assert WIDE.qrels.schema["grade"] == pl.Int32
    dcg = 7 + 300 / math.log2(3)
    ideal = 300 + 7 / math.log2(3) + 1 / 2
    for engine, (per_query, _) in engines(WIDE, relevant_grade=7).items():
        assert _row(per_query, metric="ndcg_at_k")["value"] == pytest.approx(dcg / ideal), engine
        # a and b reach grade 7, c does not.
        recall = _row(per_query, metric="recall_at_k")
        assert (recall["numerator"], recall["denominator"]) == (2, 2), engine


def test_int8_and_int32_grades_give_the_same_rows() -> None:
    wide = GRADED._replace(qrels=GRADED.qrels.with_columns(pl.col("grade").cast(pl.Int32)))
    for relevant_grade in (1, 2, 3):
        assert_frame_equal(
            per_query_metrics(*wide, relevant_grade=relevant_grade),
            per_query_metrics(*GRADED, relevant_grade=relevant_grade),
            check_exact=True,
        )


# -- queries with no category -------------------------------------------------------------------

#: q1 and q2 have no category; q3 is exact_lexical. q1 ranks a near-duplicate twice.
UNCATEGORISED = frames(
    {"q1": (None, None), "q2": (None, None), "q3": (LEX, None)},
    ranked={"q1": ["a1", "a2", "x"], "q2": ["y"], "q3": ["b"]},
    grades={"q1": {"a1": 3, "a2": 3}, "q2": {"y": 1}, "q3": {"b": 2}},
    groups={"q1": {"a1": "g", "a2": "g"}},
)


def test_a_query_with_no_category_counts_in_overall_only() -> None:
    for engine, (per_query, aggregate) in engines(UNCATEGORISED).items():
        assert per_query.filter(query_id="q1")["category"].null_count() == len(METRICS), engine
        # Not a near-duplicate query, though its ranking has duplicates.
        assert (
            _row(per_query, query_id="q1", metric="duplicate_slot_rate_at_k")["applicable"] is False
        )
        assert aggregate["category"].to_list() == ["overall"] * len(METRICS) + [LEX] * len(
            METRICS
        ), engine
        # Overall recall@5 counts q1 (2 of 2) and q3 (1 of 1); exact_lexical q3 alone.
        overall = _row(aggregate, category="overall", metric="recall_at_k")
        assert (overall["numerator"], overall["denominator"], overall["query_count"]) == (3, 3, 2)
        lexical = _row(aggregate, category=LEX, metric="recall_at_k")
        assert (lexical["numerator"], lexical["denominator"], lexical["query_count"]) == (1, 1, 1)


def test_a_collection_without_categories_has_overall_rows_only() -> None:
    data = UNCATEGORISED._replace(
        queries=UNCATEGORISED.queries.with_columns(category=pl.lit(None, pl.String))
    )
    for engine, (_, aggregate) in engines(data).items():
        assert aggregate["category"].to_list() == ["overall"] * len(METRICS), engine
        assert _row(aggregate, metric="recall_at_k")["query_count"] == 2, engine


# -- the k column -------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 5, 100])
def test_every_output_row_carries_its_k(k: int) -> None:
    for engine, (per_query, aggregate) in engines(UNCATEGORISED, k=k).items():
        for frame in (per_query, aggregate):
            assert frame.columns[0] == "k", engine
            assert frame.schema["k"] == pl.Int32, engine
            assert frame["k"].unique().to_list() == [k], engine


def test_outputs_at_several_k_aggregate_k_by_k() -> None:
    """Per-query outputs at k = 5 and 1, stacked, aggregate into the k = 1 block then k = 5,
    each equal to aggregating that k alone; the SQL file does the same."""
    at_5, at_1 = (per_query_metrics(*GRADED, k=k) for k in (5, 1))
    stacked = aggregate_metrics(pl.concat([at_5, at_1]))
    assert_frame_equal(stacked, pl.concat([aggregate_metrics(at_1), aggregate_metrics(at_5)]))
    assert _row(stacked, k=1, category="overall", metric="precision_at_k")["value"] == 1.0
    assert _row(stacked, k=5, category="overall", metric="precision_at_k")["value"] == 0.6
    with duckdb.connect() as con:
        bind_inputs(con, metrics=metrics_frame(), **GRADED._asdict())
        sql_stacked = pl.concat([run_sql("per_query_metrics", con, k=k) for k in (5, 1)])
        bind_inputs(con, per_query_metrics=sql_stacked)
        assert_frame_equal(run_sql("category_metrics", con), stacked, abs_tol=1e-12, rel_tol=0)


def test_category_sql_refuses_a_null_k() -> None:
    per_query = per_query_metrics(*GRADED).with_columns(k=pl.lit(None, pl.Int32))
    with duckdb.connect() as con:
        bind_inputs(con, metrics=metrics_frame(), per_query_metrics=per_query)
        with pytest.raises(duckdb.Error, match="k non-null"):
            run_sql("category_metrics", con)
