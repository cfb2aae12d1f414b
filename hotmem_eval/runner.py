"""Run every fixture query through the production ``search_memories`` into an Arrow table."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import polars as pl
import pyarrow as pa

import hotmem
from hotmem_eval.errors import EvalError

__all__ = [
    "COMPONENTS",
    "PREPARED_QUERIES",
    "RESULTS_SCHEMA",
    "QueryRun",
    "result_rows",
    "rows_by_query",
    "run_queries",
]

#: The score components of a result, as ``hotmem.ScoreComponents.to_dict`` names them.
COMPONENTS = ("cosine", "bm25_raw", "bm25_normalised", "importance")

#: One row per returned slot: the canonical columns of the metric engine and the SQL files,
#: plus the score components that explain the rank.
_RESULTS_FIELDS: list[pa.Field[Any]] = [
    pa.field("query_id", pa.string(), nullable=False),
    pa.field("rank", pa.int32(), nullable=False),
    pa.field("memory_id", pa.string(), nullable=False),
    pa.field("identifier", pa.string(), nullable=False),
    pa.field("score", pa.float64(), nullable=False),
    pa.field("cosine", pa.float64(), nullable=False),
    pa.field("bm25_raw", pa.float64(), nullable=True),
    pa.field("bm25_normalised", pa.float64(), nullable=False),
    pa.field("importance", pa.float64(), nullable=False),
]
RESULTS_SCHEMA = pa.schema(_RESULTS_FIELDS)


#: Queries embedded in one batch (``hotmem.prepare_queries``) before they are searched: the
#: most query vectors a search keeps.
PREPARED_QUERIES = 1024


@dataclass(frozen=True, slots=True)
class QueryRun:
    """The results of one pass over the queries, and the latency of every search call.

    Attributes:
        results: ``RESULTS_SCHEMA`` rows, sorted by (query_id, rank).
        latencies_ms: wall time of every ``search_memories`` call, repeats included (a query
            whose profile searches a model's space was embedded before: not included).
        embedding_s: wall time of embedding the queries in batches before their searches
            (``hotmem.prepare_queries``; about 0 for a profile without a model's space).
    """

    results: pa.Table
    latencies_ms: tuple[float, ...]
    embedding_s: float = 0.0


def result_rows(query_id: str, results: list[hotmem.SearchResult]) -> list[dict[str, object]]:
    """Turn one query's ranked results into ``RESULTS_SCHEMA`` rows (components flattened)."""
    return [
        {
            "query_id": query_id,
            "rank": r.rank,
            "memory_id": r.memory_id,
            "identifier": r.identifier,
            "score": r.score,
            **r.components.to_dict(),
        }
        for r in results
    ]


def rows_by_query(table: pa.Table | pl.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """The rows of a results-shaped table (``query_id``, ``rank``, ...) grouped by query,
    each group in rank order."""
    frame = table if isinstance(table, pl.DataFrame) else pl.DataFrame(table)
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in frame.sort("query_id", "rank").iter_rows(named=True):
        grouped.setdefault(row["query_id"], []).append(row)
    return grouped


def run_queries(
    store: hotmem.MemoryStore,
    queries: pa.Table,
    *,
    top_k: int,
    repeat: int = 1,
    progress: hotmem.ProgressCallback | None = None,
    profile: str | hotmem.Profile | None = None,
) -> QueryRun:
    """Search every query ``repeat`` times (scoped by its identifier when it has one) under
    ``profile`` (``default`` when None), ``PREPARED_QUERIES`` queries at a time, each batch
    embedded at once first (``hotmem.prepare_queries``: the same vectors as a search's own,
    so the same results); ``progress`` is called with (queries done, queries) after each
    query.

    Raises:
        EvalError: a repeat returned different results: retrieval is not deterministic.
    """
    chosen = profile or hotmem.DEFAULT_PROFILE
    listed = queries.select(["query_id", "query", "identifier"]).to_pylist()
    rows: list[dict[str, object]] = []
    latencies: list[float] = []
    embedding = 0.0
    for start in range(0, len(listed), PREPARED_QUERIES):
        batch = listed[start : start + PREPARED_QUERIES]
        started = time.perf_counter()
        hotmem.prepare_queries(store, [query["query"] for query in batch], profile=chosen)
        embedding += time.perf_counter() - started
        for done, query in enumerate(batch, start=start + 1):
            rows.extend(_searched(store, query, top_k, repeat, chosen, latencies))
            if progress is not None:
                progress(done, queries.num_rows)
    return QueryRun(pa.Table.from_pylist(rows, schema=RESULTS_SCHEMA), tuple(latencies), embedding)


def _searched(
    store: hotmem.MemoryStore,
    query: dict[str, Any],
    top_k: int,
    repeat: int,
    profile: str | hotmem.Profile,
    latencies: list[float],
) -> list[dict[str, object]]:
    """One query's result rows, searched ``repeat`` times (each latency appended).

    Raises:
        EvalError: a repeat returned different results.
    """
    first: list[dict[str, object]] | None = None
    for _ in range(repeat):
        started = time.perf_counter()
        found = hotmem.search_memories(
            store, query["query"], identifier=query["identifier"], limit=top_k, profile=profile
        )
        latencies.append((time.perf_counter() - started) * 1000.0)
        current = result_rows(query["query_id"], found)
        if first is None:
            first = current
        elif current != first:
            raise EvalError(
                f"query_id={query['query_id']!r} returned different results on a repeat: "
                "retrieval is not deterministic"
            )
    return first or []
