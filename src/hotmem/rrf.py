"""Reciprocal-rank fusion (RRF): ranks, not scores, fused.

Each channel ranks its own candidates in scope: the vector channel those with
``cosine >= floor`` by cosine, the lexical channel its matches (admitted by the gate, when the
profile has one) by raw BM25; ties by ``memory_id`` in both, and each list cut at ``depth``.
A memory's score is ``w_vector / (k + vector rank) + w_lexical / (k + lexical rank)`` over the
lists it is in (Cormack, Clarke and Büttcher, 2009, with per-channel weights); the fused list
is ranked as weighted fusion's is, ties by ``memory_id``. Every list is computed whole, so the
result is exact by construction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from hotmem import lexical
from hotmem.fusion import rank
from hotmem.store.fts import LexicalQuery
from hotmem.topk import Ranked, Search, in_scope

__all__ = ["channel_ranks", "rrf_top_k"]


def _ranked(items: dict[int, float], memory_ids: Sequence[str], depth: int) -> list[int]:
    """Positions of ``items`` (position -> value) by value, highest first, ties by memory_id."""
    order = sorted(items, key=lambda p: (-items[p], memory_ids[p]))
    return order[:depth]


def channel_ranks(
    connection: sqlite3.Connection, query: LexicalQuery | None, search: Search, depth: int
) -> tuple[list[int], list[int], dict[int, float]]:
    """The vector channel's and the lexical channel's ranked positions (each cut at
    ``depth``), and the raw BM25 of every lexical match in scope."""
    found = lexical.all_matches(connection, query) if query else {}
    raws = in_scope(found, search.position, search.scope)
    gate = search.rule.gate
    admitted = raws if gate is None else {p: r for p, r in raws.items() if search.cosine(p) >= gate}
    vector = _ranked(search.floor_hits(), search.memory_ids, depth)
    words = _ranked(admitted, search.memory_ids, depth)
    return vector, words, raws


def rrf_top_k(
    connection: sqlite3.Connection,
    query: LexicalQuery | None,
    search: Search,
    *,
    k: int,
    depth: int,
) -> Ranked:
    """The ``search.limit`` best memories by reciprocal-rank fusion (module docstring)."""
    vector, words, raws = channel_ranks(connection, query, search, depth)
    weights = search.rule.weights
    scores: dict[int, float] = {}
    for position, p in enumerate(vector, start=1):
        scores[p] = weights.cosine / (k + position)
    for position, p in enumerate(words, start=1):
        scores[p] = scores.get(p, 0.0) + weights.bm25 / (k + position)
    top = rank([(score, p) for p, score in scores.items()], search.memory_ids, search.limit)
    cosines = {p: search.cosine(p) for _, p in top}
    return Ranked(top, cosines, raws, max(raws.values(), default=0.0), len(raws))
