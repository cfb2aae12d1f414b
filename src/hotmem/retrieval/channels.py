"""A profile's two retrieval channels as values: the cosine channel and the BM25 channel.

``VectorChannel`` names a vector space, its weight in weighted fusion and its relevance floor;
``LexicalChannel`` the BM25 channel's weight and an optional cosine gate on lexical matches
(``profiles.py`` puts them together; ``docs/profiles.md`` explains each field).
"""

from __future__ import annotations

import math

from hotmem.embedding.hash_v1 import MODEL_NAME
from hotmem.errors import ValidationError
from hotmem.fields import shown
from hotmem.records import record
from hotmem.retrieval.fusion import MIN_SIMILARITY, WEIGHTS
from hotmem.store.spaces import SPACE_NAME

__all__ = ["MAX_WEIGHT", "LexicalChannel", "VectorChannel", "checked_integer", "checked_number"]

MAX_WEIGHT = 1e6


def checked_number(name: str, value: object, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(f"{name} must be a finite number; found {name}={value!r}")
    if not low <= value <= high:
        raise ValidationError(f"{name} must be in [{low:g}, {high:g}]; found {name}={value!r}")
    return float(value)


def checked_integer(name: str, value: object, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise ValidationError(f"{name} must be an integer in 1..{high}; found {name}={value!r}")
    return value


@record
class VectorChannel:
    """The cosine channel: a vector space, its weight and its relevance floor."""

    space: str = MODEL_NAME
    weight: float = WEIGHTS.cosine
    floor: float = MIN_SIMILARITY

    def __post_init__(self) -> None:
        if not isinstance(self.space, str) or not self.space:
            raise ValidationError(f"vector.space must be a model id; found {self.space!r}")
        if not SPACE_NAME.fullmatch(self.space):
            raise ValidationError(
                f"vector.space must be a model id ({SPACE_NAME.pattern}); found {shown(self.space)}"
            )
        object.__setattr__(
            self, "weight", checked_number("vector.weight", self.weight, 0, MAX_WEIGHT)
        )
        object.__setattr__(self, "floor", checked_number("vector.floor", self.floor, -1.0, 1.0))

    def to_dict(self) -> dict[str, object]:
        """The channel as JSON-ready data."""
        return {"space": self.space, "weight": self.weight, "floor": self.floor}


@record
class LexicalChannel:
    """The BM25 channel: its weight and an optional cosine gate on lexical matches."""

    weight: float = WEIGHTS.bm25
    gate: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "weight", checked_number("lexical.weight", self.weight, 0, MAX_WEIGHT)
        )
        if self.gate is not None:
            object.__setattr__(self, "gate", checked_number("lexical.gate", self.gate, -1.0, 1.0))

    def to_dict(self) -> dict[str, object]:
        """The channel as JSON-ready data."""
        return {"weight": self.weight, "gate": self.gate}
