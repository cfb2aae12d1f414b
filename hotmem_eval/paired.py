"""Paired statistics over per-query differences: sign-flip test, bootstrap CI, Holm adjustment.

Pure functions of a sequence of differences (candidate minus baseline, one per paired query, in
``query_id`` order), with no I/O. Every result is a function of its inputs alone, the same bits
on every platform:

- Random numbers come from ``random_words``: SplitMix64 (Steele, Lea and Flood, 2014) written
  as integer numpy operations, counter-based, so word ``i`` of a seed is
  ``mix(seed + (i + 1) * 0x9E3779B97F4A7C15 mod 2**64)`` whatever was drawn before. It does not
  depend on numpy's generators, whose streams numpy guarantees only within one build.
- Every test starts from its own fixed seed (``SIGN_FLIP_SEED``, ``BOOTSTRAP_SEED``), so a
  comparison's p-value and interval depend on its own differences only, not on what else ran.
- Sums are float additions in a fixed order (no BLAS, no reduction whose order numpy may
  change): left to right, except that the Monte-Carlo test adds partial sums of eight
  differences left to right; means of whole samples are ``math.fsum`` (correctly rounded).

A difference is **zero** when ``abs(d) <= TOLERANCE``: a tie. Ties carry no sign information and
are left out of the sign-flip test (not of the bootstrap, which resamples every pair).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from hotmem_eval.errors import EvalError

__all__ = [
    "BOOTSTRAP_SEED",
    "CONFIDENCE",
    "EXACT_LIMIT",
    "PERMUTATIONS",
    "RESAMPLES",
    "SIGN_FLIP_SEED",
    "TOLERANCE",
    "Method",
    "SignFlip",
    "bootstrap_ci",
    "holm_adjust",
    "mean",
    "nonzero_differences",
    "random_words",
    "sign_flip_test",
]

#: ``exact``: every one of the 2^n sign assignments was counted. ``monte-carlo``:
#: ``PERMUTATIONS`` random assignments were, and the p-value carries the +1 correction.
Method = Literal["exact", "monte-carlo"]

#: Differences (and sums) closer than this are equal.
TOLERANCE: Final = 1e-12
#: The exact test is used up to this many non-zero differences (2^20 assignments).
EXACT_LIMIT: Final = 20
#: Random sign assignments of the Monte-Carlo test.
PERMUTATIONS: Final = 100_000
#: Bootstrap resamples of the confidence interval.
RESAMPLES: Final = 10_000
#: The confidence level of the bootstrap interval.
CONFIDENCE: Final = 0.95
#: The SplitMix64 seeds of the two procedures (arbitrary, fixed: changing one changes results).
SIGN_FLIP_SEED: Final = 0x5163_4E5F_F11B
BOOTSTRAP_SEED: Final = 0xB007_5754_A9

_GOLDEN: Final = np.uint64(0x9E3779B97F4A7C15)
_MIX1: Final = np.uint64(0xBF58476D1CE4E5B9)
_MIX2: Final = np.uint64(0x94D049BB133111EB)
_WORD_MASK: Final = (1 << 64) - 1
#: Words drawn per block of the Monte-Carlo test and the bootstrap, to bound memory.
_BLOCK_WORDS: Final = 1 << 20

Floats = npt.NDArray[np.float64]
Words = npt.NDArray[np.uint64]


@dataclass(frozen=True, slots=True)
class SignFlip:
    """The result of ``sign_flip_test``.

    Attributes:
        p_value: the two-sided p-value, in (0, 1].
        method: ``"exact"`` or ``"monte-carlo"`` (see ``Method``).
        nonzero: how many differences were non-zero (the n of 2^n).
    """

    p_value: float
    method: Method
    nonzero: int


def random_words(seed: int, start: int, count: int) -> Words:
    """Words ``start .. start + count - 1`` of the SplitMix64 stream of ``seed``, as uint64.

    Raises:
        EvalError: ``seed`` is not in 0..2^64 - 1, or ``start`` or ``count`` is negative.
    """
    if not 0 <= seed <= _WORD_MASK or start < 0 or count < 0:
        raise EvalError(
            f"expected a seed in 0..2**64-1 and start, count >= 0, "
            f"found seed={seed!r}, start={start!r}, count={count!r}"
        )
    # Array arithmetic on uint64 wraps modulo 2^64 (numpy warns only on scalar overflow).
    counter = np.arange(count, dtype=np.uint64)
    counter += np.uint64((start + 1) & _WORD_MASK)
    z = counter * _GOLDEN
    z += np.uint64(seed)
    z ^= z >> np.uint64(30)
    z *= _MIX1
    z ^= z >> np.uint64(27)
    z *= _MIX2
    z ^= z >> np.uint64(31)
    return z


def nonzero_differences(differences: Sequence[float]) -> Floats:
    """The differences with ``abs(d) > TOLERANCE``, in their order, as float64.

    Raises:
        EvalError: a difference is not a finite number.
    """
    values = np.asarray(differences, dtype=np.float64)
    if values.ndim != 1 or not np.isfinite(values).all():
        raise EvalError(f"expected a sequence of finite differences, found {differences!r:.80}")
    return values[np.abs(values) > TOLERANCE]


def sign_flip_test(differences: Sequence[float]) -> SignFlip:
    """Two-sided paired randomization (sign-flip) test of a zero mean difference.

    Under the null hypothesis each query's two values are exchangeable, so each non-zero
    difference d_i is as likely to have had the other sign. The statistic is |sum_i d_i|.

    - ``exact`` (n <= ``EXACT_LIMIT`` non-zero differences): p = share of the 2^n sign
      assignments s with |sum_i s_i d_i| >= |sum_i d_i| - ``TOLERANCE``. The observed
      assignment counts, so p >= 2 / 2^n (an assignment and its opposite have equal |sum|).
    - ``monte-carlo`` (n > ``EXACT_LIMIT``): ``PERMUTATIONS`` assignments drawn from
      ``random_words(SIGN_FLIP_SEED, ...)``: assignment a takes the W = ceil(n / 64) words
      a * W .. a * W + W - 1, and d_i keeps its sign where bit (i mod 64) of word a * W + i // 64
      is 1. p = (hits + 1) / (``PERMUTATIONS`` + 1).

    With no non-zero difference, p = 1 (``exact``: the one empty assignment).

    Raises:
        EvalError: a difference is not a finite number.
    """
    values = nonzero_differences(differences)
    n = len(values)
    observed = abs(_sequential_sum(values))
    threshold = observed - TOLERANCE
    if n <= EXACT_LIMIT:
        return SignFlip(_exact_p(values, threshold), "exact", n)
    hits = _monte_carlo_hits(values, threshold)
    return SignFlip((hits + 1) / (PERMUTATIONS + 1), "monte-carlo", n)


def _sequential_sum(values: Floats) -> float:
    total = 0.0
    for value in values.tolist():
        total += value
    return total


def _exact_p(values: Floats, threshold: float) -> float:
    """The exact p-value, by enumerating the sums of every assignment.

    Sums are built by doubling (sums of the first i differences, then each with +d and -d), so
    each is a left-to-right sum, bit for bit what a brute-force loop computes. The first sign is
    fixed to +: the opposite assignment's sum is the exact negation (IEEE rounding is symmetric),
    so half the assignments give the count.
    """
    n = len(values)
    if n == 0:
        return 1.0
    sums = values[:1].copy()
    for value in values[1:]:
        sums = np.concatenate((sums + value, sums - value))
    hits = int(np.count_nonzero(np.abs(sums) >= threshold))
    return hits / (1 << (n - 1))


def _monte_carlo_hits(values: Floats, threshold: float) -> int:
    """How many of the ``PERMUTATIONS`` random assignments reach the observed |sum|.

    The differences are taken eight at a time: a table of the 256 sums of eight signed
    differences is indexed by one byte of an assignment's words, and the tables' entries are
    added up block by block (each table entry a left-to-right sum).
    """
    n = len(values)
    words_per = -(-n // 64)
    tables = [_byte_table(values[i : i + 8]) for i in range(0, n, 8)]
    per_block = max(1, _BLOCK_WORDS // words_per)
    hits = 0
    for first in range(0, PERMUTATIONS, per_block):
        count = min(per_block, PERMUTATIONS - first)
        words = _sign_words(words_per, first, count)
        sums = np.zeros(count, dtype=np.float64)
        for block, table in enumerate(tables):
            word, byte = divmod(block, 8)
            index = (words[:, word] >> np.uint64(8 * byte)) & np.uint64(0xFF)
            sums += table[index]
        hits += int(np.count_nonzero(np.abs(sums) >= threshold))
    return hits


@functools.lru_cache(maxsize=4)
def _sign_words(words_per: int, first: int, count: int) -> Words:
    """The words of assignments ``first .. first + count - 1``, one row each, read-only.

    Cached: every test with the same number of words per assignment draws the same ones.
    """
    words = random_words(SIGN_FLIP_SEED, first * words_per, count * words_per)
    words = words.reshape(count, words_per)
    words.setflags(write=False)
    return words


def _byte_table(values: Floats) -> Floats:
    """Entry b: the sum of values[j] * (+1 if bit j of b is set else -1), left to right.

    For fewer than eight values the unused high bits change nothing.
    """
    codes = np.arange(256, dtype=np.uint64)
    table = np.zeros(256, dtype=np.float64)
    for j, value in enumerate(values.tolist()):
        keep = ((codes >> np.uint64(j)) & np.uint64(1)).astype(bool)
        table += np.where(keep, value, -value)
    return table


def bootstrap_ci(differences: Sequence[float]) -> tuple[float, float]:
    """The 95% percentile bootstrap interval of the mean difference.

    ``RESAMPLES`` resamples of the n differences, drawn with replacement: draw j of resample r
    is index floor(u * n / 2^32), where u is 32-bit half number r * n + j of
    ``random_words(BOOTSTRAP_SEED, ...)`` (the low half of a word first). A resample's mean is
    its left-to-right sum divided by n. The interval is the (B + 1) * 0.025-th and
    (B + 1) * 0.975-th smallest of the B = ``RESAMPLES`` means (the 250th and 9,751st;
    Davison and Hinkley 1997, 5.3), so negating every difference negates the interval exactly.
    The index draw is biased by less than n / 2^32 (about 2e-8 for a hundred queries).

    Raises:
        EvalError: no difference, more than 2^32 of them, or one is not a finite number.
    """
    values = np.asarray(differences, dtype=np.float64)
    n = values.size
    if values.ndim != 1 or n == 0 or n >= 1 << 32 or not np.isfinite(values).all():
        raise EvalError(
            f"expected 1 to 2**32-1 finite differences, found {n} ({differences!r:.80})"
        )
    if (values == values[0]).all():
        # Every resample is the sample itself: the general path gives this mean 10,000 times.
        only = _sequential_sum(values) / n
        return only, only
    means = np.concatenate(_resample_means(values))
    means.sort()
    rank = int((RESAMPLES + 1) * (1 - CONFIDENCE) / 2)
    return float(means[rank - 1]), float(means[RESAMPLES - rank])


def _resample_means(values: Floats) -> list[Floats]:
    n = len(values)
    per_block = max(1, _BLOCK_WORDS // n)
    blocks = []
    for first in range(0, RESAMPLES, per_block):
        count = min(per_block, RESAMPLES - first)
        drawn = values[_draw_index(n, first, count)]
        sums = np.zeros(count, dtype=np.float64)
        for column in drawn:
            sums += column
        blocks.append(sums / n)
    return blocks


@functools.lru_cache(maxsize=16)
def _draw_index(n: int, first: int, count: int) -> npt.NDArray[np.signedinteger[Any]]:
    """The draws of resamples ``first .. first + count - 1`` of n, one row per draw position.

    Transposed (n x count), so each draw position is one contiguous gather. Read-only and
    cached: every comparison of n queries draws the same indices. A block holds at most
    ``_BLOCK_WORDS`` indices (4 MiB as int32, below 2^31 queries), and the 16 kept hold every
    block of up to 1,677 queries (a comparison of 1,000 queries has 10: with 8 kept, each
    comparison drew them all again).
    """
    halves = _halves(first * n, count * n)
    drawn = (halves * np.uint64(n)) >> np.uint64(32)
    index: npt.NDArray[np.signedinteger[Any]] = (
        drawn.astype(np.int32) if n < 1 << 31 else drawn.astype(np.int64)
    )
    index = np.ascontiguousarray(index.reshape(count, n).T)
    index.setflags(write=False)
    return index


def _halves(start: int, count: int) -> Words:
    """32-bit halves ``start .. start + count - 1`` of the bootstrap stream, as uint64."""
    first_word = start // 2
    words = random_words(BOOTSTRAP_SEED, first_word, (start + count + 1) // 2 - first_word)
    # As little-endian bytes the low half of each word comes first, on any machine.
    halves = words.astype("<u8", copy=False).view("<u4")
    offset = start - 2 * first_word
    return halves[offset : offset + count].astype(np.uint64)


def holm_adjust(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values of one family, in the order given.

    With the m non-null p-values sorted ascending, p_(1) <= ... <= p_(m) (ties in input order),
    adjusted p_(i) = min(1, max over j <= i of (m - j + 1) * p_(j)). A null stays null and is
    not counted in m. Rejecting where the adjusted p <= alpha controls the family-wise error
    rate at alpha.

    Raises:
        EvalError: a p-value is outside [0, 1] or not a number.
    """
    for p in p_values:
        if p is not None and not (isinstance(p, (int, float)) and 0.0 <= p <= 1.0):
            raise EvalError(f"expected p-values in [0, 1] or None, found p={p!r}")
    present = sorted((float(p), i) for i, p in enumerate(p_values) if p is not None)
    m = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for position, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - position) * p))
        adjusted[i] = running
    return adjusted


def mean(values: Sequence[float]) -> float:
    """The correctly rounded mean (``math.fsum``), independent of the order of ``values``.

    Raises:
        EvalError: ``values`` is empty.
    """
    if not values:
        raise EvalError("expected at least one value to average, found none")
    return math.fsum(values) / len(values)
