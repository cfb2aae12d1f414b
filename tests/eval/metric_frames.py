"""Builds the four canonical metric input frames from compact per-query descriptions, and the
outputs the plain-Python reference expects for them."""

from __future__ import annotations

from typing import Any, NamedTuple

import polars as pl

from hotmem_eval import reference
from hotmem_eval.metrics import AGGREGATE_COLUMNS, PER_QUERY_COLUMNS

#: The identifier a returned memory has unless a test says otherwise.
HOME = "acme"

RESULTS_SCHEMA = {
    "query_id": pl.String,
    "rank": pl.Int32,
    "memory_id": pl.String,
    "identifier": pl.String,
    "score": pl.Float64,
}
#: Grades as the native fixture loader gives them; any int dtype casts (the canonical is Int32).
QRELS_SCHEMA = {"query_id": pl.String, "memory_id": pl.String, "grade": pl.Int8}
QUERIES_SCHEMA = {"query_id": pl.String, "category": pl.String, "identifier": pl.String}
GROUPS_SCHEMA = {"query_id": pl.String, "memory_id": pl.String, "group_id": pl.String}


class Frames(NamedTuple):
    results: pl.DataFrame
    qrels: pl.DataFrame
    queries: pl.DataFrame
    groups: pl.DataFrame


def frames(
    queries: dict[str, tuple[str | None, str | None]],
    *,
    ranked: dict[str, list[str]] | None = None,
    grades: dict[str, dict[str, int]] | None = None,
    groups: dict[str, dict[str, str]] | None = None,
    identifiers: dict[str, str | None] | None = None,
) -> Frames:
    """Frames from ``{query_id: (category, scope)}`` and per-query ranked lists, grades, groups.

    ``identifiers`` maps a memory to its identifier; unlisted memories are in ``HOME``. A
    category may be None (the query has none); a grade above 127 makes the grades Int32.
    """
    identifiers = identifiers or {}
    results: list[dict[str, Any]] = [
        {
            "query_id": query_id,
            "rank": rank,
            "memory_id": memory,
            "identifier": identifiers.get(memory, HOME),
            "score": 1.0 / rank,
        }
        for query_id, memories in (ranked or {}).items()
        for rank, memory in enumerate(memories, start=1)
    ]
    qrels = [
        {"query_id": query_id, "memory_id": memory, "grade": grade}
        for query_id, graded in (grades or {}).items()
        for memory, grade in graded.items()
    ]
    group_rows = [
        {"query_id": query_id, "memory_id": memory, "group_id": group}
        for query_id, grouped in (groups or {}).items()
        for memory, group in grouped.items()
    ]
    query_rows = [
        {"query_id": query_id, "category": category, "identifier": scope}
        for query_id, (category, scope) in queries.items()
    ]
    wide = any(grade > 127 for graded in (grades or {}).values() for grade in graded.values())
    return Frames(
        results=pl.DataFrame(results, schema=RESULTS_SCHEMA),
        qrels=pl.DataFrame(qrels, schema={**QRELS_SCHEMA, "grade": pl.Int32 if wide else pl.Int8}),
        queries=pl.DataFrame(query_rows, schema=QUERIES_SCHEMA),
        groups=pl.DataFrame(group_rows, schema=GROUPS_SCHEMA),
    )


def rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """The frame as a list of dicts, for comparison with the reference."""
    return frame.to_dicts()


def expected(
    data: Frames, *, k: int = 5, relevant_grade: int = reference.RELEVANT
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(per_query, aggregate) as ``hotmem_eval.reference`` computes them, as canonical frames.

    The independent expectation an engine's output is compared with.
    """
    per_query = reference.per_query_metrics(
        *(frame.to_dicts() for frame in data), k=k, relevant_grade=relevant_grade
    )
    aggregate = reference.aggregate_metrics(per_query)
    return (
        pl.DataFrame(per_query, schema=PER_QUERY_COLUMNS),
        pl.DataFrame(aggregate, schema=AGGREGATE_COLUMNS),
    )
