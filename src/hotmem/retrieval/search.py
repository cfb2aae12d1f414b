"""Search: a request's candidates, ranked by fusion over the store's search index.

Each call runs in one read transaction of the store: the search index (``index.py``) is
refreshed to that state, the query is prepared (``prepared.py``) and an engine computes both
channels over the scope (``reference.py``, or ``vectorized.py`` with numpy); fusion ranks
(``fusion.py``), a profile's reranker reorders the fused top ``pool`` (``rerank.py``), and the
winners are read back. ``examine.py`` reads one memory's values from the same channels.
``docs/ranking.md`` explains every step with a worked example.
"""

from __future__ import annotations

import sqlite3
import sys
import weakref
from collections.abc import Sequence

from hotmem.errors import ValidationError
from hotmem.retrieval import image, image_writes
from hotmem.retrieval.fusion import Rule, Weights, normalise_bm25, rrf, top
from hotmem.retrieval.index import SearchIndex
from hotmem.retrieval.prepared import QUERY_VECTORS, Prepared, keep_query_vectors, prepare
from hotmem.retrieval.profiles import Profile
from hotmem.retrieval.reference import ReferenceChannels
from hotmem.retrieval.request import SearchRequest
from hotmem.retrieval.rerank import reranked
from hotmem.retrieval.results import ScoreComponents, SearchResult
from hotmem.store import changes
from hotmem.store.memory_store import MemoryStore
from hotmem.store.rows import tags_from_text

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import Protocol
else:  # Channels is a type checker's protocol: at run time, a plain class
    Protocol = object

__all__ = [
    "NUMPY_FROM",
    "Channels",
    "channels_for",
    "fused_top",
    "index_of",
    "prepare_queries",
    "prepared_for",
    "ranked_top",
    "rerank_fused",
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

    def cosines_at(self, positions: Sequence[int]) -> list[float]: ...

    def raws_of(self, positions: Sequence[int]) -> list[float | None]: ...

    def candidates(self, floor: float) -> list[int]: ...

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


def channels_for(store: MemoryStore, prepared: Prepared) -> Channels:
    vector = prepared.vector
    if _numpy_for(store, len(prepared.scope), vector is not None and vector.space is not None):
        from hotmem.retrieval.vectorized import VectorizedChannels  # numpy loads here

        return VectorizedChannels(prepared)
    return ReferenceChannels(prepared)


def _embedder(store: MemoryStore, profile: Profile) -> object:
    """The embedder of ``profile``'s vector space when that space has a model, else None."""
    if profile.vector is None or profile.vector.space == "hotmem-hash-v1":
        return None
    from hotmem.store.reindex import embedder_for  # a space with a model

    return embedder_for(store.space(profile.vector.space), store.path, store.model_dir)


def prepared_for(
    store: MemoryStore, connection: sqlite3.Connection, request: SearchRequest, profile: Profile
) -> Prepared:
    index = index_of(store, connection)
    embedder = _embedder(store, profile)
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


def fused_top(
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


def rerank_fused(
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


def prepare_queries(
    store: MemoryStore, queries: Sequence[str], *, profile: str | Profile | None = None
) -> int:
    """Embed ``queries`` for the searches of them that follow under ``profile``: in one batch
    of the model's embedder (on every core), where each search would embed its own query on
    one. A search keeps the vectors of the last ``QUERY_VECTORS`` (1,024) query texts per
    embedder, so the searches, explanations and diagnoses of these texts that follow do not
    embed them again. The vectors are the same bytes either way: results do not change.

    Args:
        store: an open store.
        queries: the query texts, at most 1,024 distinct ones (give more in several calls,
            each before its searches).
        profile: the profile the searches run, as for :func:`search_memories`.

    Returns:
        How many texts were embedded: 0 when the profile's vector space needs no model
        (``hotmem-hash-v1``, or no vector channel) or every text's vector was kept already.

    Raises:
        ValidationError: ``queries`` is a string or holds something that is not a string of
            valid Unicode, it holds more than 1,024 distinct texts, or as
            :func:`search_memories` for the profile.
        MissingExtraError, EmbedderError, StoreError: as :func:`search_memories`.
    """
    if isinstance(queries, str) or not isinstance(queries, Sequence):
        raise ValidationError(
            f"queries must be a sequence of strings; found {type(queries).__name__}"
        )
    texts = [SearchRequest(query, profile=profile).query for query in queries]
    distinct = len(set(texts))
    if distinct > QUERY_VECTORS:
        raise ValidationError(
            f"at most {QUERY_VECTORS} distinct queries a call (the query vectors a search "
            f"keeps); found {distinct}: prepare them in several calls"
        )
    with store.reading():
        embedder = _embedder(store, SearchRequest("", profile=profile).profile_for(store))
    return 0 if embedder is None else keep_query_vectors(embedder, texts)


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
        prepared = prepared_for(store, connection, request, chosen)
        if not prepared.scope:
            return [], []
        channels = channels_for(store, prepared)
        winners, results = ranked_top(store, prepared, channels, chosen, request.limit, keep)
        ids = prepared.names([p for _, p in winners])
    image_writes.save(store, prepared.index)  # outside the read transaction: a write of its own
    return [ids[p] for _, p in winners], results


def ranked_top(
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
    fused = fused_top(channels, prepared, chosen, _depth(chosen, limit))
    winners = rerank_fused(store, prepared, fused, chosen)[:limit]
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
