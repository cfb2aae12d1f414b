"""The retrieval fixture contract: categories, grades and the Arrow schemas of a loaded fixture.

A native fixture is two JSON Lines files. ``corpus.jsonl`` holds one memory a line and
``queries.jsonl`` one evaluated query a line; ``benchmarks/retrieval/README.md`` describes every
field. A BEIR or TREC collection (``hotmem_eval.collection``) loads into the same tables. Loading
turns them into four tables, each sorted by its ids so line order never matters:

- ``corpus`` (``CORPUS_SCHEMA``): one row a memory, by ``memory_id``.
- ``queries`` (``QUERIES_SCHEMA``): one row a query, by ``query_id``; ``category`` is null for a
  query without one.
- ``qrels`` (``QRELS_SCHEMA``): one row per (query, graded memory), by ``(query_id, memory_id)``;
  a grade is any integer 0..``MAX_ANY_GRADE``.
- ``groups`` (``GROUPS_SCHEMA``): per query, the near-duplicate group of every memory in one,
  by ``(query_id, memory_id)``; ``group_id`` is the group's smallest ``memory_id``.

**The built-in suite and free-form fixtures.** A native fixture whose queries use the eight
``CATEGORIES`` is the built-in suite, with its own rules: every category present with at least
``MIN_QUERIES_PER_CATEGORY`` queries, negatives without grades, grades 0..``MAX_GRADE``, and
``RELEVANT_GRADE`` as its rule of relevance. Any other fixture is free-form: a category is
optional and any label but ``OVERALL``, grades run 0..``MAX_ANY_GRADE``.
``COLLECTION_RELEVANT_GRADE`` is the rule of relevance of BEIR and TREC collections.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import pyarrow as pa

__all__ = [
    "CATEGORIES",
    "COLLECTION_RELEVANT_GRADE",
    "CORPUS_SCHEMA",
    "DUPLICATE_CATEGORY",
    "GROUPS_SCHEMA",
    "MAX_ANY_GRADE",
    "MAX_GRADE",
    "MIN_QUERIES_PER_CATEGORY",
    "NEGATIVE_CATEGORY",
    "OVERALL",
    "QRELS_SCHEMA",
    "QUERIES_SCHEMA",
    "RELEVANT_GRADE",
    "category_order",
]

#: The built-in suite's eight query categories, in report order; it has queries in each of them.
CATEGORIES: Final[tuple[str, ...]] = (
    "exact_lexical",
    "semantic_paraphrase",
    "identifier_or_entity_name",
    "temporal_or_revision",
    "near_duplicate_diversity",
    "negative_or_no_answer",
    "cross_project_isolation",
    "snapshot_hydration_equivalence",
)


def category_order(names: Iterable[str]) -> list[str]:
    """``names`` (distinct categories) in report order: the built-in ``CATEGORIES`` in their
    order, then any other in sorted order."""
    given = set(names)
    return [c for c in CATEGORIES if c in given] + sorted(given - set(CATEGORIES))


#: Queries with no answer in the corpus: their relevance object is empty.
NEGATIVE_CATEGORY: Final = "negative_or_no_answer"
#: Queries whose answers are near-duplicates that can crowd the top k.
DUPLICATE_CATEGORY: Final = "near_duplicate_diversity"
#: A category with fewer queries than this is refused: its metrics would be noise.
MIN_QUERIES_PER_CATEGORY: Final = 5
#: The built-in suite's grades run from 0 (irrelevant) to 3 (directly answers the query).
MAX_GRADE: Final = 3
#: The built-in suite's rule: a memory graded at least this counts as relevant for recall and
#: reciprocal rank. The default ``relevant_grade`` of a native fixture.
RELEVANT_GRADE: Final = 2
#: The field's rule (trec_eval's default ``-l 1``): the default ``relevant_grade`` of a BEIR or
#: TREC collection.
COLLECTION_RELEVANT_GRADE: Final = 1
#: The largest grade any fixture or collection may give: ``QRELS_SCHEMA.grade`` is an int32.
MAX_ANY_GRADE: Final = 2**31 - 1
#: The category name of the row over all queries: no query may carry it as its category.
OVERALL: Final = "overall"

_CORPUS_FIELDS: list[pa.Field[Any]] = [
    pa.field("memory_id", pa.string(), nullable=False),
    pa.field("identifier", pa.string(), nullable=False),
    pa.field("fact", pa.string(), nullable=False),
    pa.field("importance", pa.float64(), nullable=False),
    pa.field("tags", pa.list_(pa.string()), nullable=False),
    pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=True),
    pa.field("namespace", pa.string(), nullable=True),
    pa.field("duplicate_of", pa.string(), nullable=True),
    pa.field("line", pa.int32(), nullable=False),
]
CORPUS_SCHEMA: Final = pa.schema(_CORPUS_FIELDS)
_QUERIES_FIELDS: list[pa.Field[Any]] = [
    pa.field("query_id", pa.string(), nullable=False),
    pa.field("category", pa.string(), nullable=True),
    pa.field("query", pa.string(), nullable=False),
    pa.field("identifier", pa.string(), nullable=True),
    pa.field("notes", pa.string(), nullable=False),
    pa.field("line", pa.int32(), nullable=False),
]
QUERIES_SCHEMA: Final = pa.schema(_QUERIES_FIELDS)
_QRELS_FIELDS: list[pa.Field[Any]] = [
    pa.field("query_id", pa.string(), nullable=False),
    pa.field("memory_id", pa.string(), nullable=False),
    pa.field("grade", pa.int32(), nullable=False),
]
QRELS_SCHEMA: Final = pa.schema(_QRELS_FIELDS)
_GROUPS_FIELDS: list[pa.Field[Any]] = [
    pa.field("query_id", pa.string(), nullable=False),
    pa.field("memory_id", pa.string(), nullable=False),
    pa.field("group_id", pa.string(), nullable=False),
]
GROUPS_SCHEMA: Final = pa.schema(_GROUPS_FIELDS)
