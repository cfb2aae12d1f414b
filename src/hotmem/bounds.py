"""Which memories can still be in a query's top k, from bounds of their fused scores.

``topk.py`` knows, for each memory in scope, part of its raw BM25 exactly (the *read* share of
the terms it read) and an upper bound of the rest (the deferred terms' ceilings, only those a
memory may match when their members are known). With the cosine (approximate, within the
scan's margin) and the importance, that bounds every fused score from below and above:

- the ``limit``-th largest lower bound among memories sure to be candidates is a threshold
  no answer falls below;
- the *finalists* are the memories whose upper bound reaches it, best upper bound first;
- the *contenders* are the memories whose raw BM25 may be the largest (``best``).

:func:`finalists` computes them one memory at a time; ``accelerator.MatrixScan.finalists``
computes the same sets with numpy arrays. Both widen every bound by ``RELATIVE`` and
``ABSOLUTE`` so that float rounding can only add finalists, never drop one.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from hotmem.fusion import Weights

if TYPE_CHECKING:
    from hotmem.vectors import CosineScan

__all__ = ["ABSOLUTE", "RELATIVE", "Deferred", "Finalists", "Problem", "finalists"]

RELATIVE = 1e-9
ABSOLUTE = 1e-9


@dataclass(frozen=True, slots=True)
class Deferred:
    """Upper bounds of what the deferred terms add to a memory's raw BM25.

    Attributes:
        unknown: the ceilings of the deferred terms whose members are not known (any memory
            may match them).
        known: ``(ceiling, positions of its members in scope)`` of the other deferred terms.
    """

    unknown: float
    known: tuple[tuple[float, frozenset[int]], ...]

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
            read term.
        deferred: bounds of the rest.
        best_low, best_high: bounds of ``best``, the largest raw BM25 in scope
            (``best_low > 0``).
        weights: the fusion weights (all >= 0).
        floor: a memory without a lexical match needs ``cosine >= floor`` (``None``: never).
        gate: a lexical match needs ``cosine >= gate`` (``None``: no gate).
        limit: how many results are wanted.
    """

    partial: dict[int, float]
    deferred: Deferred
    best_low: float
    best_high: float
    weights: Weights
    floor: float | None
    gate: float | None
    limit: int

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


def finalists(
    problem: Problem,
    scan: CosineScan | None,
    importances: Sequence[float],
    top_importance: float,
) -> Finalists | Literal["loose"]:
    """The finalists, one memory at a time; ``"loose"`` when fewer than ``limit`` memories are
    sure to be candidates, or no cosine bounds the memories matching deferred terms only."""
    wv, wl, wi = problem.weights.cosine, problem.weights.bm25, problem.weights.importance
    margin = 0.0 if scan is None else scan.margin
    partial, deferred, floor, gate = problem.partial, problem.deferred, problem.floor, problem.gate
    # The cosines of the read shares' memories, in the order of ``partial``.
    cosines = scan.approximations(list(partial)) if scan else [0.0] * len(partial)

    lows: list[float] = []
    share_low = wl * (1 - RELATIVE) / problem.best_high
    admitted_from = problem.admitted_from
    for (p, share), value in zip(partial.items(), cosines, strict=True):
        low = value - margin
        if low >= admitted_from:
            lows.append(wv * low + share * share_low + wi * importances[p])
    if scan is not None and floor is not None:
        lows.extend(scan.top_bases(floor, (wv, wi), partial.keys(), problem.limit))
    if len(lows) < problem.limit:
        return "loose"
    threshold = heapq.nlargest(problem.limit, lows)[-1] - ABSOLUTE

    slack = wl * (1 + RELATIVE) / problem.best_low
    ranked: list[tuple[float, int]] = []
    contenders: list[tuple[float, int]] = []
    unknown, known = deferred.unknown, deferred.known
    best_low = problem.best_low
    # The loops below run over tens of thousands of memories: the test of consider() is
    # written out in one loop, not called a memory.
    for (p, share), value, bonus in zip(
        partial.items(), cosines, deferred.of_each(partial), strict=True
    ):
        most = share + bonus
        upper = wv * (value + margin) + most * slack + wi * importances[p] + ABSOLUTE
        if upper >= threshold:
            ranked.append((upper, p))
        if most * (1 + RELATIVE) >= best_low:
            contenders.append((most, p))

    def consider(candidates: Iterable[tuple[int, float, float]]) -> None:
        """Memories without a read share, ``(position, cosine, most from the deferred
        terms)``: candidates by the floor or a deferred term only."""
        for p, value, most in candidates:
            upper = wv * (value + margin) + wi * importances[p] + most * slack + ABSOLUTE
            if upper < threshold:
                continue
            lifted = value + margin
            if (floor is not None and lifted >= floor) or (
                most > 0.0 and (gate is None or lifted >= gate)
            ):
                ranked.append((upper, p))

    # Those that may match a deferred term whose members are known, one by one; the others can
    # get ``deferred.unknown`` at most, so the scan finds those that may reach the threshold.
    matched = sorted(set().union(*(m for _, m in known)) - partial.keys())
    values = scan.approximations(matched) if scan else [0.0] * len(matched)
    consider(zip(matched, values, deferred.of_each(matched), strict=True))
    others = threshold - unknown * slack - ABSOLUTE
    if scan is None or wv <= 0.0:
        if unknown > 0.0 and wi * top_importance >= others:
            return "loose"
        reachable = [] if scan is None or floor is None else list(scan.at_least(floor).items())
    else:
        reachable = scan.reaching(others, (wv, wi))
    skipped = set(matched)
    consider((p, value, unknown) for p, value in reachable if p not in partial and p not in skipped)
    ranked.sort(reverse=True)
    contenders.sort(key=lambda c: -c[0])
    return Finalists(
        threshold, ranked, [p for _, p in contenders], [most for most, _ in contenders]
    )
