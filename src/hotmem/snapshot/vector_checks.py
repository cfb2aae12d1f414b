"""Checking the vectors of a package: finite float32 values of unit length
(``hotmem.embedding.vectors``, the rule every reader of a vector applies), and that they are
the embeddings of their facts (``hotmem-hash-v1``'s on every hydration, every space's on
request).

``hotmem-hash-v1`` is computed the same way on every machine, so its vectors must match bit for
bit. A model's vectors can differ in the last bits between CPUs (their float rounding), so a
vector of a further space that is not bit for bit the recomputed one must still lie within
``MODEL_COSINE`` of it: a forged vector (another text's embedding) is far outside that.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence

from hotmem.embedding.vectors import NORM_TOLERANCE, first_not_unit, floats, vector_breach

__all__ = [
    "MODEL_COSINE",
    "SAMPLE_STRIDE",
    "UNIT_EXPECTED",
    "EmbedMany",
    "VectorScan",
    "mismatches",
    "not_unit",
    "recomputed_problems",
]

#: Embeds a chunk's facts into one space: one packed vector a fact, in order.
EmbedMany = Callable[[Sequence[str]], list[bytes]]

#: A hydration without ``recompute_vectors`` recomputes a carried model space's vectors for
#: every ``SAMPLE_STRIDE``-th record of each chunk, its first included (when this HotMem has the
#: model's extra): a deterministic sample of 1 in 64.
SAMPLE_STRIDE = 64

#: The least cosine between a carried model vector and the one this HotMem computes.
MODEL_COSINE = 0.999


#: What a vector must be, as a problem says it.
UNIT_EXPECTED = f"finite float32 values of unit length (norm within {NORM_TOLERANCE:g} of 1, or 0)"


def not_unit(vectors: bytes, width: int, first: int = 1) -> str:
    """The first vector of ``vectors`` that is not finite and of unit length, as a problem's
    ``found`` says it ("nan among its values in vector 3"); empty when every one is sound.
    ``first`` is the (1-based) number of the first vector of ``vectors`` in its member."""
    bad = first_not_unit(vectors, width)
    if bad is None:
        return ""
    return f"{vector_breach(vectors[bad * width : (bad + 1) * width])} in vector {first + bad}"


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
        if _cosine(floats(expected[window]), floats(found[window])) < MODEL_COSINE:
            far.append(position)
    return far


class VectorScan:
    """Checks a vectors member, vector by vector as its blocks stream in (cut anywhere), for
    finite values of unit length (``not_unit``).

    ``bad`` names the first vector of ``width`` bytes that is not (``not_unit``), or is empty;
    ``kept()`` is the member's bytes when ``keep``, else ``b""``.
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
        cut = len(aligned) - len(aligned) % self._width if self._width > 0 else 0
        if not self.bad and cut:
            self.bad = not_unit(aligned[:cut], self._width, self._read // self._width + 1)
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
    strides: Sequence[int] | None = None,
) -> list[tuple[str, str, str, str]]:
    """``(location, check, expected, found)`` for each vector of a chunk that is not its fact's
    embedding.

    ``embedders`` and ``carried`` hold, for ``hotmem-hash-v1`` and then each further space in
    order, ``(model id, embed_many)`` (``None``: leave that space) and the chunk's vectors;
    ``strides`` (every vector by default) how many records apart the vectors recomputed in
    each are, from the chunk's first. Hash vectors must match bit for bit, a model's within
    ``MODEL_COSINE``.
    """
    problems = []
    for position, (embedder, found) in enumerate(zip(embedders, carried, strict=True)):
        if embedder is None:
            continue
        model_id, embed_many = embedder
        chosen = range(0, len(facts), 1 if strides is None else strides[position])
        expected = b"".join(embed_many([facts[i] for i in chosen]))
        width = len(expected) // max(1, len(chosen))
        if chosen.step != 1:
            found = b"".join(found[i * width : (i + 1) * width] for i in chosen)
        for sampled in mismatches(expected, found, width, exact=position == 0):
            index = chosen[sampled]
            found_text = f"another vector for memory_id={memory_ids[index]!r}"
            problems.append(
                (f"{chunk}:{index + 1}", "vector", f"the {model_id} vector", found_text)
            )
    return problems
