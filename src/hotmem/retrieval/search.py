"""Search and explain: a request's candidates, ranked by fusion over the store's search index.

Each call runs in one read transaction of the store: the search index (``index.py``) is
refreshed to that state, the query is prepared (``prepared.py``) and an engine computes both
channels over the scope (``reference.py``, or ``vectorized.py`` with numpy); fusion ranks
(``fusion.py``), a profile's reranker reorders the fused top ``pool`` (``rerank.py``), and the
winners are read back. ``explain`` reads one memory's values from the same channels.
``docs/ranking.md`` explains every step with a worked example.
"""

from __future__ import annotations

import sqlite3
import sys
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from hotmem.errors import MemoryNotFoundError
from hotmem.fields import lookup_text
from hotmem.retrieval import image
from hotmem.retrieval.fusion import Rule, Weights, normalise_bm25, rrf, top, weighted
from hotmem.retrieval.index import SearchIndex
from hotmem.retrieval.prepared import Prepared, prepare
from hotmem.retrieval.profiles import Profile
from hotmem.retrieval.reference import ReferenceChannels
from hotmem.retrieval.request import MAX_LIMIT, SearchRequest
from hotmem.retrieval.rerank import reranked
from hotmem.retrieval.results import Explanation, ScoreComponents, SearchResult
from hotmem.store import changes
from hotmem.store.memory_store import MemoryStore
from hotmem.store.rows import tags_from_text

__all__ = [
    "NUMPY_FROM",
    "Channels",
    "Examination",
    "examine",
    "explain",
    "index_of",
    "score_ceiling",
    "search_memories",
]

#: A scope of at least this many memories is searched by the numpy engine (with the ``fast``
#: extra): below it, the standard-library engine answers in about the time importing numpy
#: takes, so numpy is used for a smaller scope only once something imported it.
NUMPY_FROM = 16_384
_INDEXES: weakref.WeakKeyDictionary[MemoryStore, SearchIndex] = weakref.WeakKeyDictionary()


class Channels(Protocol):
    """Both channels of one query over its scope (``ReferenceChannels``,
    ``VectorizedChannels``): exact values, and the rankings fusion asks for."""

    best: float

    def cosine(self, position: int) -> float: ...

    def raw(self, position: int) -> float | None: ...

    def in_scope(self, position: int) -> bool: ...

    def values(self, positions: Sequence[int]) -> tuple[list[float], list[float | None]]: ...

    def weighted_top(self, rule: Rule, limit: int) -> list[tuple[float, int]]: ...

    def weighted_from(self, rule: Rule, score: float) -> list[tuple[float, int]]: ...

    def channel_lists(self, rule: Rule, depth: int) -> tuple[list[int], list[int]]: ...


def index_of(store: MemoryStore, connection: sqlite3.Connection) -> SearchIndex:
    """The search index of ``store``, brought to the state of the caller's read transaction.

    Raises:
        StoreError: the store cannot be read, or a memory is damaged.
    """
    held = _INDEXES.get(store)
    if held is None and _numpy_for(store, changes.current_mark(connection).rowid):
        import hotmem.retrieval.vectorized  # noqa: F401  # numpy, before loading: it parses faster
    if held is None:
        held = image.loaded(connection, store.path) or SearchIndex.load(connection, store.path)
    found = held.refresh(connection)
    _INDEXES[store] = found
    return found


def _numpy_for(store: MemoryStore, size: int, space: bool = False) -> bool:
    """Whether a search of ``size`` memories runs the numpy engine: always with
    ``accelerator="numpy"``; with ``"auto"`` when numpy is installed and the scope holds
    ``NUMPY_FROM`` memories, numpy is imported already, or the profile searches another space
    (whose embedder brings numpy); never with ``"off"``."""
    if store.accelerator != "auto":
        return store.accelerator == "numpy"
    return store.accelerated and (size >= NUMPY_FROM or "numpy" in sys.modules or space)


def _channels(store: MemoryStore, prepared: Prepared) -> Channels:
    vector = prepared.vector
    if _numpy_for(store, len(prepared.scope), vector is not None and vector.space is not None):
        from hotmem.retrieval.vectorized import VectorizedChannels  # numpy loads here

        return VectorizedChannels(prepared)
    return ReferenceChannels(prepared)


def _prepared(
    store: MemoryStore, connection: sqlite3.Connection, request: SearchRequest, profile: Profile
) -> Prepared:
    index = index_of(store, connection)
    embedder = None
    if profile.vector is not None and profile.vector.space != "hotmem-hash-v1":
        from hotmem.store.reindex import embedder_for  # a space with a model

        embedder = embedder_for(store.space(profile.vector.space), store.path, store.model_dir)
    return prepare(index, connection, request.query, request.identifier, profile, embedder)


def score_ceiling(profile: Profile) -> float:
    """The largest score ``profile``'s fusion can give: the sum of its weights (weighted
    fusion: cosine, normalised BM25 and importance are at most 1), or
    ``(w_vector + w_lexical) / (rrf_k + 1)`` (reciprocal-rank fusion)."""
    vector = 0.0 if profile.vector is None else profile.vector.weight
    words = 0.0 if profile.lexical is None else profile.lexical.weight
    if profile.fusion == "rrf":
        return (vector + words) / (profile.rrf_k + 1)
    return vector + words + profile.importance


def _fused(
    channels: Channels, prepared: Prepared, profile: Profile, depth: int
) -> list[tuple[float, int]]:
    """The fused top ``depth`` ``(score, position)``, best first."""
    rule = prepared.rule
    if profile.fusion != "rrf":
        return channels.weighted_top(rule, depth)
    vector, words = channels.channel_lists(rule, profile.depth)
    ranks: dict[int, list[int | None]] = {}
    for channel, ranked in enumerate((vector, words)):
        for rank, p in enumerate(ranked, start=1):
            ranks.setdefault(p, [None, None])[channel] = rank
    weights = (rule.weights.cosine, rule.weights.bm25)
    scored = [(rrf(weights, profile.rrf_k, (v, w)), p) for p, (v, w) in ranks.items()]
    return top(scored, depth, prepared.names)


def _reranked(
    store: MemoryStore, prepared: Prepared, fused: list[tuple[float, int]], profile: Profile
) -> list[tuple[float, int]]:
    if profile.reranker is None:
        return fused
    index, space = prepared.index, profile.reranker.space
    if space == "hotmem-hash-v1":

        def vectors(positions: Sequence[int]) -> list[tuple[float, ...]]:
            return [index.vector(p) for p in positions]

    else:
        column = index.space(prepared.connection, space, store.space(space).dimension)

        def vectors(positions: Sequence[int]) -> list[tuple[float, ...]]:
            return [column.vector(p) for p in positions]

    return reranked(fused, profile.reranker, ceiling=score_ceiling(profile), vectors=vectors)


def _depth(profile: Profile, limit: int) -> int:
    """How many fused results a search needs: with a reranker, at least its whole pool."""
    return limit if profile.reranker is None else max(limit, profile.reranker.pool)


def search_memories(
    store: MemoryStore,
    query: str,
    *,
    identifier: str | None = None,
    limit: int = 5,
    profile: str | Profile | None = None,
    min_similarity: float | None = None,
    weights: Weights | None = None,
) -> list[SearchResult]:
    """Rank the memories of ``store`` for ``query``.

    Args:
        store: an open store.
        query: any text; it is never interpreted as FTS5 syntax.
        identifier: restrict both channels to this identifier's memories.
        limit: the number of results wanted, 1..10,000.
        profile: the retrieval profile: a name of ``hotmem.PROFILES`` or a
            :class:`hotmem.Profile`; the store's default profile (``default`` unless set with
            ``hotmem.set_default_profile``) when ``None``.
        min_similarity: overrides the profile's relevance floor: a memory without a lexical
            match needs at least this cosine. The default comes from a measurement
            (docs/ranking.md); change it only from a measurement on your own corpus.
        weights: overrides the profile's fusion weights.

    Returns:
        At most ``limit`` results, best first; an empty list when nothing passes the floor.

    All of it reads one state of the store (one read transaction), whatever other processes
    write meanwhile.

    Raises:
        ValidationError: an argument has the wrong type or is out of range, the profile is
            unknown, or it needs a vector space the store does not have (the message says how
            to build it).
        MissingExtraError: the profile's vector space needs an extra that is not installed.
        StoreError: the store cannot be read, is damaged, or the profile's vector space is
            not built for every memory (an interrupted reindex).
    """
    request = SearchRequest(query, identifier, limit, profile, min_similarity, weights)
    return ranking(store, request, keep=limit)[1]


def ranking(
    store: MemoryStore, request: SearchRequest, *, keep: int
) -> tuple[list[str], list[SearchResult]]:
    """The memory_ids of ``request``'s results, best first, and the first ``keep`` of them as
    :class:`SearchResult` (what :func:`search_memories` returns when ``keep`` is its limit):
    a deep ranking costs its ids, not its rows.

    Raises:
        As :func:`search_memories`.
    """
    with store.reading() as connection:
        chosen = request.profile_for(store)
        prepared = _prepared(store, connection, request, chosen)
        if not prepared.scope:
            return [], []
        channels = _channels(store, prepared)
        winners, results = _ranked(store, prepared, channels, chosen, request.limit, keep)
        ids = prepared.names([p for _, p in winners])
    image.save(store, prepared.index)  # outside the read transaction: a write of its own
    return [ids[p] for _, p in winners], results


def _ranked(
    store: MemoryStore,
    prepared: Prepared,
    channels: Channels,
    chosen: Profile,
    limit: int,
    keep: int,
) -> tuple[list[tuple[float, int]], list[SearchResult]]:
    """The top ``limit`` ``(score, position)`` of a prepared query, best first, and the first
    ``keep`` of them read back as results."""
    prepared.keep = keep
    fused = _fused(channels, prepared, chosen, _depth(chosen, limit))
    winners = _reranked(store, prepared, fused, chosen)[:limit]
    ranks = {p: r for r, (_, p) in enumerate(fused, start=1)} if chosen.reranker else {}
    index, best = prepared.index, channels.best
    kept = winners[:keep]
    cosines, raws = channels.values([p for _, p in kept])
    found = [
        (
            score,
            p,
            ranks.get(p),
            ScoreComponents(cosine, raw, normalise_bm25(raw, best), index.importances[p]),
        )
        for (score, p), cosine, raw in zip(kept, cosines, raws, strict=True)
    ]
    return winners, _materialise(store, prepared, found)


@dataclass(frozen=True, slots=True)
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
        prepared = _prepared(store, connection, request, chosen)
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
        channels = _channels(store, prepared)
        explanations = [
            _explained(store, prepared, channels, chosen, p, memory_id)
            for p, memory_id in zip(positions, wanted, strict=True)
        ]
        asked = [deep(explanation, chosen) for explanation in explanations]
        ranks: list[int | None] = [None] * len(wanted)
        top_results: list[SearchResult] = []
        if any(asked) and prepared.scope:
            if chosen.fusion == "rrf" or chosen.reranker is not None:
                depth = max(request.limit, min(len(prepared.scope), MAX_LIMIT))
                winners, top_results = _ranked(
                    store, prepared, channels, chosen, depth, request.limit
                )
            else:  # the candidates scoring at least the lowest asked, ranked as a search does
                lowest = min(e.score for e, ask in zip(explanations, asked, strict=True) if ask)
                above = channels.weighted_from(prepared.rule, lowest)
                winners = top(above, min(len(above), MAX_LIMIT), prepared.names)
                top_results = _ranked(
                    store, prepared, channels, chosen, request.limit, request.limit
                )[1]
            rank_of = {p: r for r, (_, p) in enumerate(winners, start=1)}
            ranks = [
                rank_of.get(p) if ask else None for p, ask in zip(positions, asked, strict=True)
            ]
    if any(asked):
        image.save(store, index)  # outside the read transaction: a write of its own
    return Examination(chosen, explanations, ranks, top_results)


def _materialise(
    store: MemoryStore,
    prepared: Prepared,
    found: list[tuple[float, int, int | None, ScoreComponents]],
) -> list[SearchResult]:
    rows = prepared.rows([p for _, p, _, _ in found])
    results = []
    for rank, (score, p, fused_rank, components) in enumerate(found, start=1):
        memory_id, identifier, fact, tags, importance = rows[p]
        results.append(
            SearchResult(
                rank=rank,
                memory_id=memory_id,
                identifier=identifier,
                fact=fact,
                tags=tags_from_text(tags, memory_id, store.path),
                importance=importance,
                score=score,
                components=components,
                fused_rank=fused_rank,
            )
        )
    return results


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
        prepared = _prepared(store, connection, request, chosen)
        index = prepared.index
        p = None if row is None else index.position.get(row[0])
        if p is None:
            raise MemoryNotFoundError(f"no memory with memory_id={memory_id!r}")
        channels = _channels(store, prepared)
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
        fused = _fused(channels, prepared, profile, profile.reranker.pool)
        order = [q for _, q in fused]
        if p in order:
            after = [q for _, q in _reranked(store, prepared, fused, profile)]
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
