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
   exhaustive path runs. While the read terms cannot outweigh the deferred ones (their
   ceilings add up to at most the deferred terms'), a pass is sure to come out loose: the next
   terms are read in the same statement instead, and the pass is skipped (``_surely_needed``).

Bounds carry a small slack (``RELATIVE``, ``ABSOLUTE``) so that float rounding can only add
finalists, never drop one: the result is identical, score bits included, to
:func:`exhaustive_top_k`, which a property test checks on random stores.

The BM25 of step 1 and of step 3 is FTS5's, computed by ``bm25.py`` from the index's own
occurrence lists and token counts where it can be (``bm25.term_shares``,
``bm25.scores_among``), and by FTS5's queries otherwise: the same bits either way.
"""

from __future__ import annotations

import heapq
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import Literal

from hotmem import bm25, bounds, lexical
from hotmem.bounds import ABSOLUTE, RELATIVE, Crowded, Deferred, Finalists, Problem
from hotmem.fusion import Weights, rank, score_candidates
from hotmem.reads import DICTS, ReadForm, whole
from hotmem.store.fts import LexicalQuery
from hotmem.vectors import CosineScan

__all__ = ["Ranked", "Rule", "Search", "exhaustive_top_k", "in_scope", "top_k"]

# FTS5's bm25(): each phrase adds idf * f * (k1 + 1) / (f + K), K > 0, so less than 2.2 * idf.
_BM25_CEILING = 2.2
#: A term matching at most this many memories (or N / _CHEAP_SHARE) is read at once.
_CHEAP_ROWS = 512
_CHEAP_SHARE = 64
#: A scope of at most 1 / _SMALL_SCOPE of the store may read the BM25 of its own matches only
#: (:func:`_scope_top_k`), when the bounded path would cost more (:func:`_scope_budget`).
_SMALL_SCOPE = 8
#: Finalists scored exactly in the first batch. A batch FTS5 scores walks the query's doclists
#: once, so few large batches beat many small ones: the next is four times larger. A batch
#: computed by ``bm25.py`` costs by the memory: the next is twice as large.
_FIRST_BATCH = 512
#: More finalists or contenders than this, and who matches the rarest unknown deferred term
#: is read first.
_CROWD = _FIRST_BATCH


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
        bm25_rows: how many BM25 values were computed for the answer, by FTS5 or by
            ``bm25.py`` (the work bounded here).
    """

    top: list[tuple[float, int]]
    cosines: dict[int, float]
    raws: dict[int, float]
    best: float
    bm25_rows: int


def in_scope(found: dict[int, float], position: dict[int, int], scope: range) -> dict[int, float]:
    """rowid-keyed values -> position-keyed values, for the positions in ``scope``.

    This runs once per term read and per batch scored, over tens of thousands of matches when a
    query has common words, so the keys are mapped by ``map`` (no Python frame a match) and the
    range test is skipped when ``scope`` is the whole index.
    """
    keyed = zip(map(position.__getitem__, found), found.values(), strict=True)
    if whole(scope, len(position)):
        return dict(keyed)
    start, stop = scope.start, scope.stop
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
        top_importance: the largest importance in ``scope``.
        counts: the lexical counts of the store's state, kept between searches (a new one
            counts afresh).
        by_rowid: ``position`` again, or an array by rowid with the same values
            (``VectorIndex.positions_by_rowid``; ``None``: ``position``).
    """

    scan: CosineScan | None
    scope: range
    position: dict[int, int]
    rowids: Sequence[int]
    importances: Sequence[float]
    memory_ids: Sequence[str]
    rule: Rule
    limit: int
    top_importance: float
    counts: lexical.Counts = field(default_factory=lexical.Counts)
    by_rowid: Sequence[int] | Mapping[int, int] | None = None

    @property
    def reads(self) -> ReadForm:
        """The form the bounds pass takes the query's reads in (the scan's; dicts without
        one)."""
        return DICTS if self.scan is None else self.scan.reads

    def cosine(self, p: int) -> float:
        """The cosine of position ``p`` (0.0 without a vector channel)."""
        return 0.0 if self.scan is None else self.scan.cosine(p)

    def cosines(self, positions: Sequence[int]) -> list[float]:
        """The cosines of ``positions``, in order (the values of :meth:`cosine`)."""
        return [0.0] * len(positions) if self.scan is None else self.scan.cosines(positions)

    def floor_hits(self) -> dict[int, float]:
        """Positions whose cosine reaches the floor, with their cosine."""
        if self.scan is None or self.rule.floor is None:
            return {}
        return self.scan.at_least(self.rule.floor)

    def score(self, raws: dict[int, float], positions: Sequence[int], bm25_rows: int) -> Ranked:
        """Score the candidates among ``positions``, whose exact raw BM25 are in ``raws`` (the
        largest value of ``raws`` is ``best``), and rank them as fusion defines."""
        cosines = {}
        for p, value in zip(positions, self.cosines(positions), strict=True):
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
    raws = in_scope(found, search.position, search.scope)
    return search.score(raws, list(search.floor_hits().keys() | raws.keys()), len(found))


def _scope_top_k(connection: sqlite3.Connection, query: LexicalQuery, search: Search) -> Ranked:
    """:func:`exhaustive_top_k` for a scope much smaller than the store: the BM25 of its own
    matches only, in one restricted query (the same bits)."""
    scope, rowids = search.scope, search.rowids
    found, _ = _among(connection, query, search, rowids[scope.start : scope.stop])
    raws = in_scope(found, search.position, scope)
    return search.score(raws, list(search.floor_hits().keys() | raws.keys()), len(found))


def _among(
    connection: sqlite3.Connection, query: LexicalQuery, search: Search, rowids: Collection[int]
) -> tuple[dict[int, float], bool]:
    """:func:`lexical.matches_among` (the same bits), the cheaper way: computed by ``bm25.py``
    when it tokenizes fewer texts than ``1 / bm25.WALK_PER_TEXT`` of the doclist entries FTS5
    would walk, else by FTS5; and whether it was computed by ``bm25.py``."""
    if _computed_here(connection, query, search, len(rowids)):
        found = bm25.scores_among(connection, query, rowids, search.counts)
        if found is not None:
            return found, True
    return lexical.matches_among(connection, query, rowids), False


def _best(
    connection: sqlite3.Connection,
    query: LexicalQuery,
    search: Search,
    found: Finalists,
    chosen: set[int],
) -> tuple[dict[int, float], bool]:
    """The raw BM25 of ``chosen`` (rowids) and of enough of best's contenders that no other can
    exceed the largest found: contenders highest bound first, in growing batches, until the
    next one's bound is below it. So the largest is ``best``. And whether the first batch
    was computed by ``bm25.py``."""
    contenders, ceilings, rowids = found.contenders, found.ceilings, search.rowids
    matched: dict[int, float] = {}
    first: bool | None = None
    start, size = 0, _FIRST_BATCH
    while True:
        stop = min(len(contenders), start + size)
        chosen = chosen | {rowids[p] for p in contenders[start:stop]}
        part, computed_here = _among(connection, query, search, chosen)
        first = computed_here if first is None else first
        matched.update(part)
        top = max(matched.values(), default=0.0)
        start, size, chosen = stop, size * 2, set()
        if start >= len(contenders) or ceilings[start] * (1 + RELATIVE) < top:
            return matched, first


def _scope_budget(search: Search, walk: int) -> float | None:
    """For a scope of at most ``1 / _SMALL_SCOPE`` of the store, what reading its own matches'
    BM25 costs (tokenizing its memories, or a walk of ``walk`` doclist entries), in ``bm25``'s
    measured costs; ``None`` for a larger scope.

    The bounded path reads terms over the whole store, and in a small scope that may cost more
    than the scope's own matches: it goes on only while its own cost (``bm25.BOUNDED_ENTRIES``)
    and the matches it has read stay within this budget, and else reads the scope whole
    (:func:`_scope_top_k`). A scope of 1/50 of 1,000,000 memories costs 0.17 s to read whole,
    and the bounds answer most queries first (p50 188 -> 29 ms); a scope of 1/50 of 100,000
    costs less whole (``benchmarks/scope_costs.py``).
    """
    size = len(search.scope)
    if size * _SMALL_SCOPE > len(search.rowids):
        return None
    return min(size * bm25.TEXT_ENTRIES, walk + size * bm25.CHOSEN_ENTRIES)


def _computed_here(
    connection: sqlite3.Connection, query: LexicalQuery, search: Search, size: int
) -> bool:
    """Whether :func:`_among` of ``size`` memories tokenizes them rather than walk."""
    return size * bm25.WALK_PER_TEXT <= _walk(connection, query, search)


def _walk(connection: sqlite3.Connection, query: LexicalQuery, search: Search) -> int:
    """The doclist entries a restricted FTS5 query walks: every phrase's matches."""
    return sum(search.counts.phrase_counts(connection, lexical.phrases(query)))


def top_k(connection: sqlite3.Connection, query: LexicalQuery, search: Search) -> Ranked:
    """What :func:`exhaustive_top_k` gives, reading the BM25 of few memories (module docstring)."""
    terms = lexical.phrases(query)
    weights = search.rule.weights
    if not terms or min(weights.cosine, weights.bm25, weights.importance) < 0.0:
        return exhaustive_top_k(connection, query, search)  # bounds assume weights >= 0
    rows = {t.table: search.counts.table_rows(connection, t.table) for t in terms}
    counts = search.counts.phrase_counts(connection, terms)
    ceilings = [
        _BM25_CEILING * bm25.idf(rows[t.table], n) * (1 + RELATIVE) if n else 0.0
        for t, n in zip(terms, counts, strict=True)
    ]
    pending = sorted((i for i, n in enumerate(counts) if n), key=lambda i: (counts[i], i))
    cheap = [
        i for i in pending if counts[i] <= max(_CHEAP_ROWS, rows[terms[i].table] // _CHEAP_SHARE)
    ]
    read = cheap or pending[:1]
    pending = [i for i in pending if i not in read]
    read, pending = _surely_needed(read, pending, ceilings, 0.0)
    budget = _scope_budget(search, sum(counts))
    spent = 0  # matches of the terms read whole, or whose members were read, so far
    crowded: Crowded | None = None  # the last pass, when it was crowded
    form = search.reads
    keys = search.position if search.by_rowid is None else search.by_rowid
    size = len(search.position)
    partial: Mapping[int, float] = {}  # position in scope -> read share
    members: dict[int, AbstractSet[int]] = {}  # deferred term -> positions of its members
    computed = 0
    while True:
        if read:
            spent += sum(counts[i] for i in read)
            if budget is not None and bm25.BOUNDED_ENTRIES + spent * form.match_entries > budget:
                fallback = _scope_top_k(connection, query, search)
                return replace(fallback, bm25_rows=fallback.bm25_rows + computed)
            group = [terms[i] for i in read]
            found = bm25.term_shares(connection, group, search.counts, keys, form)
            if found is None:
                found = form.scores(
                    in_scope(lexical.phrase_scores(connection, group), search.position, range(size))
                )
            computed += len(found)
            # A new object, not an update: the numpy bounds keep arrays of each partial.
            partial = form.added(partial, form.within(found, search.scope, size))
        # Which deferred terms a memory may match: all of them, until their members are known.
        unknown = [i for i in pending if i not in members]
        fetchable = [i for i in unknown if 2 * counts[i] < rows[terms[i].table]]
        deferred = Deferred(
            unknown=sum(ceilings[i] for i in unknown),
            known=tuple((ceilings[i], members[i]) for i in pending if i in members),
        )
        answer = _bounded(
            connection, query, partial, deferred, search, computed, bool(fetchable), crowded
        )
        if isinstance(answer, Ranked):
            return answer
        if isinstance(answer, Crowded):  # learn who matches the rarest unknown deferred term
            crowded = answer
            spent += counts[fetchable[0]]
            if budget is not None and bm25.BOUNDED_ENTRIES + spent * form.match_entries > budget:
                fallback = _scope_top_k(connection, query, search)
                return replace(fallback, bm25_rows=fallback.bm25_rows + computed)
            rowids = lexical.phrase_members(connection, terms[fetchable[0]])
            members[fetchable[0]] = form.members(rowids, keys, search.scope, size)
            read = []
            continue
        if not pending:
            fallback = exhaustive_top_k(connection, query, search)
            return replace(fallback, bm25_rows=fallback.bm25_rows + computed)
        done = sum(ceilings[i] for i in range(len(terms)) if i not in pending)
        read, pending = _surely_needed(pending[:1], pending[1:], ceilings, done)


def _surely_needed(
    read: list[int], pending: list[int], ceilings: list[float], done: float
) -> tuple[list[int], list[int]]:
    """``read`` and the next terms of ``pending`` a bounds pass would surely read first.

    A pass is ``"loose"`` while the largest read share could be at most what the deferred terms
    could add, and no memory's read share exceeds the sum of the read terms' ceilings (``done``
    for the terms read before, plus ``read``'s). While that sum is at most the pending terms'
    ceilings, the pass is loose for sure and the next term would be read anyway: read it in the
    same statement and skip the pass.
    """
    read, pending = list(read), list(pending)
    done += sum(ceilings[i] for i in read)
    rest = sum(ceilings[i] for i in pending)
    while pending and done <= rest:
        i = pending.pop(0)
        read.append(i)
        done, rest = done + ceilings[i], rest - ceilings[i]
    return read, pending


def _bounded(
    connection: sqlite3.Connection,
    query: LexicalQuery,
    partial: Mapping[int, float],
    deferred: Deferred,
    search: Search,
    computed: int,
    refinable: bool,
    earlier: Crowded | None,
) -> Ranked | Crowded | Literal["loose"]:
    """The answer from the read shares (``partial``: position in scope -> share) and the
    deferred bounds; ``"loose"`` when another term must be read first, :class:`Crowded` (only
    when ``refinable``) when learning who matches a deferred term would cut down the finalists
    (``bounds.py``). The threshold of an ``earlier`` pass over the same read shares and bounds
    of ``best`` is not computed again."""
    total = deferred.total
    top_partial = search.reads.largest(partial)
    if top_partial * (1 - RELATIVE) <= total * (1 + RELATIVE):
        return "loose"  # a memory matching deferred terms only could hold best
    rule = search.rule
    problem = Problem(
        partial=partial,
        deferred=deferred,
        best_low=top_partial * (1 - RELATIVE),
        best_high=(top_partial + total) * (1 + RELATIVE),
        weights=rule.weights,
        floor=rule.floor if search.scan is not None else None,
        gate=rule.gate,
        limit=search.limit,
        crowd=_CROWD if refinable else None,
    )
    if earlier is not None and _same_shares(earlier.problem, problem):
        problem = replace(problem, threshold=earlier.threshold)
    if search.scan is None:
        found = bounds.finalists(problem, None, search.importances, search.top_importance)
    else:
        found = search.scan.finalists(problem)
    if isinstance(found, str | Crowded):  # Crowded only when refinable (Problem.crowd)
        return found
    return _resolve(connection, query, search, found, computed)


def _same_shares(earlier: Problem, problem: Problem) -> bool:
    """Whether two passes have the same read shares and bounds of ``best`` (the same object:
    a pass that learns who matches a deferred term keeps them)."""
    return earlier.partial is problem.partial and (earlier.best_low, earlier.best_high) == (
        problem.best_low,
        problem.best_high,
    )


def _resolve(
    connection: sqlite3.Connection,
    query: LexicalQuery,
    search: Search,
    found: Finalists,
    computed: int,
) -> Ranked:
    """Score the finalists exactly, highest upper bound first, in growing batches, until no
    finalist left can reach the ``limit``-th exact score found (or ``threshold``).

    The first batch also reads best's contenders, highest bound first, until none left can
    exceed the largest exact raw BM25 found (:func:`_best`), so ``best`` is exact from then
    on. Each batch is one restricted query (``lexical.matches_among``) or its bits computed by
    ``bm25.py`` (:func:`_among`), and exact cosines.
    """
    rule, importances, rowids = search.rule, search.importances, search.rowids
    wv, wl, wi = rule.weights.cosine, rule.weights.bm25, rule.weights.importance
    finalists, threshold = found.ranked, found.threshold
    raws: dict[int, float] = {}
    scored: list[int] = []
    kept: list[float] = []  # a min-heap of the limit best exact scores
    best = 0.0
    size, start = _FIRST_BATCH, 0
    while start < len(finalists) and finalists[start][0] >= threshold:
        stop = start
        while stop < len(finalists) and stop - start < size and finalists[stop][0] >= threshold:
            stop += 1
        batch = [p for _, p in finalists[start:stop]]
        chosen = {rowids[p] for p in batch}
        if not scored:
            matched, computed_here = _best(connection, query, search, found, chosen)
        else:
            matched, computed_here = _among(connection, query, search, chosen)
        computed += len(matched)
        raws.update(in_scope(matched, search.position, search.scope))
        if not scored:
            best = max(raws.values(), default=0.0)
        for p, value in zip(batch, search.cosines(batch), strict=True):
            raw = raws.get(p)
            if rule.admits(value, raw is not None):
                # The expression of fusion.score_candidates, so the same bits.
                score = wv * value + wl * (0.0 if raw is None else raw / best) + wi * importances[p]
                if len(kept) < search.limit:
                    heapq.heappush(kept, score)
                elif score > kept[0]:
                    heapq.heapreplace(kept, score)
        scored.extend(batch)
        if len(kept) == search.limit:
            threshold = max(threshold, kept[0] - ABSOLUTE)
        # A walk costs the same for any batch: few large ones. Computing here costs by the
        # memory, so a batch only twice the last reads few memories past the point of stopping.
        start, size = stop, size * (2 if computed_here else 4)
    return search.score(raws, scored, computed)
