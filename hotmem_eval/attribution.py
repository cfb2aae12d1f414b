"""Why a relevant memory was missed: scope, floor, no channel, or outranked.

Every reason comes from the production ranking itself: ``hotmem.explain`` for a memory that
was not returned, and a deeper ``search_memories`` call for the rank it actually holds and the
memories that beat it. Nothing here recomputes a score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa

import hotmem
from hotmem_eval.fixture_schema import RELEVANT_GRADE
from hotmem_eval.runner import rows_by_query

__all__ = [
    "MISSES_SCHEMA",
    "REASONS",
    "Miss",
    "Outranker",
    "Reason",
    "attribute_misses",
    "misses_table",
]

Reason = Literal["outside_scope", "no_channel_match", "below_floor", "outranked"]

#: Search cosines are exact to 1e-6 (docs/embedding.md): below this, a cosine is no signal.
COSINE_TOLERANCE = 1e-6

#: reason -> what it means, in report order.
REASONS: Mapping[str, str] = {
    "outside_scope": "the memory belongs to another identifier than the scope searched",
    "no_channel_match": "no query term matched (BM25) and its cosine is <= 0 (within 1e-6)",
    "below_floor": "no query term matched and its cosine is below min_similarity",
    "outranked": "a candidate, but other memories scored higher",
}


@dataclass(frozen=True, slots=True)
class Outranker:
    """A memory in the top k that beat a missed one, by ``margin`` points of score."""

    memory_id: str
    rank: int
    score: float
    cosine: float
    bm25_normalised: float
    importance: float
    margin: float

    def to_dict(self) -> dict[str, Any]:
        """The outranker as it appears in a result document's ``missed[].outranked_by``."""
        return {
            "memory_id": self.memory_id,
            "rank": self.rank,
            "score": self.score,
            "margin": self.margin,
            "components": {
                "cosine": self.cosine,
                "bm25_normalised": self.bm25_normalised,
                "importance": self.importance,
            },
        }


@dataclass(frozen=True, slots=True)
class Miss:
    """A relevant memory absent from a query's top k, and why."""

    query_id: str
    memory_id: str
    grade: int
    reason: Reason
    detail: str
    score: float
    cosine: float
    bm25_raw: float | None
    bm25_normalised: float
    importance: float
    candidate_rank: int | None
    outranked_by: tuple[Outranker, ...]

    def to_dict(self) -> dict[str, Any]:
        """The miss as it appears in a result document's ``queries[].missed``."""
        return {
            "memory_id": self.memory_id,
            "grade": self.grade,
            "reason": self.reason,
            "detail": self.detail,
            "score": self.score,
            "components": {
                "cosine": self.cosine,
                "bm25_raw": self.bm25_raw,
                "bm25_normalised": self.bm25_normalised,
                "importance": self.importance,
            },
            "candidate_rank": self.candidate_rank,
            "outranked_by": [o.to_dict() for o in self.outranked_by],
        }


#: The ``misses`` export: one row per missed relevant memory, flat (no outrankers).
_MISSES_FIELDS: list[pa.Field[Any]] = [
    pa.field("query_id", pa.string(), nullable=False),
    pa.field("memory_id", pa.string(), nullable=False),
    pa.field("grade", pa.int8(), nullable=False),
    pa.field("reason", pa.string(), nullable=False),
    pa.field("detail", pa.string(), nullable=False),
    pa.field("score", pa.float64(), nullable=False),
    pa.field("cosine", pa.float64(), nullable=False),
    pa.field("bm25_raw", pa.float64(), nullable=True),
    pa.field("candidate_rank", pa.int32(), nullable=True),
]
MISSES_SCHEMA = pa.schema(_MISSES_FIELDS)


def misses_table(misses: Sequence[Miss]) -> pa.Table:
    """The misses as a ``MISSES_SCHEMA`` table, in the order given."""
    return pa.Table.from_pylist(
        [{name: getattr(miss, name) for name in MISSES_SCHEMA.names} for miss in misses],
        schema=MISSES_SCHEMA,
    )


def _f(value: float) -> str:
    """Four decimals, with -0.0000 shown as 0.0000."""
    return f"{round(value, 4) + 0.0:.4f}"


def _explain_miss(
    store: hotmem.MemoryStore,
    query: Mapping[str, Any],
    memory_id: str,
    grade: int,
    top: list[dict[str, Any]],
) -> Miss:
    text: str = query["query"]
    scope: str | None = query["identifier"]
    explanation = hotmem.explain(store, text, memory_id, identifier=scope)
    components = explanation.components
    candidate_rank: int | None = None
    outranked_by: tuple[Outranker, ...] = ()
    if not explanation.in_scope:
        reason: Reason = "outside_scope"
        detail = f"memory is in {explanation.identifier!r}; the query searched {scope!r}"
    elif not explanation.passes_floor and components.cosine <= COSINE_TOLERANCE:
        reason = "no_channel_match"
        detail = f"no lexical match; cosine {_f(components.cosine)} <= 0"
    elif not explanation.passes_floor:
        reason = "below_floor"
        detail = (
            f"no lexical match; cosine {_f(components.cosine)} < "
            f"min_similarity {hotmem.MIN_SIMILARITY}"
        )
    else:
        reason = "outranked"
        deep = hotmem.search_memories(
            store,
            text,
            identifier=scope,
            limit=max(1, min(len(store), hotmem.MAX_LIMIT)),
        )
        candidate_rank = next((r.rank for r in deep if r.memory_id == memory_id), None)
        outranked_by = tuple(
            Outranker(
                memory_id=row["memory_id"],
                rank=row["rank"],
                score=row["score"],
                cosine=row["cosine"],
                bm25_normalised=row["bm25_normalised"],
                importance=row["importance"],
                margin=row["score"] - explanation.score,
            )
            for row in top
        )
        best = outranked_by[0] if outranked_by else None
        where = f"rank {candidate_rank}" if candidate_rank else "beyond rank 10000"
        detail = f"score {_f(explanation.score)} at {where}"
        if best is not None:
            detail += f"; {best.memory_id} leads by {_f(best.margin)}"
    return Miss(
        query_id=str(query["query_id"]),
        memory_id=memory_id,
        grade=grade,
        reason=reason,
        detail=detail,
        score=explanation.score,
        cosine=components.cosine,
        bm25_raw=components.bm25_raw,
        bm25_normalised=components.bm25_normalised,
        importance=components.importance,
        candidate_rank=candidate_rank,
        outranked_by=outranked_by,
    )


def attribute_misses(
    store: hotmem.MemoryStore, queries: pa.Table, qrels: pa.Table, results: pa.Table, *, top_k: int
) -> list[Miss]:
    """Explain every relevant memory (grade >= 2) missing from its query's top ``top_k``.

    Returns misses ordered by (query_id, memory_id).
    """
    relevant: dict[str, dict[str, int]] = {}
    for row in qrels.to_pylist():
        if row["grade"] >= RELEVANT_GRADE:
            relevant.setdefault(row["query_id"], {})[row["memory_id"]] = row["grade"]
    returned = {
        query_id: [row for row in rows if row["rank"] <= top_k]
        for query_id, rows in rows_by_query(results).items()
    }
    misses: list[Miss] = []
    for query in queries.select(["query_id", "query", "identifier"]).to_pylist():
        wanted = relevant.get(query["query_id"], {})
        top = returned.get(query["query_id"], [])
        missing = sorted(set(wanted) - {row["memory_id"] for row in top})
        misses.extend(_explain_miss(store, query, m, wanted[m], top) for m in missing)
    return misses
