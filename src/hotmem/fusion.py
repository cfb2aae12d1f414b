"""Weighted fusion: how three signals become one score, and how scores become a ranking.

``score = w_cosine * cosine + w_bm25 * normalised_bm25 + w_importance * importance``

A memory is a *candidate* when it matched at least one informative query term (a lexical
match) or its cosine reaches the relevance floor. ``normalised_bm25`` is the memory's BM25
divided by the best BM25 among the query's matches in scope (1.0 for the best, 0.0 without a
match). Candidates are ranked by score, best first; equal scores by ``memory_id``, so insertion
order never changes a ranking. ``docs/ranking.md`` works an example through every step.

Everything here is pure arithmetic on values already read: the search (``search.py``) and
``explain`` call these functions, so a score is computed one way only.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "MIN_SIMILARITY",
    "WEIGHTS",
    "Weights",
    "is_candidate",
    "normalise_bm25",
    "rank",
    "score_candidates",
]


@dataclass(frozen=True, slots=True)
class Weights:
    """Fusion weights. The defaults sum to 1, so a score lies in [-0.6, 1]."""

    cosine: float = 0.6
    bm25: float = 0.2
    importance: float = 0.2


WEIGHTS = Weights()
#: The relevance floor, chosen from a measurement (docs/ranking.md, "Choosing the floor").
MIN_SIMILARITY = 0.4


def is_candidate(cosine: float, bm25_raw: float | None, floor: float) -> bool:
    """Whether a memory in scope is ranked at all: a lexical match, or ``cosine >= floor``."""
    return bm25_raw is not None or cosine >= floor


def normalise_bm25(raw: float | None, best: float) -> float:
    """``raw / best`` for a lexical match, 0.0 without one.

    FTS5 clamps each term's IDF to a small positive value, so a match always has ``raw > 0``
    and ``best >= raw``: the best match scores 1.0, a single match 1.0, all-equal matches 1.0.
    """
    if raw is None:
        return 0.0
    return raw / best


def score_candidates(
    cosines: Mapping[int, float],
    lexical: Mapping[int, float],
    importances: Sequence[float],
    *,
    weights: Weights = WEIGHTS,
) -> list[tuple[float, int]]:
    """The fused score of every candidate, as ``(score, key)`` pairs in ``cosines`` order.

    Args:
        cosines: candidate key -> cosine, for every candidate to score.
        lexical: key -> raw BM25 of every lexical match in scope (also those not scored
            here: the best of them normalises BM25).
        importances: indexed by key.
        weights: the fusion weights.

    The terms are always added in the same order, so a score is reproducible bit for bit. This
    loop runs once per candidate (tens of thousands for a common question at 100k memories), so
    it is written for speed: ``normalise_bm25`` is inlined (same operation, same bits).
    """
    best = max(lexical.values(), default=0.0)
    wc, wb, wi = weights.cosine, weights.bm25, weights.importance
    get_raw = lexical.get
    scored = []
    for key, value in cosines.items():
        raw = get_raw(key)
        bm25 = 0.0 if raw is None else raw / best
        scored.append((wc * value + wb * bm25 + wi * importances[key], key))
    return scored


def rank(
    scored: Sequence[tuple[float, int]], memory_ids: Sequence[str], limit: int
) -> list[tuple[float, int]]:
    """The ``limit`` best ``(score, key)`` pairs: highest score first, ties by memory_id.

    Only the candidates scoring at least the ``limit``-th best score can be in the answer, so
    only they are sorted with their memory_id (``memory_ids`` is indexed by key).
    """
    if not scored:
        return []
    cutoff = heapq.nlargest(limit, scored)[-1][0]
    contenders = [item for item in scored if item[0] >= cutoff]
    contenders.sort(key=lambda item: (-item[0], memory_ids[item[1]]))
    return contenders[:limit]
