"""Why a memory ranks where it does for a query, or is missing: one verdict from the ranking.

:func:`diagnose` asks the production code (``examine.examine``), in one read transaction:
the explanation of the memory's components and whether it is a candidate, and, for a
candidate, the search's ranking deep enough to find the rank it holds and the memories above
it (the top ``limit`` results). :func:`diagnose_many` does it for several memories of one
query with one computation of the channels. Nothing here computes a score. The verdicts,
checked in this order:

=================== ================================================================
``outside_scope``    the memory belongs to another identifier than the scope searched
``no_channel_match`` no query term matched and its cosine is <= 0 (within 1e-6)
``below_floor``      no term matched and its cosine is below the floor, or a match is gated
``outranked``        a candidate, but ``limit`` or more memories scored higher
``returned``         in the top ``limit``
=================== ================================================================

The evaluator's miss attribution (``hotmem_eval.attribution``) is these verdicts, for the
relevant memories missing from a query's top k.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from hotmem.records import record
from hotmem.retrieval.examine import examine
from hotmem.retrieval.fusion import Weights
from hotmem.retrieval.profiles import Profile
from hotmem.retrieval.request import MAX_LIMIT, SearchRequest
from hotmem.retrieval.results import Explanation, SearchResult
from hotmem.store.memory_store import MemoryStore

__all__ = [
    "COSINE_TOLERANCE",
    "VERDICTS",
    "Diagnosis",
    "Verdict",
    "diagnose",
    "diagnose_many",
]

Verdict = Literal["outside_scope", "no_channel_match", "below_floor", "outranked", "returned"]

#: Search cosines are exact to 1e-6 (docs/embedding.md): below this, a cosine is no signal.
COSINE_TOLERANCE = 1e-6

#: verdict -> what it means, in the order the verdicts are checked.
VERDICTS: Mapping[Verdict, str] = {
    "outside_scope": "the memory belongs to another identifier than the scope searched",
    "no_channel_match": "no query term matched (BM25) and its cosine is <= 0 (within 1e-6)",
    "below_floor": "its cosine is below the profile's floor (no query term matched) or gate",
    "outranked": "a candidate, but other memories scored higher",
    "returned": "in the top limit results",
}


def _f(value: float) -> str:
    """Four decimals, with -0.0000 shown as 0.0000."""
    return f"{round(value, 4) + 0.0:.4f}"


@record
class Diagnosis:
    """Why one memory ranks where it does for one query, or is missing.

    Attributes:
        query: the query text.
        scope: the identifier searched, ``None`` for the whole store.
        limit: the number of results the verdict is about (a search's ``limit``).
        min_similarity: the relevance floor used (the profile's vector floor; ``None`` for a
            profile without a vector channel).
        profile: the name of the profile the search ran.
        verdict: one of ``VERDICTS``.
        detail: one line with the numbers behind the verdict.
        explanation: the memory's components and score (``hotmem.explain``).
        rank: the memory's rank among all candidates, ``None`` when it is not one (or is
            beyond rank ``MAX_LIMIT``).
        above: the results ranked above it within the top ``limit`` (for ``outranked``, the
            whole top ``limit``); empty when it is not a candidate.
    """

    query: str
    scope: str | None
    limit: int
    min_similarity: float | None
    verdict: Verdict
    detail: str
    explanation: Explanation
    rank: int | None
    above: tuple[SearchResult, ...]
    profile: str = "default"

    def to_dict(self) -> dict[str, object]:
        """The diagnosis as a JSON-ready dict (what ``hotmem explain --json`` prints)."""
        score = self.explanation.score
        return {
            "query": self.query,
            "scope": self.scope,
            "limit": self.limit,
            "min_similarity": self.min_similarity,
            "verdict": self.verdict,
            "detail": self.detail,
            "rank": self.rank,
            **self.explanation.to_dict(),
            "above": [
                {
                    "rank": r.rank,
                    "memory_id": r.memory_id,
                    "score": r.score,
                    "margin": r.score - score,
                }
                for r in self.above
            ],
        }


def _verdict(explanation: Explanation, scope: str | None, profile: Profile) -> tuple[Verdict, str]:
    """The verdict of a memory that is not a candidate, or ``outranked`` for one that is."""
    cosine = explanation.components.cosine
    floor = None if profile.vector is None else profile.vector.floor
    gate = None if profile.lexical is None else profile.lexical.gate
    if not explanation.in_scope:
        return (
            "outside_scope",
            f"memory is in {explanation.identifier!r}; the query searched {scope!r}",
        )
    if explanation.passes_floor:
        return "outranked", ""
    matched = explanation.components.lexical_match
    if matched and gate is not None and cosine < gate:
        return "below_floor", f"lexical match, but cosine {_f(cosine)} < lexical gate {gate:g}"
    if matched or (floor is not None and cosine >= floor):
        # admitted by a channel, yet not ranked: beyond reciprocal-rank fusion's depth
        return "outranked", ""
    if floor is None:
        return "no_channel_match", f"no lexical match; profile {profile.name!r} has no cosine"
    if cosine <= COSINE_TOLERANCE:
        return "no_channel_match", f"no lexical match; cosine {_f(cosine)} <= 0"
    return "below_floor", f"no lexical match; cosine {_f(cosine)} < min_similarity {floor:g}"


def diagnose(
    store: MemoryStore,
    query: str,
    memory_id: str,
    *,
    identifier: str | None = None,
    limit: int = 5,
    profile: str | Profile | None = None,
    min_similarity: float | None = None,
    weights: Weights | None = None,
) -> Diagnosis:
    """Say why ``memory_id`` ranks where it does for ``query`` (searched with ``identifier``,
    ``limit`` and the profile, with ``min_similarity`` and ``weights`` overriding its floor and
    weights as in :func:`hotmem.search_memories`), or why it is missing from the results.

    Returns:
        The :class:`Diagnosis`; its ``detail`` is one line, e.g. ``no lexical match; cosine
        0.2144 < min_similarity 0.4`` or ``score 0.1439 at rank 6; m-2 leads by 0.4158``.

    Raises:
        MemoryNotFoundError: no memory has this id.
        ValidationError: an argument has the wrong type or is out of range.
        StoreError: the store cannot be read, or is damaged.
    """
    return diagnose_many(
        store,
        query,
        [memory_id],
        identifier=identifier,
        limit=limit,
        profile=profile,
        min_similarity=min_similarity,
        weights=weights,
    )[0]


def diagnose_many(
    store: MemoryStore,
    query: str,
    memory_ids: Sequence[str],
    *,
    identifier: str | None = None,
    limit: int = 5,
    profile: str | Profile | None = None,
    min_similarity: float | None = None,
    weights: Weights | None = None,
) -> list[Diagnosis]:
    """:func:`diagnose` for several memories and one query, in the order given: the same
    diagnoses, from one read transaction, one computation of the channels and at most one
    deep ranking (what the evaluator asks for every relevant memory a query missed).

    Raises:
        MemoryNotFoundError: no memory has one of these ids (the first such id is named).
        ValidationError: an argument has the wrong type or is out of range.
        StoreError: the store cannot be read, or is damaged.
    """
    request = SearchRequest(query, identifier, limit, profile, min_similarity, weights)

    def deep(explanation: Explanation, chosen: Profile) -> bool:
        return _verdict(explanation, identifier, chosen)[0] == "outranked"

    found = examine(store, request, memory_ids, deep=deep)
    chosen = found.profile
    floor = None if chosen.vector is None else chosen.vector.floor
    diagnoses = []
    for explanation, rank in zip(found.explanations, found.ranks, strict=True):
        verdict, detail = _verdict(explanation, identifier, chosen)
        above: tuple[SearchResult, ...] = ()
        if verdict == "outranked":
            if rank is not None and rank <= limit:
                verdict, above = "returned", tuple(found.top[: rank - 1])
                detail = f"score {_f(explanation.score)} at rank {rank} of the top {limit}"
            else:
                above = tuple(found.top)
                if rank:
                    where = f"at rank {rank}"
                elif chosen.fusion == "rrf":
                    where = f"in neither channel's top {chosen.depth} (rrf depth)"
                else:
                    where = f"beyond rank {MAX_LIMIT}"
                detail = f"score {_f(explanation.score)} {where}"
                if above:
                    margin = above[0].score - explanation.score
                    detail += f"; {above[0].memory_id} leads by {_f(margin)}"
        diagnoses.append(
            Diagnosis(
                query=query,
                scope=identifier,
                limit=limit,
                min_similarity=floor,
                verdict=verdict,
                detail=detail,
                explanation=explanation,
                rank=rank,
                above=above,
                profile=chosen.name,
            )
        )
    return diagnoses
