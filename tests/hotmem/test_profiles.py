"""Retrieval profiles: the built-ins, reading them from data, the store's default, and what
each fusion method does to the worked example of docs/ranking.md."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import hotmem
from hotmem import LexicalChannel, Profile, VectorChannel
from tests.hotmem.conftest import FIXED
from tests.hotmem.test_search import EXAMPLE, QUERY


@pytest.fixture
def example() -> hotmem.MemoryStore:
    store = hotmem.open_store(":memory:", clock=hotmem.fixed_clock(FIXED))
    for memory_id, identifier, fact, importance in EXAMPLE:
        store.add(fact, identifier=identifier, importance=importance, memory_id=memory_id)
    return store


def _found(store: hotmem.MemoryStore, profile: str | Profile) -> list[tuple[str, float]]:
    return [(r.memory_id, r.score) for r in hotmem.search_memories(store, QUERY, profile=profile)]


def test_the_builtin_profiles() -> None:
    assert list(hotmem.PROFILES) == [
        "default",
        "cosine-only",
        "bm25-only",
        "rrf",
        "default+mmr",
        "semantic",
        "semantic-only",
        "semantic+mmr",
    ]
    assert hotmem.PROFILES["default"].to_dict() == {
        "name": "default",
        "vector": {"space": "hotmem-hash-v1", "weight": 0.6, "floor": 0.4},
        "lexical": {"weight": 0.2, "gate": None},
        "importance": 0.2,
        "fusion": "weighted",
        "rrf_k": 60,
        "depth": 100,
        "reranker": None,
    }
    assert hotmem.PROFILES["bm25-only"].spaces == ()
    assert hotmem.PROFILES["rrf"].spaces == ("hotmem-hash-v1",)
    assert hotmem.PROFILES["semantic"].spaces == ("all-minilm-l6-v2",)


@pytest.mark.parametrize("name", list(hotmem.PROFILES))
def test_a_profile_reads_back_from_its_data(name: str) -> None:
    profile = hotmem.PROFILES[name]
    assert Profile.from_mapping(name, profile.to_dict()) == profile


def test_missing_fields_take_the_default_profiles_values() -> None:
    profile = Profile.from_mapping("mine", {"lexical": False, "vector": {"floor": 0.3}})
    assert profile == Profile("mine", vector=VectorChannel(floor=0.3), lexical=None)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"colour": 1}, "profile 'p': unknown field(s) 'colour'; expected some of vector,"),
        ({"fusion": "max"}, "profile 'p': fusion must be one of weighted, rrf; found 'max'"),
        ({"vector": False, "lexical": False}, "profile 'p' has neither a vector nor a lexical"),
        ({"vector": False, "lexical": {"gate": 0.2}}, "lexical.gate needs a vector channel"),
        ({"vector": {"floor": 2}}, "vector.floor must be in [-1, 1]; found vector.floor=2"),
        ({"vector": {"size": 2}}, "vector takes the fields space, weight, floor; found 'size'"),
        ({"lexical": 3}, "lexical must be a table of fields or false; found 3"),
        ({"depth": 0}, "depth must be an integer in 1..10000; found depth=0"),
        ({"rrf_k": True}, "rrf_k must be an integer in 1..1000000; found rrf_k=True"),
        ({"importance": float("nan")}, "importance must be a finite number"),
    ],
)
def test_bad_profile_data_is_refused_with_the_reason(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(hotmem.ValidationError) as caught:
        Profile.from_mapping("p", fields)
    assert message in str(caught.value)


def test_ablation_removes_one_channel() -> None:
    gated = Profile("g", lexical=LexicalChannel(gate=0.25))
    assert gated.without("vector") == Profile(
        "g-no-vector", vector=None, lexical=LexicalChannel()
    )  # the gate goes with the cosine it needs
    assert gated.without("lexical") == Profile("g-no-lexical", lexical=None)
    assert gated.without("importance").importance == 0.0
    with pytest.raises(hotmem.ValidationError, match="neither a vector nor a lexical"):
        hotmem.PROFILES["bm25-only"].without("lexical")


def test_an_unknown_profile_name_lists_the_known_ones(example: hotmem.MemoryStore) -> None:
    with pytest.raises(hotmem.ValidationError) as caught:
        hotmem.search_memories(example, QUERY, profile="semantik")
    assert str(caught.value) == (
        "unknown profile 'semantik'; expected one of default, cosine-only, bm25-only, rrf, "
        "default+mmr, semantic, semantic-only, semantic+mmr (built-in or kept in the store: "
        "hotmem profiles --import FILE) or a hotmem.Profile"
    )


def test_each_fusion_on_the_worked_example(example: hotmem.MemoryStore) -> None:
    default = hotmem.search_memories(example, QUERY)
    assert [r.memory_id for r in default] == ["m-invoice", "m-beta-invoice"]
    # cosine-only: the score is the cosine; the same two clear the floor of 0.4
    cosines = [(r.memory_id, r.components.cosine) for r in default]
    assert _found(example, "cosine-only") == cosines
    # bm25-only: normalised BM25 (the best match 1.0); only lexical matches are candidates
    [(first, top), (second, score)] = _found(example, "bm25-only")
    assert (first, top, second) == ("m-invoice", 1.0, "m-beta-invoice")
    assert score == pytest.approx(1.5997 / 4.1497, abs=1e-4)
    # rrf: both are first (and second) in both channels: 1/(60+1) + 1/(60+1), 2/(60+2)
    assert _found(example, "rrf") == [("m-invoice", 1 / 61 + 1 / 61), ("m-beta-invoice", 2 / 62)]


def test_explain_under_rrf_gives_the_channel_ranks(example: hotmem.MemoryStore) -> None:
    explained = hotmem.explain(example, QUERY, "m-beta-invoice", profile="rrf")
    assert (explained.profile, explained.vector_rank, explained.lexical_rank) == ("rrf", 2, 2)
    assert explained.score == 2 / 62
    missing = hotmem.explain(example, QUERY, "m-paid", profile="rrf")
    assert (missing.vector_rank, missing.lexical_rank, missing.passes_floor) == (None, None, False)


def test_rrf_depth_cuts_each_channel(example: hotmem.MemoryStore) -> None:
    shallow = replace(hotmem.PROFILES["rrf"], name="shallow", depth=1)
    assert _found(example, shallow) == [("m-invoice", 2 / 61)]
    diagnosis = hotmem.diagnose(example, QUERY, "m-beta-invoice", profile=shallow)
    assert (diagnosis.verdict, diagnosis.profile, diagnosis.rank) == ("outranked", "shallow", None)
    assert diagnosis.detail == (
        "score 0.0000 in neither channel's top 1 (rrf depth); m-invoice leads by 0.0328"
    )


def test_a_lexical_gate_drops_matches_of_low_cosine(example: hotmem.MemoryStore) -> None:
    # beta matches lexically with cosine 0.587: below the gate, and below the floor too
    gated = Profile("gated", vector=VectorChannel(floor=0.7), lexical=LexicalChannel(gate=0.6))
    assert [m for m, _ in _found(example, gated)] == ["m-invoice"]  # cosine 0.7395
    ungated = replace(gated, lexical=LexicalChannel())
    assert [m for m, _ in _found(example, ungated)] == ["m-invoice", "m-beta-invoice"]
    diagnosis = hotmem.diagnose(example, QUERY, "m-beta-invoice", profile=gated)
    assert (diagnosis.verdict, diagnosis.detail) == (
        "below_floor",
        "lexical match, but cosine 0.5874 < lexical gate 0.6",
    )


def test_overrides_make_a_custom_profile(example: hotmem.MemoryStore) -> None:
    explained = hotmem.explain(example, QUERY, "m-paid", min_similarity=0.1)
    assert (explained.profile, explained.passes_floor) == ("custom", True)
    diagnosis = hotmem.diagnose(example, QUERY, "m-paid", profile="bm25-only")
    assert (diagnosis.verdict, diagnosis.min_similarity, diagnosis.detail) == (
        "no_channel_match",
        None,
        "no lexical match; profile 'bm25-only' has no cosine",
    )
    with pytest.raises(hotmem.ValidationError, match="min_similarity needs a vector channel"):
        hotmem.search_memories(example, QUERY, profile="bm25-only", min_similarity=0.1)


def test_the_store_keeps_its_default_profile(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with hotmem.open_store(path) as store:
        for memory_id, identifier, fact, importance in EXAMPLE:
            store.add(fact, identifier=identifier, importance=importance, memory_id=memory_id)
        assert store.default_profile == "default"
        hotmem.set_default_profile(store, "bm25-only")
        with pytest.raises(hotmem.ValidationError, match="unknown profile 'nope'"):
            hotmem.set_default_profile(store, "nope")
    with hotmem.open_store(path) as store:
        assert store.default_profile == "bm25-only"
        assert _found(store, None) == _found(store, "bm25-only")  # type: ignore[arg-type]
        assert hotmem.explain(store, QUERY, "m-invoice").profile == "bm25-only"
        store.snapshot(tmp_path / "p.hotmem")
    hotmem.hydrate(tmp_path / "p.hotmem", tmp_path / "h.db")
    with hotmem.open_store(tmp_path / "h.db") as hydrated:
        # The package carries it (issue 33: a copy searches as its source did).
        assert hydrated.default_profile == "bm25-only"
