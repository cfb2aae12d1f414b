"""The top k of weighted fusion, exactly, without computing the BM25 of every lexical match.

A memory's fused score is ``w_v * cosine + w_l * raw / best + w_i * importance``, where ``raw``
is its BM25 for the query and ``best`` the largest ``raw`` in scope (``fusion.py``). Computing
``raw`` for every match is most of the cost of a search when common words make most of the
store match (FTS5 runs ``bm25()`` once per matching row). But every term's share of a raw BM25
is bounded: FTS5 adds, per phrase, ``idf * f * 2.2 / (f + K)`` with ``K > 0``, which is less
than ``2.2 * idf``, and ``idf`` follows from how many memories match the term
(``lexical.phrase_counts``, which computes no BM25). So (MaxScore):

1. the terms matching few memories are *read*: their share of every matching memory's BM25
   (``lexical.phrase_scores``); the others are *deferred*, their total share bounded by ``R``;
2. every memory then has a lower bound (its read share, or 0) and an upper bound (its read
   share plus ``R``) of its raw BM25, hence of ``best`` and of its fused score, because its
   cosine and importance are known exactly (the vector scan covers the whole scope);
3. the k-th largest lower bound among memories sure to be candidates is a threshold no answer
   falls below, and only the memories whose upper bound reaches it (the *finalists*) can be in
   the answer; with ``best``'s contenders they get their exact BM25 in one restricted query
   (``lexical.matches_among``), the bits an exhaustive query gives, and are scored and ranked
   by ``fusion`` exactly as the exhaustive path scores every candidate;
4. when the bounds are too loose (too many finalists, or a deferred term could hold ``best``),
   the rarest deferred term is read and the bounds tightened; with nothing left to defer, the
   exhaustive path runs.

Bounds carry a small slack (``_RELATIVE``, ``_ABSOLUTE``) so that float rounding can only add
finalists, never drop one: the result is identical, score bits included, to
:func:`exhaustive_top_k`, which a property test checks on random stores.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, replace

from hotmem import lexical
from hotmem.fts import LexicalQuery
from hotmem.fusion import Weights, rank, score_candidates
from hotmem.vectors import CosineScan

__all__ = ["Ranked", "Rule", "Search", "exhaustive_top_k", "top_k"]

# FTS5's bm25(): each phrase adds idf * f * (k1 + 1) / (f + K), K > 0, so less than 2.2 * idf.
_BM25_CEILING = 2.2
_RELATIVE = 1e-9
_ABSOLUTE = 1e-9
#: A term matching at most this many memories (or N / _CHEAP_SHARE) is read at once.
_CHEAP_ROWS = 512
_CHEAP_SHARE = 64
#: More finalists than this, and the next deferred term is read first.
_FINALISTS = 2048


@dataclass(frozen=True, slots=True)
class Rule:
    """Who is a candidate and how a candidate is scored.

    Attributes:
        weights: the fusion weights.
        floor: a memory without a lexical match needs ``cosine >= floor`` (``None``: never,
            the profile has no vector channel).
        gate: a lexical match needs ``cosine >= gate`` too (``None``: no gate).
    """

    weights: Weights
    floor: float | None
    gate: float | None = None

    def admits(self, cosine: float, lexical_match: bool) -> bool:
        """Whether a memory in scope with this cosine and lexical match is a candidate."""
        if self.floor is not None and cosine >= self.floor:
            return True
        return lexical_match and (self.gate is None or cosine >= self.gate)


@dataclass(frozen=True, slots=True)
class Ranked:
    """The answer of one query.

    Attributes:
        top: ``(score, position)`` best first, at most ``limit``.
        cosines: position -> cosine, for at least every position of ``top``.
        raws: position -> raw BM25, for at least every lexical match of ``top``.
        best: the largest raw BM25 in scope (0.0 without a lexical match).
        bm25_rows: how many BM25 values FTS5 computed for the answer (the work bounded here).
    """

    top: list[tuple[float, int]]
    cosines: dict[int, float]
    raws: dict[int, float]
    best: float
    bm25_rows: int


def _in_scope(found: dict[int, float], position: dict[int, int], scope: range) -> dict[int, float]:
    """rowid-keyed values -> position-keyed values, for the positions in ``scope``."""
    start, stop = scope.start, scope.stop
    keyed = ((position[rowid], value) for rowid, value in found.items())
    return {p: value for p, value in keyed if start <= p < stop}


@dataclass(frozen=True, slots=True)
class Search:
    """One search over a loaded vector index.

    Attributes:
        scan: the query's cosines over ``scope`` (``None`` without a vector channel).
        scope: the positions searched.
        position: rowid -> position; ``rowids`` its inverse.
        importances: by position.
        memory_ids: by position (ties are broken by memory_id).
        rule: who is a candidate and how a candidate is scored.
        limit: how many results are wanted.
    """

    scan: CosineScan | None
    scope: range
    position: dict[int, int]
    rowids: Sequence[int]
    importances: Sequence[float]
    memory_ids: Sequence[str]
    rule: Rule
    limit: int

    def cosine(self, p: int) -> float:
        """The cosine of position ``p`` (0.0 without a vector channel)."""
        return 0.0 if self.scan is None else self.scan.cosine(p)

    def floor_hits(self) -> dict[int, float]:
        """Positions whose cosine reaches the floor, with their cosine."""
        if self.scan is None or self.rule.floor is None:
            return {}
        return self.scan.at_least(self.rule.floor)

    def score(self, raws: dict[int, float], positions: Sequence[int], bm25_rows: int) -> Ranked:
        """Score the candidates among ``positions``, whose exact raw BM25 are in ``raws`` (the
        largest value of ``raws`` is ``best``), and rank them as fusion defines."""
        cosines = {}
        for p in positions:
            value = self.cosine(p)
            if self.rule.admits(value, p in raws):
                cosines[p] = value
        scored = score_candidates(cosines, raws, self.importances, weights=self.rule.weights)
        best = max(raws.values(), default=0.0)
        top = rank(scored, self.memory_ids, self.limit)
        return Ranked(top, cosines, raws, best, bm25_rows)


def exhaustive_top_k(
    connection: sqlite3.Connection, query: LexicalQuery | None, search: Search
) -> Ranked:
    """The definition: every candidate in scope scored, the best ``limit`` kept.

    ``query`` is ``None`` when the lexical channel is off.
    """
    found = lexical.all_matches(connection, query) if query else {}
    raws = _in_scope(found, search.position, search.scope)
    return search.score(raws, list(search.floor_hits().keys() | raws.keys()), len(found))


def _idf(rows: int, hits: int) -> float:
    """FTS5's IDF of a phrase matching ``hits`` of ``rows`` rows."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0.0 else 1e-6


def top_k(connection: sqlite3.Connection, query: LexicalQuery, search: Search) -> Ranked:
    """What :func:`exhaustive_top_k` gives, reading the BM25 of few memories (module docstring)."""
    terms = lexical.phrases(query)
    if not terms:
        return exhaustive_top_k(connection, query, search)
    rows = {t.table: lexical.table_rows(connection, t.table) for t in terms}
    counts = lexical.phrase_counts(connection, terms)
    ceilings = [
        _BM25_CEILING * _idf(rows[t.table], n) * (1 + _RELATIVE) if n else 0.0
        for t, n in zip(terms, counts, strict=True)
    ]
    pending = sorted((i for i, n in enumerate(counts) if n), key=lambda i: (counts[i], i))
    cheap = [
        i for i in pending if counts[i] <= max(_CHEAP_ROWS, rows[terms[i].table] // _CHEAP_SHARE)
    ]
    read = cheap or pending[:1]
    pending = [i for i in pending if i not in read]
    partial: dict[int, float] = {}
    computed = 0
    while True:
        for i in read:
            shares = lexical.phrase_scores(connection, terms[i])
            computed += len(shares)
            for rowid, share in shares.items():
                partial[rowid] = partial.get(rowid, 0.0) + share
        deferred = sum(ceilings[i] for i in pending)
        answer = _bounded(connection, query, partial, deferred, search, computed)
        if answer is not None:
            return answer
        if not pending:
            fallback = exhaustive_top_k(connection, query, search)
            return replace(fallback, bm25_rows=fallback.bm25_rows + computed)
        read, pending = pending[:1], pending[1:]


def _bounded(
    connection: sqlite3.Connection,
    query: LexicalQuery,
    partial_by_rowid: dict[int, float],
    deferred: float,
    search: Search,
    computed: int,
) -> Ranked | None:
    """The answer from the read shares and the deferred bound, or ``None`` when the bounds are
    too loose to decide it with few exact BM25 values."""
    rule, importances = search.rule, search.importances
    wv, wl, wi = rule.weights.cosine, rule.weights.bm25, rule.weights.importance
    partial = _in_scope(partial_by_rowid, search.position, search.scope)
    top_partial = max(partial.values(), default=0.0)
    best_low = top_partial * (1 - _RELATIVE)
    if best_low <= deferred * (1 + _RELATIVE):
        return None  # a memory matching deferred terms only could hold best
    best_high = (top_partial + deferred) * (1 + _RELATIVE)

    # Lower bounds of the memories sure to be candidates: the k-th largest is the threshold.
    lows: list[float] = []
    cosines = {p: search.cosine(p) for p in partial}
    for p, share in partial.items():
        if rule.admits(cosines[p], True):
            low = wl * share * (1 - _RELATIVE) / best_high
            lows.append(wv * cosines[p] + low + wi * importances[p])
    floor_hits = search.floor_hits()
    for p, value in floor_hits.items():
        if p not in partial:
            lows.append(wv * value + wi * importances[p])
    if len(lows) < search.limit:
        return None
    lows.sort(reverse=True)
    threshold = lows[search.limit - 1] - _ABSOLUTE

    # Finalists: every memory whose upper bound reaches the threshold.
    slack = (1 + _RELATIVE) / best_low
    finalists = [
        p
        for p, share in partial.items()
        if wv * cosines[p] + wl * (share + deferred) * slack + wi * importances[p] + _ABSOLUTE
        >= threshold
    ]
    # A memory without a read share has at most the deferred one, and is a candidate only by
    # the floor or by a deferred term.
    others = threshold - wl * deferred * slack - _ABSOLUTE
    scope = search.scope
    top_importance = max(importances[scope.start : scope.stop], default=0.0)
    if search.scan is None or wv <= 0.0:
        # No cosine to prune by: a memory matching deferred terms only may reach the threshold
        # by importance alone, and every floor hit is weighed one by one.
        if deferred > 0.0 and wi * top_importance >= others:
            return None
        finalists.extend(
            p
            for p, value in floor_hits.items()
            if p not in partial and wv * value + wi * importances[p] >= others
        )
    else:
        weakest = (others - wi * top_importance) / wv
        if weakest <= -1.0:
            return None
        reachable = search.scan.at_least(weakest) if weakest <= 1.0 else {}
        for p, value in reachable.items():
            if p in partial or wv * value + wi * importances[p] < others:
                continue
            if (rule.floor is not None and value >= rule.floor) or (
                deferred > 0.0 and (rule.gate is None or value >= rule.gate)
            ):
                finalists.append(p)
                if len(finalists) > _FINALISTS:
                    return None
    if len(finalists) > _FINALISTS:
        return None

    # best's contenders, then the exact BM25 of every finalist and contender.
    contenders = [
        p for p, share in partial.items() if (share + deferred) * (1 + _RELATIVE) >= best_low
    ]
    rowids = search.rowids
    chosen = {rowids[p] for p in finalists} | {rowids[p] for p in contenders}
    found = lexical.matches_among(connection, query, chosen)
    return search.score(_in_scope(found, search.position, scope), finalists, computed + len(found))
