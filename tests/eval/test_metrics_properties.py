"""Property tests: the polars engine, the SQL files and the plain-Python reference agree.

Random fixtures cover ties in score, empty rankings, queries with no results or no qrels,
grades 0..6 (int8 or int32), near-duplicate groups (of returned and unreturned memories), scoped
and unscoped queries, queries with no category (null), categories with no applicable query,
random k and random relevant grades (1..5), and outputs of several k aggregated together. Row
order never changes a result. Each engine is compared with the reference; every example
shuffles with its own drawn seed.
Group recall is recall when every group is a singleton, and alpha-nDCG's greedy ideal is the
best any ordering of the relevant memories reaches.
They run many examples, so they are marked slow (``-m "not slow"`` skips them locally).
"""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import duckdb
import polars as pl
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from hotmem_eval import reference
from hotmem_eval.metric_registry import metrics_frame
from hotmem_eval.metrics import aggregate_metrics, per_query_metrics
from hotmem_eval.sqlfiles import bind_inputs, run_sql, sql_metrics
from tests.eval.metric_frames import Frames, frames

TOLERANCE = 1e-12

# Ids sort differently by byte, by case and by length ("Q" < "q", "q10" < "q2", "é" last).
QUERY_IDS = ["q1", "q2", "q10", "Q3", "é4", "q5", "q6"]
MEMORY_IDS = [f"m{i}" for i in range(8)]
CATEGORIES = [
    "exact_lexical",
    "near_duplicate_diversity",
    "negative_or_no_answer",
    "Zeta",
    "é",
    None,  # a query with no category
]
SCOPES = [None, "acme", "globex"]
GROUP_IDS = ["g1", "g2", "m0"]  # "m0" names a group after a memory that may sit elsewhere


@st.composite
def query_spec(draw: st.DrawFn) -> dict[str, Any]:
    ranked = draw(st.lists(st.sampled_from(MEMORY_IDS), unique=True, max_size=7))
    graded = draw(st.lists(st.sampled_from(MEMORY_IDS), unique=True, max_size=5))
    grouped = draw(st.lists(st.sampled_from(MEMORY_IDS), unique=True, max_size=5))
    return {
        "category": draw(st.sampled_from(CATEGORIES)),
        "scope": draw(st.sampled_from(SCOPES)),
        "ranked": ranked,
        # Few distinct scores, so ties are common; rank alone orders a query's results.
        "scores": [draw(st.sampled_from([0.5, 0.25, 0.0])) for _ in ranked],
        "identifiers": [draw(st.sampled_from(SCOPES)) for _ in ranked],
        "grades": {memory: draw(st.integers(0, 6)) for memory in graded},
        "groups": {memory: draw(st.sampled_from(GROUP_IDS)) for memory in grouped},
    }


fixtures = st.dictionaries(st.sampled_from(QUERY_IDS), query_spec(), max_size=len(QUERY_IDS))


#: The relevant grades drawn: the native rule (2), the field's (1), and above the usual grades.
RELEVANT_GRADES = st.integers(1, 5)


def build(specs: dict[str, dict[str, Any]], *, wide: bool = False) -> Frames:
    """Canonical frames from query specs (the helper's identifiers are per memory, so the
    per-slot identifiers and scores are set here). ``wide``: grades as Int32, not Int8."""
    data = frames(
        {query_id: (spec["category"], spec["scope"]) for query_id, spec in specs.items()},
        ranked={query_id: spec["ranked"] for query_id, spec in specs.items()},
        grades={query_id: spec["grades"] for query_id, spec in specs.items()},
        groups={query_id: spec["groups"] for query_id, spec in specs.items()},
    )
    identifiers = [i for spec in specs.values() for i in spec["identifiers"]]
    scores = [s for spec in specs.values() for s in spec["scores"]]
    results = data.results.with_columns(
        identifier=pl.Series(identifiers, dtype=pl.String),
        score=pl.Series(scores, dtype=pl.Float64),
    )
    qrels = data.qrels.with_columns(pl.col("grade").cast(pl.Int32)) if wide else data.qrels
    return data._replace(results=results, qrels=qrels)


def shuffled(data: Frames, seed: int) -> Frames:
    rng = random.Random(seed)
    return Frames(
        *(frame[rng.sample(range(frame.height), frame.height)] for frame in data)  # type: ignore[arg-type]
    )


def assert_rows_close(actual: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected, strict=True):
        assert got.keys() == want.keys()
        for key, value in want.items():
            if isinstance(value, float) and got[key] is not None:
                assert math.isclose(got[key], value, rel_tol=0, abs_tol=TOLERANCE), (key, got, want)
            else:
                assert got[key] == value, (key, got, want)


EMPTY: dict[str, dict[str, Any]] = {}
NOTHING_RETURNED = {
    "q1": {
        "category": "exact_lexical",
        "scope": "acme",
        "ranked": [],
        "scores": [],
        "identifiers": [],
        "grades": {"m1": 3},
        "groups": {},
    }
}
ALL_NEGATIVE = {
    query_id: {
        "category": "negative_or_no_answer",
        "scope": None,
        "ranked": ["m1", "m2"][: i % 3],
        "scores": [0.5, 0.5][: i % 3],
        "identifiers": [None, None][: i % 3],
        "grades": {"m1": 0},
        "groups": {},
    }
    for i, query_id in enumerate(QUERY_IDS[:3])
}
ALL_TIED_DUPLICATES = {
    "q2": {
        "category": "near_duplicate_diversity",
        "scope": "globex",
        "ranked": ["m0", "m1", "m2", "m3", "m4", "m5", "m6"],
        "scores": [0.5] * 7,
        "identifiers": ["globex", "acme", None, "globex", "globex", "acme", "globex"],
        "grades": {"m1": 1, "m2": 2, "m6": 3},
        "groups": {"m0": "g1", "m1": "g1", "m3": "g1", "m5": "m0"},
    }
}

# Relevant memories in two groups of near-duplicates and a singleton; the top k holds copies.
TWO_RELEVANT_GROUPS = {
    "q1": {
        "category": "near_duplicate_diversity",
        "scope": None,
        "ranked": ["m0", "m1", "m5", "m2", "m3", "m6"],
        "scores": [0.5, 0.5, 0.25, 0.25, 0.0, 0.0],
        "identifiers": [None] * 6,
        "grades": {"m0": 3, "m1": 2, "m2": 3, "m3": 1, "m4": 3, "m6": 2, "m7": 2},
        "groups": {"m0": "g1", "m1": "g1", "m2": "g1", "m3": "g2", "m4": "g2", "m7": "g2"},
    }
}


# Queries with no category beside categorised ones (one near-duplicate), grades above 3, a
# grade repeated, and a relevant memory beyond every k drawn.
NO_CATEGORY = {
    "q1": {
        "category": None,
        "scope": None,
        "ranked": ["m0", "m1", "m2", "m3"],
        "scores": [0.5, 0.25, 0.25, 0.0],
        "identifiers": [None] * 4,
        "grades": {"m0": 6, "m2": 4, "m3": 1, "m5": 4, "m7": 0},
        "groups": {"m0": "g1", "m5": "g1"},
    },
    "q2": {
        "category": None,
        "scope": "acme",
        "ranked": ["m4"],
        "scores": [0.5],
        "identifiers": ["globex"],
        "grades": {},
        "groups": {},
    },
    "q10": {
        "category": "near_duplicate_diversity",
        "scope": None,
        "ranked": ["m0", "m1"],
        "scores": [0.5, 0.5],
        "identifiers": [None, None],
        "grades": {"m1": 5, "m6": 2},
        "groups": {"m0": "g1", "m1": "g1"},
    },
}

SEEDS = st.integers(0, 2**32 - 1)


@pytest.mark.slow
@given(specs=fixtures, k=st.integers(1, 8), relevant_grade=RELEVANT_GRADES, wide=st.booleans())
@example(specs=EMPTY, k=5, relevant_grade=2, wide=False)
@example(specs=NOTHING_RETURNED, k=1, relevant_grade=2, wide=False)
@example(specs=ALL_NEGATIVE, k=1, relevant_grade=2, wide=False)
@example(specs=ALL_TIED_DUPLICATES, k=5, relevant_grade=2, wide=False)
@example(specs=ALL_TIED_DUPLICATES, k=1, relevant_grade=2, wide=False)
@example(specs=TWO_RELEVANT_GROUPS, k=5, relevant_grade=2, wide=False)
@example(specs=TWO_RELEVANT_GROUPS, k=2, relevant_grade=2, wide=False)
@example(specs=TWO_RELEVANT_GROUPS, k=5, relevant_grade=1, wide=True)
@example(specs=TWO_RELEVANT_GROUPS, k=5, relevant_grade=3, wide=False)
@example(specs=NO_CATEGORY, k=3, relevant_grade=1, wide=True)
@example(specs=NO_CATEGORY, k=3, relevant_grade=4, wide=False)
def test_engines_agree_with_reference(
    specs: dict[str, dict[str, Any]], k: int, relevant_grade: int, wide: bool
) -> None:
    data = build(specs, wide=wide)
    rows = [frame.to_dicts() for frame in data]
    expected_per_query = reference.per_query_metrics(*rows, k=k, relevant_grade=relevant_grade)
    expected_aggregate = reference.aggregate_metrics(expected_per_query)

    per_query = per_query_metrics(*data, k=k, relevant_grade=relevant_grade)
    aggregate = aggregate_metrics(per_query)
    assert_rows_close(per_query.to_dicts(), expected_per_query)
    assert_rows_close(aggregate.to_dicts(), expected_aggregate)

    sql_per_query, sql_aggregate = sql_metrics(*data, k=k, relevant_grade=relevant_grade)
    assert_rows_close(sql_per_query.to_dicts(), expected_per_query)
    assert_rows_close(sql_aggregate.to_dicts(), expected_aggregate)


@pytest.mark.slow
@given(
    specs=fixtures,
    ks=st.lists(st.integers(1, 8), min_size=1, max_size=3, unique=True),
    relevant_grade=RELEVANT_GRADES,
    seed=SEEDS,
)
@example(specs=EMPTY, ks=[5, 1], relevant_grade=2, seed=0)
@example(specs=NO_CATEGORY, ks=[1, 3, 8], relevant_grade=1, seed=1)
@example(specs=TWO_RELEVANT_GROUPS, ks=[5, 2], relevant_grade=2, seed=2)
def test_engines_aggregate_several_k_as_the_reference(
    specs: dict[str, dict[str, Any]], ks: list[int], relevant_grade: int, seed: int
) -> None:
    """Outputs at several k, stacked in any row order, aggregate k by k (ascending), each k
    as it aggregates alone; every engine gives the reference's rows."""
    data = build(specs)
    rows = [frame.to_dicts() for frame in data]
    expected_per_query = [
        row
        for k in ks
        for row in reference.per_query_metrics(*rows, k=k, relevant_grade=relevant_grade)
    ]
    expected_aggregate = reference.aggregate_metrics(expected_per_query)
    alone = [
        row
        for k in sorted(ks)
        for row in reference.aggregate_metrics(
            reference.per_query_metrics(*rows, k=k, relevant_grade=relevant_grade)
        )
    ]
    if expected_per_query:
        assert expected_aggregate == alone

    stacked = pl.concat([per_query_metrics(*data, k=k, relevant_grade=relevant_grade) for k in ks])
    order = random.Random(seed).sample(range(stacked.height), stacked.height)
    assert_rows_close(aggregate_metrics(stacked[order]).to_dicts(), expected_aggregate)

    with duckdb.connect() as con:
        bind_inputs(con, metrics=metrics_frame(), **data._asdict())
        sql_stacked = pl.concat(
            [run_sql("per_query_metrics", con, k=k, relevant_grade=relevant_grade) for k in ks]
        )
        assert_rows_close(sql_stacked.to_dicts(), expected_per_query)
        bind_inputs(con, per_query_metrics=sql_stacked[order])
        sql_aggregate = run_sql("category_metrics", con)
    assert_rows_close(sql_aggregate.to_dicts(), expected_aggregate)


@pytest.mark.slow
@given(specs=fixtures, k=st.integers(1, 8), relevant_grade=RELEVANT_GRADES, seed=SEEDS)
@example(specs=ALL_TIED_DUPLICATES, k=5, relevant_grade=2, seed=1)
@example(specs=EMPTY, k=5, relevant_grade=2, seed=0)
@example(specs=NO_CATEGORY, k=3, relevant_grade=1, seed=0)
def test_row_order_changes_nothing(
    specs: dict[str, dict[str, Any]], k: int, relevant_grade: int, seed: int
) -> None:
    """The polars engine gives the same bits in any row order (the reference test above checks
    the values themselves)."""
    data = build(specs)
    per_query = per_query_metrics(*data, k=k, relevant_grade=relevant_grade)
    reordered = per_query_metrics(*shuffled(data, seed), k=k, relevant_grade=relevant_grade)
    assert_frame_equal(reordered, per_query, check_exact=True)
    rows = random.Random(seed).sample(range(per_query.height), per_query.height)
    assert_frame_equal(
        aggregate_metrics(per_query[rows]), aggregate_metrics(per_query), check_exact=True
    )


@pytest.mark.slow
@given(specs=fixtures, k=st.integers(1, 8), relevant_grade=RELEVANT_GRADES, seed=SEEDS)
@example(specs=ALL_TIED_DUPLICATES, k=3, relevant_grade=2, seed=0)
@example(specs=NO_CATEGORY, k=3, relevant_grade=1, seed=0)
def test_sql_row_order_changes_nothing(
    specs: dict[str, dict[str, Any]], k: int, relevant_grade: int, seed: int
) -> None:
    """The SQL files give the reference's rows, in its order, from shuffled inputs."""
    data = build(specs)
    expected_per_query = reference.per_query_metrics(
        *(frame.to_dicts() for frame in data), k=k, relevant_grade=relevant_grade
    )
    per_query, aggregate = sql_metrics(*shuffled(data, seed), k=k, relevant_grade=relevant_grade)
    assert_rows_close(per_query.to_dicts(), expected_per_query)
    assert_rows_close(aggregate.to_dicts(), reference.aggregate_metrics(expected_per_query))


def _metric_rows(rows: list[dict[str, Any]], metric: str) -> list[tuple[Any, ...]]:
    return [
        (row["query_id"], row["value"], row["numerator"], row["denominator"], row["applicable"])
        for row in rows
        if row["metric"] == metric
    ]


@pytest.mark.slow
@given(specs=fixtures, k=st.integers(1, 8), named=st.booleans())
@example(specs=TWO_RELEVANT_GROUPS, k=5, named=True)
@example(specs=EMPTY, k=5, named=False)
def test_group_recall_is_recall_when_every_group_is_a_singleton(
    specs: dict[str, dict[str, Any]], k: int, named: bool
) -> None:
    """With no group rows, or a group of its own named for every grouped memory, group recall
    equals recall query by query (value, numerator and denominator)."""
    singletons = {
        query_id: {**spec, "groups": {m: f"own-{m}" for m in spec["groups"]} if named else {}}
        for query_id, spec in specs.items()
    }
    data = build(singletons)
    per_query = per_query_metrics(*data, k=k).to_dicts()
    expected = reference.per_query_metrics(*(frame.to_dicts() for frame in data), k=k)
    for rows in (per_query, expected):
        assert _metric_rows(rows, "group_recall_at_k") == _metric_rows(rows, "recall_at_k")


@st.composite
def relevant_in_groups(draw: st.DrawFn) -> dict[str, Any]:
    """Up to five relevant memories (and a grade-1 one) spread over a few groups."""
    relevant = MEMORY_IDS[: draw(st.integers(1, 5))]
    grades = {memory: draw(st.integers(2, 3)) for memory in relevant} | {"m7": 1}
    grouped = draw(st.lists(st.sampled_from([*relevant, "m7"]), unique=True))
    return {
        "grades": grades,
        "groups": {memory: draw(st.sampled_from(GROUP_IDS)) for memory in grouped},
    }


@pytest.mark.slow
@given(spec=relevant_in_groups(), k=st.integers(1, 6))
@example(spec={"grades": {"m0": 3, "m1": 3, "m2": 2}, "groups": {"m0": "g1", "m1": "g1"}}, k=2)
@example(spec={"grades": {"m0": 3}, "groups": {}}, k=1)
def test_alpha_ndcg_ideal_is_the_best_ordering(spec: dict[str, Any], k: int) -> None:
    """Ranking every ordering of the relevant memories (one query each), alpha-nDCG never
    exceeds 1 and the best ordering reaches it: the greedy ideal is the maximum."""
    relevant = [memory for memory, grade in spec["grades"].items() if grade >= 2]
    orderings = list(itertools.permutations(relevant))
    data = frames(
        {f"p{i:03d}": ("exact_lexical", None) for i in range(len(orderings))},
        ranked={f"p{i:03d}": list(order) for i, order in enumerate(orderings)},
        grades={f"p{i:03d}": spec["grades"] for i in range(len(orderings))},
        groups={f"p{i:03d}": spec["groups"] for i in range(len(orderings))},
    )
    per_query = per_query_metrics(*data, k=k)
    values = per_query.filter(pl.col("metric") == "alpha_ndcg_at_k")["value"].to_list()
    assert max(values) == pytest.approx(1.0, abs=TOLERANCE)
    assert all(0.0 < value <= 1.0 + TOLERANCE for value in values)
