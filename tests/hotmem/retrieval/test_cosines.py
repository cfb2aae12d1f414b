"""The hash-v1 cosines of every memory for several queries at once equal the cosines of each
memory alone, bit for bit: zero vectors, a zero query and a chunk boundary included."""

from __future__ import annotations

from pathlib import Path

import pytest

import hotmem
from hotmem.embedding.hash_v1 import embed
from hotmem.retrieval import cosines
from hotmem.retrieval.cosines import every_hash_cosine, hash_cosines
from hotmem.retrieval.search import index_of

FACTS = [
    "Invoices over 5k EUR need two approvals.",
    "!!!",  # no letter or number: the zero vector
    "Deploys are frozen on Tuesday.",
    "Badge access ends at 8 pm.",
    "...",
    "Coffee machine on floor 3.",
    "Approve invoices by Friday.",
]


@pytest.mark.parametrize("chunk", [1, 3, 1024])
def test_every_hash_cosine_is_each_memory_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(cosines, "_UNPACKED", chunk * cosines._VECTOR.size)
    queries = [embed("invoice approvals"), embed("???"), embed("deploy on tuesday")]
    with hotmem.open_store(tmp_path / "s.db") as store:
        store.add_many(
            {"fact": fact, "identifier": "a", "memory_id": f"m{n}"} for n, fact in enumerate(FACTS)
        )
        with store.reading() as connection:
            index = index_of(store, connection)
            found = every_hash_cosine(index, queries)
            alone = [[hash_cosines(index, [p], q)[0] for p in range(len(FACTS))] for q in queries]
    assert [[v.hex() for v in values] for values in found] == [
        [v.hex() for v in values] for values in alone
    ]
    assert found[1] == [0.0] * len(FACTS)  # the zero query
    assert [found[0][p] for p in (1, 4)] == [0.0, 0.0]  # the zero vectors
    assert found[0][0] > 0.3
