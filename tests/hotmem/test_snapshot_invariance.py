"""Transfer invariance: a hydrated store retrieves exactly as its source did.

For random stores (unicode facts, ties in importance, the same text under several identifiers,
deletions that leave holes in the FTS statistics) and random queries (scoped or not, any
limit and similarity floor), the hydrated store returns the same memories in the same order
with bit-identical scores and score components.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

import hotmem
from hotmem import SearchResult

WORDS = [
    "invoice", "invoices", "approval", "approvals", "café", "cafe", "CAFÉ", "東京", "オフィス",
    "backup", "nightly", "tungsten", "boiling", "point", "the", "of", "EUR", "5,000", "über",
    "straße", "STRASSE", "naïve", "ﬁle", "deploy", "friday", "😀", "x",
]  # fmt: skip
SHARED_FACTS = [
    "Invoices above EUR 5,000 need two approvals.",
    "Le café est servi à 9h.",
    "the the the",
]
IDENTIFIERS = ["acme", "globex", "Ünïcode-org"]

unicode_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=40,
).filter(str.strip)
word_text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)
facts = st.one_of(word_text, st.sampled_from(SHARED_FACTS), unicode_text)
memories = st.lists(
    st.fixed_dictionaries(
        {
            "memory_id": st.text(alphabet="abcXYZ-0é日", min_size=1, max_size=6).filter(str.strip),
            "identifier": st.sampled_from(IDENTIFIERS),
            "fact": facts,
            "importance": st.one_of(
                st.sampled_from([0.0, 0.5, 0.5, 1.0]), st.floats(min_value=0.0, max_value=1.0)
            ),
            "tags": st.lists(st.sampled_from(["a", "b", "ü"]), max_size=2),
            "created_at": st.sampled_from(["2026-01-01T00:00:00Z", "2026-03-04T05:06:07.000008Z"]),
        }
    ),
    max_size=40,
    unique_by=lambda memory: memory["memory_id"],
)
queries = st.lists(
    st.tuples(
        st.one_of(word_text, st.sampled_from(SHARED_FACTS), unicode_text),
        st.sampled_from([None, *IDENTIFIERS, "nowhere"]),
        st.integers(min_value=1, max_value=50),
        st.sampled_from([0.5, 0.0, -1.0]),
    ),
    min_size=1,
    max_size=6,
)


def observed(results: list[SearchResult]) -> list[tuple]:
    """Everything a caller sees, with floats as hex so equality means bit-identical."""
    return [
        (
            r.rank,
            r.memory_id,
            r.identifier,
            r.fact,
            r.tags,
            r.importance.hex(),
            r.score.hex(),
            r.components.cosine.hex(),
            None if r.components.bm25_raw is None else r.components.bm25_raw.hex(),
            r.components.bm25_normalised.hex(),
            r.components.importance.hex(),
        )
        for r in results
    ]


@given(memories=memories, deletions=st.sets(st.integers(0, 39), max_size=6), queries=queries)
@example(memories=[], deletions=set(), queries=[("invoice", None, 5, 0.5)])
@example(
    memories=[
        {
            "memory_id": f"m{i}",
            "identifier": IDENTIFIERS[i % 2],
            "fact": SHARED_FACTS[0],
            "importance": 0.5,
            "tags": [],
            "created_at": "2026-01-01T00:00:00Z",
        }
        for i in range(6)
    ],
    deletions={2},
    queries=[("invoices approval", None, 10, 0.5), ("invoices", "acme", 2, -1.0)],
)
def test_hydrated_store_retrieves_exactly_as_the_source(
    memories: list[dict], deletions: set[int], queries: list[tuple]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        with hotmem.open_store(directory / "source.db") as source:
            source.add_many(memories)  # rowids in the generated order, not memory_id order
            for index in sorted(deletions):
                if index < len(memories):
                    source.delete(memories[index]["memory_id"])
            source.snapshot(directory / "p.zip")
            hotmem.hydrate(directory / "p.zip", directory / "target.db")
            with hotmem.open_store(directory / "target.db") as target:
                assert len(target) == len(source)
                for query, identifier, limit, floor in queries:
                    expected = hotmem.search_memories(
                        source, query, identifier=identifier, limit=limit, min_similarity=floor
                    )
                    found = hotmem.search_memories(
                        target, query, identifier=identifier, limit=limit, min_similarity=floor
                    )
                    assert observed(found) == observed(expected)
