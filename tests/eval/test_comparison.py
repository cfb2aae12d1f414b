"""The comparison builder: paired deltas and the comparisons frame of two or more profiles."""

from __future__ import annotations

import math
import random
from typing import Any

import polars as pl
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from hotmem_eval.comparison import (
    COMPARED_METRICS,
    COMPARISON_COLUMNS,
    PAIRED_DELTA_COLUMNS,
    compare_profiles,
    paired_deltas,
)
from hotmem_eval.errors import EvalError
from hotmem_eval.metric_registry import METRICS
from hotmem_eval.metrics import per_query_metrics
from hotmem_eval.paired import bootstrap_ci, holm_adjust
from tests.eval.metric_frames import frames

QUERIES = {
    "q1": ("exact_lexical", None),
    "q2": ("exact_lexical", None),
    "q3": ("exact_lexical", None),
    "q4": ("near_duplicate_diversity", None),
    "q5": ("negative_or_no_answer", None),
    "q6": ("cross_project_isolation", "acme"),
    "q7": ("near_duplicate_diversity", None),
}
GRADES = {
    "q1": {"a": 2},
    "q2": {"a": 2},
    "q3": {"a": 2},
    "q4": {"a": 2, "b": 2, "c": 2},
    "q6": {"a": 2},
    "q7": {"a": 2},
}
GROUPS = {"q4": {"a": "g", "b": "g"}, "q7": {"a": "g", "b": "g"}}
IDENTIFIERS = {"x": "globex"}
# The baseline finds a at rank 1 for q1 only; the candidate everywhere. The candidate returns
# nothing for the negative q5 (the baseline returned x), drops the duplicate b of q4, the
# out-of-scope x of q6, and returns nothing for q7 (so q7's duplicate rate is undefined).
BASELINE = {
    "q1": ["a"],
    "q2": ["b", "a"],
    "q3": ["x"],
    "q4": ["a", "b", "c"],
    "q5": ["x"],
    "q6": ["a", "x"],
    "q7": ["a", "b"],
}
CANDIDATE = {"q1": ["a"], "q2": ["a"], "q3": ["a"], "q4": ["a", "c"], "q6": ["a"]}


def run(ranked: dict[str, list[str]], profile: str) -> pl.DataFrame:
    data = frames(QUERIES, ranked=ranked, grades=GRADES, groups=GROUPS, identifiers=IDENTIFIERS)
    return per_query_metrics(*data, k=5).with_columns(profile=pl.lit(profile))


def stacked(**runs: dict[str, list[str]]) -> pl.DataFrame:
    return pl.concat([run(ranked, profile) for profile, ranked in runs.items()])


PER_QUERY = stacked(base=BASELINE, cand=CANDIDATE)


def row(frame: pl.DataFrame, scope: str, metric: str) -> dict[str, Any]:
    found = frame.filter((pl.col("scope") == scope) & (pl.col("metric") == metric))
    assert found.height == 1
    return found.row(0, named=True)


# (scope, metric, n, baseline_mean, candidate_mean, delta, wins, losses, ties, p, differences)
HAND_CASES = [
    # recall@1 on q1..q3: 1, 0, 0 -> 1, 1, 1; two non-zero differences: p = 2 / 2^2.
    ("exact_lexical", "recall_at_1", 3, 1 / 3, 1.0, 2 / 3, 2, 0, 1, 0.5, [0.0, 1.0, 1.0]),
    # overall adds q4 (1/3 both), q6 (1 both) and q7 (1 -> 0): |±1 ±1 ±1| >= 1 always.
    (
        "overall",
        "recall_at_1",
        6,
        (3 + 1 / 3) / 6,
        (4 + 1 / 3) / 6,
        1 / 6,
        2,
        1,
        3,
        1.0,
        [0.0, 1.0, 1.0, 0.0, 0.0, -1.0],
    ),
    # rr: 1, 1/2, 0 -> 1, 1, 1; |±0.5 ±1| >= 1.5 for 2 of 4 assignments.
    ("exact_lexical", "mrr_at_k", 3, 0.5, 1.0, 0.5, 2, 0, 1, 0.5, [0.0, 0.5, 1.0]),
    # Lower is better: the candidate returned nothing for the negative q5, a win.
    ("negative_or_no_answer", "negative_fpr_at_k", 1, 1.0, 0.0, -1.0, 1, 0, 0, 1.0, [-1.0]),
    # q4: 1 duplicate of 3 slots -> 0 of 2; q7 is not paired (the candidate filled no slot).
    (
        "near_duplicate_diversity",
        "duplicate_slot_rate_at_k",
        1,
        1 / 3,
        0.0,
        -1 / 3,
        1,
        0,
        0,
        1.0,
        [-1 / 3],
    ),
    # q6: x of globex leaked into 1 of 2 slots -> 0 of 1.
    ("cross_project_isolation", "scope_leak_rate_at_k", 1, 0.5, 0.0, -0.5, 1, 0, 0, 1.0, [-0.5]),
]


@pytest.mark.parametrize(
    (
        "scope",
        "metric",
        "n",
        "baseline_mean",
        "candidate_mean",
        "delta",
        "wins",
        "losses",
        "ties",
        "p",
        "differences",
    ),
    HAND_CASES,
    ids=[f"{case[0]}-{case[1]}" for case in HAND_CASES],
)
def test_comparison_by_hand(
    scope: str,
    metric: str,
    n: int,
    baseline_mean: float,
    candidate_mean: float,
    delta: float,
    wins: int,
    losses: int,
    ties: int,
    p: float,
    differences: list[float],
) -> None:
    found = row(compare_profiles(PER_QUERY, profiles=["base", "cand"]), scope, metric)
    assert found["baseline"] == "base"
    assert found["candidate"] == "cand"
    assert (found["n"], found["wins"], found["losses"], found["ties"]) == (n, wins, losses, ties)
    assert found["baseline_mean"] == pytest.approx(baseline_mean, abs=1e-15)
    assert found["candidate_mean"] == pytest.approx(candidate_mean, abs=1e-15)
    assert found["delta"] == pytest.approx(delta, abs=1e-15)
    assert found["p_value"] == p
    assert found["method"] == "exact"
    assert (found["ci_low"], found["ci_high"]) == bootstrap_ci(differences)
    assert found["ci_low"] <= found["delta"] <= found["ci_high"]


def test_a_scope_with_no_paired_query_has_nulls() -> None:
    found = row(
        compare_profiles(PER_QUERY, profiles=["base", "cand"]), "exact_lexical", "negative_fpr_at_k"
    )
    assert (found["n"], found["wins"], found["losses"], found["ties"]) == (0, 0, 0, 0)
    for column in ("baseline_mean", "candidate_mean", "delta", "p_value", "p_adjusted"):
        assert found[column] is None
    assert (found["method"], found["ci_low"], found["ci_high"]) == (None, None, None)


def test_rows_columns_and_types_are_fixed() -> None:
    out = compare_profiles(
        stacked(base=BASELINE, c1=CANDIDATE, c2=BASELINE), profiles=["base", "c1", "c2"]
    )
    assert out.schema == pl.Schema(COMPARISON_COLUMNS)
    scopes = [
        "overall",
        "cross_project_isolation",
        "exact_lexical",
        "near_duplicate_diversity",
        "negative_or_no_answer",
    ]
    expected = [
        ("base", candidate, scope, metric)
        for candidate in ("c1", "c2")
        for scope in scopes
        for metric in COMPARED_METRICS
    ]
    assert out.select("baseline", "candidate", "scope", "metric").rows() == expected
    assert list(COMPARED_METRICS) == [m for m in METRICS if m in COMPARED_METRICS]
    assert list(COMPARED_METRICS) == [
        "recall_at_1",
        "recall_at_k",
        "mrr_at_k",
        "ndcg_at_k",
        "precision_at_k",
        "ap_at_k",
        "group_recall_at_k",
        "alpha_ndcg_at_k",
        "negative_fpr_at_k",
        "duplicate_slot_rate_at_k",
        "scope_leak_rate_at_k",
    ]


def test_identical_profiles_give_delta_zero_and_p_one() -> None:
    out = compare_profiles(stacked(base=BASELINE, same=BASELINE), profiles=["base", "same"])
    compared = out.filter(pl.col("n") > 0)
    assert compared.height > 0
    assert compared["delta"].to_list() == [0.0] * compared.height
    assert compared["p_value"].to_list() == [1.0] * compared.height
    assert compared["p_adjusted"].to_list() == [1.0] * compared.height
    assert compared["method"].to_list() == ["exact"] * compared.height
    assert (compared["ties"] == compared["n"]).all()
    assert compared["ci_low"].to_list() == [0.0] * compared.height
    assert compared["ci_high"].to_list() == [0.0] * compared.height


def test_p_adjusted_is_holm_across_categories_and_raw_overall() -> None:
    out = compare_profiles(PER_QUERY, profiles=["base", "cand"])
    overall = out.filter(pl.col("scope") == "overall")
    assert overall["p_adjusted"].to_list() == overall["p_value"].to_list()
    for metric in COMPARED_METRICS:
        family = out.filter((pl.col("scope") != "overall") & (pl.col("metric") == metric))
        assert family["p_adjusted"].to_list() == holm_adjust(family["p_value"].to_list())


def test_a_subset_of_metrics_gives_their_rows_only_in_registry_order() -> None:
    full = compare_profiles(PER_QUERY, profiles=["base", "cand"])
    some = compare_profiles(
        PER_QUERY, profiles=["base", "cand"], metrics=["ndcg_at_k", "recall_at_1"]
    )
    assert some["metric"].unique(maintain_order=True).to_list() == ["recall_at_1", "ndcg_at_k"]
    assert_frame_equal(some, full.filter(pl.col("metric").is_in(["recall_at_1", "ndcg_at_k"])))
    with pytest.raises(EvalError, match="found 'ndcg'"):
        compare_profiles(PER_QUERY, profiles=["base", "cand"], metrics=["ndcg"])


def test_paired_deltas_by_hand() -> None:
    deltas = paired_deltas(
        PER_QUERY, profiles=["base", "cand"], metrics=["mrr_at_k", "duplicate_slot_rate_at_k"]
    )
    assert deltas.schema == pl.Schema(PAIRED_DELTA_COLUMNS)
    assert deltas.drop("baseline", "candidate").rows() == [
        ("q1", "exact_lexical", "mrr_at_k", 1.0, 1.0, 0.0),
        ("q2", "exact_lexical", "mrr_at_k", 0.5, 1.0, 0.5),
        ("q3", "exact_lexical", "mrr_at_k", 0.0, 1.0, 1.0),
        ("q4", "near_duplicate_diversity", "mrr_at_k", 1.0, 1.0, 0.0),
        ("q6", "cross_project_isolation", "mrr_at_k", 1.0, 1.0, 0.0),
        ("q7", "near_duplicate_diversity", "mrr_at_k", 1.0, 0.0, -1.0),
        # q7 filled no slot for the candidate: its rate is null, so it is not paired.
        ("q4", "near_duplicate_diversity", "duplicate_slot_rate_at_k", 1 / 3, 0.0, -1 / 3),
    ]


def test_pyarrow_and_lazy_inputs_give_the_same_frame() -> None:
    expected = compare_profiles(PER_QUERY, profiles=["base", "cand"])
    assert_frame_equal(compare_profiles(PER_QUERY.to_arrow(), profiles=["base", "cand"]), expected)
    assert_frame_equal(compare_profiles(PER_QUERY.lazy(), profiles=["base", "cand"]), expected)


def test_other_profiles_are_ignored() -> None:
    three = stacked(base=BASELINE, cand=CANDIDATE, other=BASELINE)
    assert_frame_equal(
        compare_profiles(three, profiles=["base", "cand"]),
        compare_profiles(PER_QUERY, profiles=["base", "cand"]),
    )


def _without(frame: pl.DataFrame, profile: str, query_id: str) -> pl.DataFrame:
    return frame.filter((pl.col("profile") != profile) | (pl.col("query_id") != query_id))


# A query has one row per registered metric; the first in byte order is named in examples.
ROWS = len(METRICS)
FIRST = min(METRICS)
# (id, per_query, profiles, error pattern)
BAD_CASES: list[tuple[str, Any, Any, str]] = [
    ("one_profile", PER_QUERY, ["base"], "two or more distinct non-empty names"),
    ("a_string", PER_QUERY, "base", "two or more distinct non-empty names"),
    ("repeated", PER_QUERY, ["base", "base"], "two or more distinct non-empty names"),
    ("empty_name", PER_QUERY, ["base", ""], "two or more distinct non-empty names"),
    (
        "absent",
        PER_QUERY,
        ["base", "rrf"],
        "found none of \\['rrf'\\] \\(present: \\['base', 'cand'\\]\\)",
    ),
    (
        "query_missing",
        _without(PER_QUERY, "cand", "q3"),
        ["base", "cand"],
        "expected profile 'cand' to cover the same queries as the baseline 'base' .* found 0 "
        f"row\\(s\\) only in 'cand' and {ROWS} only in 'base' \\(e.g. query_id='q3'",
    ),
    (
        "query_extra",
        _without(PER_QUERY, "base", "q3"),
        ["base", "cand"],
        f"found {ROWS} row\\(s\\) only in 'cand' \\(e.g. query_id='q3', category='exact_lexical'",
    ),
    (
        "category_differs",
        PER_QUERY.with_columns(
            category=pl.when((pl.col("profile") == "cand") & (pl.col("query_id") == "q1"))
            .then(pl.lit("semantic_paraphrase"))
            .otherwise("category")
        ),
        ["base", "cand"],
        f"found {ROWS} row\\(s\\) only in 'cand' \\(e.g. query_id='q1', "
        "category='semantic_paraphrase'",
    ),
    (
        "applicable_differs",
        PER_QUERY.with_columns(
            applicable=pl.when((pl.col("profile") == "cand") & (pl.col("query_id") == "q5"))
            .then(True)
            .otherwise("applicable")
        ),
        ["base", "cand"],
        "only in 'cand' \\(e.g. query_id='q5', category='negative_or_no_answer', "
        f"metric='{FIRST}', applicable=True\\)",
    ),
    (
        "repeated_row",
        pl.concat([PER_QUERY, PER_QUERY.head(1)]),
        ["base", "cand"],
        "expected \\(profile, query_id, metric\\) unique in per_query, found 2 repeated "
        "row\\(s\\), e.g. profile='base', query_id='q1', metric='recall_at_1'",
    ),
    (
        "unknown_metric",
        PER_QUERY.with_columns(metric=pl.lit("map_at_k")),
        ["base", "cand"],
        "found metric='map_at_k'",
    ),
    (
        "overall_category",
        PER_QUERY.with_columns(category=pl.lit("overall")),
        ["base", "cand"],
        "no per_query category named 'overall'",
    ),
    (
        "null_profile",
        PER_QUERY.with_columns(profile=pl.lit(None, pl.String)),
        ["base", "cand"],
        f"expected per_query profile non-null, found {PER_QUERY.height} null",
    ),
    (
        "infinite_value",
        PER_QUERY.with_columns(
            value=pl.when((pl.col("profile") == "cand") & (pl.col("query_id") == "q2"))
            .then(math.inf)
            .otherwise("value")
        ),
        ["base", "cand"],
        "expected finite per_query values, found value=inf for profile='cand', query_id='q2'",
    ),
    (  # past any rate or count of top-k slots: its paired sums would overflow (issue 35)
        "overflowing_value",
        PER_QUERY.with_columns(
            value=pl.when((pl.col("profile") == "cand") & (pl.col("query_id") == "q2"))
            .then(1e308)
            .otherwise("value")
        ),
        ["base", "cand"],
        "expected per_query values in \\[0, 10000\\], found value=1e\\+308 for "
        "profile='cand', query_id='q2'",
    ),
    (
        "negative_value",
        PER_QUERY.with_columns(
            value=pl.when((pl.col("profile") == "base") & (pl.col("query_id") == "q1"))
            .then(-0.5)
            .otherwise("value")
        ),
        ["base", "cand"],
        "expected per_query values in \\[0, 10000\\], found value=-0.5 for profile='base', "
        "query_id='q1'",
    ),
    (
        "missing_column",
        PER_QUERY.drop("applicable"),
        ["base", "cand"],
        "missing \\['applicable'\\]",
    ),
    ("not_a_frame", [1, 2], ["base", "cand"], "found list"),
]


@pytest.mark.parametrize(
    ("per_query", "profiles", "message"),
    [case[1:] for case in BAD_CASES],
    ids=[case[0] for case in BAD_CASES],
)
def test_bad_input_is_refused(per_query: Any, profiles: Any, message: str) -> None:
    with pytest.raises(EvalError, match=message):
        compare_profiles(per_query, profiles=profiles)
    with pytest.raises(EvalError, match=message):
        paired_deltas(per_query, profiles=profiles)


def test_paired_deltas_refuses_an_unknown_metric() -> None:
    with pytest.raises(EvalError, match="expected metrics of METRICS, found \\['map_at_k'\\]"):
        paired_deltas(PER_QUERY, profiles=["base", "cand"], metrics=["map_at_k"])


# --- properties over synthetic per-query frames --------------------------------------------

QUERY_IDS = [f"q{i:02d}" for i in range(30)]
CATEGORIES = ["exact_lexical", "near_duplicate_diversity", "Zeta"]
VALUES = [0.0, 1.0, 0.5, 1 / 3, 0.25, 2 / 3, 0.2, None]


@st.composite
def two_profiles(draw: st.DrawFn) -> pl.DataFrame:
    """Per-query rows of profiles a and b on the same queries, every metric, random values."""
    # Up to 12 queries keeps the draw cheap; ALL_ONES covers the Monte-Carlo path.
    query_ids = draw(st.lists(st.sampled_from(QUERY_IDS), unique=True, min_size=1, max_size=12))
    rows = []
    for query_id in query_ids:
        category = draw(st.sampled_from(CATEGORIES))
        for metric in METRICS:
            applicable = draw(st.booleans())
            for profile in ("a", "b"):
                value = draw(st.sampled_from(VALUES)) if applicable else None
                rows.append((profile, query_id, category, metric, value, applicable))
    schema = ["profile", "query_id", "category", "metric", "value", "applicable"]
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    return frame.with_columns(pl.col("value").cast(pl.Float64))


def _baseline_only(per_query: pl.DataFrame) -> pl.DataFrame:
    base = per_query.filter(pl.col("profile") == "a")
    return pl.concat([base, base.with_columns(profile=pl.lit("b"))])


ALL_ONES = pl.DataFrame(
    [
        (profile, query_id, "exact_lexical", "recall_at_1", 1.0 if profile == "b" else 0.0, True)
        for profile in ("a", "b")
        for query_id in QUERY_IDS[:25]
    ],
    schema=["profile", "query_id", "category", "metric", "value", "applicable"],
    orient="row",
)


@pytest.mark.slow
@given(two_profiles())
@example(ALL_ONES)  # 25 wins: overall and the category take the Monte-Carlo path
def test_swapping_baseline_and_candidate(per_query: pl.DataFrame) -> None:
    forward = compare_profiles(per_query, profiles=["a", "b"])
    backward = compare_profiles(per_query, profiles=["b", "a"])
    assert forward["n"].to_list() == backward["n"].to_list()
    assert forward["wins"].to_list() == backward["losses"].to_list()
    assert forward["ties"].to_list() == backward["ties"].to_list()
    assert forward["p_value"].to_list() == backward["p_value"].to_list()
    assert forward["p_adjusted"].to_list() == backward["p_adjusted"].to_list()
    assert forward["method"].to_list() == backward["method"].to_list()
    assert forward["baseline_mean"].to_list() == backward["candidate_mean"].to_list()
    negated = backward.select(
        delta=-pl.col("delta"), ci_low=-pl.col("ci_high"), ci_high=-pl.col("ci_low")
    )
    assert_frame_equal(forward.select("delta", "ci_low", "ci_high"), negated)


@pytest.mark.slow
@given(two_profiles(), st.integers(0, 2**32))
def test_row_order_never_changes_the_result(per_query: pl.DataFrame, seed: int) -> None:
    order = random.Random(seed).sample(range(per_query.height), per_query.height)
    assert_frame_equal(
        compare_profiles(per_query[order], profiles=["a", "b"]),
        compare_profiles(per_query, profiles=["a", "b"]),
    )


@pytest.mark.slow
@given(two_profiles())
def test_a_profile_against_itself_gives_p_one_and_delta_zero(per_query: pl.DataFrame) -> None:
    out = compare_profiles(_baseline_only(per_query), profiles=["a", "b"]).filter(pl.col("n") > 0)
    assert set(out["delta"].to_list()) <= {0.0}
    assert set(out["p_value"].to_list()) <= {1.0}
    assert (out["ties"] == out["n"]).all()


@pytest.mark.slow
@given(two_profiles())
def test_counts_and_means_match_the_paired_deltas(per_query: pl.DataFrame) -> None:
    out = compare_profiles(per_query, profiles=["a", "b"])
    deltas = paired_deltas(per_query, profiles=["a", "b"])
    for found in out.iter_rows(named=True):
        scope = (
            deltas
            if found["scope"] == "overall"
            else deltas.filter(pl.col("category") == found["scope"])
        )
        part = scope.filter(pl.col("metric") == found["metric"])
        assert found["n"] == part.height
        assert found["wins"] + found["losses"] + found["ties"] == part.height
        if part.height:
            assert found["delta"] == pytest.approx(part["delta"].mean(), abs=1e-12)
            assert found["ci_low"] <= found["delta"] + 1e-12
            assert found["delta"] <= found["ci_high"] + 1e-12
