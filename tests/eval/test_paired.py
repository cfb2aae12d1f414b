"""The paired statistics: the random stream, the sign-flip test, the bootstrap CI, Holm.

Each is held to a plain reference written here (SplitMix64 in Python integers, a brute-force
enumeration of the sign assignments, Holm's step-down procedure), with exact values where they
are known by hand.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from hotmem_eval import paired
from hotmem_eval.errors import EvalError
from hotmem_eval.paired import (
    PERMUTATIONS,
    TOLERANCE,
    SignFlip,
    bootstrap_ci,
    holm_adjust,
    mean,
    random_words,
    sign_flip_test,
)

MASK = (1 << 64) - 1


def splitmix64(seed: int, index: int) -> int:
    """Word ``index`` of SplitMix64 seeded with ``seed``, in Python integers."""
    z = (seed + (index + 1) * 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def brute_force_p(differences: list[float]) -> float:
    """Share of all 2^n sign assignments of the non-zero differences with |sum| >= |observed|.

    Sums run left to right, as the definition reads.
    """
    values = [d for d in differences if abs(d) > TOLERANCE]
    observed = 0.0
    for value in values:
        observed += value
    hits = 0
    for signs in itertools.product((1.0, -1.0), repeat=len(values)):
        total = 0.0
        for sign, value in zip(signs, values, strict=True):
            total += sign * value
        hits += abs(total) >= abs(observed) - TOLERANCE
    return hits / 2 ** len(values)


# Metric-like values: per-query differences of recall, MRR and nDCG are mostly small fractions.
FRACTIONS = [0.0, 1.0, -1.0, 0.5, -0.5, 1 / 3, -1 / 3, 0.25, -2 / 3, 0.2, 1 / 6, -0.1]
values = st.one_of(
    st.sampled_from(FRACTIONS),
    st.floats(min_value=-1.0, max_value=1.0, allow_nan=False, allow_subnormal=False),
)


# --- the random stream -------------------------------------------------------------------


def test_random_words_are_splitmix64_reference_outputs() -> None:
    # The published SplitMix64 outputs for seed 1234567, and the first for seed 0.
    assert random_words(1234567, 0, 5).tolist() == [
        6457827717110365317,
        3203168211198807973,
        9817491932198370423,
        4593380528125082431,
        16408922859458223821,
    ]
    assert random_words(0, 0, 2).tolist() == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4]


@given(
    seed=st.integers(0, MASK),
    start=st.integers(0, 2**40),
    count=st.integers(0, 40),
)
@example(seed=MASK, start=0, count=3)
@example(seed=0, start=0, count=0)
def test_random_words_match_python_splitmix64(seed: int, start: int, count: int) -> None:
    words = random_words(seed, start, count)
    assert words.dtype == np.uint64
    assert words.tolist() == [splitmix64(seed, start + i) for i in range(count)]


@pytest.mark.parametrize(("seed", "start", "count"), [(-1, 0, 1), (1 << 64, 0, 1), (0, -1, 1)])
def test_random_words_refuse_bad_arguments(seed: int, start: int, count: int) -> None:
    with pytest.raises(EvalError, match=r"expected a seed in 0\.\.2\*\*64-1"):
        random_words(seed, start, count)


# --- the sign-flip test ------------------------------------------------------------------

# (id, differences, exact p worked out by hand)
EXACT_CASES = [
    ("no_differences", [], 1.0),
    ("all_ties", [0.0, 0.0, 1e-13, -1e-13], 1.0),
    ("one_query", [0.5], 1.0),
    ("two_opposite", [1.0, -1.0], 1.0),
    # |±1 ±2 ±3| reaches 6 only for (+,+,+) and (-,-,-): 2 of 8.
    ("one_two_three", [1.0, 2.0, 3.0], 0.25),
    # Five losses of one query each: only all-equal signs reach 5, 2 of 32 = 2 / 2^5.
    ("five_equal", [-1.0, -1.0, -1.0, -1.0, -1.0], 2 / 32),
    # Sums of four ±0.5 with observed 1.0: |sum| in {0, 1, 2} with counts 6, 8, 2 of 16.
    ("halves", [0.5, 0.5, 0.5, -0.5], 10 / 16),
    # The observed sum 0 is reached by every assignment.
    ("cancelling", [1.0, 1.0, -2.0], 1.0),
    # Zeros are left out: the same as [1.0, 1.0, 1.0], 2 of 8.
    ("zeros_dropped", [1.0, 0.0, 1.0, 0.0, 1.0], 0.25),
    # |±0.1 ±0.2 ±0.1| is 0.4 twice, 0.2 four times, 0 twice; the observed 0.1 + 0.2 - 0.1
    # is 0.20000000000000004 in floats, and the tolerance keeps its four ties: 6 of 8.
    ("float_tie", [0.1, 0.2, -0.1], 6 / 8),
]


@pytest.mark.parametrize(
    ("differences", "expected"),
    [case[1:] for case in EXACT_CASES],
    ids=[case[0] for case in EXACT_CASES],
)
def test_exact_p_by_hand(differences: list[float], expected: float) -> None:
    result = sign_flip_test(differences)
    assert result.method == "exact"
    assert result.p_value == expected
    assert result.nonzero == sum(1 for d in differences if abs(d) > TOLERANCE)
    assert brute_force_p(differences) == expected


def test_the_tolerance_keeps_a_tie_that_rounding_breaks() -> None:
    # Without the tolerance the float_tie case loses assignments to the last bit.
    values = [0.1, 0.2, -0.1]
    observed = 0.1 + 0.2 - 0.1
    strict = sum(
        abs(sum(s * v for s, v in zip(signs, values, strict=True))) >= abs(observed)
        for signs in itertools.product((1.0, -1.0), repeat=3)
    )
    assert strict == 4
    assert sign_flip_test(values).p_value == 6 / 8


@given(st.lists(values, max_size=12))
@example([])
@example([0.0])
@example([0.0] * 12)
@example([0.25])
@example([1 / 3] * 12)
@example([1.0, -1.0] * 6)
def test_exact_p_equals_brute_force(differences: list[float]) -> None:
    result = sign_flip_test(differences)
    assert result == SignFlip(brute_force_p(differences), "exact", result.nonzero)


def test_smallest_exact_p_is_two_over_two_to_the_n() -> None:
    for n in range(1, 21):
        assert sign_flip_test([1.0] * n).p_value == 2 / 2**n
    assert sign_flip_test([1.0] * 20).method == "exact"
    assert sign_flip_test([1.0] * 20 + [0.0] * 30).method == "exact"


def test_monte_carlo_past_twenty_non_zero_differences() -> None:
    result = sign_flip_test([1.0] * 21)
    assert result.method == "monte-carlo"
    assert result.nonzero == 21
    # The true p is 2 / 2^21 (about 1e-6): no draw of 100,000 reached |sum| = 21 here, so p is
    # the smallest the +1 correction allows.
    assert result.p_value == 1 / (PERMUTATIONS + 1)


def test_monte_carlo_p_has_the_plus_one_form_and_is_reproducible() -> None:
    differences = [0.5, -0.25, 1 / 3, 0.2, -0.1] * 6
    first = sign_flip_test(differences)
    sign_flip_test([1.0] * 40)  # another stream in between changes nothing
    again = sign_flip_test(differences)
    assert first == again
    hits = first.p_value * (PERMUTATIONS + 1) - 1
    assert hits == pytest.approx(round(hits), abs=1e-6)
    assert 0 <= round(hits) <= PERMUTATIONS


def monte_carlo_reference(differences: list[float], permutations: int) -> float:
    """The documented Monte-Carlo draw, in Python: assignment a takes words a*W .. a*W+W-1."""
    values = [d for d in differences if abs(d) > TOLERANCE]
    n = len(values)
    per = -(-n // 64)
    observed = 0.0
    for value in values:
        observed += value
    hits = 0
    for a in range(permutations):
        words = [splitmix64(paired.SIGN_FLIP_SEED, a * per + w) for w in range(per)]
        total = 0.0
        for block in range(0, n, 8):
            # One byte's table entry is itself a left-to-right sum of eight signed values.
            part = 0.0
            for i in range(block, min(block + 8, n)):
                keep = (words[i // 64] >> (i % 64)) & 1
                part += values[i] if keep else -values[i]
            total += part
        hits += abs(total) >= abs(observed) - TOLERANCE
    return (hits + 1) / (permutations + 1)


@pytest.mark.parametrize("n", [21, 64, 70])
def test_monte_carlo_follows_the_documented_stream(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Fewer assignments than the real 100,000, so the Python reference stays fast; the layout
    # of the stream is the same, so the first 2,000 assignments are the real ones.
    monkeypatch.setattr(paired, "PERMUTATIONS", 2_000)
    rng = np.random.default_rng(n)
    differences = rng.choice([f for f in FRACTIONS if f], n).tolist()
    result = sign_flip_test(differences)
    assert result.method == "monte-carlo"
    assert result.p_value == monte_carlo_reference(differences, 2_000)


def test_monte_carlo_is_within_its_error_of_the_exact_p() -> None:
    # 22 non-zero differences: the exact p by enumeration (here, 4M sums), against the test.
    rng = np.random.default_rng(7)
    differences = (rng.integers(-3, 5, 22) / 4).tolist()
    differences = [d if d else 0.25 for d in differences]
    sums = np.zeros(1)
    for d in differences:
        sums = np.concatenate((sums + d, sums - d))
    exact = float(np.mean(np.abs(sums) >= abs(sum(differences)) - TOLERANCE))
    result = sign_flip_test(differences)
    assert result.method == "monte-carlo"
    error = math.sqrt(exact * (1 - exact) / PERMUTATIONS)
    assert abs(result.p_value - exact) <= 5 * error + 1 / PERMUTATIONS


@given(st.lists(values, max_size=30))
@example([])
@example([0.0] * 25)
@example([1.0] * 25)
def test_swapping_baseline_and_candidate_keeps_p(differences: list[float]) -> None:
    assert sign_flip_test([-d for d in differences]) == sign_flip_test(differences)


def test_identical_runs_give_p_one() -> None:
    assert sign_flip_test([0.0] * 80) == SignFlip(1.0, "exact", 0)


@pytest.mark.parametrize("bad", [[math.nan], [math.inf, 1.0], [[1.0, 2.0]]])
def test_sign_flip_refuses_non_finite_differences(bad: list[object]) -> None:
    with pytest.raises(EvalError, match="expected a sequence of finite differences"):
        sign_flip_test(bad)  # type: ignore[arg-type]


# --- the bootstrap interval -----------------------------------------------------------------


@given(st.lists(values, min_size=1, max_size=40))
@example([0.0])
@example([0.0] * 10)
@example([1.0, 0.0])
@example([1.0] + [0.0] * 39)
def test_bootstrap_ci_is_deterministic_and_contains_the_mean(differences: list[float]) -> None:
    low, high = bootstrap_ci(differences)
    assert bootstrap_ci(list(differences)) == (low, high)
    assert min(differences) - 1e-12 <= low <= high <= max(differences) + 1e-12
    assert low - 1e-12 <= mean(differences) <= high + 1e-12


@given(st.lists(values, min_size=1, max_size=40))
@example([0.5, -0.25, 0.0])
def test_bootstrap_ci_negates_with_the_differences(differences: list[float]) -> None:
    low, high = bootstrap_ci(differences)
    assert bootstrap_ci([-d for d in differences]) == (-high, -low)


# (id, differences, interval worked out by hand)
CI_CASES = [
    ("one_query", [0.25], (0.25, 0.25)),
    ("all_ties", [0.0] * 10, (0.0, 0.0)),
    ("all_equal", [0.5] * 4, (0.5, 0.5)),
]


@pytest.mark.parametrize(
    ("differences", "expected"),
    [case[1:] for case in CI_CASES],
    ids=[case[0] for case in CI_CASES],
)
def test_bootstrap_ci_degenerate(differences: list[float], expected: tuple[float, float]) -> None:
    assert bootstrap_ci(differences) == expected


def test_bootstrap_ci_of_two_values_spans_both() -> None:
    # Means of two draws from {0, 1} are 0, 0.5, 1 with probability 1/4, 1/2, 1/4: the 250th
    # smallest of 10,000 is 0 and the 9,751st is 1 (the chance that either tail holds fewer
    # than 250 of the 10,000 is negligible; the stream is fixed, so this is exact).
    assert bootstrap_ci([0.0, 1.0]) == (0.0, 1.0)


def test_bootstrap_ci_refuses_no_differences() -> None:
    with pytest.raises(EvalError, match=r"expected 1 to 2\*\*32-1 finite differences, found 0"):
        bootstrap_ci([])


# --- Holm ----------------------------------------------------------------------------------


def holm_step_down(p_values: list[float], alpha: float) -> set[int]:
    """Holm's procedure: reject in ascending order while p_(i) <= alpha / (m - i + 1)."""
    order = sorted(range(len(p_values)), key=lambda i: (p_values[i], i))
    rejected: set[int] = set()
    for position, i in enumerate(order):
        if p_values[i] > alpha / (len(p_values) - position):
            break
        rejected.add(i)
    return rejected


def test_holm_by_hand() -> None:
    # Sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> 0.06.
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm_adjust([0.01, None, 0.04, 0.03, 0.005, None]) == pytest.approx(
        [0.03, None, 0.06, 0.06, 0.02, None]
    )
    assert holm_adjust([0.5, 0.6]) == [1.0, 1.0]
    assert holm_adjust([]) == []
    assert holm_adjust([None]) == [None]
    assert holm_adjust([0.2]) == [0.2]


@given(
    st.lists(st.integers(0, 64).map(lambda k: k / 64), max_size=9),
    st.sampled_from([0.01, 0.05, 0.1, 0.3]),
)
@example([], 0.05)
@example([0.0, 0.0], 0.05)
@example([1.0, 1.0, 1.0], 0.05)
@example([0.015625, 0.015625, 0.015625], 0.05)
def test_holm_rejects_what_the_step_down_procedure_rejects(
    p_values: list[float], alpha: float
) -> None:
    adjusted = holm_adjust(p_values)
    assert {i for i, p in enumerate(adjusted) if p is not None and p <= alpha} == holm_step_down(
        p_values, alpha
    )
    for raw, adj in zip(p_values, adjusted, strict=True):
        assert adj is not None
        assert raw <= adj <= 1.0


@pytest.mark.parametrize("bad", [1.5, -0.1, math.nan, "0.1"])
def test_holm_refuses_a_p_outside_zero_one(bad: object) -> None:
    with pytest.raises(EvalError, match="expected p-values in \\[0, 1\\]"):
        holm_adjust([0.1, bad])  # type: ignore[list-item]


def test_mean_is_correctly_rounded_and_refuses_empty() -> None:
    assert mean([0.1] * 10) == 0.1
    assert mean([1e16, 1.0, -1e16]) == 1 / 3
    with pytest.raises(EvalError, match="at least one value"):
        mean([])


def test_a_comparison_of_1000_queries_draws_the_resamples_once() -> None:
    """The bootstrap's 10 blocks of draws for 1,000 queries stay cached: the second interval
    of that size draws nothing (with 8 blocks kept, it drew all 10 again); the intervals are
    the ones the uncached draws give."""
    from hotmem_eval import paired

    paired._draw_index.cache_clear()
    differences = [((i * 7919) % 1000) / 1000 - 0.5 for i in range(1000)]
    assert bootstrap_ci(differences) == (-0.01818300000000002, 0.017639000000000023)
    first = paired._draw_index.cache_info()
    assert (first.misses, first.hits) == (10, 0)
    shifted = [d * 0.5 + 0.125 for d in differences]
    assert bootstrap_ci(shifted) == (0.1159085000000001, 0.13381950000000006)
    second = paired._draw_index.cache_info()
    assert (second.misses, second.hits) == (10, 10)
