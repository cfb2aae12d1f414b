"""Search in the semantic space with the real model: the ``semantic`` profiles, the numpy engine
against the reference over a space's vectors, and the errors of a missing or incomplete space."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace
from itertools import product
from pathlib import Path

import numpy as np
import pytest

import hotmem
from hotmem.embedding.registry import SEMANTIC_MODEL

FACTS = {
    "m0": ("Invoices above EUR 5,000 need two approvals.", "acme-finance"),
    "m1": ("The Oslo office closes on Saturdays.", "fjord-analytics"),
    "m2": ("Production databases are backed up every night.", "acme-infra"),
    "m3": ("The on-call engineer rotates every Monday at 09:00 UTC.", "acme-infra"),
    "m4": ("Expense claims must be filed within 30 days.", "acme-finance"),
}
WORDS = ["invoice", "approval", "backup", "database", "office", "closed", "weekend", "deploy"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[hotmem.MemoryStore]:
    path = tmp_path_factory.mktemp("semantic") / "s.db"
    with hotmem.open_store(path, clock=hotmem.fixed_clock("2026-01-01T00:00:00Z")) as opened:
        opened.add_space(SEMANTIC_MODEL)  # before the memories: each add embeds every space
        opened.add_many(
            {"memory_id": m, "fact": fact, "identifier": ident}
            for m, (fact, ident) in FACTS.items()
        )
        yield opened


def _ids(results: list[hotmem.SearchResult]) -> list[str]:
    return [r.memory_id for r in results]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("When is the Norwegian branch shut?", "m1"),
        ("What is the deadline for reimbursement requests?", "m4"),
    ],
)
def test_a_paraphrase_is_found_by_semantic_not_by_default(
    store: hotmem.MemoryStore, query: str, expected: str
) -> None:
    assert _ids(hotmem.search_memories(store, query)) == []
    assert _ids(hotmem.search_memories(store, query, profile="semantic")) == [expected]
    assert _ids(hotmem.search_memories(store, query, profile="semantic-only")) == [expected]


def test_semantic_scores_are_the_documented_fusion(store: hotmem.MemoryStore) -> None:
    query = "When is the Norwegian branch shut?"
    [result] = hotmem.search_memories(store, query, profile="semantic")
    embedder = hotmem.get_embedder(SEMANTIC_MODEL)
    q, m = (
        np.frombuffer(v, dtype="<f4").astype(np.float64)
        for v in embedder.embed_many([query, FACTS["m1"][0]])
    )
    cosine = float((m * q).sum())
    assert result.components.cosine == cosine
    assert result.components.bm25_raw is None
    assert result.score == 0.6 * cosine + 0.2 * 0.0 + 0.2 * 0.5
    explained = hotmem.explain(store, query, "m1", profile="semantic")
    assert (explained.score, explained.components, explained.passes_floor) == (
        result.score,
        result.components,
        True,
    )
    assert hotmem.PROFILES["semantic"].spaces == (SEMANTIC_MODEL,)


def test_the_lexical_gate_drops_a_match_of_low_semantic_cosine(
    store: hotmem.MemoryStore,
) -> None:
    query = "need"  # a lexical match of m0 ("need two approvals") unrelated in meaning
    assert _ids(hotmem.search_memories(store, query)) == ["m0"]
    explained = hotmem.explain(store, query, "m0", profile="semantic")
    assert explained.components.lexical_match
    assert explained.components.cosine < hotmem.PROFILES["semantic"].lexical.gate  # type: ignore[union-attr]
    assert not explained.passes_floor
    assert _ids(hotmem.search_memories(store, query, profile="semantic")) == []


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[hotmem.MemoryStore]:
    """Many memories of a small vocabulary, so terms collide and bounds are exercised."""
    picks = random.Random(15)
    path = tmp_path_factory.mktemp("crowded") / "s.db"
    with hotmem.open_store(path) as opened:
        opened.add_many(
            {
                "memory_id": f"c{i:03d}",
                "fact": " ".join(picks.choices(WORDS, k=picks.randint(1, 5))),
                "identifier": picks.choice("ab"),
                "importance": picks.choice([0.0, 0.25, 0.5, 1.0]),
            }
            for i in range(120)
        )
        opened.add_space(SEMANTIC_MODEL, batch_size=50)
        yield opened


PROFILES = [
    hotmem.PROFILES["semantic"],
    hotmem.PROFILES["semantic-only"],
    hotmem.Profile(
        "semantic-floor-0",
        vector=hotmem.VectorChannel(space=SEMANTIC_MODEL, weight=0.6, floor=0.0),
        importance=0.2,
    ),
    hotmem.Profile(
        "gated-words",
        vector=hotmem.VectorChannel(space=SEMANTIC_MODEL, weight=0.3, floor=1.0),
        lexical=hotmem.LexicalChannel(weight=1.0, gate=0.1),
        importance=0.2,
    ),
    hotmem.Profile(
        "semantic-rrf",
        vector=hotmem.VectorChannel(space=SEMANTIC_MODEL, weight=1.0, floor=0.2),
        lexical=hotmem.LexicalChannel(weight=1.0, gate=0.1),
        importance=0.0,
        fusion="rrf",
        depth=10,
    ),
    hotmem.PROFILES["semantic+mmr"],
]


@pytest.mark.parametrize(
    ("query", "identifier", "profile", "limit"),
    list(
        product(
            ["invoice approval", "weekend office closed", "backup database deploy"],
            [None, "a"],
            PROFILES,
            [1, 5, 50],
        )
    ),
)
def test_the_numpy_engine_over_a_space_is_the_reference(
    crowded: hotmem.MemoryStore,
    query: str,
    identifier: str | None,
    profile: hotmem.Profile,
    limit: int,
) -> None:
    found = []
    for accelerator in ("off", "numpy"):
        with hotmem.open_store(crowded.path, accelerator=accelerator) as store:
            results = hotmem.search_memories(
                store, query, identifier=identifier, limit=limit, profile=profile
            )
            explained = [
                hotmem.explain(store, query, memory_id, identifier=identifier, profile=profile)
                for memory_id in ("c000", "c001", "c002")
            ]
            found.append((results, explained))
    assert found[0] == found[1]


def test_a_missing_space_says_how_to_build_it(tmp_path: Path) -> None:
    with hotmem.open_store(tmp_path / "s.db") as store:
        store.add("The Oslo office closes on Saturdays.", identifier="a")
        with pytest.raises(
            hotmem.ValidationError,
            match=r"needs the vector space 'all-minilm-l6-v2', which store .* does not have "
            r"\(it has hotmem-hash-v1\); build it with `hotmem reindex --space all-minilm-l6-v2`",
        ):
            hotmem.search_memories(store, "office", profile="semantic")
        assert _ids(hotmem.search_memories(store, "office")) != []


def test_the_default_profile_names_the_spaces_it_uses(store: hotmem.MemoryStore) -> None:
    assert store.default_profile == "default"
    assert hotmem.PROFILES[store.default_profile].spaces == ("hotmem-hash-v1",)


VPN = {
    "m-vpn-1": "The VPN requires two-factor authentication for every login.",
    "m-vpn-2": "Every VPN login needs two-factor authentication.",
    "m-vpn-3": "Two-factor authentication is mandatory for VPN logins.",
    "m-vpn-portal": "VPN accounts are requested through the IT portal.",
    "m-vpn-token": "Hardware tokens for two-factor login are issued by the security team.",
    "m-wifi": "Guest Wi-Fi access needs a password from reception.",
    "m-coffee": "The coffee machine is cleaned on Fridays.",
}
VPN_QUERY = "Do VPN logins need two-factor authentication?"


@pytest.fixture(scope="module")
def vpn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[hotmem.MemoryStore]:
    path = tmp_path_factory.mktemp("vpn") / "s.db"
    with hotmem.open_store(path, clock=hotmem.fixed_clock("2026-01-01T00:00:00Z")) as opened:
        opened.add_space(SEMANTIC_MODEL)
        opened.add_many({"memory_id": m, "fact": f, "identifier": "acme"} for m, f in VPN.items())
        yield opened


def _naive_mmr(fused: list[hotmem.SearchResult], lambda_: float) -> list[str]:
    """Textbook MMR over the fused list, with the semantic cosines computed here."""
    embedder = hotmem.get_embedder(SEMANTIC_MODEL)
    rows = [np.frombuffer(v, dtype="<f4").astype(np.float64) for v in
            embedder.embed_many([VPN[r.memory_id] for r in fused])]  # fmt: skip
    remaining, picked = list(range(len(fused))), []
    while remaining:

        def gain(i: int) -> float:
            similar = max((float(rows[i] @ rows[j]) for j in picked), default=0.0)
            return lambda_ * fused[i].score - (1 - lambda_) * similar

        best = max(remaining, key=lambda i: (gain(i), -i))
        remaining.remove(best)
        picked.append(best)
    return [fused[i].memory_id for i in picked]


def test_semantic_mmr_measures_similarity_in_the_semantic_space(vpn: hotmem.MemoryStore) -> None:
    fused = hotmem.search_memories(vpn, VPN_QUERY, profile="semantic")
    assert _ids(fused) == ["m-vpn-2", "m-vpn-3", "m-vpn-1", "m-vpn-portal", "m-vpn-token"]
    builtin = hotmem.PROFILES["semantic+mmr"]
    assert builtin.reranker == hotmem.MMR(lambda_=0.9, pool=20, space=SEMANTIC_MODEL)
    assert _ids(hotmem.search_memories(vpn, VPN_QUERY, profile=builtin)) == _naive_mmr(fused, 0.9)
    low = replace(builtin, name="low", reranker=hotmem.MMR(lambda_=0.5, space=SEMANTIC_MODEL))
    found = hotmem.search_memories(vpn, VPN_QUERY, profile=low)
    assert _ids(found) == _naive_mmr(fused, 0.5)
    assert _ids(found) == ["m-vpn-2", "m-vpn-token", "m-vpn-portal", "m-vpn-3", "m-vpn-1"]
    order = _ids(found)
    assert [r.score for r in found] == [
        r.score for r in sorted(fused, key=lambda r: order.index(r.memory_id))
    ]  # the fused scores, in MMR order
    # the same lambda over hash vectors picks another second memory: the space matters
    hashed = replace(low, name="hashed", reranker=hotmem.MMR(lambda_=0.5))
    assert _ids(hotmem.search_memories(vpn, VPN_QUERY, profile=hashed))[:2] == [
        "m-vpn-2",
        "m-vpn-portal",
    ]
    explained = hotmem.explain(vpn, VPN_QUERY, "m-vpn-token", profile=low)
    assert (explained.pre_rerank_rank, explained.post_rerank_rank) == (5, 2)
