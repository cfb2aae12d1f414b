"""Checking the vectors of a package: finite float32 values, and (on request) that they are
the embeddings of their facts.

``hotmem-hash-v1`` is computed the same way on every machine, so its vectors must match bit for
bit. A model's vectors can differ in the last bits between CPUs (their float rounding), so a
vector of a further space that is not bit for bit the recomputed one must still lie within
``MODEL_COSINE`` of it: a forged vector (another text's embedding) is far outside that.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Callable, Sequence

__all__ = [
    "MODEL_COSINE",
    "EmbedMany",
    "FiniteScan",
    "all_finite",
    "first_non_finite",
    "mismatches",
    "recomputed_problems",
]

#: Embeds a chunk's facts into one space: one packed vector a fact, in order.
EmbedMany = Callable[[Sequence[str]], list[bytes]]

#: The least cosine between a carried model vector and the one this HotMem computes.
MODEL_COSINE = 0.999


def _floats(vectors: bytes) -> array[float]:
    values = array("f")
    values.frombytes(vectors)
    if sys.byteorder == "big":
        values.byteswap()
    return values


def all_finite(vectors: bytes) -> bool:
    """Whether every little-endian float32 is finite, without a Python loop per value.

    A NaN or infinity has all eight exponent bits set, so its high byte is 0x7F or 0xFF. Only
    when such a byte occurs (in finite values, from magnitude 2**127 on) is each value tested.
    """
    high = vectors[3::4]
    if b"\x7f" not in high and b"\xff" not in high:
        return True
    return all(map(math.isfinite, _floats(vectors)))


def first_non_finite(vectors: bytes, width: int) -> str:
    """The first NaN or infinity of ``vectors`` and the (1-based) vector holding it."""
    values = _floats(vectors)
    position = next(i for i, value in enumerate(values) if not math.isfinite(value))
    return f"{values[position]} in vector {position // (width // 4) + 1}"


def _cosine(left: array[float], right: array[float]) -> float:
    dot = math.fsum(map(float.__mul__, left, right))
    norms = math.sqrt(math.fsum(x * x for x in left) * math.fsum(y * y for y in right))
    return dot / norms if norms else (1.0 if left == right else 0.0)


def mismatches(expected: bytes, found: bytes, width: int, *, exact: bool) -> list[int]:
    """0-based positions of the vectors of ``found`` that are not those of ``expected``.

    Both hold vectors of ``width`` bytes in the same order. With ``exact`` a vector must match
    bit for bit; otherwise within a cosine of ``MODEL_COSINE``.
    """
    if expected == found:
        return []
    count = len(expected) // width
    differing = [
        position
        for position in range(count)
        if expected[position * width : (position + 1) * width]
        != found[position * width : (position + 1) * width]
    ]
    if exact:
        return differing
    far = []
    for position in differing:
        window = slice(position * width, (position + 1) * width)
        if _cosine(_floats(expected[window]), _floats(found[window])) < MODEL_COSINE:
            far.append(position)
    return far


class FiniteScan:
    """Checks a vectors member for NaN and infinity as its blocks stream in (cut anywhere).

    ``bad`` names the first non-finite value and the (1-based) vector of ``width`` bytes that
    holds it, or is empty; ``kept()`` is the member's bytes when ``keep``, else ``b""``.
    """

    __slots__ = ("_blocks", "_keep", "_read", "_tail", "_width", "bad")

    def __init__(self, width: int, *, keep: bool) -> None:
        self._width, self._keep = width, keep
        self._blocks: list[bytes] = []
        self._tail, self._read, self.bad = b"", 0, ""

    def feed(self, block: bytes) -> None:
        """Take the next bytes of the member."""
        if self._keep:
            self._blocks.append(block)
        aligned = self._tail + block
        cut = len(aligned) - len(aligned) % 4
        if not self.bad and not all_finite(aligned[:cut]):
            value, number = first_non_finite(aligned[:cut], 4).split(" in vector ")
            position = self._read // 4 + int(number) - 1  # of the value, 0-based
            self.bad = f"{value} in vector {position // (self._width // 4) + 1}"
        self._read += cut
        self._tail = aligned[cut:]

    def kept(self) -> bytes:
        """The member's bytes (``b""`` unless ``keep``)."""
        return b"".join(self._blocks)


def recomputed_problems(
    chunk: str,
    memory_ids: Sequence[str],
    facts: Sequence[str],
    embedders: Sequence[tuple[str, EmbedMany] | None],
    carried: Sequence[bytes],
) -> list[tuple[str, str, str, str]]:
    """``(location, check, expected, found)`` for each vector of a chunk that is not its fact's
    embedding.

    ``embedders`` and ``carried`` hold, for ``hotmem-hash-v1`` and then each further space in
    order, ``(model id, embed_many)`` (``None``: leave that space) and the chunk's vectors.
    Hash vectors must match bit for bit, a model's within ``MODEL_COSINE``.
    """
    problems = []
    for position, (embedder, found) in enumerate(zip(embedders, carried, strict=True)):
        if embedder is None:
            continue
        model_id, embed_many = embedder
        expected = b"".join(embed_many(facts))
        width = len(expected) // max(1, len(facts))
        for index in mismatches(expected, found, width, exact=position == 0):
            found_text = f"another vector for memory_id={memory_ids[index]!r}"
            problems.append(
                (f"{chunk}:{index + 1}", "vector", f"the {model_id} vector", found_text)
            )
    return problems
