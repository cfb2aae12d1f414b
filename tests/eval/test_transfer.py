"""Transfer comparison on constructed runs, and miss attribution on the committed fixture."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hotmem
from hotmem_eval.attribution import attribute_misses
from hotmem_eval.fixtures import load_fixture
from hotmem_eval.ingest import open_fixture_store
from hotmem_eval.runner import RESULTS_SCHEMA, rows_by_query, run_queries
from hotmem_eval.transfer import TRANSFER_SCHEMA, _drift, compare_results

FIXTURE = Path(__file__).resolve().parents[2] / "benchmarks" / "retrieval"


def rows(query_id: str, slots: list[tuple[str, float]]) -> list[dict]:
    return [
        {
            "query_id": query_id,
            "rank": rank,
            "memory_id": memory_id,
            "identifier": "a",
            "score": score,
            "cosine": 0.5,
            "bm25_raw": None,
            "bm25_normalised": 0.0,
            "importance": 0.5,
        }
        for rank, (memory_id, score) in enumerate(slots, start=1)
    ]


def table(*groups: list[dict]) -> pa.Table:
    return pa.Table.from_pylist([row for group in groups for row in group], schema=RESULTS_SCHEMA)


def test_identical_runs_are_equivalent() -> None:
    source = table(rows("q1", [("m1", 0.9), ("m2", 0.8)]), rows("q2", []))
    comparison, drift, equivalent = compare_results(source, source, ["q1", "q2"])
    assert (equivalent, drift) == (2, ())
    assert comparison.num_rows == 2
    assert all(comparison.column("same_memory").to_pylist())
    assert all(comparison.column("same_score").to_pylist())


@pytest.mark.parametrize(
    ("after", "kind", "difference"),
    [
        ([("m2", 0.8), ("m1", 0.9)], "order", 0.9 - 0.8),
        ([("m1", 0.9), ("m3", 0.8)], "ids", 0.0),
        ([("m1", 0.9), ("m2", 0.8 + 2**-50)], "score", 2**-50),
        ([("m1", 0.9)], "ids", 0.0),
    ],
)
def test_drift_is_classified(after: list[tuple[str, float]], kind: str, difference: float) -> None:
    source = table(rows("q1", [("m1", 0.9), ("m2", 0.8)]))
    hydrated = table(rows("q1", after))
    comparison, drift, equivalent = compare_results(source, hydrated, ["q1"])
    assert equivalent == 0
    [entry] = drift
    assert entry["kind"] == kind
    assert entry["max_score_difference"] == pytest.approx(difference, abs=1e-18)
    assert entry["source_ids"] == ["m1", "m2"]
    assert entry["hydrated_ids"] == [m for m, _ in after]
    assert comparison.num_rows == 2


def previous_comparison(
    source: pa.Table, hydrated: pa.Table, query_ids: list[str]
) -> tuple[pa.Table, tuple[dict[str, object], ...], int]:
    """``compare_results`` as it was written before its columnar version: slot by slot in
    Python, a query drifting when its rows differ in any field (``==``)."""
    before, after = rows_by_query(source), rows_by_query(hydrated)
    found: list[dict[str, object]] = []
    drift = []
    for query_id in query_ids:
        a, b = before.get(query_id, []), after.get(query_id, [])
        for rank in range(1, max(len(a), len(b)) + 1):
            x = a[rank - 1] if rank <= len(a) else None
            y = b[rank - 1] if rank <= len(b) else None
            found.append(
                {
                    "query_id": query_id,
                    "rank": rank,
                    "source_memory_id": x and x["memory_id"],
                    "hydrated_memory_id": y and y["memory_id"],
                    "source_score": x and x["score"],
                    "hydrated_score": y and y["score"],
                    "same_memory": bool(x and y and x["memory_id"] == y["memory_id"]),
                    "same_score": bool(x and y and x["score"] == y["score"]),
                }
            )
        if a != b:
            drift.append(_drift(query_id, a, b))
    table = pa.Table.from_pylist(found, schema=TRANSFER_SCHEMA)
    return table, tuple(drift), len(query_ids) - len(drift)


_values = st.sampled_from([0.5, 0.25, -0.0, 0.0, float("nan")])
_run = st.dictionaries(
    st.sampled_from(["q1", "q2", "q3", "q10"]),
    st.lists(
        st.tuples(st.sampled_from(["m1", "m2", "m3"]), _values, _values, st.none() | _values),
        max_size=4,
    ),
    max_size=4,
)


def _table(run: dict[str, list[tuple[str, float, float, float | None]]]) -> pa.Table:
    found = []
    for query_id in sorted(run):
        for rank, (memory_id, score, cosine, raw) in enumerate(run[query_id], start=1):
            found.append(
                {
                    "query_id": query_id,
                    "rank": rank,
                    "memory_id": memory_id,
                    "identifier": "a",
                    "score": score,
                    "cosine": cosine,
                    "bm25_raw": raw,
                    "bm25_normalised": 0.0,
                    "importance": 0.5,
                }
            )
    return pa.Table.from_pylist(found, schema=RESULTS_SCHEMA)


@settings(max_examples=300, deadline=None)
@given(
    source=_run,
    hydrated=_run,
    query_ids=st.lists(st.sampled_from(["q1", "q2", "q3", "q10"]), unique=True),
    same=st.booleans(),
)
def test_the_comparison_is_the_previous_one(
    source: dict, hydrated: dict, query_ids: list[str], same: bool
) -> None:
    """Columnar, the comparison gives the rows, drift and count of the slot-by-slot one."""
    a, b = _table(source), _table(source if same else hydrated)
    comparison, drift, equivalent = compare_results(a, b, query_ids)
    expected, expected_drift, expected_equivalent = previous_comparison(a, b, query_ids)
    assert comparison.schema == TRANSFER_SCHEMA
    # repr: a NaN is written the same on both sides (and never == itself)
    assert repr(comparison.to_pylist()) == repr(expected.to_pylist())
    assert repr(drift) == repr(expected_drift)
    assert equivalent == expected_equivalent


def test_misses_on_the_committed_fixture_are_explained() -> None:
    fixture = load_fixture(FIXTURE / "corpus.jsonl", FIXTURE / "queries.jsonl")
    with open_fixture_store(":memory:", fixture.corpus) as store:
        run = run_queries(store, fixture.queries, top_k=5)
        misses = attribute_misses(store, fixture.queries, fixture.qrels, run.results, top_k=5)
    # 23 outranked: the near-duplicate queries that span groups have more relevant copies
    # than the top 5 holds.
    assert Counter(m.reason for m in misses) == {
        "below_floor": 6,
        "no_channel_match": 3,
        "outranked": 23,
    }
    by_key = {(m.query_id, m.memory_id): m for m in misses}
    outranked = by_key[("q-dup-009", "mem-postmortem-003")]
    assert outranked.reason == "outranked"
    assert outranked.candidate_rank == 6
    assert [o.rank for o in outranked.outranked_by] == [1, 2, 3, 4, 5]
    assert all(o.margin > 0 for o in outranked.outranked_by)
    assert outranked.detail.startswith("score 0.1439 at rank 6; mem-postmortem-002 leads by")
    floor = by_key[("q-para-003", "mem-vpn-001")]
    assert (floor.reason, floor.bm25_raw) == ("below_floor", None)
    assert 0.0 < floor.cosine < 0.4
    assert floor.candidate_rank is None
    assert floor.outranked_by == ()
    none = by_key[("q-para-002", "mem-pager-001")]
    assert none.reason == "no_channel_match"
    assert none.cosine <= 0.0


@pytest.mark.parametrize(
    ("name", "reasons"),
    [
        ("bm25-only", {"outranked": 20, "no_channel_match": 10}),
        ("rrf", {"outranked": 24, "below_floor": 6, "no_channel_match": 3}),
        ("cosine-only", {"below_floor": 81, "no_channel_match": 11, "outranked": 1}),
    ],
)
def test_misses_are_explained_under_the_profile_searched(name: str, reasons: dict) -> None:
    """Under a profile hotmem.diagnose cannot describe, the verdicts come from explain and
    search_memories with that profile: an outranked miss holds the rank a deep search gives."""
    profile = hotmem.PROFILES[name]
    fixture = load_fixture(FIXTURE / "corpus.jsonl", FIXTURE / "queries.jsonl")
    with open_fixture_store(":memory:", fixture.corpus) as store:
        run = run_queries(store, fixture.queries, top_k=5, profile=profile)
        misses = attribute_misses(
            store, fixture.queries, fixture.qrels, run.results, top_k=5, profile=profile
        )
        texts = dict(
            zip(
                fixture.queries["query_id"].to_pylist(),
                fixture.queries["query"].to_pylist(),
                strict=True,
            )
        )
        scopes = dict(
            zip(
                fixture.queries["query_id"].to_pylist(),
                fixture.queries["identifier"].to_pylist(),
                strict=True,
            )
        )
        for miss in misses:
            if miss.reason != "outranked":
                assert miss.candidate_rank is None
                continue
            deep = hotmem.search_memories(
                store,
                texts[miss.query_id],
                identifier=scopes[miss.query_id],
                limit=100,
                profile=profile,
            )
            ranks = {r.memory_id: r.rank for r in deep}
            assert miss.candidate_rank == ranks[miss.memory_id] > 5
            assert [o.memory_id for o in miss.outranked_by] == [r.memory_id for r in deep[:5]]
    assert Counter(m.reason for m in misses) == reasons
    if profile.vector is None:
        assert {m.detail for m in misses if m.reason == "no_channel_match"} == {
            "no lexical match; profile 'bm25-only' has no cosine"
        }


def test_one_package_serves_every_profile(tmp_path: Path) -> None:
    """The package does not depend on the profile: made once, re-run per profile, each
    profile's rankings the same bits after hydrate."""
    from hotmem_eval.evaluate import evaluate_profiles

    fixture = load_fixture(FIXTURE / "corpus.jsonl", FIXTURE / "queries.jsonl")
    profiles = [hotmem.PROFILES[name] for name in ("default", "bm25-only", "rrf")]
    runs, _, _ = evaluate_profiles(fixture, tmp_path, profiles, top_k=5)
    assert sorted(p.name for p in tmp_path.rglob("*.hotmem")) == ["transfer.hotmem"]
    for run in runs:
        assert run.transfer.equivalent_queries == run.transfer.total_queries == 98
        assert run.transfer.package.hydrated_rows == run.transfer.package.source_rows == 155
    assert len({id(run.transfer.package) for run in runs}) == 1  # one package, made once
    assert [run.transfer.comparison.num_rows for run in runs] == [
        run.results.height for run in runs
    ]
