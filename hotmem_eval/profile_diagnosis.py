"""``hotmem.diagnose`` under any retrieval profile.

``hotmem.diagnose`` takes a relevance floor and fusion weights, so it diagnoses the profiles of
the default's shape (weighted fusion over both channels, no lexical gate) exactly; for those it
is called as it is. For the others (one channel, reciprocal-rank fusion, a gate) the same
verdicts are read from the same production calls made with ``profile=``: ``hotmem.explain``
for whether the memory is a candidate, and a deeper ``hotmem.search_memories`` for the rank it
holds. Nothing here computes a score or a rank.
"""

from __future__ import annotations

from typing import Literal

import hotmem

__all__ = ["diagnose_under"]

Verdict = Literal["outside_scope", "no_channel_match", "below_floor", "outranked", "returned"]
_COSINE_TOLERANCE = 1e-6  # hotmem.diagnosis.COSINE_TOLERANCE: below this, a cosine is no signal


def _f(value: float) -> str:
    return f"{round(value, 4) + 0.0:.4f}"


def diagnose_under(
    store: hotmem.MemoryStore,
    query: str,
    memory_id: str,
    *,
    identifier: str | None,
    limit: int,
    profile: hotmem.Profile,
) -> hotmem.Diagnosis:
    """Why ``memory_id`` ranks where it does for ``query`` under ``profile``.

    Raises:
        hotmem.HotmemError: as ``hotmem.diagnose`` (an unknown memory, an argument out of
            range, a store that cannot be read).
    """
    vector, lexical = profile.vector, profile.lexical
    # hotmem.diagnose's floor and weights describe this profile completely: call it as it is.
    if (
        profile.fusion == "weighted"
        and vector is not None
        and vector.space == hotmem.MODEL_NAME
        and lexical is not None
        and lexical.gate is None
    ):
        weights = hotmem.Weights(
            cosine=vector.weight, bm25=lexical.weight, importance=profile.importance
        )
        return hotmem.diagnose(
            store,
            query,
            memory_id,
            identifier=identifier,
            limit=limit,
            min_similarity=vector.floor,
            weights=weights,
        )
    floor = profile.vector.floor if profile.vector is not None else float("nan")
    with store.reading():
        explanation = hotmem.explain(
            store, query, memory_id, identifier=identifier, profile=profile
        )
        cosine = explanation.components.cosine
        verdict: Verdict
        rank: int | None = None
        above: tuple[hotmem.SearchResult, ...] = ()
        if not explanation.in_scope:
            verdict, detail = (
                "outside_scope",
                f"memory is in {explanation.identifier!r}; the query searched {identifier!r}",
            )
        elif not explanation.passes_floor and (
            profile.vector is None or cosine <= _COSINE_TOLERANCE
        ):
            verdict = "no_channel_match"
            detail = (
                "no lexical match; the profile has no vector channel"
                if profile.vector is None
                else f"no lexical match; cosine {_f(cosine)} <= 0"
            )
        elif not explanation.passes_floor:
            gate = profile.lexical.gate if profile.lexical is not None else None
            bound = f"min_similarity {floor}" + (f" (lexical gate {gate})" if gate else "")
            verdict, detail = "below_floor", f"not a candidate; cosine {_f(cosine)} < {bound}"
        else:
            deep = hotmem.search_memories(
                store,
                query,
                identifier=identifier,
                limit=max(limit, min(len(store), hotmem.MAX_LIMIT)),
                profile=profile,
            )
            rank = next((r.rank for r in deep if r.memory_id == memory_id), None)
            if rank is not None and rank <= limit:
                verdict, above = "returned", tuple(deep[: rank - 1])
                detail = f"score {_f(explanation.score)} at rank {rank} of the top {limit}"
            else:
                verdict, above = "outranked", tuple(deep[:limit])
                where = f"rank {rank}" if rank else f"beyond rank {hotmem.MAX_LIMIT}"
                detail = f"score {_f(explanation.score)} at {where}"
                if above:
                    detail += (
                        f"; {above[0].memory_id} leads by {_f(above[0].score - explanation.score)}"
                    )
    return hotmem.Diagnosis(
        query=query,
        scope=identifier,
        limit=limit,
        min_similarity=floor,
        verdict=verdict,
        detail=detail,
        explanation=explanation,
        rank=rank,
        above=above,
    )
