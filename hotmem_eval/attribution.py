"""Why a relevant memory was missed: scope, floor, no channel, or outranked.

Every reason is ``hotmem.diagnose_many``'s verdict under the run's profile, from the
production ranking itself: the explanation of a memory that was not returned, and, once per
query, a deeper ranking for the rank each missed memory actually holds and the memories that
beat it. Nothing here recomputes a score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import polars as pl
import pyarrow as pa

import hotmem
from hotmem_eval.errors import EvalError
from hotmem_eval.fixture_schema import RELEVANT_GRADE

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

#: reason -> what it means, in report order: ``hotmem.VERDICTS`` of a memory not returned.
REASONS: Mapping[str, str] = {
    reason: meaning for reason, meaning in hotmem.VERDICTS.items() if reason != "returned"
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


def _miss(query_id: str, grade: int, diagnosis: hotmem.Diagnosis) -> Miss:
    verdict = diagnosis.verdict
    if verdict == "returned":  # the run's top k and a new search disagree
        raise EvalError(
            f"query_id={query_id!r}: {diagnosis.explanation.memory_id} is missing from the "
            f"run's top {diagnosis.limit} but a new search returns it at rank {diagnosis.rank}: "
            "retrieval is not deterministic"
        )
    explanation = diagnosis.explanation
    components = explanation.components
    return Miss(
        query_id=query_id,
        memory_id=explanation.memory_id,
        grade=grade,
        reason=verdict,
        detail=diagnosis.detail,
        score=explanation.score,
        cosine=components.cosine,
        bm25_raw=components.bm25_raw,
        bm25_normalised=components.bm25_normalised,
        importance=components.importance,
        candidate_rank=diagnosis.rank,
        outranked_by=tuple(
            Outranker(
                memory_id=r.memory_id,
                rank=r.rank,
                score=r.score,
                cosine=r.components.cosine,
                bm25_normalised=r.components.bm25_normalised,
                importance=r.components.importance,
                margin=r.score - explanation.score,
            )
            for r in diagnosis.above
        ),
    )


def attribute_misses(
    store: hotmem.MemoryStore,
    queries: pa.Table,
    qrels: pa.Table,
    results: pa.Table,
    *,
    top_k: int,
    profile: hotmem.Profile | None = None,
    relevant_grade: int = RELEVANT_GRADE,
) -> list[Miss]:
    """Explain every relevant memory (graded ``relevant_grade`` or more) missing from its
    query's top ``top_k``, searched under ``profile`` (``default`` when None). A relevant
    memory the corpus does not hold (a collection's judgement of a document left out) is not
    explained: no search could return it.

    Returns misses ordered by (query_id, memory_id).
    """
    relevant: dict[str, dict[str, int]] = {}
    for row in qrels.to_pylist():
        if row["grade"] >= relevant_grade:
            relevant.setdefault(row["query_id"], {})[row["memory_id"]] = row["grade"]
    returned: dict[str, set[str]] = {}
    top = pl.DataFrame(results).filter(pl.col("rank") <= top_k)
    for query_id, memory_id in top.select("query_id", "memory_id").iter_rows():
        returned.setdefault(query_id, set()).add(memory_id)
    chosen = profile if profile is not None else hotmem.PROFILES[hotmem.DEFAULT_PROFILE]
    misses: list[Miss] = []
    for query in queries.select(["query_id", "query", "identifier"]).to_pylist():
        query_id = str(query["query_id"])
        wanted = relevant.get(query_id, {})
        missing = [
            memory_id
            for memory_id in sorted(set(wanted) - returned.get(query_id, set()))
            if _stored(store, memory_id)  # judged, but not in the corpus: a blank document
        ]
        if not missing:
            continue
        diagnoses = hotmem.diagnose_many(
            store,
            query["query"],
            missing,
            identifier=query["identifier"],
            limit=top_k,
            profile=chosen,
        )
        misses.extend(_miss(query_id, wanted[d.explanation.memory_id], d) for d in diagnoses)
    return misses


def _stored(store: hotmem.MemoryStore, memory_id: str) -> bool:
    try:
        store.get(memory_id)
    except hotmem.MemoryNotFoundError:
        return False
    return True
