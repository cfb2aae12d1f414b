"""Weighted-fusion search: cosine over hash vectors, FTS5 BM25 and static importance.

``score = 0.6 * cosine + 0.2 * normalised_bm25 + 0.2 * importance`` over the union of the
cosine candidates (memories in scope with ``cosine >= min_similarity``) and the BM25 candidates
(memories in scope matching at least one informative query term). ``normalised_bm25`` is the
memory's BM25 divided by the best BM25 among this query's matches in scope (1.0 for the best,
0.0 without a lexical match). Ties are broken by ``memory_id`` ascending.
``docs/ranking.md`` explains every step with a worked example.
"""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass

from hotmem.db import MemoryStore
from hotmem.embed import embed, unpack_vector
from hotmem.errors import MemoryNotFoundError, ValidationError
from hotmem.fts import match_expression, query_terms
from hotmem.vectors import cosine

__all__ = [
    "MAX_LIMIT",
    "MIN_SIMILARITY",
    "WEIGHTS",
    "Explanation",
    "ScoreComponents",
    "SearchResult",
    "Weights",
    "explain",
    "search_memories",
]


@dataclass(frozen=True, slots=True)
class Weights:
    """Fusion weights; they sum to 1 so a score lies in [-0.6, 1]."""

    cosine: float = 0.6
    bm25: float = 0.2
    importance: float = 0.2


WEIGHTS = Weights()
# Chosen from a measurement (docs/ranking.md, "Choosing the floor").
MIN_SIMILARITY = 0.4
MAX_LIMIT = 10_000


@dataclass(frozen=True, slots=True)
class ScoreComponents:
    """The signals behind a score.

    Attributes:
        cosine: cosine between the query's and the memory's hash vectors, in [-1, 1].
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


@dataclass(frozen=True, slots=True)
class Explanation:
    """How one memory fares for one query, whether or not it was returned.

    Attributes:
        memory_id: the memory explained.
        identifier: the memory's identifier.
        in_scope: whether the memory belongs to the scope searched.
        components: its score components for this query.
        score: the score it has (or would have) under fusion.
        passes_floor: whether it is a candidate (lexical match or cosine >= floor).
    """

    memory_id: str
    identifier: str
    in_scope: bool
    components: ScoreComponents
    score: float
    passes_floor: bool


def fuse(cosine_value: float, bm25_normalised: float, importance: float) -> float:
    """The fused score, always evaluated in this order so results are bit-reproducible."""
    return (
        WEIGHTS.cosine * cosine_value
        + WEIGHTS.bm25 * bm25_normalised
        + WEIGHTS.importance * importance
    )


def normalise_bm25(raw: float | None, best: float) -> float:
    """``raw / best`` for a lexical match, 0.0 without one.

    FTS5 clamps each term's IDF to a small positive value, so a match always has ``raw > 0``
    and ``best >= raw``: the best match scores 1.0, a single match 1.0, all-equal matches 1.0.
    """
    if raw is None:
        return 0.0
    return raw / best


# Every match in the whole index: scoping happens on positions afterwards, because a join on
# identifier makes SQLite probe the FTS index once per row of the scope (measured 30x slower).
BM25_SQL = "SELECT rowid, -bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH ?"


def _lexical_scores(store: MemoryStore, query: str, identifier: str | None) -> dict[int, float]:
    """Raw BM25 (higher is better) of every memory in scope matching an informative term."""
    expression = match_expression(query_terms(query))
    if expression is None:
        return {}
    matches = store.connection.execute(BM25_SQL, (expression,))
    if identifier is None:
        return dict(matches)
    index = store.vector_index()
    scope = index.scope(identifier)
    position = index.position
    return {rowid: raw for rowid, raw in matches if position[rowid] in scope}


def _check_arguments(
    query: object, identifier: object, limit: object, min_similarity: object
) -> None:
    if not isinstance(query, str):
        raise ValidationError(f"query must be a string; found {type(query).__name__}")
    if identifier is not None and not isinstance(identifier, str):
        raise ValidationError(
            f"identifier must be a string or None; found {type(identifier).__name__}"
        )
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValidationError(f"limit must be an integer in 1..{MAX_LIMIT}; found limit={limit!r}")
    if (
        isinstance(min_similarity, bool)
        or not isinstance(min_similarity, int | float)
        or not -1.0 <= min_similarity <= 1.0
    ):
        raise ValidationError(
            f"min_similarity must be a number in [-1, 1]; found min_similarity={min_similarity!r}"
        )


def search_memories(
    store: MemoryStore,
    query: str,
    *,
    identifier: str | None = None,
    limit: int = 5,
    min_similarity: float = MIN_SIMILARITY,
) -> list[SearchResult]:
    """Rank the memories of ``store`` for ``query``.

    Args:
        store: an open store.
        query: any text; it is never interpreted as FTS5 syntax.
        identifier: restrict both channels to this identifier's memories.
        limit: the number of results wanted, 1..10,000.
        min_similarity: the relevance floor: a memory without a lexical match needs at least
            this cosine. The default comes from a measurement (docs/ranking.md); change it
            only from a measurement on your own corpus.

    Returns:
        At most ``limit`` results, best first; an empty list when nothing passes the floor.

    Raises:
        ValidationError: an argument has the wrong type or ``limit`` is out of range.
    """
    _check_arguments(query, identifier, limit, min_similarity)
    index = store.vector_index()
    positions = index.scope(identifier)
    if not positions:
        return []
    scan = index.scan(embed(query), positions)
    cosines = scan.at_least(min_similarity)
    lexical = _lexical_scores(store, query, identifier)
    best_bm25 = max(lexical.values(), default=0.0)
    importances, position_of = index.importances, index.position
    lexical_positions = {position_of[rowid]: raw for rowid, raw in lexical.items()}
    for p in lexical_positions:
        if p not in cosines:
            cosines[p] = scan.cosine(p)

    # Scores only (floats) for every candidate; components are built for the winners alone.
    # fuse() and normalise_bm25() inlined (same operations, same order, same bits): this loop
    # runs once per candidate, tens of thousands of times for a common question at 100k.
    wc, wb, wi = WEIGHTS.cosine, WEIGHTS.bm25, WEIGHTS.importance
    get_raw = lexical_positions.get
    scored = []
    for p, value in cosines.items():
        raw = get_raw(p)
        bm25 = 0.0 if raw is None else raw / best_bm25
        scored.append((-(wc * value + wb * bm25 + wi * importances[p]), p))
    winners = [
        (
            -negated,
            index.rowids[p],
            ScoreComponents(
                cosine=cosines[p],
                bm25_raw=lexical_positions.get(p),
                bm25_normalised=normalise_bm25(lexical_positions.get(p), best_bm25),
                importance=importances[p],
            ),
        )
        for negated, p in _best(store, index.rowids, scored, limit)
    ]
    return _materialise(store, winners)


def _best(
    store: MemoryStore, rowids: list[int], scored: list[tuple[float, int]], limit: int
) -> list[tuple[float, int]]:
    """The ``limit`` best ``(negated score, position)`` pairs: best score first, equal scores
    in ``memory_id`` order, so insertion order never changes a ranking.

    Only the candidates scoring at least the ``limit``-th best score can be in the answer, so
    only their memory_ids are read (keeping every id in memory would slow the index load).
    """
    if not scored:
        return []
    cutoff = heapq.nsmallest(limit, scored)[-1][0]
    contenders = [item for item in scored if item[0] <= cutoff]
    ids = _memory_ids(store, [rowids[p] for _, p in contenders])
    contenders.sort(key=lambda item: (item[0], ids[rowids[item[1]]]))
    return contenders[:limit]


def _memory_ids(store: MemoryStore, rowids: list[int]) -> dict[int, str]:
    found: dict[int, str] = {}
    for start in range(0, len(rowids), _IN_BATCH):
        batch = rowids[start : start + _IN_BATCH]
        found.update(
            store.connection.execute(
                "SELECT rowid, memory_id FROM memories "
                f"WHERE rowid IN ({','.join('?' * len(batch))})",
                batch,
            )
        )
    return found


# Rowids bound per IN (...) query: well under SQLite's smallest default variable limit.
_IN_BATCH = 500


def _materialise(store: MemoryStore, top: list) -> list[SearchResult]:
    if not top:
        return []
    rowids = [rowid for _, rowid, _ in top]
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
    for rank, (score, rowid, components) in enumerate(top, start=1):
        memory_id, memory_identifier, fact, tags, importance = rows[rowid]
        results.append(
            SearchResult(
                rank=rank,
                memory_id=memory_id,
                identifier=memory_identifier,
                fact=fact,
                tags=tuple(json.loads(tags)),
                importance=importance,
                score=score,
                components=components,
            )
        )
    return results


def explain(
    store: MemoryStore,
    query: str,
    memory_id: str,
    *,
    identifier: str | None = None,
    min_similarity: float = MIN_SIMILARITY,
) -> Explanation:
    """Explain how ``memory_id`` fares for ``query``, with the same arithmetic as the ranking.

    Raises:
        MemoryNotFoundError: no memory has this id.
        ValidationError: an argument has the wrong type.
    """
    _check_arguments(query, identifier, 1, min_similarity)
    row = store.connection.execute(
        "SELECT rowid, identifier, importance, embedding FROM memories WHERE memory_id = ?",
        (memory_id,),
    ).fetchone()
    if row is None:
        raise MemoryNotFoundError(f"no memory with memory_id={memory_id!r}")
    rowid, memory_identifier, importance, blob = row
    in_scope = identifier is None or memory_identifier == identifier
    lexical = _lexical_scores(store, query, identifier)
    raw = lexical.get(rowid)
    components = ScoreComponents(
        cosine=cosine(embed(query), unpack_vector(blob)),
        bm25_raw=raw,
        bm25_normalised=normalise_bm25(raw, max(lexical.values(), default=0.0)),
        importance=importance,
    )
    return Explanation(
        memory_id=memory_id,
        identifier=memory_identifier,
        in_scope=in_scope,
        components=components,
        score=fuse(components.cosine, components.bm25_normalised, importance),
        passes_floor=in_scope and (raw is not None or components.cosine >= min_similarity),
    )
