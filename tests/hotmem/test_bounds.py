"""``bounds.finalists`` equals its plain definition, pass by pass (issue 13).

The search properties (``test_topk.py``) check the answers; this checks what a bounds pass
hands over: the threshold, every finalist with its bound, every contender. The plain reference
below tests every memory of ``partial`` and every member of a known deferred term one by one
(no cut in C, no early stop), as the bounds were first written; ``finalists`` keeps in C only the
memories that can pass, stops once ``crowd`` is passed and takes a threshold handed over.
"""

from __future__ import annotations

import heapq
import importlib.util
from collections.abc import Iterable, Sequence
from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

import hotmem
from hotmem import bounds, vectors
from hotmem.bounds import ABSOLUTE, RELATIVE, Crowded, Deferred, Finalists, Problem
from hotmem.embedding.hash_v1 import embed
from hotmem.fusion import Weights
from hotmem.packed_scan import PackedScan
from hotmem.vectors import CosineScan

WORDS = ["common", "invoice", "deploy", "tuesday", "badge", "kettle", "copper", "atlas", "雪"]


def plain_finalists(
    problem: Problem, scan: CosineScan | None, importances: Sequence[float], top_importance: float
) -> Finalists | Literal["loose"]:
    """The finalists by their definition, one memory at a time (``problem.crowd`` and
    ``problem.threshold`` aside)."""
    wv, wl, wi = problem.weights.cosine, problem.weights.bm25, problem.weights.importance
    margin = 0.0 if scan is None else scan.margin
    partial, deferred, floor, gate = problem.partial, problem.deferred, problem.floor, problem.gate
    cosines = scan.approximations(list(partial)) if scan else [0.0] * len(partial)
    lows: list[float] = []
    share_low = wl * (1 - RELATIVE) / problem.best_high
    for (p, share), value in zip(partial.items(), cosines, strict=True):
        if value - margin >= problem.admitted_from:
            lows.append(wv * (value - margin) + share * share_low + wi * importances[p])
    if scan is not None and floor is not None:
        lows.extend(scan.top_bases(floor, (wv, wi), partial.keys(), problem.limit))
    if len(lows) < problem.limit:
        return "loose"
    threshold = heapq.nlargest(problem.limit, lows)[-1] - ABSOLUTE
    slack = wl * (1 + RELATIVE) / problem.best_low
    ranked: list[tuple[float, int]] = []
    contenders: list[tuple[float, int]] = []
    for (p, share), value, bonus in zip(
        partial.items(), cosines, deferred.of_each(partial), strict=True
    ):
        most = share + bonus
        upper = wv * (value + margin) + most * slack + wi * importances[p] + ABSOLUTE
        if upper >= threshold:
            ranked.append((upper, p))
        if most * (1 + RELATIVE) >= problem.best_low:
            contenders.append((most, p))

    def consider(candidates: Iterable[tuple[int, float, float]]) -> None:
        for p, value, most in candidates:
            upper = wv * (value + margin) + wi * importances[p] + most * slack + ABSOLUTE
            lifted = value + margin
            if upper >= threshold and (
                (floor is not None and lifted >= floor)
                or (most > 0.0 and (gate is None or lifted >= gate))
            ):
                ranked.append((upper, p))

    matched = sorted(set().union(*(m for _, m in deferred.known)) - partial.keys())
    values = scan.approximations(matched) if scan else [0.0] * len(matched)
    consider(zip(matched, values, deferred.of_each(matched), strict=True))
    others = threshold - deferred.unknown * slack - ABSOLUTE
    if scan is None or wv <= 0.0:
        if deferred.unknown > 0.0 and wi * top_importance >= others:
            return "loose"
        reachable = [] if scan is None or floor is None else list(scan.at_least(floor).items())
    else:
        reachable = scan.reaching(others, (wv, wi))
    consider(
        (p, value, deferred.unknown)
        for p, value in reachable
        if p not in partial and p not in matched
    )
    ranked.sort(reverse=True)
    contenders.sort(key=lambda c: -c[0])
    return Finalists(
        threshold, ranked, [p for _, p in contenders], [most for most, _ in contenders]
    )


def _check(
    problem: Problem, scan: CosineScan | None, importances: Sequence[float], top: float
) -> None:
    """``finalists`` against the definition, as computed and with the threshold handed over."""
    expected = plain_finalists(problem, scan, importances, top)
    _answers(bounds.finalists(problem, scan, importances, top), expected, problem)
    if isinstance(expected, Finalists):
        handed = Problem(**{**_fields(problem), "threshold": expected.threshold})
        _answers(bounds.finalists(handed, scan, importances, top), expected, handed)


def _answers(found: Finalists | Crowded | str, whole: Finalists | str, problem: Problem) -> None:
    """``found`` is a pass's ``whole`` answer, or :class:`Crowded` where it has more than
    ``problem.crowd`` finalists or contenders."""
    if whole == "loose":
        assert found == "loose"
        return
    assert isinstance(whole, Finalists)
    crowd = problem.crowd
    if crowd is not None and max(len(whole.ranked), len(whole.contenders)) > crowd:
        assert found == Crowded(problem, whole.threshold)
    else:
        assert found == whole


def _fields(problem: Problem) -> dict[str, object]:
    return {name: getattr(problem, name) for name in Problem.__dataclass_fields__}


memories = st.lists(
    st.tuples(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join),
        st.sampled_from(["a", "b"]),
        st.sampled_from([0.0, 0.3, 1.0]),
    ),
    min_size=1,
    max_size=40,
)


@st.composite
def problems(draw: st.DrawFn, positions: range) -> Problem:
    """A pass's problem over ``positions``: read shares, deferred bounds, a rule."""
    subsets = st.frozensets(st.sampled_from(list(positions)))
    partial = draw(st.dictionaries(st.sampled_from(list(positions)), st.floats(0.01, 6.0)))
    if not partial:
        partial = {positions.start: 1.0}
    known = draw(st.lists(st.tuples(st.floats(0.0, 4.0), subsets), max_size=2))
    deferred = Deferred(draw(st.sampled_from([0.0, 1e-6, 0.5, 3.0])), tuple(known))
    top = max(partial.values())
    return Problem(
        partial=partial,
        deferred=deferred,
        best_low=top * (1 - RELATIVE),
        best_high=(top + deferred.total) * (1 + RELATIVE),
        weights=Weights(
            cosine=draw(st.sampled_from([0.0, 0.3, 0.6])),
            bm25=draw(st.sampled_from([0.0, 0.2, 1.0])),
            importance=draw(st.sampled_from([0.0, 0.2])),
        ),
        floor=draw(st.sampled_from([None, -1.0, 0.0, 0.2, 0.4])),
        gate=draw(st.sampled_from([None, 0.1, 0.25])),
        limit=draw(st.sampled_from([1, 2, 5])),
        crowd=draw(st.sampled_from([None, 0, 1, 3, 10])),
    )


@pytest.mark.parametrize("scan_with", ["distances", "packed", "none"])
@given(memories=memories, identifier=st.sampled_from([None, "a"]), data=st.data())
def test_finalists_are_their_definition(
    scan_with: str,
    memories: list[tuple[str, str, float]],
    identifier: str | None,
    data: st.DataObject,
) -> None:
    with hotmem.open_store(":memory:") as store, pytest.MonkeyPatch.context() as patch:
        store.add_many(
            [
                {"fact": fact, "identifier": ident, "importance": imp, "memory_id": f"m-{i:03d}"}
                for i, (fact, ident, imp) in enumerate(memories)
            ]
        )
        index = store.vector_index()
        scope = index.scope(identifier)
        if not scope:
            return
        query = data.draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join))
        scan: CosineScan | None = None
        if scan_with == "packed":
            patch.setattr(vectors, "_PACK_FROM", 0)
            patch.setattr(vectors, "_PACK_AFTER", 0)
            patch.setattr(vectors, "_PACK_SHARE", 10**9)
        if scan_with != "none":
            scan = index.scan(embed(query), scope)
            assert isinstance(scan, PackedScan) == (scan_with == "packed")
        problem = data.draw(problems(scope))
        if scan is None:
            problem = Problem(**{**_fields(problem), "floor": None})
        _check(problem, scan, index.importances, index.top_importance(scope))


def test_a_crowded_pass_stops_with_the_threshold_of_the_whole_pass() -> None:
    # 300 memories all matching the read term, a deferred term any of them may match: every
    # one is a contender, so a pass allowed 10 stops, with the threshold the whole pass finds.
    rows = [
        {
            "fact": f"invoice {WORDS[i % 8]}",
            "identifier": "a",
            "importance": (i % 4) / 4,
            "memory_id": f"m-{i:03d}",
        }
        for i in range(300)
    ]
    with hotmem.open_store(":memory:") as store:
        store.add_many(rows)
        index = store.vector_index()
        scope = index.scope(None)
        scan = index.scan(embed("invoice kettle"), scope)
        partial = {p: 1.0 + (p % 7) / 10 for p in scope}
        problem = Problem(
            partial=partial,
            deferred=Deferred(2.5, ()),
            best_low=1.6 * (1 - RELATIVE),
            best_high=4.1 * (1 + RELATIVE),
            weights=Weights(),
            floor=0.4,
            gate=None,
            limit=5,
        )
        whole = bounds.finalists(problem, scan, index.importances, index.top_importance(scope))
        assert isinstance(whole, Finalists)
        assert len(whole.contenders) == 300
        crowded = Problem(**{**_fields(problem), "crowd": 10})
        stopped = bounds.finalists(crowded, scan, index.importances, index.top_importance(scope))
        assert stopped == Crowded(crowded, whole.threshold)


@pytest.mark.skipif(importlib.util.find_spec("numpy") is None, reason="needs the fast extra")
@given(memories=memories, data=st.data())
def test_the_numpy_bounds_take_a_handed_threshold_and_a_crowd_alike(
    memories: list[tuple[str, str, float]], data: st.DataObject
) -> None:
    # accelerator.MatrixScan.finalists has its own bounds (its own margin): with the threshold
    # it computes handed over, or a crowd given, it answers what it answers without them.
    with hotmem.open_store(":memory:") as store, pytest.MonkeyPatch.context() as patch:
        patch.setattr(vectors, "_ACCELERATE_FROM", 0)
        store.add_many(
            [
                {"fact": fact, "identifier": ident, "importance": imp, "memory_id": f"m-{i:03d}"}
                for i, (fact, ident, imp) in enumerate(memories)
            ]
        )
        index = store.vector_index()
        scope = index.scope(None)
        query = data.draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join))
        scan = index.scan(embed(query), scope, accelerated=True)
        if isinstance(scan, vectors.Scan):
            return  # a zero query vector: no matrix product
        problem = data.draw(problems(scope))
        free = Problem(**{**_fields(problem), "crowd": None})
        whole = scan.finalists(free)
        _answers(scan.finalists(problem), whole, problem)
        if isinstance(whole, Finalists):
            handed = Problem(**{**_fields(free), "threshold": whole.threshold})
            assert scan.finalists(handed) == whole
