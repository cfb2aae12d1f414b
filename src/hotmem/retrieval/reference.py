"""The reference engine: the ranking's definition, computed plainly with the standard library.

Every memory in scope gets its exact cosine (``cosines.py``) and its raw BM25 (``postings.py``,
each index's phrases added in query order, the word index's sum first), and then fusion
decides (``fusion.py``). It is the engine of a store without numpy and of small scopes, and the
oracle the numpy engine is tested against (``tests/hotmem/retrieval/test_engines.py``).
"""

from __future__ import annotations

from collections.abc import Container, Sequence

from hotmem.retrieval.cosines import hash_cosines, matrix, space_cosines
from hotmem.retrieval.fusion import Rule, normalise_bm25, top, weighted
from hotmem.retrieval.postings import share
from hotmem.retrieval.prepared import Prepared
from hotmem.store.lexical_index import TABLES

__all__ = ["ReferenceChannels", "cosines_of", "raw_scores"]


def cosines_of(prepared: Prepared, positions: Sequence[int]) -> list[float]:
    """The exact cosines of ``positions`` (in scope or not; 0.0 without a vector channel)."""
    vector = prepared.vector
    if vector is None:
        return [0.0] * len(positions)
    if vector.space is None:
        return hash_cosines(prepared.index, positions, vector.values)
    import numpy as np  # a space other than hash-v1 has numpy with its embedder

    query = np.frombuffer(vector.packed, dtype="<f4").astype(np.float64)
    wanted = np.asarray(positions, dtype=np.intp)
    order = np.argsort(wanted, kind="stable")
    picked = matrix(vector.space.values, wanted[order])
    values = np.empty(len(wanted), dtype=np.float64)
    values[order] = space_cosines(picked, query)
    found: list[float] = values.tolist()
    return found


def raw_scores(prepared: Prepared, scope: Sequence[int]) -> dict[int, float]:
    """position -> raw BM25 of every lexical match among ``scope``."""
    # None: every position (a scope of the whole index, where every position is live)
    chosen: Container[int] | None = None if prepared.whole else set(scope)
    found: dict[int, float] = {}
    for table in TABLES:
        sums: dict[int, float] = {}
        get = sums.get
        for phrase in prepared.phrases:
            if phrase.table != table:
                continue
            if phrase.scores is not None:
                for p, value in phrase.scores.items():
                    if chosen is None or p in chosen:
                        sums[p] = get(p, 0.0) + value
                continue
            assert phrase.postings is not None
            lengths, weight, avgdl = phrase.lengths, phrase.idf, phrase.avgdl
            postings = phrase.postings
            pairs = zip(postings.positions, postings.frequencies, strict=True)
            for p, f in pairs if chosen is None else ((p, f) for p, f in pairs if p in chosen):
                sums[p] = get(p, 0.0) + share(weight, avgdl, f, lengths[p])
        for p, value in sums.items():
            found[p] = found.get(p, 0.0) + value
    return found


class ReferenceChannels:
    """Both channels of one query over its scope, exactly (``search.Channels``)."""

    def __init__(self, prepared: Prepared) -> None:
        self.prepared = prepared
        self.scope = prepared.scope
        self._in_scope = set(self.scope)
        self.raws = raw_scores(prepared, self.scope)
        self.best = max(self.raws.values(), default=0.0)
        self.cosines = dict(zip(self.scope, cosines_of(prepared, self.scope), strict=True))

    def cosine(self, position: int) -> float:
        """The exact cosine of ``position`` (in scope or not; 0.0 without a vector channel)."""
        found = self.cosines.get(position)
        if found is None:
            [found] = cosines_of(self.prepared, [position])
        return found

    def raw(self, position: int) -> float | None:
        """The raw BM25 of ``position`` when it is a lexical match in scope."""
        return self.raws.get(position)

    def in_scope(self, position: int) -> bool:
        """Whether ``position`` is searched."""
        return position in self._in_scope

    def values(self, positions: Sequence[int]) -> tuple[list[float], list[float | None]]:
        """The exact cosine and the raw BM25 (``None``: no match) of each of ``positions``."""
        return self.cosines_at(positions), self.raws_of(positions)

    def cosines_at(self, positions: Sequence[int]) -> list[float]:
        """The exact cosine of each of ``positions``."""
        return [self.cosine(p) for p in positions]

    def raws_of(self, positions: Sequence[int]) -> list[float | None]:
        """The raw BM25 (``None``: no match) of each of ``positions``."""
        return [self.raws.get(p) for p in positions]

    def candidates(self, floor: float) -> list[int]:
        """The positions in scope with a lexical match or a cosine of at least ``floor``,
        ascending."""
        raws = self.raws
        return [p for p, c in self.cosines.items() if c >= floor or p in raws]

    def _scored(self, rule: Rule) -> list[tuple[float, int]]:
        """Every candidate's weighted score, ``(score, position)``, in scope order."""
        importances, raw_of, best = self.prepared.index.importances, self.raws.get, self.best
        admits, weights = rule.admits, rule.weights
        scored: list[tuple[float, int]] = []
        append = scored.append
        for p, c in self.cosines.items():  # the scope, in order
            raw = raw_of(p)
            if admits(c, raw is not None):
                append((weighted(weights, c, normalise_bm25(raw, best), importances[p]), p))
        return scored

    def weighted_top(self, rule: Rule, limit: int) -> list[tuple[float, int]]:
        """The ``limit`` best candidates by weighted fusion, ``(score, position)``."""
        return top(self._scored(rule), limit, self.prepared.names)

    def weighted_from(self, rule: Rule, score: float) -> list[tuple[float, int]]:
        """The candidates whose weighted score is at least ``score``, ``(score, position)``,
        in no particular order."""
        return [pair for pair in self._scored(rule) if pair[0] >= score]

    def channel_lists(self, rule: Rule, depth: int) -> tuple[list[int], list[int]]:
        """Each channel's ranked positions for reciprocal-rank fusion, cut at ``depth``: the
        vector channel's (``cosine >= floor``) by cosine, the lexical channel's (a match the
        gate admits) by raw BM25, ties by memory_id in both."""
        vector: list[tuple[float, int]] = []
        if rule.floor is not None and self.prepared.vector is not None:
            vector = [(c, p) for p, c in self.cosines.items() if c >= rule.floor]
        gate = rule.gate
        words = [
            (raw, p) for p, raw in self.raws.items() if gate is None or self.cosines[p] >= gate
        ]
        names = self.prepared.names
        return [p for _, p in top(vector, depth, names)], [p for _, p in top(words, depth, names)]
