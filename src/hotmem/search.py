"""Search: gather the candidates of a query from the store, then rank them by fusion.

The cosine channel scans the store's in-memory vector index (``vectors.py``), or for a profile
naming another vector space that space's matrix (``space_scan.py``, numpy), for memories in
scope with ``cosine >= min_similarity``; the lexical channel asks SQLite FTS5 for the BM25 of
every memory in scope matching an informative query term (``fts.py``). The union is scored and
ranked by ``fusion.py``, ``score = 0.6 * cosine + 0.2 * normalised_bm25 + 0.2 * importance``
with ties by ``memory_id``. A profile's reranker (``rerank.py``) then reorders the fused top
``pool``, which is computed exactly (the top ``max(limit, pool)``), keeping the fused scores.
``docs/ranking.md`` explains every step with a worked example.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hotmem.embedding.hash_v1 import MODEL_NAME, embed
from hotmem.errors import MemoryNotFoundError, StoreError, ValidationError
from hotmem.fields import lookup_text, unicode_breach
from hotmem.fusion import Weights, normalise_bm25, score_candidates
from hotmem.lexical import all_matches
from hotmem.profiles import Profile, customised, resolve_profile
from hotmem.rerank import SPACE_VECTORS, reranked
from hotmem.rrf import channel_ranks, rrf_top_k
from hotmem.store.fts import LexicalQuery, lexical_query
from hotmem.store.memory_store import MemoryStore
from hotmem.store.reindex import embedder_for
from hotmem.store.rows import tags_from_text
from hotmem.topk import Ranked, Rule, Search, exhaustive_top_k, top_k
from hotmem.vectors import CosineScan, VectorIndex

__all__ = [
    "MAX_LIMIT",
    "Explanation",
    "ScoreComponents",
    "SearchResult",
    "explain",
    "search_memories",
]


MAX_LIMIT = 10_000


@dataclass(frozen=True, slots=True)
class ScoreComponents:
    """The signals behind a score.

    Attributes:
        cosine: cosine between the query's and the memory's vectors in the profile's vector
            space, in [-1, 1] (0.0 without a vector channel).
        bm25_raw: FTS5 BM25 of the memory for this query (higher is better), ``None``
            without a lexical match.
        bm25_normalised: ``bm25_raw`` divided by the best ``bm25_raw`` among this query's
            matches in scope; 0.0 without a lexical match.
        importance: the memory's static importance.
    """

    cosine: float
    bm25_raw: float | None
    bm25_normalised: float
    importance: float

    @property
    def lexical_match(self) -> bool:
        """Whether the memory matched at least one informative query term."""
        return self.bm25_raw is not None

    def to_dict(self) -> dict[str, float | None]:
        """The components as a JSON-ready dict, keyed by their canonical column names."""
        return {
            "cosine": self.cosine,
            "bm25_raw": self.bm25_raw,
            "bm25_normalised": self.bm25_normalised,
            "importance": self.importance,
        }


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One ranked memory with its score and the components that produced it."""

    rank: int
    memory_id: str
    identifier: str
    fact: str
    tags: tuple[str, ...]
    importance: float
    score: float
    components: ScoreComponents
    #: Its rank in the fused order when a reranker reordered the results, else ``None``.
    fused_rank: int | None = None

    def to_dict(self) -> dict[str, object]:
        """The result as a JSON-ready dict (what ``hotmem search --json`` prints)."""
        return {
            "rank": self.rank,
            "memory_id": self.memory_id,
            "identifier": self.identifier,
            "fact": self.fact,
            "tags": list(self.tags),
            "importance": self.importance,
            "score": self.score,
            "components": self.components.to_dict(),
            "fused_rank": self.fused_rank,
        }


@dataclass(frozen=True, slots=True)
class Explanation:
    """How one memory fares for one query, whether or not it was returned.

    Attributes:
        memory_id: the memory explained.
        identifier: the memory's identifier.
        in_scope: whether the memory belongs to the scope searched.
        components: its score components for this query.
        score: the score it has (or would have) under fusion.
        passes_floor: whether it is a candidate: in scope, and a lexical match (admitted by
            the gate) or ``cosine >= floor``; under reciprocal-rank fusion, in either
            channel's ranked list.
        profile: the name of the profile explained.
        vector_rank, lexical_rank: under reciprocal-rank fusion, its rank in each channel's
            list (``None`` when not in it); ``None`` under weighted fusion.
        reranker: the profile's reranker (``MMR.to_dict``), ``None`` without one.
        pre_rerank_rank, post_rerank_rank: with a reranker, its rank in the fused top
            ``pool`` and after reranking that pool; ``None`` when it is not in the pool
            (beyond it the reranker leaves the fused order as it is), or without a reranker.
    """

    memory_id: str
    identifier: str
    in_scope: bool
    components: ScoreComponents
    score: float
    passes_floor: bool
    profile: str = "default"
    vector_rank: int | None = None
    lexical_rank: int | None = None
    reranker: dict[str, object] | None = None
    pre_rerank_rank: int | None = None
    post_rerank_rank: int | None = None

    def to_dict(self) -> dict[str, object]:
        """The explanation as a JSON-ready dict."""
        return {
            "memory_id": self.memory_id,
            "identifier": self.identifier,
            "in_scope": self.in_scope,
            "score": self.score,
            "passes_floor": self.passes_floor,
            "components": self.components.to_dict(),
            "profile": self.profile,
            "vector_rank": self.vector_rank,
            "lexical_rank": self.lexical_rank,
            "reranker": self.reranker,
            "pre_rerank_rank": self.pre_rerank_rank,
            "post_rerank_rank": self.post_rerank_rank,
        }


def _damaged(store: MemoryStore, exc: KeyError) -> StoreError:
    return StoreError(
        f"store {store.path!r} is damaged: expected every full-text index entry to belong "
        f"to a memory, found rowid={exc.args[0]} in the index only; check_integrity() "
        "lists the problems"
    )


def _lexical_positions(
    store: MemoryStore, index: VectorIndex, terms: LexicalQuery | None, identifier: str | None
) -> dict[int, float]:
    """Raw BM25 (higher is better) of every memory in scope matching an informative term,
    by its position in ``index``.

    Every match of the whole store is read and scoped by position afterwards, because a join on
    identifier makes SQLite probe the FTS index once per row of the scope (measured 30x slower).
    """
    if not terms:
        return {}
    position = index.position
    try:
        found = {
            position[rowid]: raw for rowid, raw in all_matches(store.connection, terms).items()
        }
    except KeyError as exc:  # read in the index's own transaction: the index is damaged
        raise _damaged(store, exc) from None
    if identifier is None:
        return found
    scope = index.scope(identifier)
    return {p: raw for p, raw in found.items() if p in scope}


def _check_arguments(query: object, identifier: object, limit: object) -> None:
    if not isinstance(query, str):
        raise ValidationError(f"query must be a string; found {type(query).__name__}")
    breach = unicode_breach("query", query)
    if breach is not None:
        raise ValidationError(str(breach))
    if identifier is not None:
        if not isinstance(identifier, str):
            raise ValidationError(
                f"identifier must be a string or None; found {type(identifier).__name__}"
            )
        lookup_text("identifier", identifier)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValidationError(f"limit must be an integer in 1..{MAX_LIMIT}; found limit={limit!r}")


def effective_profile(
    store: MemoryStore,
    profile: str | Profile | None = None,
    *,
    min_similarity: float | None = None,
    weights: Weights | None = None,
) -> Profile:
    """The profile a search with these arguments runs: ``profile`` (a built-in's name or a
    :class:`Profile`; the store's default profile when ``None``), with ``min_similarity`` and
    ``weights`` when given (then named ``"custom"``).

    Raises:
        ValidationError: an unknown profile name, an override out of range, or a vector space
            this HotMem cannot search.
    """
    chosen = customised(
        resolve_profile(profile, default=store.default_profile),
        min_similarity=min_similarity,
        weights=weights,
    )
    if chosen.vector is not None and chosen.vector.space not in {s.name for s in store.spaces}:
        name = chosen.vector.space
        raise ValidationError(
            f"profile {chosen.name!r} needs the vector space {name!r}, which store "
            f"{store.path!r} does not have (it has {', '.join(s.name for s in store.spaces)}); "
            f"build it with `hotmem reindex --space {name}` or store.add_space({name!r})"
        )
    spaces = {s.name for s in store.spaces}
    if chosen.reranker is not None and chosen.reranker.space not in spaces:
        name = chosen.reranker.space
        raise ValidationError(
            f"profile {chosen.name!r}: its mmr reranker needs the vector space {name!r}, which "
            f"store {store.path!r} does not have; build it with `hotmem reindex --space {name}`"
        )
    return chosen


def score_ceiling(profile: Profile) -> float:
    """The largest score ``profile``'s fusion can give: the sum of its weights (weighted
    fusion: cosine, normalised BM25 and importance are at most 1), or
    ``(w_vector + w_lexical) / (rrf_k + 1)`` (reciprocal-rank fusion)."""
    weights = rule_of(profile).weights
    if profile.fusion == "rrf":
        return (weights.cosine + weights.bm25) / (profile.rrf_k + 1)
    return weights.cosine + weights.bm25 + weights.importance


def _depth(profile: Profile, limit: int) -> int:
    """How many fused results a search needs: with a reranker, at least its whole pool."""
    return limit if profile.reranker is None else max(limit, profile.reranker.pool)


def _reranked(
    store: MemoryStore, index: VectorIndex, top: list[tuple[float, int]], profile: Profile
) -> list[tuple[float, int]]:
    if profile.reranker is None:
        return top
    space = profile.reranker.space
    vectors = None
    if space not in SPACE_VECTORS:  # another space of the store: read from its matrix
        rows = store.space_matrix(space).matrix

        def vectors(positions: Sequence[int]) -> list[tuple[float, ...]]:
            return [tuple(float(x) for x in rows[p]) for p in positions]

    return reranked(index, top, profile.reranker, ceiling=score_ceiling(profile), vectors=vectors)


def rule_of(profile: Profile) -> Rule:
    """Who is a candidate under ``profile`` and how candidates are weighed."""
    vector, words = profile.vector, profile.lexical
    weights = Weights(
        cosine=0.0 if vector is None else vector.weight,
        bm25=0.0 if words is None else words.weight,
        importance=profile.importance,
    )
    return Rule(
        weights, None if vector is None else vector.floor, None if words is None else words.gate
    )


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
            ``store.set_default_profile``) when ``None``.
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
    _check_arguments(query, identifier, limit)
    with store.reading():
        chosen = effective_profile(store, profile, min_similarity=min_similarity, weights=weights)
        return _search(store, query, identifier, limit, chosen)


def _prepared(
    store: MemoryStore, index: VectorIndex, query: str, scope: range, profile: Profile, limit: int
) -> Search:
    scan: CosineScan | None = None
    if profile.vector is not None and profile.vector.space == MODEL_NAME:
        scan = index.scan(embed(query), scope, accelerated=store.accelerated)
    elif profile.vector is not None:
        space = store.space(profile.vector.space)
        embedder = embedder_for(space, store.path, store.model_dir)  # names a missing extra
        matrix = store.space_matrix(space.name)
        from hotmem import space_scan  # numpy loads on first use

        scan = space_scan.scan(matrix, embedder.embed_many([query])[0], scope)
    return Search(
        scan=scan,
        scope=scope,
        position=index.position,
        rowids=index.rowids,
        importances=index.importances,
        memory_ids=index.memory_ids,
        rule=rule_of(profile),
        limit=limit,
        top_importance=index.top_importance(scope),
        counts=index.lexical_counts,
        by_rowid=index.positions_by_rowid(),
    )


def _ranked(store: MemoryStore, query: str, search: Search, profile: Profile) -> Ranked:
    terms = lexical_query(query) if profile.lexical is not None else None
    connection = store.connection
    try:
        if profile.fusion == "rrf":
            return rrf_top_k(connection, terms, search, k=profile.rrf_k, depth=profile.depth)
        if terms:
            return top_k(connection, terms, search)
        return exhaustive_top_k(connection, None, search)
    except KeyError as exc:  # read in the index's own transaction: the index is damaged
        raise _damaged(store, exc) from None


def _search(
    store: MemoryStore, query: str, identifier: str | None, limit: int, profile: Profile
) -> list[SearchResult]:
    index = store.vector_index()
    scope = index.scope(identifier)
    if not scope:
        return []
    depth = _depth(profile, limit)
    ranked = _ranked(store, query, _prepared(store, index, query, scope, profile, depth), profile)
    top = _reranked(store, index, ranked.top, profile)[:limit]
    fused = {p: r for r, (_, p) in enumerate(ranked.top, start=1)} if profile.reranker else {}
    # Components are built for the winners alone.
    winners = [
        (
            score,
            index.rowids[p],
            fused.get(p),
            ScoreComponents(
                cosine=ranked.cosines[p],
                bm25_raw=ranked.raws.get(p),
                bm25_normalised=normalise_bm25(ranked.raws.get(p), ranked.best),
                importance=index.importances[p],
            ),
        )
        for score, p in top
    ]
    return _materialise(store, winners)


def _materialise(
    store: MemoryStore, top: list[tuple[float, int, int | None, ScoreComponents]]
) -> list[SearchResult]:
    if not top:
        return []
    rowids = [rowid for _, rowid, _, _ in top]
    placeholders = ",".join("?" * len(rowids))
    rows = {
        row[0]: row[1:]
        for row in store.connection.execute(
            "SELECT rowid, memory_id, identifier, fact, tags, importance FROM memories "
            f"WHERE rowid IN ({placeholders})",
            rowids,
        )
    }
    results = []
    for position, (score, rowid, fused_rank, components) in enumerate(top, start=1):
        memory_id, memory_identifier, fact, tags, importance = rows[rowid]
        results.append(
            SearchResult(
                rank=position,
                memory_id=memory_id,
                identifier=memory_identifier,
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
    :func:`search_memories`), with the same arithmetic as the ranking.

    Raises:
        MemoryNotFoundError: no memory has this id.
        ValidationError: an argument has the wrong type or is out of range.
        StoreError: the store cannot be read, or is damaged.
    """
    _check_arguments(query, identifier, 1)
    memory_id = lookup_text("memory_id", memory_id)
    with store.reading() as connection:
        chosen = effective_profile(store, profile, min_similarity=min_similarity, weights=weights)
        row = connection.execute(
            "SELECT rowid FROM memories WHERE memory_id = ?", (memory_id,)
        ).fetchone()
        index = store.vector_index()
        if row is None or row[0] not in index.position:
            raise MemoryNotFoundError(f"no memory with memory_id={memory_id!r}")
        p = index.position[row[0]]
        scope = index.scope(identifier)
        in_scope = p in scope
        terms = lexical_query(query) if chosen.lexical is not None else None
        if chosen.fusion == "rrf":
            search = _prepared(store, index, query, scope, chosen, 1)
            vector, words, lexical = channel_ranks(connection, terms, search, chosen.depth)
        else:
            search = _prepared(store, index, query, range(p, p + 1), chosen, 1)
            lexical = _lexical_positions(store, index, terms, identifier)
        reranks = _rerank_ranks(store, index, query, scope, chosen, p)
    rule = search.rule
    raw = lexical.get(p)
    value = search.cosine(p)
    components = ScoreComponents(
        cosine=value,
        bm25_raw=raw,
        bm25_normalised=normalise_bm25(raw, max(lexical.values(), default=0.0)),
        importance=index.importances[p],
    )
    ranks: tuple[int | None, int | None] = (None, None)
    if chosen.fusion == "rrf":
        ranks = (_rank_in(vector, p), _rank_in(words, p))
        score = sum(
            w / (chosen.rrf_k + r)
            for w, r in zip((rule.weights.cosine, rule.weights.bm25), ranks, strict=True)
            if r is not None
        )
        candidate = in_scope and ranks != (None, None)
    else:
        [(score, _)] = score_candidates(
            {p: value}, lexical, index.importances, weights=rule.weights
        )
        candidate = in_scope and rule.admits(value, raw is not None)
    return Explanation(
        memory_id=memory_id,
        identifier=index.identifiers[p],
        in_scope=in_scope,
        components=components,
        score=score,
        passes_floor=candidate,
        profile=chosen.name,
        vector_rank=ranks[0],
        lexical_rank=ranks[1],
        reranker=None if chosen.reranker is None else chosen.reranker.to_dict(),
        pre_rerank_rank=reranks[0],
        post_rerank_rank=reranks[1],
    )


def _rerank_ranks(
    store: MemoryStore, index: VectorIndex, query: str, scope: range, profile: Profile, p: int
) -> tuple[int | None, int | None]:
    """Position ``p``'s rank in the fused top pool and after reranking it, by the search's
    own code (``(None, None)`` without a reranker or outside the pool)."""
    if profile.reranker is None or not scope:
        return None, None
    pool = profile.reranker.pool
    fused = _ranked(store, query, _prepared(store, index, query, scope, profile, pool), profile)
    before = [q for _, q in fused.top]
    if p not in before:
        return None, None
    after = [q for _, q in _reranked(store, index, fused.top, profile)]
    return before.index(p) + 1, after.index(p) + 1


def _rank_in(ranked: list[int], p: int) -> int | None:
    return ranked.index(p) + 1 if p in ranked else None
