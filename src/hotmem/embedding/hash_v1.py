"""The ``hotmem-hash-v1`` embedder: deterministic character-trigram hash vectors.

The exact rule is specified in ``docs/embedding.md`` so that another language can reproduce it:

1. Normalise: Unicode NFKC, then ``str.casefold``; every character whose Unicode general
   category does not start with ``L`` (letter), ``M`` (mark) or ``N`` (number) becomes a space;
   runs of spaces collapse to one; leading and trailing spaces are removed.
2. Pad with one space on each side and take every window of three characters (code points),
   with repeats. Text that normalises to the empty string yields the zero vector.
3. Hash each trigram's UTF-8 bytes with BLAKE2b (8-byte digest, no key), read the digest as a
   little-endian unsigned 64-bit integer ``h``. Bucket ``h % 64``; sign ``+1`` when bit 6 of ``h``
   is 0, else ``-1``. Add the sign to the bucket once per occurrence.
4. L2-normalise in double precision, then round each component to IEEE-754 float32.
   Stored little-endian (``<64f``, 256 bytes).

These vectors are lexical fingerprints, not learned semantic embeddings: they are deterministic,
portable and need no model, but they only see shared character sequences.
"""

from __future__ import annotations

import math
import struct
import sys
import unicodedata
from collections.abc import Sequence
from itertools import islice, repeat
from operator import add, itemgetter, mul, sub, truediv

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DIMENSION",
    "DTYPE",
    "HASH_DIGEST",
    "MODEL_NAME",
    "VECTOR_BYTES",
    "bucket_and_sign",
    "embed",
    "embed_bytes",
    "embed_many_bytes",
    "normalise_text",
    "pack_vector",
    "trigrams",
    "unpack_vector",
]

try:  # BLAKE2 is built into CPython: "import hashlib" would load OpenSSL first (5 ms)
    from _blake2 import blake2b as _blake2b
except ImportError:  # another Python
    from hashlib import blake2b as _blake2b

MODEL_NAME = "hotmem-hash-v1"
#: How a stored value is laid out: little-endian IEEE-754 float32 (what packages record).
DTYPE = "float32-le"
#: The digest of what defines the vectors: hotmem-hash-v1 has no file, so the sha256 of its
#: UTF-8 model id (``tests/hotmem/test_embedders.py`` recomputes it).
HASH_DIGEST = "1805ac2d1c5682e30c4e70205918e3a78038d8b2b7f356a2aa75e9980c33f24f"
DIMENSION = 64
VECTOR_BYTES = DIMENSION * 4
_PACK = struct.Struct(f"<{DIMENSION}f")
_SIGN_BIT = 1 << 6


class _SeparatorMap(dict[int, int]):
    """``str.translate`` table: keeps letters, marks and numbers, maps the rest to a space.

    Filled lazily so each code point's category is looked up once per process.
    """

    def __missing__(self, code_point: int) -> int:
        keep = unicodedata.category(chr(code_point))[0] in "LMN"
        # Mapping a code point to itself keeps it (None would delete it).
        value = code_point if keep else 0x20
        self[code_point] = value
        return value


_SEPARATORS = _SeparatorMap()


class _SlotMap(dict[str, int]):
    """trigram -> signed slot: ``bucket`` for sign +1, ``bucket + 64`` for sign -1.

    Filled lazily (one BLAKE2b call per distinct trigram) and cleared when it grows past
    ``_SLOT_CACHE_LIMIT`` entries, so a long-running process stays bounded.
    """

    def __missing__(self, trigram: str) -> int:
        digest = _blake2b(trigram.encode("utf-8"), digest_size=8).digest()
        h = int.from_bytes(digest, "little")
        slot = h % DIMENSION + (DIMENSION if h & _SIGN_BIT else 0)
        if len(self) >= _SLOT_CACHE_LIMIT:
            self.clear()
        self[trigram] = slot
        return slot


_SLOTS = _SlotMap()
_SLOT_CACHE_LIMIT = 1 << 18
_ZERO = (0.0,) * DIMENSION
_ZERO_BYTES = bytes(4 * DIMENSION)


# ASCII text is its own NFKC and casefolds as str.lower(): its letters and digits are kept
# (upper case lowered), every other byte becomes a space, in one bytes.translate.
_ASCII_SEPARATORS = bytes(
    (c | 0x20 if chr(c).isalpha() else c) if chr(c).isalnum() else 0x20 for c in range(128)
) + bytes(128)


def _words(text: str) -> list[str]:
    """The words of ``text`` normalised (step 1 of the rule), without the spaces between them."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_SEPARATORS).decode("ascii").split()
    folded = unicodedata.normalize("NFKC", text).casefold()
    # Every character str.split() takes for whitespace is a separator, mapped to a space
    # (no letter, mark or number is whitespace: tests/hotmem/test_embed.py checks every code
    # point), so split() splits on those spaces alone, and drops the empty parts.
    return folded.translate(_SEPARATORS).split()


def normalise_text(text: str) -> str:
    """Return ``text`` normalised as step 1 of the embedding rule describes."""
    return " ".join(_words(text))


def trigrams(text: str) -> list[str]:
    """Return the character trigrams of ``text`` (after normalisation and padding), in order."""
    normalised = normalise_text(text)
    if not normalised:
        return []
    padded = f" {normalised} "
    return [padded[i : i + 3] for i in range(len(padded) - 2)]


def bucket_and_sign(trigram: str) -> tuple[int, int]:
    """Return the bucket (0..63) and sign (+1 or -1) that ``trigram`` hashes to."""
    slot = _SLOTS[trigram]
    return (slot - DIMENSION, -1) if slot >= DIMENSION else (slot, 1)


# The signed counts of a text's buckets are summed as one integer of 64 fields of
# ``_FIELD_BITS`` bits, field ``b`` holding ``count[b] + 2**15`` (``_BIAS``): a text of fewer
# than 2**15 trigrams cannot overflow a field, so one XOR of the top bits reads the fields back
# as two's-complement int16 (``_FIELDS``).
_FIELD_BITS = 16
_FIELD_LIMIT = 1 << (_FIELD_BITS - 1)
_BIAS = sum(_FIELD_LIMIT << (bucket * _FIELD_BITS) for bucket in range(DIMENSION))
_FIELDS = struct.Struct(f"<{DIMENSION}h")
_FIELDS_BYTES = DIMENSION * _FIELD_BITS // 8


def _slot_field(slot: int) -> int:
    """A signed slot as the integer that adds its sign to its bucket's field."""
    if slot >= DIMENSION:
        return -(1 << ((slot - DIMENSION) * _FIELD_BITS))
    return 1 << (slot * _FIELD_BITS)


# One integer a signed slot, shared by every boundary that hashes to it.
_SLOT_FIELDS = tuple(map(_slot_field, range(2 * DIMENSION)))


class _WordFieldMap(dict[str, int]):
    """word -> the fields of the trigrams of ``" word "``, filled lazily and bounded."""

    def __missing__(self, word: str) -> int:
        padded = f" {word} "
        fields = sum([_SLOT_FIELDS[_SLOTS[padded[i : i + 3]]] for i in range(len(padded) - 2)])
        if len(self) >= _FIELD_CACHE_LIMIT:
            self.clear()
        self[word] = fields
        return fields


class _BoundaryFieldMap(dict[str, int]):
    """``last + first`` (the last letter of a word and the first of the next) -> the field of
    the trigram ``"last first"`` across their space, filled lazily and bounded."""

    def __missing__(self, pair: str) -> int:
        field = _SLOT_FIELDS[_SLOTS[f"{pair[0]} {pair[1]}"]]
        if len(self) >= _SLOT_CACHE_LIMIT:
            self.clear()
        self[pair] = field
        return field


_WORD_FIELDS = _WordFieldMap()
_BOUNDARY_FIELDS = _BoundaryFieldMap()
# An entry holds an integer of 1,024 bits (about 250 bytes with its word): at most about 16 MB.
_FIELD_CACHE_LIMIT = 1 << 16
_first = itemgetter(0)
_last = itemgetter(-1)


def _fields(words: list[str]) -> int | None:
    """The signed counts of the trigrams of ``words`` as 64 two's-complement int16 fields
    (``_FIELDS``), or ``None`` for a text of 2**15 trigrams or more, which could overflow one.

    The trigrams of ``" w1 w2 ... "`` are those of each ``" w "`` and one ``"x y"`` a word
    boundary (last letter, space, first letter): caching both keeps slicing off the hot path.
    """
    if len(words) + sum(map(len, words)) > _FIELD_LIMIT:  # as many trigrams (plus one)
        return None
    fields = sum(map(_WORD_FIELDS.__getitem__, words), _BIAS)
    if len(words) > 1:
        pairs = map(add, map(_last, words), map(_first, islice(words, 1, None)))
        fields = sum(map(_BOUNDARY_FIELDS.__getitem__, pairs), fields)
    return fields ^ _BIAS


def _counts(text: str) -> tuple[Sequence[int], float] | None:
    """The signed count of each bucket of ``text``'s trigrams and their L2 norm (``None`` for
    the zero vector): the vector is ``count / norm`` each, rounded to float32."""
    words = _words(text)
    if not words:
        return None
    fields = _fields(words)
    if fields is None:
        counts: Sequence[int] = _counted_one_by_one(words)
    else:
        counts = _FIELDS.unpack(fields.to_bytes(_FIELDS_BYTES, "little"))
    squared = sum(map(mul, counts, counts))
    if not squared:
        return None
    return counts, math.sqrt(squared)


def _counted_one_by_one(words: list[str]) -> list[int]:
    """The signed counts of a text too long for the fields (2**15 trigrams or more)."""
    padded = f" {' '.join(words)} "
    signed = [0] * (2 * DIMENSION)
    for i in range(len(padded) - 2):
        signed[_SLOTS[padded[i : i + 3]]] += 1
    return list(map(sub, signed[:DIMENSION], signed[DIMENSION:]))


def embed(text: str) -> tuple[float, ...]:
    """Embed ``text`` with ``hotmem-hash-v1``.

    Returns:
        64 floats, each exactly representable as float32, with L2 norm 1 (within float32
        rounding), or 64 zeros when the text has no letters, marks or numbers.
    """
    packed = embed_bytes(text)
    # Rounded through float32, so the in-memory vector equals the stored one bit for bit.
    return _ZERO if packed is _ZERO_BYTES else _PACK.unpack(packed)


def pack_vector(vector: tuple[float, ...] | list[float]) -> bytes:
    """Pack a vector as 64 little-endian float32 values (256 bytes)."""
    return _PACK.pack(*vector)


def unpack_vector(blob: bytes) -> tuple[float, ...]:
    """Unpack 256 bytes of little-endian float32 values into a tuple of floats."""
    return _PACK.unpack(blob)


def embed_bytes(text: str) -> bytes:
    """Embed ``text`` and return the packed little-endian float32 vector (each ``count /
    norm`` in double precision, rounded to float32 by the packing)."""
    counted = _counts(text)
    if counted is None:
        return _ZERO_BYTES
    counts, norm = counted
    return _PACK.pack(*map(truediv, counts, repeat(norm)))


def embed_many_bytes(texts: Sequence[str]) -> list[bytes]:
    """``embed_bytes`` of each text, in order. Once numpy (the ``fast`` extra) is imported in
    the process, the batch's counts are normalised at once: the same bytes, bit for bit
    (``tests/hotmem/test_embed.py`` proves it over random texts); otherwise :func:`embed_bytes`
    one text at a time. numpy is never imported for this: its import costs about 20 MB of
    memory and what its batch embedding saves on tens of thousands of facts."""
    numpy = sys.modules.get("numpy")
    if texts and numpy is not None:
        return _embed_many_numpy(texts, numpy)
    return list(map(embed_bytes, texts))


# The numpy path finishes this many texts at a time (under a megabyte of arrays, whatever the
# batch).
_GROUP_TEXTS = 1024
_ZERO_FIELDS = bytes(_FIELDS_BYTES)


def _embed_many_numpy(texts: Sequence[str], np: Any) -> list[bytes]:
    """:func:`embed` of a batch, with numpy for the arithmetic.

    Each text's counts are summed as :func:`embed_bytes` sums them (``_fields``), a group of
    texts at a time, then squared, summed, rooted and divided at once (``_finished``); a text
    too long for the fields is embedded on its own."""
    vectors: list[bytes] = []
    for start in range(0, len(texts), _GROUP_TEXTS):
        group = texts[start : start + _GROUP_TEXTS]
        fields: list[bytes] = []
        alone: list[int] = []
        for position, text in enumerate(group):
            words = _words(text)
            counted = _fields(words) if words else 0
            if counted is None:
                alone.append(position)
                counted = 0
            fields.append(counted.to_bytes(_FIELDS_BYTES, "little") if counted else _ZERO_FIELDS)
        finished = _finished(b"".join(fields), np)
        for position in alone:
            finished[position] = embed_bytes(group[position])
        vectors += finished
    return vectors


def _finished(fields: bytes, np: Any) -> list[bytes]:
    """The packed vectors of a group of texts, from their int16 fields.

    :func:`embed`'s arithmetic on the same values: integer counts and sums of squares (exact),
    one correctly rounded square root and division in double precision, then one rounding to
    float32 (``astype``, as ``embed_bytes``' packing), so every vector has the same bits."""
    counts = np.frombuffer(fields, dtype="<i2").reshape(-1, DIMENSION).astype(np.int64)
    squared = (counts * counts).sum(axis=1)
    norms = np.sqrt(squared.astype(np.float64))
    norms[squared == 0] = 1.0  # the zero vector: 0 / 1 is 0.0, as _ZERO
    vectors = (counts / norms[:, None]).astype("<f4").tobytes()
    return [vectors[i : i + VECTOR_BYTES] for i in range(0, len(vectors), VECTOR_BYTES)]
