"""The MMR reranker: by hand, against a naive reference, in profiles, in explain and the CLI.

The worked example is the one of docs/ranking.md ("Reranking with MMR").
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import hotmem
from hotmem import MMR, MemoryStore, Profile, ValidationError, explain, search_memories
from hotmem.cli import main
from hotmem.retrieval.rerank import mmr_order, reranker_from_mapping
from tests.hotmem.test_fusion import IDENTIFIERS, WORDS, reference_ranking

FACTS = {
    "m-tue": "Production deploys happen on Tuesdays.",
    "m-tue-copy": "Production deploys happen on Tuesdays only.",
    "m-freeze": "Deploys are frozen during the December holidays.",
    "m-rollback": "A failed deploy is rolled back by the on-call engineer.",
}
QUERY = "When do production deploys happen?"
FUSED = ["m-tue", "m-tue-copy", "m-freeze", "m-rollback"]


def mmr(name: str = "mmr", **fields: object) -> Profile:
    """``default`` with an MMR reranker of ``fields``."""
    return Profile(name, reranker=MMR(**fields))  # type: ignore[arg-type]


@pytest.fixture
def deploys(store: MemoryStore) -> MemoryStore:
    for memory_id, fact in FACTS.items():
        store.add(fact, identifier="acme", memory_id=memory_id)
    return store


def ids(results: list[hotmem.SearchResult]) -> list[str]:
    return [r.memory_id for r in results]


# A pool in fused order: relevances, and the similarity of each pair (0 and 1 near-duplicates).
RELS = [0.9, 0.85, 0.8, 0.5]
SIMILAR = {(0, 1): 0.95, (0, 2): 0.1, (1, 2): 0.1, (0, 3): 0.0, (1, 3): 0.0, (2, 3): 0.2}


def similarity(i: int, j: int) -> float:
    return SIMILAR[min(i, j), max(i, j)]


@pytest.mark.parametrize(
    ("lambda_", "expected"),
    [
        # step 1: 0.7 * rel, so 0 first. Step 2: 1: 0.595 - 0.3 * 0.95 = 0.310,
        # 2: 0.560 - 0.3 * 0.1 = 0.530, 3: 0.350 - 0 = 0.350, so 2. Step 3: 1: 0.310,
        # 3: 0.350 - 0.3 * max(0.0, 0.2) = 0.290, so 1, then 3.
        (0.7, [0, 2, 1, 3]),
        # step 2: 1: 0.425 - 0.475 = -0.050, 2: 0.400 - 0.050 = 0.350, 3: 0.250, so 2.
        # Step 3: 1: -0.050, 3: 0.250 - 0.5 * 0.2 = 0.150, so 3, then 1.
        (0.5, [0, 2, 3, 1]),
        (1.0, [0, 1, 2, 3]),  # relevance alone: the fused order
        # similarity alone: 0 (every value 0, the smaller index), then 3 (sim 0.0 to 0),
        # then 2 (max(0.1, 0.2) = 0.2 against 1's 0.95), then 1.
        (0.0, [0, 3, 2, 1]),
    ],
)
def test_mmr_order_by_hand(lambda_: float, expected: list[int]) -> None:
    assert mmr_order(RELS, similarity, lambda_) == expected


def test_mmr_order_breaks_ties_by_fused_rank() -> None:
    # Equal relevance and equal similarity everywhere: every step is a tie.
    assert mmr_order([0.5] * 5, lambda i, j: 0.3, 0.7) == [0, 1, 2, 3, 4]
    assert mmr_order([], lambda i, j: 0.0, 0.7) == []


def test_worked_example_by_hand(deploys: MemoryStore) -> None:
    fused = search_memories(deploys, QUERY, limit=10)
    assert ids(fused) == FUSED
    scores = {r.memory_id: r.score for r in fused}
    assert [round(scores[m], 4) for m in FUSED] == [0.7402, 0.7045, 0.3828, 0.1961]
    vectors = {m: hotmem.embed(fact) for m, fact in FACTS.items()}

    def cos(a: str, b: str) -> float:
        return 1.0 - math.dist(vectors[a], vectors[b]) ** 2 / 2.0

    assert [round(cos("m-tue", m), 4) for m in FUSED[1:]] == [0.9465, 0.3865, 0.0423]
    assert [round(cos("m-tue-copy", m), 4) for m in FUSED[2:]] == [0.3012, 0.1201]
    assert round(cos("m-freeze", "m-rollback"), 4) == 0.0207
    # lambda 0.5, step 2 (after m-tue): 0.5 * score - 0.5 * cosine to m-tue.
    step2 = {m: 0.5 * scores[m] - 0.5 * cos("m-tue", m) for m in FUSED[1:]}
    assert {m: round(v, 4) for m, v in step2.items()} == {
        "m-tue-copy": -0.121,
        "m-freeze": -0.0018,
        "m-rollback": 0.0769,
    }
    reranked = search_memories(deploys, QUERY, limit=10, profile=mmr(lambda_=0.5))
    assert ids(reranked) == ["m-tue", "m-rollback", "m-freeze", "m-tue-copy"]
    # Scores stay the fused scores; ranks are the MMR order; fused_rank says where each was.
    assert [r.score for r in reranked] == [scores[m] for m in ids(reranked)]
    assert [r.rank for r in reranked] == [1, 2, 3, 4]
    assert [r.fused_rank for r in reranked] == [1, 4, 3, 2]
    assert [r.fused_rank for r in fused] == [None] * 4
    # At lambda 0.7 the copy's relevance outweighs its similarity: the fused order stands.
    assert ids(search_memories(deploys, QUERY, limit=10, profile=mmr(lambda_=0.7))) == FUSED


def test_lambda_one_is_the_fused_order(deploys: MemoryStore) -> None:
    for query in [QUERY, "deploy", "December holidays", "on-call engineer rolled back"]:
        fused = search_memories(deploys, query, limit=10)
        same = search_memories(deploys, query, limit=10, profile=mmr(lambda_=1.0))
        assert [(r.memory_id, r.score, r.rank) for r in same] == [
            (r.memory_id, r.score, r.rank) for r in fused
        ]


def test_pool_smaller_than_limit_reranks_the_pool_and_keeps_the_rest(
    deploys: MemoryStore,
) -> None:
    # Pool of 3: m-tue, m-tue-copy, m-freeze. After m-tue, m-freeze (-0.0018) beats the copy
    # (-0.121); m-rollback, beyond the pool, keeps its fused rank 4.
    found = search_memories(deploys, QUERY, limit=4, profile=mmr(lambda_=0.5, pool=3))
    assert ids(found) == ["m-tue", "m-freeze", "m-tue-copy", "m-rollback"]
    assert [r.fused_rank for r in found] == [1, 3, 2, 4]


def test_pool_larger_than_limit_reranks_the_true_fused_top_pool(deploys: MemoryStore) -> None:
    # m-rollback is fused rank 4: a top 2 reached only by reranking the fused top 20.
    found = search_memories(deploys, QUERY, limit=2, profile=mmr(lambda_=0.5, pool=20))
    assert ids(found) == ["m-tue", "m-rollback"]
    assert [r.fused_rank for r in found] == [1, 4]
    one = search_memories(deploys, QUERY, limit=1, profile=mmr(lambda_=0.5, pool=1))
    assert ids(one) == ["m-tue"]


def test_identical_memories_rank_by_memory_id_whatever_the_insertion_order() -> None:
    facts = [("m-c", "Deploys happen on Tuesdays."), ("m-a", "Deploys happen on Tuesdays.")]
    facts += [("m-b", "Deploys happen on Tuesdays."), ("m-z", "Invoices are paid on Fridays.")]
    orders = []
    for ordering in (facts, facts[::-1], facts[1:] + facts[:1]):
        with hotmem.open_store(":memory:", clock=hotmem.fixed_clock("2026-01-01T00:00:00Z")) as s:
            for memory_id, fact in ordering:
                s.add(fact, identifier="acme", memory_id=memory_id)
            found = search_memories(s, "deploys Tuesdays", limit=4, profile=mmr(lambda_=0.5))
            orders.append([(r.memory_id, r.score, r.fused_rank) for r in found])
    assert orders[0] == orders[1] == orders[2]
    # Three copies tie on score: m-a leads; the copies have cosine 1 to it, so m-b and m-c
    # fall behind each other in memory_id order (a tie on the MMR value too).
    assert [m for m, _, _ in orders[0]] == ["m-a", "m-b", "m-c"]


def naive_mmr(
    store: MemoryStore, query: str, *, identifier: str | None, limit: int, lambda_: float, pool: int
) -> list[tuple[str, float]]:
    """MMR by the textbook formula over the naive reference's fused top ``pool``."""
    fused = reference_ranking(
        store, query, identifier=identifier, limit=max(limit, pool), floor=0.4,
        weights=hotmem.WEIGHTS,
    )  # fmt: skip
    facts = {m.memory_id: m.fact for m in store}
    vectors = {memory_id: hotmem.embed(facts[memory_id]) for memory_id, _ in fused}
    zero = (0.0,) * hotmem.DIMENSION

    def cos(a: str, b: str) -> float:
        if zero in (vectors[a], vectors[b]):
            return 0.0
        return 1.0 - math.dist(vectors[a], vectors[b]) ** 2 / 2.0

    def value(item: tuple[str, float], picked: list[tuple[str, float]]) -> float:
        penalty = max((cos(item[0], p) for p, _ in picked), default=0.0)
        return lambda_ * item[1] - (1.0 - lambda_) * penalty

    remaining, chosen = list(fused[:pool]), []
    while remaining:
        best = max(remaining, key=lambda item: (value(item, chosen), -fused.index(item)))
        remaining.remove(best)
        chosen.append(best)
    picked = chosen
    return (picked + fused[pool:])[:limit]


@given(
    rows=st.lists(
        st.tuples(
            st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
            st.sampled_from(IDENTIFIERS),
            st.sampled_from([0.0, 0.5, 1.0]),
        ),
        max_size=25,
    ),
    query=st.lists(st.sampled_from([*WORDS, "the"]), max_size=4).map(" ".join),
    identifier=st.sampled_from([None, *IDENTIFIERS]),
    limit=st.integers(1, 12),
    lambda_=st.sampled_from([0.0, 0.3, 0.5, 0.7, 0.9, 1.0]),
    pool=st.integers(1, 15),
)
@example(rows=[], query="invoice", identifier=None, limit=5, lambda_=0.7, pool=20 - 5)
@example(  # all-equal scores and vectors: every step a tie
    rows=[("invoice", "acme", 0.5)] * 6, query="invoice", identifier=None, limit=6,
    lambda_=0.5, pool=4,
)  # fmt: skip
def test_search_equals_naive_mmr_and_limits_are_prefixes(
    rows: list[tuple[str, str, float]],
    query: str,
    identifier: str | None,
    limit: int,
    lambda_: float,
    pool: int,
) -> None:
    with hotmem.open_store(":memory:", clock=hotmem.fixed_clock("2026-01-01T00:00:00Z")) as store:
        for number, (fact, scope, importance) in enumerate(rows):
            memory_id = f"m-{(number * 7) % 100:02d}-{number}"
            store.add(fact, identifier=scope, importance=importance, memory_id=memory_id)
        profile = mmr(lambda_=lambda_, pool=pool)
        found = search_memories(store, query, identifier=identifier, limit=limit, profile=profile)
        expected = naive_mmr(
            store, query, identifier=identifier, limit=limit, lambda_=lambda_, pool=pool
        )
        assert [(r.memory_id, r.score) for r in found] == expected
        # The exact fused top pool: a smaller limit is a prefix of a larger one.
        longer = search_memories(store, query, identifier=identifier, limit=30, profile=profile)
        assert ids(found) == ids(longer)[:limit]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"lambda_": 1.5}, "mmr lambda must be in [0, 1]; found lambda=1.5"),
        ({"lambda_": -0.1}, "mmr lambda must be in [0, 1]; found lambda=-0.1"),
        ({"lambda_": math.nan}, "mmr lambda must be in [0, 1]; found lambda=nan"),
        ({"lambda_": True}, "mmr lambda must be a number in [0, 1]; found lambda=True"),
        ({"lambda_": "0.5"}, "mmr lambda must be a number in [0, 1]; found lambda='0.5'"),
        ({"pool": 0}, "mmr pool must be an integer in 1..1000; found pool=0"),
        ({"pool": 1001}, "mmr pool must be an integer in 1..1000; found pool=1001"),
        ({"pool": 2.0}, "mmr pool must be an integer in 1..1000; found pool=2.0"),
        ({"pool": True}, "mmr pool must be an integer in 1..1000; found pool=True"),
        ({"space": ""}, "mmr space must be a model id; found space=''"),
        ({"space": 3}, "mmr space must be a model id; found space=3"),
    ],
)
def test_mmr_refuses_bad_fields(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError) as raised:
        MMR(**fields)  # type: ignore[arg-type]
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"lambda": 0.5}, "reranker kind must be one of mmr; found kind=None"),
        ({"kind": "dpp"}, "reranker kind must be one of mmr; found kind='dpp'"),
        ({"kind": "mmr", "depth": 3}, "mmr takes the fields kind, lambda, pool, space; found "
         "'depth'"),
        ({"kind": "mmr", "pool": "20"}, "mmr pool must be an integer in 1..1000; found pool='20'"),
        ("mmr", "reranker must be a table with a kind, or false; found 'mmr'"),
    ],
)  # fmt: skip
def test_profile_refuses_a_bad_reranker_table(value: object, message: str) -> None:
    with pytest.raises(ValidationError) as raised:
        Profile.from_mapping("mine", {"reranker": value})
    assert str(raised.value) == f"profile 'mine': {message}"
    with pytest.raises(ValidationError):
        Profile("mine", reranker=value)  # type: ignore[arg-type]


def test_a_space_the_store_lacks_is_refused_with_its_name(deploys: MemoryStore) -> None:
    profile = mmr("semantic-mmr", space="all-minilm-l6-v2")
    with pytest.raises(ValidationError) as raised:
        search_memories(deploys, QUERY, profile=profile)
    assert str(raised.value) == (
        "profile 'semantic-mmr': its mmr reranker needs the vector space 'all-minilm-l6-v2', "
        f"which store {deploys.path!r} does not have; build it with "
        "`hotmem reindex --space all-minilm-l6-v2`"
    )
    with pytest.raises(ValidationError):
        explain(deploys, QUERY, "m-tue", profile=profile)


def test_profile_round_trip_and_toml() -> None:
    builtin = hotmem.PROFILES["default+mmr"]
    assert builtin.reranker == MMR(lambda_=0.9, pool=20, space="hotmem-hash-v1")
    assert builtin.to_dict()["reranker"] == {
        "kind": "mmr",
        "lambda": 0.9,
        "pool": 20,
        "space": "hotmem-hash-v1",
    }
    assert Profile.from_mapping("default+mmr", builtin.to_dict()) == builtin
    # default+mmr is default with the reranker, nothing else.
    assert {**builtin.to_dict(), "name": "default", "reranker": None} == hotmem.PROFILES[
        "default"
    ].to_dict()
    assert hotmem.PROFILES["default"].reranker is None
    table = tomllib.loads(
        '[mine]\nreranker = {kind = "mmr", lambda = 0.7, pool = 20, space = "hotmem-hash-v1"}\n'
    )
    mine = Profile.from_mapping("mine", table["mine"])
    assert mine.reranker == MMR(lambda_=0.7, pool=20)
    assert Profile.from_mapping("mine", mine.to_dict()) == mine
    assert Profile.from_mapping("off", {"reranker": False}).reranker is None
    assert reranker_from_mapping({"kind": "mmr"}) == MMR()


def test_explain_gives_the_rank_before_and_after_reranking(deploys: MemoryStore) -> None:
    profile = mmr(lambda_=0.5)
    ranks = {
        m: (e.pre_rerank_rank, e.post_rerank_rank)
        for m in FUSED
        for e in [explain(deploys, QUERY, m, profile=profile)]
    }
    assert ranks == {
        "m-tue": (1, 1),
        "m-tue-copy": (2, 4),
        "m-freeze": (3, 3),
        "m-rollback": (4, 2),
    }
    explained = explain(deploys, QUERY, "m-rollback", profile=profile)
    assert explained.to_dict()["reranker"] == {
        "kind": "mmr",
        "lambda": 0.5,
        "pool": 20,
        "space": "hotmem-hash-v1",
    }
    assert (explained.to_dict()["pre_rerank_rank"], explained.to_dict()["post_rerank_rank"]) == (
        4,
        2,
    )
    # Beyond the pool the reranker leaves it alone: no pool rank.
    outside = explain(deploys, QUERY, "m-rollback", profile=mmr(lambda_=0.5, pool=2))
    assert (outside.pre_rerank_rank, outside.post_rerank_rank) == (None, None)
    plain = explain(deploys, QUERY, "m-rollback")
    assert (plain.reranker, plain.pre_rerank_rank, plain.post_rerank_rank) == (None, None, None)
    # The diagnosis ranks by the reranked order.
    diagnosis = hotmem.diagnose(deploys, QUERY, "m-rollback", limit=2, profile=profile)
    assert (diagnosis.verdict, diagnosis.rank) == ("returned", 2)
    assert [r.memory_id for r in diagnosis.above] == ["m-tue"]


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "deploys.db"
    with hotmem.open_store(path) as store:
        for memory_id, fact in FACTS.items():
            store.add(fact, identifier="acme", memory_id=memory_id)
    return str(path)


def test_cli_explain_and_search_explain_show_the_reranked_rank(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--db", db, "explain", QUERY, "m-freeze", "--profile", "default+mmr"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[2:5] == [
        "returned: score 0.3828 at rank 3 of the top 5",
        "score 0.3828 = 0.6 * cosine 0.3730 + 0.2 * bm25 0.2952 + 0.2 * importance 0.5000 "
        "(lexical match, bm25 1.0143e-06)",
        "reranker mmr (lambda 0.9, pool 20, hotmem-hash-v1): fused rank 3 -> rank 3",
    ]
    code = main(["--db", db, "search", QUERY, "--profile", "default+mmr", "--explain"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert [line for line in out if "reranked" in line] == [
        f"   reranked: fused rank {n} -> rank {n}" for n in (1, 2, 3, 4)
    ]
    code = main(["--db", db, "explain", QUERY, "m-freeze"])
    assert "reranker" not in capsys.readouterr().out
