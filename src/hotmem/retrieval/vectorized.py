"""The numpy engine: the reference engine's answer, exhaustively, in a few array operations.

- **Cosines**: one float32 matrix product of the scope's vectors (zero-copy views of the
  index's columns) with the query, each within ``cosines.MARGIN`` of the exact cosine. A
  position gets its exact cosine (``cosines.py``, the reference's definition) whenever the
  product, moved by the margin, could change its fate: its admission by the floor or the gate,
  or its place against the k-th score (the confirmation rule).
- **BM25**: each phrase's postings scattered into one float64 array per lexical index, the
  shares computed by ``postings.share`` element by element, in query order: the reference's
  additions in the reference's order, so the same bits.
- **Fusion**: ``fusion.weighted`` over arrays bounds every score within the cosine's margin
  (plus a few ulps); the k-th largest lower bound of a sure candidate is a threshold, and only
  the positions whose upper bound reaches it are scored exactly and ranked by ``fusion.top``
  (ties by memory_id). Reciprocal-rank fusion ranks each channel the same way.

numpy is imported with this module, on first use (``hotmem[fast]``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from hotmem.retrieval.cosines import MARGIN, hash_cosines, space_cosines
from hotmem.retrieval.fusion import Rule, top, weighted
from hotmem.retrieval.postings import share
from hotmem.retrieval.prepared import Prepared
from hotmem.retrieval.reference import cosines_of
from hotmem.store.lexical_index import TABLES

__all__ = ["VectorizedChannels"]

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
_ULPS = 16 * 2.0**-52  # rounding of a weighted score, relative to the sum of the weights


def _kth_largest(values: Floats, k: int) -> float:
    return float(np.partition(values, len(values) - k)[len(values) - k])


class VectorizedChannels:
    """Both channels of one query over its scope (``search.Channels``), with numpy."""

    def __init__(self, prepared: Prepared) -> None:
        self.prepared = prepared
        index = prepared.index
        self.scope = prepared.scope
        self.positions = np.asarray(prepared.scope, dtype=np.int64)
        self._importances = np.frombuffer(index.importances, dtype=np.float64)[self.positions]
        self.raws, self.matched = self._bm25()
        self.best = float(self.raws[self.matched].max()) if self.matched.any() else 0.0
        self.approx, self.margin = self._products()
        self._exact: dict[int, float] = {}

    # -- channels --------------------------------------------------------------------------------
    def _bm25(self) -> tuple[Floats, Bools]:
        index = self.prepared.index
        n = len(index.rowids)
        total = np.zeros(n, dtype=np.float64)
        matched = np.zeros(n, dtype=np.bool_)
        for table in TABLES:
            sums = np.zeros(n, dtype=np.float64)
            for phrase in self.prepared.phrases:
                if phrase.table != table:
                    continue
                if phrase.scores is not None:
                    at = np.fromiter(phrase.scores.keys(), dtype=np.int64, count=len(phrase.scores))
                    sums[at] += np.fromiter(phrase.scores.values(), dtype=np.float64, count=len(at))
                else:
                    assert phrase.postings is not None
                    at = np.frombuffer(phrase.postings.positions, dtype=np.int32)
                    frequency = np.frombuffer(phrase.postings.frequencies, dtype=np.int32)
                    length = np.frombuffer(phrase.lengths, dtype=np.int32)[at]
                    sums[at] += share(
                        phrase.idf,
                        phrase.avgdl,
                        frequency.astype(np.float64),
                        length.astype(np.float64),
                    )
                matched[at] = True
            total += sums
        return total[self.positions], matched[self.positions]

    def _products(self) -> tuple[Floats, float]:
        vector, index = self.prepared.vector, self.prepared.index
        size = len(self.positions)
        if vector is None or (vector.space is None and not any(vector.values)):
            return np.zeros(size, dtype=np.float64), 0.0
        if vector.space is None:
            matrix = np.frombuffer(index.vectors, dtype=np.float32).reshape(-1, len(vector.values))
            query = np.asarray(vector.values, dtype=np.float32)
        else:
            space = vector.space
            matrix = np.frombuffer(space.values, dtype=np.float32).reshape(-1, space.dimension)
            query = np.frombuffer(vector.packed, dtype="<f4").astype(np.float32)
        if size == len(matrix) and (size == 0 or self.positions[-1] == size - 1):
            products = matrix @ query  # the whole index, in order
        elif 4 * size > len(matrix):
            products = (matrix @ query)[self.positions]
        else:
            products = matrix[self.positions] @ query
        return products.astype(np.float64), MARGIN

    # -- exact values ----------------------------------------------------------------------------
    def exact(self, offsets: npt.NDArray[np.int64]) -> Floats:
        """The exact cosines of the scope's ``offsets``, computed once each."""
        vector = self.prepared.vector
        if vector is None or not self.margin:
            return self.approx[offsets]
        known = self._exact
        missing = [int(o) for o in offsets if int(o) not in known]
        if missing:
            positions = self.positions[missing]
            if vector.space is None:
                values = hash_cosines(self.prepared.index, positions.tolist(), vector.values)
            else:
                space = vector.space
                rows = np.frombuffer(space.values, dtype=np.float32).reshape(-1, space.dimension)
                query = np.frombuffer(vector.packed, dtype="<f4").astype(np.float64)
                values = space_cosines(rows[positions], query).tolist()
            known.update(zip(missing, values, strict=True))
        return np.fromiter((known[int(o)] for o in offsets), dtype=np.float64, count=len(offsets))

    def _offset(self, position: int) -> int | None:
        found = int(np.searchsorted(self.positions, position))
        if found < len(self.positions) and self.positions[found] == position:
            return found
        return None

    def cosine(self, position: int) -> float:
        """The exact cosine of ``position`` (in scope or not; 0.0 without a vector channel)."""
        offset = self._offset(position)
        if offset is not None:
            return float(self.exact(np.asarray([offset], dtype=np.int64))[0])
        return cosines_of(self.prepared, [position])[0]

    def raw(self, position: int) -> float | None:
        """The raw BM25 of ``position`` when it is a lexical match in scope."""
        offset = self._offset(position)
        if offset is None or not self.matched[offset]:
            return None
        return float(self.raws[offset])

    def in_scope(self, position: int) -> bool:
        """Whether ``position`` is searched."""
        return self._offset(position) is not None

    # -- ranking ---------------------------------------------------------------------------------
    def _admission(self, rule: Rule, shift: float) -> Bools:
        """Who is admitted when every cosine is its approximation plus ``shift``."""
        cosine = self.approx + shift
        admitted = np.zeros(len(cosine), dtype=np.bool_)
        if rule.floor is not None and self.prepared.vector is not None:
            admitted |= cosine >= rule.floor
        if rule.gate is None:
            admitted |= self.matched
        else:
            admitted |= self.matched & (cosine >= rule.gate)
        return admitted

    def _pairs(self, values: Floats, offsets: Any) -> list[tuple[float, int]]:
        positions = self.positions[offsets].tolist()
        return list(zip(values.tolist(), positions, strict=True))

    def weighted_top(self, rule: Rule, limit: int) -> list[tuple[float, int]]:
        """The ``limit`` best candidates by weighted fusion, ``(score, position)``."""
        w = rule.weights
        bm25 = np.zeros(len(self.raws), dtype=np.float64)
        if self.best > 0.0:
            np.divide(self.raws, self.best, out=bm25, where=self.matched)
        approx = weighted(w, self.approx, bm25, self._importances)
        slack = abs(w.cosine) * self.margin + _ULPS * (
            abs(w.cosine) + abs(w.bm25) + abs(w.importance)
        )
        sure, maybe = self._admission(rule, -self.margin), self._admission(rule, self.margin)
        threshold = -np.inf
        if int(sure.sum()) >= limit:
            threshold = _kth_largest(approx[sure] - slack, limit)
        finalists = np.flatnonzero(maybe & (approx + slack >= threshold))
        cosine = self.exact(finalists)
        admitted = self._admission_exact(rule, finalists, cosine)
        finalists, cosine = finalists[admitted], cosine[admitted]
        scores = weighted(w, cosine, bm25[finalists], self._importances[finalists])
        return top(self._pairs(scores, finalists), limit, self.prepared.names)

    def _admission_exact(self, rule: Rule, offsets: Any, cosine: Floats) -> Bools:
        matched = self.matched[offsets]
        admitted = np.zeros(len(offsets), dtype=np.bool_)
        if rule.floor is not None and self.prepared.vector is not None:
            admitted |= cosine >= rule.floor
        admitted |= matched if rule.gate is None else matched & (cosine >= rule.gate)
        return admitted

    def _channel(self, values: Floats, sure: Bools, maybe: Bools, depth: int, slack: float) -> Any:
        """The offsets that may be among the ``depth`` highest ``values`` of the truly
        admitted, given the admitted for sure and the admitted maybe (``slack``: how far a
        value may be from its exact one)."""
        if int(sure.sum()) >= depth:
            threshold = _kth_largest(values[sure] - slack, depth)
            return np.flatnonzero(maybe & (values + slack >= threshold))
        return np.flatnonzero(maybe)

    def channel_lists(self, rule: Rule, depth: int) -> tuple[list[int], list[int]]:
        """Each channel's ranked positions for reciprocal-rank fusion, cut at ``depth``
        (``reference.ReferenceChannels.channel_lists``)."""
        names = self.prepared.names
        vector: list[tuple[float, int]] = []
        if rule.floor is not None and self.prepared.vector is not None:
            sure = self.approx - self.margin >= rule.floor
            maybe = self.approx + self.margin >= rule.floor
            offsets = self._channel(self.approx, sure, maybe, depth, self.margin)
            cosine = self.exact(offsets)
            kept = cosine >= rule.floor
            vector = self._pairs(cosine[kept], offsets[kept])
        if rule.gate is None:
            offsets = self._channel(self.raws, self.matched, self.matched, depth, 0.0)
            words = self._pairs(self.raws[offsets], offsets)
        else:
            sure = self.matched & (self.approx - self.margin >= rule.gate)
            maybe = self.matched & (self.approx + self.margin >= rule.gate)
            offsets = self._channel(self.raws, sure, maybe, depth, 0.0)
            kept = self.exact(offsets) >= rule.gate
            words = self._pairs(self.raws[offsets[kept]], offsets[kept])
        return [p for _, p in top(vector, depth, names)], [p for _, p in top(words, depth, names)]
