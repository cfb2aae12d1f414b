"""Rerankers: a deterministic second stage over the fused top of a search.

A reranker is a frozen value in a profile's ``reranker`` slot. It reorders the first ``pool``
results of fusion (after the relevance floor) and leaves every result beyond the pool in its
fused order after it. Scores are never changed: a reranked result keeps its fused score, so
the returned scores need not decrease with the rank.

:class:`MMR` is maximal marginal relevance (Carbonell and Goldstein, 1998). With the fused
top ``pool`` in fused order, at each step it picks the remaining memory with the largest

    lambda * rel - (1 - lambda) * max(cosine to the memories already picked)

(the max is 0 for the first pick, so the fused top stays first), ties by fused rank (the fused
order, itself by score and then memory_id). ``rel`` is the fused score divided by the largest
score the profile's fusion can give (``search.score_ceiling``: 1.0 for ``default``'s weights,
whose sum is 1), so that ``lambda`` weighs relevance against similarity on the same [0, 1]
scale whatever the weights or the fusion method. The cosine is measured in ``space``, from the
search index's vectors of that space (search passes them in, ``vectors=``), with the cosine of
the hash space's definition, ``1 - |a - b|² / 2`` of unit vectors (:func:`cosine`).
``docs/ranking.md`` works an example.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from hotmem.embedding.hash_v1 import MODEL_NAME
from hotmem.errors import ValidationError
from hotmem.fields import shown
from hotmem.records import record
from hotmem.store.spaces import SPACE_NAME

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import ClassVar

__all__ = [
    "DEFAULT_LAMBDA",
    "DEFAULT_POOL",
    "MAX_POOL",
    "MMR",
    "RERANKERS",
    "Reranker",
    "cosine",
    "mmr_order",
    "reranked",
    "reranker_from_mapping",
]

#: The λ of ``default+mmr`` (docs/ranking.md says how it was chosen).
DEFAULT_LAMBDA = 0.9
DEFAULT_POOL = 20
MAX_POOL = 1000
_FIELDS = ("kind", "lambda", "pool", "space")


@record
class MMR:
    """Maximal marginal relevance over the fused top ``pool`` (the module docstring).

    Attributes:
        lambda_: the weight of relevance against similarity, in [0, 1]; 1 is the fused order.
        pool: how many of the fused top results are reordered, 1..1000.
        space: the vector space the similarity is measured in.

    Raises:
        ValidationError: a field is out of range or of the wrong type.
    """

    lambda_: float = DEFAULT_LAMBDA
    pool: int = DEFAULT_POOL
    space: str = MODEL_NAME

    kind: ClassVar[str] = "mmr"

    def __post_init__(self) -> None:
        value = self.lambda_
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValidationError(f"mmr lambda must be a number in [0, 1]; found lambda={value!r}")
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise ValidationError(f"mmr lambda must be in [0, 1]; found lambda={value!r}")
        object.__setattr__(self, "lambda_", float(value))
        pool = self.pool
        if isinstance(pool, bool) or not isinstance(pool, int) or not 1 <= pool <= MAX_POOL:
            raise ValidationError(
                f"mmr pool must be an integer in 1..{MAX_POOL}; found pool={pool!r}"
            )
        if not isinstance(self.space, str) or not self.space:
            raise ValidationError(f"mmr space must be a model id; found space={self.space!r}")
        if not SPACE_NAME.fullmatch(self.space):
            raise ValidationError(
                f"mmr space must be a model id ({SPACE_NAME.pattern}); found "
                f"space={shown(self.space)}"
            )

    def to_dict(self) -> dict[str, object]:
        """The reranker as JSON-ready data (``reranker_from_mapping`` reads it back)."""
        return {"kind": self.kind, "lambda": self.lambda_, "pool": self.pool, "space": self.space}

    @classmethod
    def from_mapping(cls, fields: Mapping[str, object]) -> MMR:
        """An MMR from ``to_dict``'s keys; ``lambda``, ``pool`` and ``space`` are optional.

        Raises:
            ValidationError: an unknown key, or a value of the wrong type or out of range.
        """
        unknown = sorted(set(fields) - set(_FIELDS))
        if unknown:
            raise ValidationError(
                f"mmr takes the fields {', '.join(_FIELDS)}; found {', '.join(map(repr, unknown))}"
            )
        lambda_ = fields.get("lambda", DEFAULT_LAMBDA)
        pool = fields.get("pool", DEFAULT_POOL)
        space = fields.get("space", MODEL_NAME)
        return cls(lambda_=lambda_, pool=pool, space=space)  # type: ignore[arg-type]  # checked


#: Every reranker a profile may name (only one kind so far).
Reranker = MMR
RERANKERS: Mapping[str, Callable[[Mapping[str, object]], Reranker]] = {"mmr": MMR.from_mapping}


def reranker_from_mapping(value: object) -> Reranker | None:
    """The reranker of a profile's ``reranker`` field: ``None`` or ``false`` for none, a
    reranker value, or a table with a ``kind`` and that kind's fields.

    Raises:
        ValidationError: not a table, an unknown kind, or a bad field.
    """
    if value is None or value is False:
        return None
    if isinstance(value, MMR):
        return value
    if not isinstance(value, Mapping):
        raise ValidationError(f"reranker must be a table with a kind, or false; found {value!r}")
    kind = value.get("kind")
    build = RERANKERS.get(kind) if isinstance(kind, str) else None
    if build is None:
        raise ValidationError(
            f"reranker kind must be one of {', '.join(RERANKERS)}; found kind={kind!r}"
        )
    return build(value)


def mmr_order(
    rels: Sequence[float], similarity: Callable[[int, int], float], lambda_: float
) -> list[int]:
    """The MMR order of a pool given in fused order: indexes into ``rels``.

    Args:
        rels: the relevance of each pool member, in fused order.
        similarity: ``similarity(i, j)`` between pool members ``i`` and ``j``.
        lambda_: the weight of relevance, in [0, 1].

    Returns:
        Each index once: at each step the remaining ``i`` with the largest
        ``lambda_ * rels[i] - (1 - lambda_) * max(similarity(i, j) for j picked)`` (the max is 0
        before the first pick), ties by the smaller index.
    """
    remaining = list(range(len(rels)))
    penalty = [0.0] * len(rels)
    order: list[int] = []
    while remaining:
        best = max(remaining, key=lambda i: (lambda_ * rels[i] - (1.0 - lambda_) * penalty[i], -i))
        remaining.remove(best)
        for i in remaining:
            value = similarity(i, best)
            penalty[i] = value if not order else max(penalty[i], value)
        order.append(best)
    return order


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two unit vectors as search computes a hash cosine: ``1 - |a - b|² / 2``
    (``math.dist`` in double precision), 0 when either is the zero vector."""
    if not any(a) or not any(b):
        return 0.0
    distance = math.dist(a, b)
    return 1.0 - distance * distance / 2.0


def reranked(
    top: list[tuple[float, int]],
    reranker: Reranker,
    *,
    ceiling: float,
    vectors: Callable[[Sequence[int]], list[tuple[float, ...]]],
) -> list[tuple[float, int]]:
    """``top`` (``(score, position)`` in fused order) with its first ``reranker.pool`` entries
    in MMR order and the rest after them, unchanged; scores stay the fused scores.

    Args:
        top: the fused ranking, at least the true top ``pool`` when that many are candidates.
        reranker: the MMR parameters.
        ceiling: the largest score the profile's fusion can give; ``rel = score / ceiling``
            (the score itself when the ceiling is not positive).
        vectors: the vectors of positions in the reranker's space (unit vectors).
    """
    pool, rest = top[: reranker.pool], top[reranker.pool :]
    found = vectors([p for _, p in pool])
    rels = [score / ceiling if ceiling > 0 else score for score, _ in pool]
    order = mmr_order(rels, lambda i, j: cosine(found[i], found[j]), reranker.lambda_)
    return [pool[i] for i in order] + rest
