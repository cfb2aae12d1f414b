"""Hand-calculated examples for every metric, per query and aggregated, and input errors."""

from __future__ import annotations

import fractions
import itertools
import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from hotmem_eval.errors import EvalError
from hotmem_eval.metric_registry import APPLICABILITY, METRICS, STATISTICS
from hotmem_eval.metrics import (
    AGGREGATE_COLUMNS,
    MAX_K,
    PER_QUERY_COLUMNS,
    aggregate_metrics,
    per_query_metrics,
)
from hotmem_eval.reference import REFERENCE_METRICS
from hotmem_eval.sqlfiles import sql_metrics
from tests.eval.metric_frames import Frames, expected, frames

DUP = "near_duplicate_diversity"
LEX = "exact_lexical"
NEG = "negative_or_no_answer"

#: The worked nDCG example of docs/metrics.md: grades {a:3, b:2, c:1}, returned [b, x, a].
NDCG_DCG = 2 / math.log2(2) + 3 / math.log2(4)
NDCG_IDEAL = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)


def _metric_row(data: Frames, query_id: str, metric: str, *, k: int = 5) -> dict[str, Any]:
    out = per_query_metrics(*data, k=k)
    (row,) = out.filter((pl.col("query_id") == query_id) & (pl.col("metric") == metric)).rows(
        named=True
    )
    return row


#: The worked group examples of docs/metrics.md: groups A = {a1, a2, a3} and B = {b1, b2}, all
#: graded 3. The ideal alpha-DCG@5 takes a1, b1 (gain 1), a2, b2 (gain 1/2), a3 (gain 1/4).
ALPHA_IDEAL = 1 + 1 / math.log2(3) + 0.5 / 2 + 0.5 / math.log2(5) + 0.25 / math.log2(6)
#: [a1, a2, a3, x, y]: A's copies gain 1, 1/2, 1/4.
ALPHA_CROWDED = 1 + 0.5 / math.log2(3) + 0.25 / 2
#: [a1, b1, x, y, z]: one of each group, gain 1 each.
ALPHA_DIVERSE = 1 + 1 / math.log2(3)

# Scenarios of one query "q" each.
GRADE_1_ONLY = frames({"q": (LEX, None)}, ranked={"q": ["a"]}, grades={"q": {"a": 1}})
WORKED = frames(
    {"q": (LEX, None)}, ranked={"q": ["b", "x", "a"]}, grades={"q": {"a": 3, "b": 2, "c": 1}}
)
RANK_3 = frames({"q": (LEX, None)}, ranked={"q": ["x", "y", "a"]}, grades={"q": {"a": 3}})
TWO_OF_THREE = frames(
    {"q": (LEX, None)},
    ranked={"q": ["a", "x", "c", "d"]},
    grades={"q": {"a": 2, "b": 3, "c": 2, "d": 1}},
)
GRADE_1_FIRST = frames({"q": (LEX, None)}, ranked={"q": ["d", "a"]}, grades={"q": {"a": 2, "d": 1}})
AT_RANK_6 = frames({"q": (LEX, None)}, ranked={"q": list("uvwxya")}, grades={"q": {"a": 2}})
IDEAL_CUT = frames({"q": (LEX, None)}, ranked={"q": ["b"]}, grades={"q": {"a": 3, "b": 2}})
EMPTY_POSITIVE = frames({"q": (LEX, None)}, grades={"q": {"a": 3}})
NEGATIVE_3 = frames({"q": (NEG, None)}, ranked={"q": ["x", "y", "z"]})
NEGATIVE_7 = frames({"q": (NEG, None)}, ranked={"q": list("abcdefg")})
NEGATIVE_EMPTY = frames({"q": (NEG, None)})
NEGATIVE_GRADE_0 = frames({"q": (NEG, None)}, ranked={"q": ["a"]}, grades={"q": {"a": 0}})
DUPLICATES = frames(
    {"q": (DUP, None)},
    ranked={"q": list("abcd")},
    groups={"q": {"a": "g1", "b": "g1", "c": "g2", "d": "g1"}},
)
GROUP_NAMED_AS_MEMORY = frames(
    {"q": (DUP, None)}, ranked={"q": ["a", "b"]}, groups={"q": {"b": "a"}}
)
UNRETURNED_GROUPS = frames(
    {"q": (DUP, None)}, ranked={"q": list("abc")}, groups={"q": {"x": "g", "y": "g"}}
)
DUPLICATE_BEYOND_K = frames(
    {"q": (DUP, None)}, ranked={"q": list("abcdef")}, groups={"q": {"a": "g", "f": "g"}}
)
DUPLICATE_EMPTY = frames({"q": (DUP, None)})
_TWO_GROUPS = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B"}
_TWO_GROUPS_GRADES = dict.fromkeys(_TWO_GROUPS, 3)
CROWDED = frames(
    {"q": (DUP, None)},
    ranked={"q": ["a1", "a2", "a3", "x", "y"]},
    grades={"q": _TWO_GROUPS_GRADES},
    groups={"q": _TWO_GROUPS},
)
DIVERSE = frames(
    {"q": (DUP, None)},
    ranked={"q": ["a1", "b1", "x", "y", "z"]},
    grades={"q": _TWO_GROUPS_GRADES},
    groups={"q": _TWO_GROUPS},
)
# a2 restates a1 but is not graded for this query: relevance is the memory's own grade.
UNGRADED_MEMBER = frames(
    {"q": (DUP, None)},
    ranked={"q": ["a2"]},
    grades={"q": {"a1": 3}},
    groups={"q": {"a1": "g", "a2": "g"}},
)
GRADE_1_MEMBER = frames(
    {"q": (DUP, None)},
    ranked={"q": ["a2", "a1"]},
    grades={"q": {"a1": 3, "a2": 1}},
    groups={"q": {"a1": "g", "a2": "g"}},
)
# Group recall counts a group once, however many of its memories are found or missed.
GROUP_OF_THREE_AND_ONE = frames(
    {"q": (LEX, None)},
    ranked={"q": ["a1", "x", "a2"]},
    grades={"q": {"a1": 2, "a2": 2, "a3": 3, "c": 2}},
    groups={"q": {"a1": "g", "a2": "g", "a3": "g"}},
)
# k = 2: the ideal ranking takes one memory of each group first, [a1, c], not [a1, a2].
IDEAL_SPREADS = frames(
    {"q": (LEX, None)},
    ranked={"q": ["a1", "a2"]},
    grades={"q": {"a1": 3, "a2": 3, "c": 2}},
    groups={"q": {"a1": "g", "a2": "g"}},
)
# b's group is named after a, which is in no group of its own: a and b are one group.
GROUP_NAMED_AFTER_RELEVANT = frames(
    {"q": (LEX, None)},
    ranked={"q": ["a", "b"]},
    grades={"q": {"a": 2, "b": 2}},
    groups={"q": {"b": "a"}},
)
GROUP_BEYOND_K = frames(
    {"q": (LEX, None)},
    ranked={"q": ["a1", "x", "y", "z", "w", "b1"]},
    grades={"q": {"a1": 3, "b1": 3}},
    groups={"q": {"a1": "A", "a2": "A", "b1": "B", "b2": "B"}},
)
LEAKS = frames(
    {"q": (LEX, "acme")}, ranked={"q": list("abc")}, identifiers={"b": "globex", "c": None}
)
NO_LEAK = frames({"q": (LEX, "acme")}, ranked={"q": ["a", "b"]})
LEAK_AT_2 = frames({"q": (LEX, "acme")}, ranked={"q": ["a", "b"]}, identifiers={"b": "globex"})
SCOPED_EMPTY = frames({"q": (LEX, "acme")})
#: The worked P@k / AP@k example of docs/metrics.md: relevant (>= 2) a, b, c, e, grades repeated
#: (a and e 3, b and c 2); d is graded 1; e, at rank 6, is missing from the top 5.
PRECISION = frames(
    {"q": (LEX, None)},
    ranked={"q": ["b", "x", "a", "d", "c", "e"]},
    grades={"q": {"a": 3, "b": 2, "c": 2, "d": 1, "e": 3}},
)
#: AP@5 of PRECISION: relevant at ranks 1, 3 and 5, four relevant in all.
PRECISION_AP_5 = (1 / 1 + 2 / 3 + 3 / 5) / 4

# (id, scenario, k, metric, (value, numerator, denominator))
APPLICABLE_CASES = [
    # The worked nDCG example and the rest of its row.
    ("ndcg_worked", WORKED, 5, "ndcg_at_k", (NDCG_DCG / NDCG_IDEAL, None, None)),
    ("worked_recall_1", WORKED, 5, "recall_at_1", (0.5, 1, 2)),
    ("worked_recall_k", WORKED, 5, "recall_at_k", (1.0, 2, 2)),
    ("worked_mrr", WORKED, 5, "mrr_at_k", (1.0, None, None)),
    # Relevant found at rank 3 only.
    ("rank3_recall_1", RANK_3, 5, "recall_at_1", (0.0, 0, 1)),
    ("rank3_success_1", RANK_3, 5, "success_at_1", (0.0, 0, 1)),
    ("rank3_success_k", RANK_3, 5, "success_at_k", (1.0, 1, 1)),
    ("rank3_mrr", RANK_3, 5, "mrr_at_k", (1 / 3, None, None)),
    ("rank3_ndcg", RANK_3, 5, "ndcg_at_k", (0.5, None, None)),
    # Two of three relevant memories found; grade 1 is not relevant for recall or MRR.
    ("recall_two_of_three", TWO_OF_THREE, 5, "recall_at_k", (2 / 3, 2, 3)),
    ("recall_1_one_of_three", TWO_OF_THREE, 5, "recall_at_1", (1 / 3, 1, 3)),
    ("mrr_skips_grade_1", GRADE_1_FIRST, 5, "mrr_at_k", (0.5, None, None)),
    (
        "ndcg_counts_grade_1",
        GRADE_1_FIRST,
        5,
        "ndcg_at_k",
        ((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)), None, None),
    ),
    # Ranks beyond k are ignored, and count once k reaches them.
    ("beyond_k_recall", AT_RANK_6, 5, "recall_at_k", (0.0, 0, 1)),
    ("beyond_k_mrr", AT_RANK_6, 5, "mrr_at_k", (0.0, None, None)),
    ("beyond_k_ndcg", AT_RANK_6, 5, "ndcg_at_k", (0.0, None, None)),
    ("within_k6_mrr", AT_RANK_6, 6, "mrr_at_k", (1 / 6, None, None)),
    ("within_k6_ndcg", AT_RANK_6, 6, "ndcg_at_k", (1 / math.log2(7), None, None)),
    # The ideal ranking is cut at k: with k=1 only the best grade counts.
    ("ideal_cut_at_k", IDEAL_CUT, 1, "ndcg_at_k", (2 / 3, None, None)),
    # A positive query that returned nothing: defaults, not nulls.
    ("empty_recall", EMPTY_POSITIVE, 5, "recall_at_k", (0.0, 0, 1)),
    ("empty_success", EMPTY_POSITIVE, 5, "success_at_k", (0.0, 0, 1)),
    ("empty_mrr", EMPTY_POSITIVE, 5, "mrr_at_k", (0.0, None, None)),
    ("empty_ndcg", EMPTY_POSITIVE, 5, "ndcg_at_k", (0.0, None, None)),
    # Precision and average precision (trec_eval P and map_cut): the worked example, a
    # relevant memory beyond k, and k counting unfilled slots.
    ("precision_worked", PRECISION, 5, "precision_at_k", (0.6, 3, 5)),
    ("ap_worked", PRECISION, 5, "ap_at_k", (PRECISION_AP_5, None, None)),
    ("precision_within_k6", PRECISION, 6, "precision_at_k", (4 / 6, 4, 6)),
    ("ap_within_k6", PRECISION, 6, "ap_at_k", ((1 + 2 / 3 + 3 / 5 + 4 / 6) / 4, None, None)),
    ("precision_at_1", PRECISION, 1, "precision_at_k", (1.0, 1, 1)),
    ("ap_at_1", PRECISION, 1, "ap_at_k", (1 / 4, None, None)),
    ("precision_unfilled_slots", RANK_3, 5, "precision_at_k", (0.2, 1, 5)),
    ("ap_rank3", RANK_3, 5, "ap_at_k", (1 / 3, None, None)),
    ("precision_skips_grade_1", GRADE_1_FIRST, 5, "precision_at_k", (0.2, 1, 5)),
    ("ap_skips_grade_1", GRADE_1_FIRST, 5, "ap_at_k", (0.5, None, None)),
    ("ap_beyond_k", AT_RANK_6, 5, "ap_at_k", (0.0, None, None)),
    ("empty_precision", EMPTY_POSITIVE, 5, "precision_at_k", (0.0, 0, 5)),
    ("empty_ap", EMPTY_POSITIVE, 5, "ap_at_k", (0.0, None, None)),
    # Group recall and alpha-nDCG: the worked examples, crowded by one group and diverse.
    ("crowded_recall", CROWDED, 5, "recall_at_k", (0.6, 3, 5)),
    ("crowded_group_recall", CROWDED, 5, "group_recall_at_k", (0.5, 1, 2)),
    (
        "crowded_alpha_ndcg",
        CROWDED,
        5,
        "alpha_ndcg_at_k",
        (ALPHA_CROWDED / ALPHA_IDEAL, None, None),
    ),
    ("diverse_recall", DIVERSE, 5, "recall_at_k", (0.4, 2, 5)),
    ("diverse_group_recall", DIVERSE, 5, "group_recall_at_k", (1.0, 2, 2)),
    (
        "diverse_alpha_ndcg",
        DIVERSE,
        5,
        "alpha_ndcg_at_k",
        (ALPHA_DIVERSE / ALPHA_IDEAL, None, None),
    ),
    # With every group a singleton, group recall is recall; alpha-nDCG is binary nDCG.
    ("singletons_group_recall", WORKED, 5, "group_recall_at_k", (1.0, 2, 2)),
    (
        "singletons_alpha_ndcg",
        WORKED,
        5,
        "alpha_ndcg_at_k",
        (1.5 / (1 + 1 / math.log2(3)), None, None),
    ),
    ("two_of_three_group_recall", TWO_OF_THREE, 5, "group_recall_at_k", (2 / 3, 2, 3)),
    # A member that is not relevant itself finds nothing and gains nothing.
    ("ungraded_member_group_recall", UNGRADED_MEMBER, 5, "group_recall_at_k", (0.0, 0, 1)),
    ("ungraded_member_alpha_ndcg", UNGRADED_MEMBER, 5, "alpha_ndcg_at_k", (0.0, None, None)),
    ("grade_1_member_group_recall", GRADE_1_MEMBER, 5, "group_recall_at_k", (1.0, 1, 1)),
    (
        "grade_1_member_alpha_ndcg",
        GRADE_1_MEMBER,
        5,
        "alpha_ndcg_at_k",
        (1 / math.log2(3), None, None),
    ),
    ("group_counted_once", GROUP_OF_THREE_AND_ONE, 5, "group_recall_at_k", (0.5, 1, 2)),
    (
        "group_counted_once_alpha_ndcg",
        GROUP_OF_THREE_AND_ONE,
        5,
        "alpha_ndcg_at_k",
        (
            (1 + 0.5 / 2) / (1 + 1 / math.log2(3) + 0.5 / 2 + 0.25 / math.log2(5)),
            None,
            None,
        ),
    ),
    (
        "ideal_spreads",
        IDEAL_SPREADS,
        2,
        "alpha_ndcg_at_k",
        ((1 + 0.5 / math.log2(3)) / (1 + 1 / math.log2(3)), None, None),
    ),
    ("ideal_cut_at_1", IDEAL_SPREADS, 1, "alpha_ndcg_at_k", (1.0, None, None)),
    ("group_named_after_relevant", GROUP_NAMED_AFTER_RELEVANT, 5, "group_recall_at_k", (1.0, 1, 1)),
    (
        "group_named_after_relevant_alpha",
        GROUP_NAMED_AFTER_RELEVANT,
        5,
        "alpha_ndcg_at_k",
        (1.0, None, None),
    ),
    ("group_beyond_k", GROUP_BEYOND_K, 5, "group_recall_at_k", (0.5, 1, 2)),
    ("group_within_k6", GROUP_BEYOND_K, 6, "group_recall_at_k", (1.0, 2, 2)),
    ("empty_group_recall", EMPTY_POSITIVE, 5, "group_recall_at_k", (0.0, 0, 1)),
    ("empty_alpha_ndcg", EMPTY_POSITIVE, 5, "alpha_ndcg_at_k", (0.0, None, None)),
    # Negative queries: no memory graded >= 1 (grade-0 rows allowed).
    ("negative_fpr_hit", NEGATIVE_3, 5, "negative_fpr_at_k", (1.0, 1, 1)),
    ("negative_returned", NEGATIVE_3, 5, "negative_returned_at_k", (3.0, 3, 1)),
    ("negative_returned_cut_at_k", NEGATIVE_7, 5, "negative_returned_at_k", (5.0, 5, 1)),
    ("negative_empty_fpr", NEGATIVE_EMPTY, 5, "negative_fpr_at_k", (0.0, 0, 1)),
    ("negative_empty_returned", NEGATIVE_EMPTY, 5, "negative_returned_at_k", (0.0, 0, 1)),
    ("negative_grade_0", NEGATIVE_GRADE_0, 5, "negative_fpr_at_k", (1.0, 1, 1)),
    # Duplicate slots: b and d repeat group g1, which a filled first.
    ("duplicates", DUPLICATES, 5, "duplicate_slot_rate_at_k", (0.5, 2, 4)),
    ("group_named_as_memory", GROUP_NAMED_AS_MEMORY, 5, "duplicate_slot_rate_at_k", (0.5, 1, 2)),
    ("unreturned_groups", UNRETURNED_GROUPS, 5, "duplicate_slot_rate_at_k", (0.0, 0, 3)),
    ("duplicate_beyond_k", DUPLICATE_BEYOND_K, 5, "duplicate_slot_rate_at_k", (0.0, 0, 5)),
    ("duplicates_empty", DUPLICATE_EMPTY, 5, "duplicate_slot_rate_at_k", (None, 0, 0)),
    # Scope leaks: a memory from another scope, or with no identifier, leaks.
    ("scope_leaks", LEAKS, 5, "scope_leak_rate_at_k", (2 / 3, 2, 3)),
    ("scope_clean", NO_LEAK, 5, "scope_leak_rate_at_k", (0.0, 0, 2)),
    ("scope_leak_beyond_k", LEAK_AT_2, 1, "scope_leak_rate_at_k", (0.0, 0, 1)),
    ("scope_empty", SCOPED_EMPTY, 5, "scope_leak_rate_at_k", (None, 0, 0)),
]


@pytest.mark.parametrize(
    ("data", "k", "metric", "expected"),
    [case[1:] for case in APPLICABLE_CASES],
    ids=[case[0] for case in APPLICABLE_CASES],
)
def test_applicable_metric_value(
    data: Frames, k: int, metric: str, expected: tuple[float | None, int | None, int | None]
) -> None:
    row = _metric_row(data, "q", metric, k=k)
    value, numerator, denominator = expected
    assert row["applicable"] is True
    assert row["value"] == (None if value is None else pytest.approx(value, abs=1e-12))
    assert (row["numerator"], row["denominator"]) == (numerator, denominator)


@pytest.mark.parametrize(
    ("data", "k", "metric", "hand"),
    [case[1:] for case in APPLICABLE_CASES],
    ids=[case[0] for case in APPLICABLE_CASES],
)
def test_reference_and_sql_give_the_hand_values(
    data: Frames, k: int, metric: str, hand: tuple[float | None, int | None, int | None]
) -> None:
    value, numerator, denominator = hand
    reference_rows, _ = expected(data, k=k)
    sql_rows, _ = sql_metrics(*data, k=k)
    for engine, rows in (("reference", reference_rows), ("sql", sql_rows)):
        (row,) = rows.filter(pl.col("metric") == metric).rows(named=True)
        assert row["applicable"] is True, engine
        assert row["value"] == (None if value is None else pytest.approx(value, abs=1e-12)), engine
        assert (row["numerator"], row["denominator"]) == (numerator, denominator), engine


def test_alpha_ndcg_worked_example_figures() -> None:
    ideal, crowded_dcg, diverse_dcg = ALPHA_IDEAL, ALPHA_CROWDED, ALPHA_DIVERSE
    assert ideal == pytest.approx(2.1930, abs=1e-4)
    assert crowded_dcg == pytest.approx(1.4405, abs=1e-4)
    assert diverse_dcg == pytest.approx(1.6309, abs=1e-4)
    crowded = _metric_row(CROWDED, "q", "alpha_ndcg_at_k")["value"]
    diverse = _metric_row(DIVERSE, "q", "alpha_ndcg_at_k")["value"]
    assert (crowded, diverse) == (pytest.approx(0.6569, abs=1e-4), pytest.approx(0.7437, abs=1e-4))
    # Linear-gain nDCG, like recall, prefers the crowded list; the group metrics do not.
    crowded_ndcg = _metric_row(CROWDED, "q", "ndcg_at_k")["value"]
    diverse_ndcg = _metric_row(DIVERSE, "q", "ndcg_at_k")["value"]
    assert (crowded_ndcg, diverse_ndcg) == (
        pytest.approx(0.7227, abs=1e-4),
        pytest.approx(0.5532, abs=1e-4),
    )


def test_ndcg_worked_example_figures() -> None:
    dcg, ideal = NDCG_DCG, NDCG_IDEAL
    assert dcg == pytest.approx(3.5)
    assert ideal == pytest.approx(4.7619, abs=1e-4)
    row = _metric_row(WORKED, "q", "ndcg_at_k")
    assert row["value"] == pytest.approx(0.7350, abs=1e-4)


GROUPS_ELSEWHERE = frames(
    {"q": (LEX, None)}, ranked={"q": ["a", "b"]}, groups={"q": {"a": "g", "b": "g"}}
)
UNSCOPED = frames({"q": (LEX, None)}, ranked={"q": ["a"]}, identifiers={"a": "globex"})

# (id, scenario, metric): the metric does not apply to query "q".
NOT_APPLICABLE_CASES = [
    ("negative_has_no_recall", NEGATIVE_3, "recall_at_k"),
    ("negative_has_no_ndcg", NEGATIVE_3, "ndcg_at_k"),
    ("negative_has_no_group_recall", NEGATIVE_3, "group_recall_at_k"),
    ("negative_has_no_alpha_ndcg", NEGATIVE_3, "alpha_ndcg_at_k"),
    ("negative_has_no_precision", NEGATIVE_3, "precision_at_k"),
    ("negative_has_no_ap", NEGATIVE_3, "ap_at_k"),
    ("grade_1_only_has_no_precision", GRADE_1_ONLY, "precision_at_k"),
    ("grade_1_only_has_no_ap", GRADE_1_ONLY, "ap_at_k"),
    ("grade_1_only_has_no_group_recall", GRADE_1_ONLY, "group_recall_at_k"),
    ("grade_1_only_is_not_positive", GRADE_1_ONLY, "success_at_k"),
    ("grade_1_only_is_not_negative", GRADE_1_ONLY, "negative_fpr_at_k"),
    ("positive_has_no_fpr", EMPTY_POSITIVE, "negative_fpr_at_k"),
    ("groups_outside_duplicate_category", GROUPS_ELSEWHERE, "duplicate_slot_rate_at_k"),
    ("unscoped_has_no_leak_rate", UNSCOPED, "scope_leak_rate_at_k"),
]


@pytest.mark.parametrize(
    ("data", "metric"),
    [case[1:] for case in NOT_APPLICABLE_CASES],
    ids=[case[0] for case in NOT_APPLICABLE_CASES],
)
def test_not_applicable_metric_is_null(data: Frames, metric: str) -> None:
    row = _metric_row(data, "q", metric)
    assert row == {
        "k": 5,
        "query_id": "q",
        "category": row["category"],
        "metric": metric,
        "value": None,
        "numerator": None,
        "denominator": None,
        "applicable": False,
    }


def test_per_query_rows_are_exhaustive_and_ordered() -> None:
    data = frames(
        {"q2": (LEX, None), "q10": (NEG, "acme"), "q1": (DUP, None)},
        ranked={"q1": ["a"]},
        grades={"q2": {"a": 3}},
    )
    out = per_query_metrics(*data)
    assert dict(out.schema) == PER_QUERY_COLUMNS
    expected = [(q, m) for m in METRICS for q in ["q1", "q10", "q2"]]
    assert list(zip(out["query_id"], out["metric"], strict=True)) == expected


def test_no_queries_gives_an_empty_frame() -> None:
    out = per_query_metrics(*frames({}))
    assert out.height == 0
    assert dict(out.schema) == PER_QUERY_COLUMNS


def test_pyarrow_tables_give_the_reference_rows() -> None:
    arrow = [frame.to_arrow() for frame in WORKED]
    assert_frame_equal(per_query_metrics(*arrow), expected(WORKED)[0], abs_tol=1e-12, rel_tol=0)


def test_registry_is_complete_and_ordered() -> None:
    assert list(METRICS) == list(REFERENCE_METRICS)
    for metric in METRICS.values():
        assert metric.formula, metric.name
        assert metric.description, metric.name
        assert metric.applies_to in APPLICABILITY
        for column in ("relevant_total", "filled_slots"):
            assert column in STATISTICS


# -- aggregates --------------------------------------------------------------------------------


def _aggregate(data: Frames, category: str, metric: str) -> dict[str, Any]:
    out = aggregate_metrics(per_query_metrics(*data))
    (row,) = out.filter((pl.col("category") == category) & (pl.col("metric") == metric)).rows(
        named=True
    )
    return row


TWO_POSITIVE = frames(
    {"q1": (LEX, None), "q2": (LEX, None), "q3": (NEG, None)},
    ranked={"q1": ["a", "x"], "q2": ["y", "b"], "q3": ["z"]},
    grades={"q1": {"a": 3, "c": 2}, "q2": {"b": 2}},
)
DUPLICATE_PAIR = frames(
    {"d1": (DUP, None), "d2": (DUP, None), "d3": (DUP, None)},
    ranked={"d1": ["a", "b"], "d2": ["c", "d", "e", "f"]},
    groups={"d1": {"a": "g", "b": "g"}},
)

EMPTY_DUPLICATE = frames({"d": (DUP, None)})
CROWDED_AND_DIVERSE = frames(
    {"c": (DUP, None), "d": (DUP, None)},
    ranked={"c": ["a1", "a2", "a3", "x", "y"], "d": ["a1", "b1", "x", "y", "z"]},
    grades={"c": _TWO_GROUPS_GRADES, "d": _TWO_GROUPS_GRADES},
    groups={"c": _TWO_GROUPS, "d": _TWO_GROUPS},
)
TWO_NEGATIVE = frames({"n1": (NEG, None), "n2": (NEG, None)}, ranked={"n1": ["a", "b", "c"]})


def _expect(
    value: float | None, numerator: int | None, denominator: int | None, count: int
) -> dict:
    return {
        "value": value,
        "numerator": numerator,
        "denominator": denominator,
        "query_count": count,
    }


# (id, scenario, category, metric, expected)
AGGREGATE_CASES = [
    # recall: the value is the mean of 1/2 and 1/1; the ratio pools the integers, 2/3.
    ("recall_macro_value_pooled_ratio", TWO_POSITIVE, LEX, "recall_at_k", _expect(0.75, 2, 3, 2)),
    ("success_reads_hits_over_queries", TWO_POSITIVE, LEX, "success_at_1", _expect(0.5, 1, 2, 2)),
    ("mrr_has_no_ratio", TWO_POSITIVE, LEX, "mrr_at_k", _expect(0.75, None, None, 2)),
    # P@5: 1 of 5 slots each; the ratio pools the slots, 2/10. MAP@5: the mean of 1/2 and 1/2
    # (q1 finds one of its two relevant memories at rank 1, q2 its only one at rank 2); the
    # negative query q3 counts in neither.
    ("precision_pools_slots", TWO_POSITIVE, LEX, "precision_at_k", _expect(0.2, 2, 10, 2)),
    ("map_is_the_mean_ap", TWO_POSITIVE, "overall", "ap_at_k", _expect(0.5, None, None, 2)),
    ("no_applicable_query_ap", TWO_POSITIVE, NEG, "ap_at_k", _expect(None, None, None, 0)),
    (
        "overall_spans_categories",
        TWO_POSITIVE,
        "overall",
        "negative_fpr_at_k",
        _expect(1.0, 1, 1, 1),
    ),
    # A category with no applicable query: null, never a made-up zero.
    ("no_applicable_query", TWO_POSITIVE, NEG, "recall_at_k", _expect(None, None, None, 0)),
    ("no_applicable_query_mrr", TWO_POSITIVE, NEG, "mrr_at_k", _expect(None, None, None, 0)),
    # Slot rates pool, (1 + 0) / (2 + 4), where a mean of 1/2 and 0 would say 1/4; d3 filled
    # nothing and adds 0/0.
    ("slot_rate_pooled", DUPLICATE_PAIR, DUP, "duplicate_slot_rate_at_k", _expect(1 / 6, 1, 6, 3)),
    (
        "slot_rate_all_empty",
        EMPTY_DUPLICATE,
        DUP,
        "duplicate_slot_rate_at_k",
        _expect(None, 0, 0, 1),
    ),
    ("negative_returned_mean", TWO_NEGATIVE, NEG, "negative_returned_at_k", _expect(1.5, 3, 2, 2)),
    # Group recall: the mean of 1/2 and 2/2; the ratio pools the groups, 3/4.
    ("group_recall_macro", CROWDED_AND_DIVERSE, DUP, "group_recall_at_k", _expect(0.75, 3, 4, 2)),
    (
        "alpha_ndcg_macro",
        CROWDED_AND_DIVERSE,
        DUP,
        "alpha_ndcg_at_k",
        _expect((ALPHA_CROWDED + ALPHA_DIVERSE) / ALPHA_IDEAL / 2, None, None, 2),
    ),
]


@pytest.mark.parametrize(
    ("data", "category", "metric", "expected"),
    [case[1:] for case in AGGREGATE_CASES],
    ids=[case[0] for case in AGGREGATE_CASES],
)
def test_aggregate_value(data: Frames, category: str, metric: str, expected: dict) -> None:
    row = _aggregate(data, category, metric)
    value = expected["value"]
    assert row["value"] == (None if value is None else pytest.approx(value, abs=1e-12))
    assert {key: row[key] for key in expected if key != "value"} == {
        key: expected[key] for key in expected if key != "value"
    }


def test_aggregate_rows_are_complete_and_ordered() -> None:
    out = aggregate_metrics(per_query_metrics(*TWO_POSITIVE))
    assert dict(out.schema) == AGGREGATE_COLUMNS
    expected = [(c, m) for c in ["overall", LEX, NEG] for m in METRICS]
    assert list(zip(out["category"], out["metric"], strict=True)) == expected


def test_aggregate_of_no_queries_reports_overall_only() -> None:
    out = aggregate_metrics(per_query_metrics(*frames({})))
    assert out["category"].to_list() == ["overall"] * len(METRICS)
    assert out["query_count"].to_list() == [0] * len(METRICS)
    assert out["value"].null_count() == len(METRICS)


def test_aggregate_rejects_an_unknown_metric() -> None:
    per_query = per_query_metrics(*TWO_POSITIVE).with_columns(metric=pl.lit("map_at_k"))
    with pytest.raises(EvalError, match="map_at_k"):
        aggregate_metrics(per_query)


def test_aggregate_names_the_smallest_unknown_metric_and_a_null_one_first() -> None:
    per_query = per_query_metrics(*TWO_POSITIVE)
    renamed = per_query.with_columns(
        metric=pl.when(pl.col("metric") == "mrr_at_k")
        .then(pl.lit("z_at_k"))
        .otherwise(
            pl.when(pl.col("metric") == "ndcg_at_k").then(pl.lit("b_at_k")).otherwise("metric")
        )
    )
    with pytest.raises(EvalError, match="found metric='b_at_k'"):
        aggregate_metrics(renamed)
    nulled = renamed.with_columns(
        metric=pl.when(pl.col("metric") == "z_at_k").then(None).otherwise("metric")
    )
    with pytest.raises(EvalError, match="found metric=None"):
        aggregate_metrics(nulled)


def test_aggregate_mean_is_exact_and_the_same_in_every_row_order() -> None:
    # Summed as floats, these values give different bits in different orders:
    # (0.1 + 0.2) + 0.3 == 0.6000000000000001 but (0.3 + 0.2) + 0.1 == 0.6.
    values = [0.1, 0.2, 0.3, 1 / 3, 2 / 3, 0.7]
    assert sum(values) != sum(reversed(values))
    per_query = pl.DataFrame(
        {
            "k": 5,
            "query_id": [f"q{i}" for i in range(len(values))],
            "category": LEX,
            "metric": "ndcg_at_k",
            "value": values,
            "numerator": None,
            "denominator": None,
            "applicable": True,
        },
        schema=PER_QUERY_COLUMNS,
    )
    means = set()
    for rows in itertools.permutations(range(len(values))):
        out = aggregate_metrics(per_query[list(rows)])
        means.add(out.filter(category=LEX, metric="ndcg_at_k")["value"].item())
    assert len(means) == 1
    exact = sum(fractions.Fraction(value) for value in values) / len(values)
    assert means.pop() == pytest.approx(float(exact), rel=1e-15, abs=0)


def test_aggregate_rejects_a_value_that_is_not_finite() -> None:
    per_query = per_query_metrics(*TWO_POSITIVE).with_columns(
        value=pl.when(pl.col("metric") == "ndcg_at_k").then(float("nan")).otherwise("value")
    )
    with pytest.raises(EvalError, match="finite"):
        aggregate_metrics(per_query)


def test_aggregate_keeps_a_category_where_no_metric_applies() -> None:
    # Graded only 1: neither positive (nothing relevant) nor negative (something graded).
    data = frames({"q1": (LEX, None)}, ranked={"q1": ["m0"]}, grades={"q1": {"m0": 1}})
    out = aggregate_metrics(per_query_metrics(*data, k=1))
    assert out["category"].to_list() == ["overall"] * len(METRICS) + [LEX] * len(METRICS)
    assert out["query_count"].to_list() == [0] * (2 * len(METRICS))
    assert out["value"].null_count() == 2 * len(METRICS)


def test_aggregate_counts_a_null_category_in_overall_only() -> None:
    # Decision 2 of issue 29: a query with no category (null) counts in "overall" and has no
    # row of its own (until then a null category was refused).
    per_query = per_query_metrics(*TWO_POSITIVE)
    out = aggregate_metrics(per_query.with_columns(category=None))
    assert out["category"].to_list() == ["overall"] * len(METRICS)
    assert_frame_equal(out, aggregate_metrics(per_query).filter(pl.col("category") == "overall"))


def test_aggregate_rejects_a_null_k() -> None:
    per_query = per_query_metrics(*TWO_POSITIVE).with_columns(k=pl.lit(None, pl.Int32))
    with pytest.raises(EvalError, match="k non-null"):
        aggregate_metrics(per_query)


def test_aggregate_of_a_partial_frame_reports_missing_cells_as_no_query() -> None:
    per_query = per_query_metrics(*TWO_POSITIVE).filter(
        (pl.col("category") != LEX) | (pl.col("metric") != "recall_at_k")
    )
    out = aggregate_metrics(per_query)
    row = out.filter((pl.col("category") == LEX) & (pl.col("metric") == "recall_at_k")).row(
        0, named=True
    )
    assert row == {
        "k": 5,
        "category": LEX,
        "metric": "recall_at_k",
        "value": None,
        "numerator": None,
        "denominator": None,
        "query_count": 0,
    }


# -- input errors ------------------------------------------------------------------------------

GOOD = frames(
    {"q1": (LEX, "acme"), "q2": (DUP, None)},
    ranked={"q1": ["a", "b"], "q2": ["c"]},
    grades={"q1": {"a": 2}},
    groups={"q2": {"c": "g"}},
)


def _replace(index: int, frame: pl.DataFrame) -> tuple[pl.DataFrame, ...]:
    data = list(GOOD)
    data[index] = frame
    return tuple(data)


#: GOOD's per-query rows, from the reference.
GOOD_EXPECTED = expected(GOOD)[0]
_extra_result = {"query_id": "q1", "memory_id": "z", "identifier": "acme", "score": 0.1}
_results, _qrels, _queries, _groups = GOOD

# (id, inputs, message pattern)
ERROR_CASES = [
    ("missing_column", _replace(0, _results.drop("rank")), "missing \\['rank'\\]"),
    ("uncastable_column", _replace(0, _results.with_columns(rank=pl.lit("first"))), "castable"),
    (
        "not_a_frame",
        _replace(1, {"query_id": []}),
        "polars DataFrame or LazyFrame or a pyarrow Table",
    ),
    ("duplicate_query", _replace(2, pl.concat([_queries, _queries.head(1)])), "query_id unique"),
    (
        "reserved_category",
        _replace(2, _queries.with_columns(category=pl.lit("overall"))),
        "'overall'",
    ),
    ("negative_grade", _replace(1, _qrels.with_columns(grade=pl.lit(-1, pl.Int8))), "grade >= 0"),
    (
        "grade_beyond_int32",
        _replace(1, _qrels.with_columns(grade=pl.lit(2**31, pl.Int64))),
        "castable",
    ),
    (
        "duplicate_qrel",
        _replace(1, pl.concat([_qrels, _qrels])),
        "qrels: \\(query_id, memory_id\\)",
    ),
    ("orphan_qrel", _replace(1, _qrels.with_columns(query_id=pl.lit("q9"))), "query_id='q9'"),
    (
        "duplicate_group",
        _replace(3, pl.concat([_groups, _groups])),
        "groups: \\(query_id, memory_id\\)",
    ),
    ("rank_zero", _replace(0, _results.with_columns(rank=pl.col("rank") - 1)), "rank >= 1"),
    (
        "repeated_rank",
        _replace(0, _results.with_columns(rank=pl.lit(1, pl.Int32))),
        "rank\\) unique",
    ),
    ("repeated_memory", _replace(0, _results.with_columns(memory_id=pl.lit("a"))), "at most once"),
    ("orphan_result", _replace(0, _results.with_columns(query_id=pl.lit("q9"))), "query_id='q9'"),
]


@pytest.mark.parametrize(
    ("data", "message"),
    [case[1:] for case in ERROR_CASES],
    ids=[case[0] for case in ERROR_CASES],
)
def test_invalid_input_raises(data: tuple, message: str) -> None:
    with pytest.raises(EvalError, match=message):
        per_query_metrics(*data)


@pytest.mark.parametrize("k", [0, -1, True, 2.5, "5", MAX_K + 1])
def test_invalid_k_raises(k: object) -> None:
    with pytest.raises(EvalError, match="k to be an int >= 1"):
        per_query_metrics(*GOOD, k=k)  # type: ignore[arg-type]


@pytest.mark.parametrize("relevant_grade", [0, -1, True, 2.5, "2", MAX_K + 1])
def test_invalid_relevant_grade_raises(relevant_grade: object) -> None:
    with pytest.raises(EvalError, match="relevant_grade to be an int >= 1"):
        per_query_metrics(*GOOD, relevant_grade=relevant_grade)  # type: ignore[arg-type]


def test_rows_beyond_k_are_not_checked() -> None:
    extra = pl.DataFrame([{**_extra_result, "rank": 9}, {**_extra_result, "rank": 9}])
    results = pl.concat(
        [GOOD.results, extra.select(GOOD.results.columns).cast(GOOD.results.schema)]
    )
    assert_frame_equal(
        per_query_metrics(results, *GOOD[1:], k=5), GOOD_EXPECTED, abs_tol=1e-12, rel_tol=0
    )


def test_a_k_beyond_every_ranking_equals_the_longest_ranking() -> None:
    # The largest k (an Int32, as rank is) allocates nothing of its size. Precision divides by
    # k itself, so it alone differs from a k just past the longest ranking.
    deepest = per_query_metrics(*GOOD, k=MAX_K)
    assert_frame_equal(deepest, expected(GOOD, k=MAX_K)[0], abs_tol=1e-12, rel_tol=0)
    others = pl.col("metric") != "precision_at_k"
    assert_frame_equal(
        deepest.filter(others).drop("k"),
        expected(GOOD, k=100)[0].filter(others).drop("k"),
        abs_tol=1e-12,
        rel_tol=0,
    )


def test_extra_columns_are_ignored() -> None:
    results = _results.with_columns(grade=pl.lit(3, pl.Int8), components=pl.lit("{}"))
    queries = _queries.with_columns(query=pl.lit("text"), line=pl.lit(1))
    assert_frame_equal(
        per_query_metrics(results, _qrels, queries, _groups),
        GOOD_EXPECTED,
        abs_tol=1e-12,
        rel_tol=0,
    )


def test_lazy_inputs_give_the_same_rows(tmp_path: Path) -> None:
    path = tmp_path / "results.parquet"
    _results.write_parquet(path)
    lazy = [pl.scan_parquet(path), *(frame.lazy() for frame in GOOD[1:])]
    assert_frame_equal(per_query_metrics(*lazy), GOOD_EXPECTED, abs_tol=1e-12, rel_tol=0)


def test_a_lazy_results_column_that_does_not_cast_raises() -> None:
    results = _results.with_columns(rank=pl.lit("first")).lazy()
    with pytest.raises(EvalError, match="readable results"):
        per_query_metrics(results, *GOOD[1:])


def test_plan_choice_never_changes_a_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planning with or without common-subplan elimination gives the same bits."""
    import random

    import hotmem_eval.metrics as engine
    from tests.eval.metric_frames import frames

    rng = random.Random(5)
    categories = ["near_duplicate_diversity", "exact_lexical", "negative_or_no_answer"]
    queries = {
        f"q{i:04d}": (rng.choice(categories), rng.choice([None, "acme", "beta"]))
        for i in range(300)
    }
    ranked = {q: rng.sample([f"m{j}" for j in range(30)], rng.randint(0, 8)) for q in queries}
    grades = {
        q: {f"m{j}": rng.randint(0, 3) for j in rng.sample(range(30), rng.randint(0, 4))}
        for q in queries
        if queries[q][0] != "negative_or_no_answer"
    }
    groups = {q: {f"m{j}": f"g{j % 3}" for j in range(0, 30, 2)} for q in queries}
    inputs = frames(queries, ranked=ranked, grades=grades, groups=groups)
    small = engine.per_query_metrics(*inputs, k=5)
    monkeypatch.setattr(engine, "OPTIMIZATIONS", pl.QueryOptFlags())
    large = engine.per_query_metrics(*inputs, k=5)
    assert small.equals(large)
    assert engine.aggregate_metrics(small).equals(engine.aggregate_metrics(large))
    # The same bits either way, and the right values: those of the reference.
    expected_per_query, expected_aggregate = expected(inputs, k=5)
    assert_frame_equal(small, expected_per_query, abs_tol=1e-12, rel_tol=0)
    assert_frame_equal(
        engine.aggregate_metrics(small), expected_aggregate, abs_tol=1e-12, rel_tol=0
    )
