"""hotmem.diagnose: one verdict per (query, memory), agreeing with the ranking it reports on."""

from __future__ import annotations

import pytest

import hotmem
from hotmem import MemoryStore, diagnose, search_memories
from tests.hotmem.test_search import EXAMPLE, QUERY


@pytest.fixture
def example_store(store: MemoryStore) -> MemoryStore:
    for memory_id, identifier, fact, importance in EXAMPLE:
        store.add(fact, identifier=identifier, importance=importance, memory_id=memory_id)
    return store


# The worked example of docs/ranking.md: m-invoice 0.7437, m-beta-invoice 0.5295; the other
# four have no lexical match and a cosine below the floor (0.1363, 0.0561, -0.0493, 0.0).
@pytest.mark.parametrize(
    ("memory_id", "options", "verdict", "detail", "rank", "above"),
    [
        ("m-invoice", {}, "returned", "score 0.7437 at rank 1 of the top 5", 1, []),
        (
            "m-beta-invoice",
            {},
            "returned",
            "score 0.5295 at rank 2 of the top 5",
            2,
            ["m-invoice"],
        ),
        (
            "m-beta-invoice",
            {"limit": 1},
            "outranked",
            "score 0.5295 at rank 2; m-invoice leads by 0.2142",
            2,
            ["m-invoice"],
        ),
        (
            "m-paid",
            {},
            "below_floor",
            "no lexical match; cosine 0.1363 < min_similarity 0.4",
            None,
            [],
        ),
        (
            "m-paid",
            {"min_similarity": 0.1},
            "returned",
            "score 0.2618 at rank 3 of the top 5",
            3,
            ["m-invoice", "m-beta-invoice"],
        ),
        ("m-badge", {}, "no_channel_match", "no lexical match; cosine -0.0493 <= 0", None, []),
        ("m-deploy", {}, "no_channel_match", "no lexical match; cosine 0.0000 <= 0", None, []),
        (
            "m-invoice",
            {"identifier": "beta"},
            "outside_scope",
            "memory is in 'acme'; the query searched 'beta'",
            None,
            [],
        ),
        (
            "m-beta-invoice",
            {"identifier": "beta"},
            "returned",
            "score 0.6524 at rank 1 of the top 5",
            1,
            [],
        ),
    ],
)
def test_verdicts_of_the_worked_example(
    example_store: MemoryStore,
    memory_id: str,
    options: dict[str, object],
    verdict: str,
    detail: str,
    rank: int | None,
    above: list[str],
) -> None:
    diagnosis = diagnose(example_store, QUERY, memory_id, **options)
    assert (diagnosis.verdict, diagnosis.detail, diagnosis.rank) == (verdict, detail, rank)
    assert [r.memory_id for r in diagnosis.above] == above
    assert diagnosis.explanation == hotmem.explain(
        example_store,
        QUERY,
        memory_id,
        identifier=options.get("identifier"),
        min_similarity=options.get("min_similarity"),
    )


QUERIES = [QUERY, "invoices", "deploy day", "coffee machine", "badges at midnight", "tungsten", ""]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("limit", [1, 2, 6])
@pytest.mark.parametrize("identifier", [None, "acme", "beta"])
@pytest.mark.parametrize("floor", [hotmem.MIN_SIMILARITY, 0.0, -1.0])
def test_a_verdict_agrees_with_the_search_it_explains(
    example_store: MemoryStore, query: str, limit: int, identifier: str | None, floor: float
) -> None:
    results = search_memories(
        example_store, query, identifier=identifier, limit=limit, min_similarity=floor
    )
    ranks = {r.memory_id: r.rank for r in results}
    for memory_id, memory_identifier, _, _ in EXAMPLE:
        d = diagnose(
            example_store,
            query,
            memory_id,
            identifier=identifier,
            limit=limit,
            min_similarity=floor,
        )
        if memory_id in ranks:
            assert (d.verdict, d.rank) == ("returned", ranks[memory_id])
            assert list(d.above) == results[: ranks[memory_id] - 1]
        elif identifier is not None and memory_identifier != identifier:
            assert d.verdict == "outside_scope"
        elif d.explanation.passes_floor:
            assert d.verdict == "outranked"
            assert list(d.above) == results  # the whole top limit beat it
            assert d.rank is not None
            assert d.rank > limit
        else:
            assert d.verdict in {"below_floor", "no_channel_match"}
            assert (d.rank, d.above) == (None, ())
        assert d.verdict in hotmem.VERDICTS


def test_to_dict(example_store: MemoryStore) -> None:
    d = diagnose(example_store, QUERY, "m-beta-invoice", limit=1)
    document = d.to_dict()
    [first] = search_memories(example_store, QUERY, limit=1)
    assert document == {
        "query": QUERY,
        "scope": None,
        "limit": 1,
        "min_similarity": 0.4,
        "verdict": "outranked",
        "detail": "score 0.5295 at rank 2; m-invoice leads by 0.2142",
        "rank": 2,
        **d.explanation.to_dict(),
        "above": [
            {
                "rank": 1,
                "memory_id": "m-invoice",
                "score": first.score,
                "margin": first.score - d.explanation.score,
            }
        ],
    }


@pytest.mark.parametrize("limit", [0, 10_001, True, "5"])
def test_a_bad_limit_is_a_validation_error(example_store: MemoryStore, limit: object) -> None:
    with pytest.raises(hotmem.ValidationError, match=r"limit must be an integer in 1\.\.10000"):
        diagnose(example_store, QUERY, "m-paid", limit=limit)


def test_an_unknown_memory_is_not_found(example_store: MemoryStore) -> None:
    with pytest.raises(hotmem.MemoryNotFoundError, match="no memory with memory_id='nope'"):
        diagnose(example_store, QUERY, "nope")


def test_diagnose_many_is_diagnose_for_each(example_store: MemoryStore) -> None:
    ids = [memory_id for memory_id, _, _, _ in EXAMPLE]
    many = hotmem.diagnose_many(example_store, QUERY, ids, limit=1)
    assert many == [diagnose(example_store, QUERY, memory_id, limit=1) for memory_id in ids]
    verdicts = {d.explanation.memory_id: (d.verdict, d.rank) for d in many}
    assert verdicts["m-invoice"] == ("returned", 1)
    assert verdicts["m-beta-invoice"] == ("outranked", 2)
    assert verdicts["m-paid"] == ("below_floor", None)
    assert hotmem.diagnose_many(example_store, QUERY, []) == []


def test_diagnose_many_names_the_first_unknown_memory(example_store: MemoryStore) -> None:
    with pytest.raises(hotmem.MemoryNotFoundError, match="no memory with memory_id='nope'"):
        hotmem.diagnose_many(example_store, QUERY, ["m-invoice", "nope", "other"])


def test_a_deep_rank_reads_the_facts_of_the_top_results_only(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An outranked memory at rank 30 of a limit of 3: the candidates above it are ranked by
    their ids (ties broken by memory_id); the facts read are the top 3's."""
    from hotmem.store import changes

    for n in range(40):  # every memory matches; the importance orders them
        store.add(
            f"invoice number {n}", identifier="acme", memory_id=f"m-{n:02d}", importance=1 - n / 40
        )
    read: list[int] = []
    rows = changes.result_rows

    def counted(connection: object, target: str, rowids: list[int]) -> object:
        read.append(len(rowids))
        return rows(connection, target, rowids)  # type: ignore[arg-type]

    ranking = [r.memory_id for r in search_memories(store, "invoice", limit=40)]
    assert len(ranking) == 40
    monkeypatch.setattr(changes, "result_rows", counted)
    found = diagnose(store, "invoice", ranking[29], limit=3)
    assert (found.verdict, found.rank) == ("outranked", 30)
    assert [r.memory_id for r in found.above] == ranking[:3]
    assert read == [3]
