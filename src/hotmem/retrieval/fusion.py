"""Fusion: how channel values become one score, and scores a ranking. Written once, used by
both engines and by ``explain``.

**Weighted** (``docs/ranking.md``)::

    score = w_vector * cosine + w_lexical * bm25_raw / best + w_importance * importance

added in that order (so bits are reproducible), ``bm25_raw / best`` taken as 0.0 without a
lexical match; ``best`` is the largest ``bm25_raw`` in scope. :func:`weighted` is that
expression, for floats or, element by element, for numpy arrays.

**Reciprocal rank** (Cormack, Clarke and Büttcher, 2009, with per-channel weights)::

    score = w_vector / (k + vector rank) + w_lexical / (k + lexical rank)

over the channels a memory is ranked in (:func:`rrf`).

A memory in scope is a *candidate* (:meth:`Rule.admits`) when its cosine reaches the floor, or
it is a lexical match whose cosine reaches the gate (when the profile has one). Candidates are
ranked by score, best first, equal scores by ``memory_id`` (:func:`top`), so insertion order
never changes a ranking.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Mapping, Sequence

from hotmem.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "MIN_SIMILARITY",
    "WEIGHTS",
    "Names",
    "Rule",
    "Weights",
    "normalise_bm25",
    "rrf",
    "top",
    "weighted",
]


@record
class Weights:
    """Fusion weights. The defaults sum to 1, so a score lies in [-0.6, 1]."""

    cosine: float = 0.6
    bm25: float = 0.2
    importance: float = 0.2


WEIGHTS = Weights()
#: The relevance floor, chosen from a measurement (docs/ranking.md, "Choosing the floor").
MIN_SIMILARITY = 0.4


class Rule:
    """Who is a candidate and how a candidate is scored under weighted fusion.

    Attributes:
        weights: the fusion weights (0 for a channel a profile lacks).
        floor: a memory needs ``cosine >= floor`` without a lexical match (``None``: never,
            the profile has no vector channel).
        gate: a lexical match needs ``cosine >= gate`` too (``None``: no gate).
    """

    __slots__ = ("floor", "gate", "weights")

    weights: Weights
    floor: float | None
    gate: float | None

    def __init__(self, weights: Weights, floor: float | None, gate: float | None = None) -> None:
        self.weights = weights
        self.floor = floor
        self.gate = gate

    def __eq__(self, other: object) -> bool:
        if type(other) is not Rule:
            return NotImplemented
        return (self.weights, self.floor, self.gate) == (other.weights, other.floor, other.gate)

    def __hash__(self) -> int:
        return hash((self.weights, self.floor, self.gate))

    def __repr__(self) -> str:
        return f"Rule(weights={self.weights!r}, floor={self.floor!r}, gate={self.gate!r})"

    def admits(self, cosine: float, lexical_match: bool) -> bool:
        """Whether a memory in scope with this cosine and lexical match is a candidate."""
        if self.floor is not None and cosine >= self.floor:
            return True
        return lexical_match and (self.gate is None or cosine >= self.gate)


def weighted(weights: Weights, cosine: Any, bm25: Any, importance: Any) -> Any:
    """``w_vector * cosine + w_lexical * bm25 + w_importance * importance``, in that order; for
    floats, or numpy arrays element by element (the same operations, so the same bits)."""
    return weights.cosine * cosine + weights.bm25 * bm25 + weights.importance * importance


def normalise_bm25(raw: float | None, best: float) -> float:
    """``raw / best`` for a lexical match, 0.0 without one.

    FTS5 clamps each term's IDF to a small positive value, so a match always has ``raw > 0``
    and ``best >= raw``: the best match scores 1.0, a single match 1.0, all-equal matches 1.0.
    """
    return 0.0 if raw is None else raw / best


def rrf(weights: tuple[float, float], k: int, ranks: tuple[int | None, int | None]) -> float:
    """A memory's reciprocal-rank score from its rank in the vector and the lexical channel
    (``None`` where it is not ranked): the channels' shares added in that order."""
    score = 0.0
    for weight, rank in zip(weights, ranks, strict=True):
        if rank is not None:
            score += weight / (k + rank)
    return score


#: position -> memory_id of some positions (the index's, read in the search's transaction).
Names = Callable[[Collection[int]], Mapping[int, str]]


def top(scored: Sequence[tuple[float, int]], limit: int, names: Names) -> list[tuple[float, int]]:
    """The ``limit`` best ``(value, position)`` pairs: highest value first, ties by memory_id.

    Only the pairs at least as high as the ``limit``-th value can be in the answer, and only
    those of them that share their value with another need their memory_id: only theirs are
    read (a deep ranking of distinct scores reads none).
    """
    if not scored:
        return []
    if limit >= len(scored):  # every pair is in the answer
        contenders = list(scored)
    else:
        cutoff = heapq.nlargest(limit, scored)[-1][0]
        contenders = [item for item in scored if item[0] >= cutoff]
    contenders.sort(key=lambda item: -item[0])
    values = [value for value, _ in contenders]
    tied = [
        p
        for i, (value, p) in enumerate(contenders)
        if (i > 0 and values[i - 1] == value) or (i + 1 < len(values) and values[i + 1] == value)
    ]
    if tied:
        ids = names(tied)
        contenders.sort(key=lambda item: (-item[0], ids.get(item[1], "")))
    return contenders[:limit]
