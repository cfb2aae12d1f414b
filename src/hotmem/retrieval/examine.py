"""Explain and examine: one memory's values for a query, from the search's own channels.

``explain`` reads a memory's components, score and candidacy from the channels and fusion a
search computes (``search.py``), and ``examine`` does it for several memories of one query at
once, with the rank each holds: under weighted fusion from the candidates scoring at least as
much as the memory, ranked as a search ranks them; under reciprocal-rank fusion or with a
reranker, from one ranking of the whole scope. ``diagnosis.py`` turns both into verdicts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hotmem.errors import MemoryNotFoundError
from hotmem.fields import lookup_text
from hotmem.records import record
from hotmem.retrieval import image_writes
from hotmem.retrieval.fusion import Weights, normalise_bm25, rrf, top, weighted
from hotmem.retrieval.prepared import Prepared
from hotmem.retrieval.profiles import Profile
from hotmem.retrieval.request import MAX_LIMIT, SearchRequest
from hotmem.retrieval.results import Explanation, ScoreComponents, SearchResult
from hotmem.retrieval.search import (
    Channels,
    channels_for,
    fused_top,
    prepared_for,
    ranked_top,
    rerank_fused,
)
from hotmem.store.memory_store import MemoryStore

__all__ = ["Examination", "examine", "explain"]


def explain(
    store: MemoryStore,
    query: str,
    memory_id: str,
    *,
    identifier: str | None = None,
    profile: str | Profile | None = None,
    min_similarity: float | None = None,
    weights: Weights | None = None,
) -> Explanation:
    """Explain how ``memory_id`` fares for ``query`` under a profile (the arguments of
    :func:`search_memories`), from the search's own channels and fusion.

    Raises:
        MemoryNotFoundError: no memory has this id.
        ValidationError: an argument has the wrong type or is out of range.
        StoreError: the store cannot be read, or is damaged.
    """
    request = SearchRequest(query, identifier, 1, profile, min_similarity, weights)
    memory_id = lookup_text("memory_id", memory_id)
    with store.reading() as connection:
        chosen = request.profile_for(store)
        row = connection.execute(
            "SELECT rowid FROM memories WHERE memory_id = ?", (memory_id,)
        ).fetchone()
        prepared = prepared_for(store, connection, request, chosen)
        index = prepared.index
        p = None if row is None else index.position.get(row[0])
        if p is None:
            raise MemoryNotFoundError(f"no memory with memory_id={memory_id!r}")
        channels = channels_for(store, prepared)
        return _explained(store, prepared, channels, chosen, p, memory_id)


def _explained(
    store: MemoryStore,
    prepared: Prepared,
    channels: Channels,
    profile: Profile,
    p: int,
    memory_id: str,
) -> Explanation:
    index, rule = prepared.index, prepared.rule
    in_scope = channels.in_scope(p)
    cosine, raw = channels.cosine(p), channels.raw(p)
    components = ScoreComponents(
        cosine=cosine,
        bm25_raw=raw,
        bm25_normalised=normalise_bm25(raw, channels.best),
        importance=index.importances[p],
    )
    ranks: tuple[int | None, int | None] = (None, None)
    if profile.fusion == "rrf":
        vector, words = channels.channel_lists(rule, profile.depth)
        ranks = (_rank_in(vector, p), _rank_in(words, p))
        score = rrf((rule.weights.cosine, rule.weights.bm25), profile.rrf_k, ranks)
        candidate = in_scope and ranks != (None, None)
    else:
        score = weighted(rule.weights, cosine, components.bm25_normalised, index.importances[p])
        candidate = in_scope and rule.admits(cosine, raw is not None)
    before: tuple[int | None, int | None] = (None, None)
    if profile.reranker is not None and prepared.scope:
        fused = fused_top(channels, prepared, profile, profile.reranker.pool)
        order = [q for _, q in fused]
        if p in order:
            after = [q for _, q in rerank_fused(store, prepared, fused, profile)]
            before = (order.index(p) + 1, after.index(p) + 1)
    return Explanation(
        memory_id=memory_id,
        identifier=prepared.identifier_of(p),
        in_scope=in_scope,
        components=components,
        score=score,
        passes_floor=candidate,
        profile=profile.name,
        vector_rank=ranks[0],
        lexical_rank=ranks[1],
        reranker=None if profile.reranker is None else profile.reranker.to_dict(),
        pre_rerank_rank=before[0],
        post_rerank_rank=before[1],
    )


def _rank_in(ranked: list[int], p: int) -> int | None:
    return ranked.index(p) + 1 if p in ranked else None


@record
class Examination:
    """Several memories examined for one query (:func:`examine`).

    Attributes:
        profile: the profile the request resolved to.
        explanations: each memory's explanation, in the order asked.
        ranks: each memory's rank in the query's ranking, ``None`` when it was not ranked
            deep enough, not asked (``deep`` false), or the ranking is deeper than
            ``MAX_LIMIT``.
        top: the ranking's first ``limit`` results, empty when no rank was asked.
    """

    profile: Profile
    explanations: list[Explanation]
    ranks: list[int | None]
    top: list[SearchResult]


def _ranking(
    store: MemoryStore,
    prepared: Prepared,
    channels: Channels,
    chosen: Profile,
    request: SearchRequest,
    lowest: float,
) -> tuple[list[tuple[float, int]], list[SearchResult]]:
    """``(score, position)`` of the ranking down to the memories asked about (whose lowest
    score is ``lowest``), best first, and the top ``request.limit`` results."""
    if chosen.fusion == "rrf" or chosen.reranker is not None:
        depth = max(request.limit, min(len(prepared.scope), MAX_LIMIT))
        return ranked_top(store, prepared, channels, chosen, depth, request.limit)
    # weighted fusion: the candidates scoring at least ``lowest``, ranked as a search does
    # (their ties broken by memory_id; the rest of their rows is read for the top ones only)
    prepared.keep = request.limit
    above = channels.weighted_from(prepared.rule, lowest)
    winners = top(above, min(len(above), MAX_LIMIT), prepared.names)
    return winners, ranked_top(store, prepared, channels, chosen, request.limit, request.limit)[1]


def examine(
    store: MemoryStore,
    request: SearchRequest,
    memory_ids: Sequence[str],
    *,
    deep: Callable[[Explanation, Profile], bool],
) -> Examination:
    """Explain each of ``memory_ids`` for ``request`` and, when ``deep`` (given the
    explanation and the profile the request resolved to) says so for any of them, rank the
    whole scope (to ``MAX_LIMIT``) once to find where those memories stand: one read
    transaction, one computation of the channels, each rank found by position.

    Raises:
        MemoryNotFoundError: no memory has one of these ids (the first such id is named).
        As :func:`search_memories` otherwise.
    """
    wanted = [lookup_text("memory_id", memory_id) for memory_id in memory_ids]
    with store.reading() as connection:
        chosen = request.profile_for(store)
        prepared = prepared_for(store, connection, request, chosen)
        index = prepared.index
        positions = []
        for memory_id in wanted:
            row = connection.execute(
                "SELECT rowid FROM memories WHERE memory_id = ?", (memory_id,)
            ).fetchone()
            p = None if row is None else index.position.get(row[0])
            if p is None:
                raise MemoryNotFoundError(f"no memory with memory_id={memory_id!r}")
            positions.append(p)
        channels = channels_for(store, prepared)
        explanations = [
            _explained(store, prepared, channels, chosen, p, memory_id)
            for p, memory_id in zip(positions, wanted, strict=True)
        ]
        asked = [deep(explanation, chosen) for explanation in explanations]
        ranks: list[int | None] = [None] * len(wanted)
        top_results: list[SearchResult] = []
        if any(asked) and prepared.scope:
            lowest = min(e.score for e, ask in zip(explanations, asked, strict=True) if ask)
            winners, top_results = _ranking(store, prepared, channels, chosen, request, lowest)
            rank_of = {p: r for r, (_, p) in enumerate(winners, start=1)}
            ranks = [
                rank_of.get(p) if ask else None for p, ask in zip(positions, asked, strict=True)
            ]
    if any(asked):
        image_writes.save(store, index)  # outside the read transaction: a write of its own
    return Examination(chosen, explanations, ranks, top_results)
