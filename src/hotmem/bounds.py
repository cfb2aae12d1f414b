"""Which memories can still be in a query's top k, from bounds of their fused scores.

``topk.py`` knows, for each memory in scope, part of its raw BM25 exactly (the *read* share of
the terms it read) and an upper bound of the rest (the deferred terms' ceilings, only those a
memory may match when their members are known). With the cosine (approximate, within the
scan's margin) and the importance, that bounds every fused score from below and above:

- the ``limit``-th largest lower bound among memories sure to be candidates is a threshold
  no answer falls below;
- the *finalists* are the memories whose upper bound reaches it, best upper bound first;
- the *contenders* are the memories whose raw BM25 may be the largest (``best``).

:func:`finalists` computes them in Python, over the memories a filter in C keeps;
``accelerator.MatrixScan.finalists`` computes the same sets with numpy arrays. Both widen
every bound by ``RELATIVE`` and ``ABSOLUTE`` so that float rounding can only add finalists,
never drop one.
"""

from __future__ import annotations

import heapq
import math
import sys
from collections.abc import Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from itertools import compress, repeat
from operator import add, le, mul, or_
from typing import TYPE_CHECKING, Literal

from hotmem.fusion import Weights

if TYPE_CHECKING:
    from hotmem.vectors import CosineScan

__all__ = ["ABSOLUTE", "RELATIVE", "Crowded", "Deferred", "Finalists", "Problem", "finalists"]

RELATIVE = 1e-9
ABSOLUTE = 1e-9
#: How far below an exact cut ``_cut`` goes, relative to the magnitudes it is computed from.
_CUSHION = 1e-9


@dataclass(frozen=True, slots=True)
class Deferred:
    """Upper bounds of what the deferred terms add to a memory's raw BM25.

    Attributes:
        unknown: the ceilings of the deferred terms whose members are not known (any memory
            may match them).
        known: ``(ceiling, positions of its members in scope)`` of the other deferred terms.
    """

    unknown: float
    known: tuple[tuple[float, AbstractSet[int]], ...]

    @property
    def total(self) -> float:
        """The most any memory can get from the deferred terms."""
        return self.unknown + sum(ceiling for ceiling, _ in self.known)

    def of_each(self, positions: Collection[int]) -> list[float]:
        """The most each memory at ``positions`` can get from them, in order (one call for tens
        of thousands of memories, not one a memory)."""
        unknown, known = self.unknown, self.known
        if not known:
            return [unknown] * len(positions)
        if len(known) == 1:
            ceiling, members = known[0]
            hit = unknown + (0.0 + ceiling)  # the sum below, with one term
            return [hit if p in members else unknown for p in positions]
        found = []
        for p in positions:
            extra = 0.0
            for ceiling, members in known:
                if p in members:
                    extra += ceiling
            found.append(unknown + extra)
        return found


@dataclass(frozen=True, slots=True)
class Problem:
    """What is known of one query's scores.

    Attributes:
        partial: position -> read share of its raw BM25, for the memories in scope matching a
            read term (in the form of the scan's ``reads``, ``reads.py``).
        deferred: bounds of the rest.
        best_low, best_high: bounds of ``best``, the largest raw BM25 in scope
            (``best_low > 0``).
        weights: the fusion weights (all >= 0).
        floor: a memory without a lexical match needs ``cosine >= floor`` (``None``: never).
        gate: a lexical match needs ``cosine >= gate`` (``None``: no gate).
        limit: how many results are wanted.
        crowd: more finalists or contenders than this, and the pass answers
            :class:`Crowded` (as soon as it knows; ``None``: never).
        threshold: the threshold of an earlier pass over the same read shares and bounds of
            ``best`` (:attr:`Crowded.threshold`), which this pass would compute again
            (``None``: not known).
    """

    partial: Mapping[int, float]
    deferred: Deferred
    best_low: float
    best_high: float
    weights: Weights
    floor: float | None
    gate: float | None
    limit: int
    crowd: int | None = None
    threshold: float | None = None

    @property
    def admitted_from(self) -> float:
        """The cosine from which a lexical match is a candidate: it passes the gate or, with
        a floor, the floor (``-inf`` without a gate)."""
        floor, gate = self.floor, self.gate
        return -math.inf if gate is None else gate if floor is None else min(gate, floor)


@dataclass(frozen=True, slots=True)
class Finalists:
    """The memories that can still be in the top k.

    Attributes:
        threshold: no answer's score is below it.
        ranked: ``(upper bound, position)`` of every finalist, highest bound first.
        contenders: positions whose raw BM25 may be ``best``, highest bound first.
        ceilings: the upper bounds of their raw BM25, in the same order.
    """

    threshold: float
    ranked: list[tuple[float, int]]
    contenders: list[int]
    ceilings: list[float]


@dataclass(frozen=True, slots=True)
class Crowded:
    """More than ``problem.crowd`` finalists or contenders.

    Attributes:
        problem: the problem of the pass.
        threshold: its threshold: another pass over the same read shares and bounds of
            ``best`` has it too (``Problem.threshold``).
    """

    problem: Problem
    threshold: float


def finalists(
    problem: Problem,
    scan: CosineScan | None,
    importances: Sequence[float],
    top_importance: float,
) -> Finalists | Crowded | Literal["loose"]:
    """The finalists, one memory at a time; ``"loose"`` when fewer than ``limit`` memories are
    sure to be candidates, or no cosine bounds the memories matching deferred terms only;
    :class:`Crowded` as soon as more than ``problem.crowd`` are finalists or contenders.

    A loop over many memories runs only over those that can pass its test, kept in C by
    their cosine alone: the test with the other parts of the bound at their largest in scope
    (:func:`_cut`). The contenders' test is run in C whole."""
    wv, wl, wi = problem.weights.cosine, problem.weights.bm25, problem.weights.importance
    margin = 0.0 if scan is None else scan.margin
    partial, deferred, floor, gate = problem.partial, problem.deferred, problem.floor, problem.gate
    crowd = sys.maxsize if problem.crowd is None else problem.crowd
    positions, shares = list(partial), list(partial.values())
    # The cosines of the read shares' memories, in the order of ``partial``.
    cosines = scan.approximations(positions) if scan else [0.0] * len(positions)
    unknown, total = deferred.unknown, deferred.total

    threshold = problem.threshold
    if threshold is None:
        found = _threshold(problem, scan, positions, shares, cosines, importances, top_importance)
        if found is None:
            return "loose"
        threshold = found

    slack = wl * (1 + RELATIVE) / problem.best_low
    others = threshold - unknown * slack - ABSOLUTE
    if (scan is None or wv <= 0.0) and unknown > 0.0 and wi * top_importance >= others:
        return "loose"
    ranked: list[tuple[float, int]] = []
    best_low = problem.best_low
    # The contenders, tested in C (the same expression, so the same bits); a finalist that is
    # not one has ``most * (1 + RELATIVE)`` below ``best_low``, so it needs a cosine of at
    # least ``strong``.
    mosts = list(map(add, shares, deferred.of_each(positions)))
    rich = list(map(le, repeat(best_low), map(mul, mosts, repeat(1 + RELATIVE))))
    if rich.count(True) > crowd:
        return Crowded(problem, threshold)
    contenders = [(mosts[i], positions[i]) for i in compress(range(len(rich)), rich)]
    rest = best_low / (1 + RELATIVE) * slack + wi * top_importance + ABSOLUTE
    strong = _cut(threshold, rest, wv, margin)
    kept = (
        range(len(rich))
        if strong == -math.inf
        else compress(range(len(rich)), map(or_, rich, map(le, repeat(strong), cosines)))
    )
    # The loops below run over tens of thousands of memories: the test of consider() is
    # written out in one loop, not called a memory.
    for i in kept:
        p = positions[i]
        upper = wv * (cosines[i] + margin) + mosts[i] * slack + wi * importances[p] + ABSOLUTE
        if upper >= threshold:
            ranked.append((upper, p))
            if len(ranked) > crowd:
                return Crowded(problem, threshold)

    def consider(candidates: Iterable[tuple[int, float, float]]) -> bool:
        """Memories without a read share, ``(position, cosine, most from the deferred
        terms)``: candidates by the floor or a deferred term only; whether more than
        ``crowd`` are finalists now."""
        for p, value, most in candidates:
            upper = wv * (value + margin) + wi * importances[p] + most * slack + ABSOLUTE
            if upper < threshold:
                continue
            lifted = value + margin
            if (floor is not None and lifted >= floor) or (
                most > 0.0 and (gate is None or lifted >= gate)
            ):
                ranked.append((upper, p))
                if len(ranked) > crowd:
                    return True
        return False

    # Those that may match a deferred term whose members are known, one by one; the others can
    # get ``deferred.unknown`` at most, so the scan finds those that may reach the threshold.
    skipped = set().union(*(m for _, m in deferred.known)) - partial.keys()
    matched = sorted(skipped)
    values = scan.approximations(matched) if scan else [0.0] * len(matched)
    near = _kept(
        values, _cut(threshold, total * slack + wi * top_importance + ABSOLUTE, wv, margin)
    )
    near_positions = [matched[i] for i in near]
    near_values = [values[i] for i in near]
    if consider(zip(near_positions, near_values, deferred.of_each(near_positions), strict=True)):
        return Crowded(problem, threshold)
    if scan is None or wv <= 0.0:
        reachable = [] if scan is None or floor is None else list(scan.at_least(floor).items())
    else:
        reachable = scan.reaching(others, (wv, wi))
    if consider(
        (p, value, unknown) for p, value in reachable if p not in partial and p not in skipped
    ):
        return Crowded(problem, threshold)
    ranked.sort(reverse=True)
    contenders.sort(key=lambda c: -c[0])
    return Finalists(
        threshold, ranked, [p for _, p in contenders], [most for most, _ in contenders]
    )


def _threshold(
    problem: Problem,
    scan: CosineScan | None,
    positions: Sequence[int],
    shares: Sequence[float],
    cosines: Sequence[float],
    importances: Sequence[float],
    top_importance: float,
) -> float | None:
    """The ``limit``-th largest lower bound of the memories sure to be candidates, less
    ``ABSOLUTE`` (``None``: fewer than ``limit`` are sure)."""
    wv, wl, wi = problem.weights.cosine, problem.weights.bm25, problem.weights.importance
    margin = 0.0 if scan is None else scan.margin
    floor, limit, partial = problem.floor, problem.limit, problem.partial
    lows = (
        []
        if scan is None or floor is None
        else scan.top_bases(floor, (wv, wi), partial.keys(), limit)
    )
    # No read share's lower bound below the limit-th of these can change the limit-th largest.
    lowest = heapq.nlargest(limit, lows)[-1] if len(lows) >= limit else -math.inf
    share_low = wl * (1 - RELATIVE) / problem.best_high
    admitted_from = problem.admitted_from
    cut = max(
        _cut(lowest, max(shares, default=0.0) * share_low + wi * top_importance, wv, -margin),
        _cut(admitted_from, 0.0, 1.0, -margin),
    )
    for i in _kept(cosines, cut):
        low = cosines[i] - margin
        if low >= admitted_from:
            lows.append(wv * low + shares[i] * share_low + wi * importances[positions[i]])
    if len(lows) < limit:
        return None
    return heapq.nlargest(limit, lows)[-1] - ABSOLUTE


def _cut(target: float, rest: float, weight: float, shift: float) -> float:
    """A value below every ``x`` for which ``weight * (x + shift) + rest`` may reach ``target``
    (``rest`` the other parts at their largest): less than the exact cut by far more than
    float rounding, so that a kept memory's own test decides. ``-inf`` when no cut holds."""
    if weight <= 0.0 or target == -math.inf:
        return -math.inf
    exact = (target - rest) / weight - shift
    return exact - _CUSHION * (1.0 + abs(exact) + (abs(target) + abs(rest)) / weight + abs(shift))


def _kept(values: Sequence[float], cut: float) -> Sequence[int]:
    """The indices of ``values`` at least ``cut``, in order, filtered in C."""
    if cut == -math.inf:
        return range(len(values))
    return list(compress(range(len(values)), map(le, repeat(cut), values)))
