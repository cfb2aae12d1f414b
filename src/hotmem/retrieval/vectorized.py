"""The numpy engine: the reference engine's answer, exhaustively, in a few array operations.

- **Cosines**: float32 matrix products of the scope's vectors (zero-copy views of the
  index's columns) with the query, each within ``cosines.MARGIN`` of the exact cosine. A
  position gets its exact cosine (``cosines.py``, the reference's definition) whenever the
  product, moved by the margin, could change its fate: its admission by the floor or the gate,
  or its place against the k-th score (the confirmation rule).
- **BM25**: each phrase's postings (views of the index's arrays) scattered into one float64
  array per lexical index, the shares computed by ``postings.share`` element by element, in
  query order: the reference's additions in the reference's order, so the same bits.
- **Fusion**: ``fusion.weighted`` over arrays bounds every score within the cosine's margin
  (plus a few ulps); the k-th largest lower bound of a sure candidate is a threshold, and only
  the positions whose upper bound reaches it are scored exactly and ranked by ``fusion.top``
  (ties by memory_id). Reciprocal-rank fusion ranks each channel the same way.

Arrays cover the scope (``offsets`` index them); a scope of every memory is the index's
columns as they are, any other one is gathered. numpy is imported with this module, on first
use (``hotmem[fast]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hotmem.retrieval.cosines import MARGIN, hash_cosines, matrix, products, space_cosines
from hotmem.retrieval.fusion import Rule, top, weighted
from hotmem.retrieval.postings import share
from hotmem.retrieval.prepared import Prepared
from hotmem.retrieval.reference import cosines_of
from hotmem.store.lexical_index import TABLES

__all__ = ["VectorizedChannels"]

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
Offsets = npt.NDArray[np.intp]
_ULPS = 16 * 2.0**-52  # rounding of a weighted score, relative to the sum of the weights


def _kth_largest(values: Floats, k: int) -> float:
    return float(np.partition(values, len(values) - k)[len(values) - k])


class VectorizedChannels:
    """Both channels of one query over its scope (``search.Channels``), with numpy."""

    def __init__(self, prepared: Prepared) -> None:
        self.prepared = prepared
        index = prepared.index
        self.positions: Offsets | None = (
            None if prepared.whole else np.asarray(prepared.scope, dtype=np.intp)
        )
        self.size = len(prepared.scope)
        self._importances = self._gather(np.frombuffer(index.importances, dtype=np.float64))
        self.raws, self.matched = self._bm25()
        self.best = float(self.raws[self.matched].max()) if self.matched.any() else 0.0
        self.approx, self.margin = self._products()
        self._exact = np.empty(self.size, dtype=np.float64)  # the exact cosines computed
        self._known = np.zeros(self.size, dtype=np.bool_)  # ... and where

    def _gather(self, column: Any) -> Any:
        """``column`` (by position) over the scope: itself for every memory, else a copy."""
        return column if self.positions is None else column[self.positions]

    def _position(self, offsets: Any) -> Any:
        return offsets if self.positions is None else self.positions[offsets]

    # -- channels --------------------------------------------------------------------------------
    def _bm25(self) -> tuple[Floats, Bools]:
        n = len(self.prepared.index.rowids)
        total: Floats | None = None
        matched = np.zeros(n, dtype=np.bool_)
        for table in TABLES:
            phrases = [p for p in self.prepared.phrases if p.table == table]
            if not phrases:
                continue
            sums = np.zeros(n, dtype=np.float64)
            lengths = np.frombuffer(phrases[0].lengths, dtype=np.float64)
            for phrase in phrases:
                if phrase.scores is not None:
                    at = np.fromiter(phrase.scores, dtype=np.intp, count=len(phrase.scores))
                    values = np.fromiter(phrase.scores.values(), dtype=np.float64, count=len(at))
                else:
                    assert phrase.postings is not None
                    at = np.frombuffer(phrase.postings.positions, dtype=np.int64)
                    frequency = np.frombuffer(phrase.postings.frequencies, dtype=np.float64)
                    values = share(phrase.idf, phrase.avgdl, frequency, lengths[at])
                sums[at] += values
                matched[at] = True
            total = sums if total is None else total + sums
        if total is None:
            return np.zeros(self.size, dtype=np.float64), np.zeros(self.size, dtype=np.bool_)
        return self._gather(total), self._gather(matched)

    def _products(self) -> tuple[Floats, float]:
        vector, index = self.prepared.vector, self.prepared.index
        if vector is None or (vector.space is None and not any(vector.values)):
            return np.zeros(self.size, dtype=np.float64), 0.0
        if vector.space is None:
            rows, query = index.vectors, np.asarray(vector.values, dtype=np.float32)
        else:
            rows = vector.space.values
            query = np.frombuffer(vector.packed, dtype="<f4").astype(np.float32)
        return products(rows, query, self.positions), MARGIN

    # -- exact values ----------------------------------------------------------------------------
    def exact(self, offsets: Offsets) -> Floats:
        """The exact cosines of the scope's ``offsets``, computed once each."""
        vector = self.prepared.vector
        if vector is None or not self.margin:
            return self.approx[offsets]
        wanted = np.zeros(self.size, dtype=np.bool_)
        wanted[offsets] = True
        missing = np.flatnonzero(wanted & ~self._known)  # ascending, once each
        if len(missing):
            positions = self._position(missing)
            if vector.space is None:
                values = hash_cosines(self.prepared.index, positions.tolist(), vector.values)
            else:
                query = np.frombuffer(vector.packed, dtype="<f4").astype(np.float64)
                values = space_cosines(matrix(vector.space.values, positions), query)
            self._exact[missing] = values
            self._known[missing] = True
        found: Floats = self._exact[offsets]
        return found

    def _offset(self, position: int) -> int | None:
        if self.positions is None:
            return position if 0 <= position < self.size else None
        found = int(np.searchsorted(self.positions, position))
        if found < self.size and self.positions[found] == position:
            return found
        return None

    def cosine(self, position: int) -> float:
        """The exact cosine of ``position`` (in scope or not; 0.0 without a vector channel)."""
        offset = self._offset(position)
        if offset is not None:
            return float(self.exact(np.asarray([offset], dtype=np.intp))[0])
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

    def values(self, positions: Sequence[int]) -> tuple[list[float], list[float | None]]:
        """The exact cosine and the raw BM25 (``None``: no match) of each of ``positions``
        (positions in scope: those a ranking returned)."""
        offsets = self._offsets(positions)
        cosines: list[float] = self.exact(offsets).tolist()
        return cosines, self._raws(offsets)

    def cosines_at(self, positions: Sequence[int]) -> list[float]:
        """The exact cosine of each of ``positions`` (in scope)."""
        cosines: list[float] = self.exact(self._offsets(positions)).tolist()
        return cosines

    def raws_of(self, positions: Sequence[int]) -> list[float | None]:
        """The raw BM25 (``None``: no match) of each of ``positions`` (in scope)."""
        return self._raws(self._offsets(positions))

    def _offsets(self, positions: Sequence[int]) -> Offsets:
        """The offsets of ``positions`` (in scope)."""
        if isinstance(positions, range):
            at = np.arange(positions.start, positions.stop, positions.step, dtype=np.intp)
        else:
            at = np.asarray(positions, dtype=np.intp)
        return at if self.positions is None else np.searchsorted(self.positions, at)

    def _raws(self, offsets: Offsets) -> list[float | None]:
        raws: list[float | None] = [None] * len(offsets)
        matches = np.flatnonzero(self.matched[offsets])  # a few, where the rest are many
        for i, raw in zip(matches.tolist(), self.raws[offsets[matches]].tolist(), strict=True):
            raws[i] = raw
        return raws

    def candidates(self, floor: float) -> list[int]:
        """The positions in scope with a lexical match or an exact cosine of at least
        ``floor``, ascending: exact cosines only where the product, moved by the margin,
        leaves it in doubt."""
        margin = self.margin
        found = self.matched | (self.approx - margin >= floor)
        doubtful = np.flatnonzero(~found & (self.approx + margin >= floor))
        if len(doubtful):
            found[doubtful] = self.exact(doubtful) >= floor
        positions: list[int] = self._position(np.flatnonzero(found)).tolist()
        return positions

    # -- ranking ---------------------------------------------------------------------------------
    def _admitted(self, rule: Rule, offsets: Any, cosine: Floats) -> Bools:
        """Who among ``offsets`` is a candidate, when their cosines are ``cosine``."""
        matched: Bools = self.matched[offsets]
        admitted = matched if rule.gate is None else matched & (cosine >= rule.gate)
        if rule.floor is not None and self.prepared.vector is not None:
            admitted = admitted | (cosine >= rule.floor)
        return admitted

    def _pairs(self, values: Floats, offsets: Offsets) -> list[tuple[float, int]]:
        return list(zip(values.tolist(), self._position(offsets).tolist(), strict=True))

    def _bounds(self, rule: Rule) -> tuple[Offsets, Floats, Floats, float, Bools]:
        """The offsets that may be candidates, their normalised BM25, an upper bound of their
        weighted score less ``slack`` (the score's largest error), ``slack``, and which of them
        are candidates for sure."""
        w, margin = rule.weights, self.margin
        maybe = np.flatnonzero(self._admitted(rule, slice(None), self.approx + margin))
        bm25 = np.zeros(len(maybe), dtype=np.float64)
        if self.best > 0.0:
            np.divide(self.raws[maybe], self.best, out=bm25, where=self.matched[maybe])
        approx = self.approx[maybe]
        bound = weighted(w, approx, bm25, self._importances[maybe])
        slack = abs(w.cosine) * margin + _ULPS * (abs(w.cosine) + abs(w.bm25) + abs(w.importance))
        return maybe, bm25, bound, slack, self._admitted(rule, maybe, approx - margin)

    def _scored(self, rule: Rule, finalists: Offsets, bm25: Floats) -> list[tuple[float, int]]:
        """The exact ``(score, position)`` of the candidates among ``finalists``."""
        cosine = self.exact(finalists)
        admitted = self._admitted(rule, finalists, cosine)
        finalists, cosine, bm25 = finalists[admitted], cosine[admitted], bm25[admitted]
        scores = weighted(rule.weights, cosine, bm25, self._importances[finalists])
        return self._pairs(scores, finalists)

    def weighted_top(self, rule: Rule, limit: int) -> list[tuple[float, int]]:
        """The ``limit`` best candidates by weighted fusion, ``(score, position)``."""
        maybe, bm25, bound, slack, sure = self._bounds(rule)
        kept = np.ones(len(maybe), dtype=np.bool_)
        if int(sure.sum()) >= limit:
            kept = bound + slack >= _kth_largest(bound[sure] - slack, limit)
        return top(self._scored(rule, maybe[kept], bm25[kept]), limit, self.prepared.names)

    def weighted_from(self, rule: Rule, score: float) -> list[tuple[float, int]]:
        """The candidates whose weighted score is at least ``score``, ``(score, position)``,
        in no particular order."""
        maybe, bm25, bound, slack, _ = self._bounds(rule)
        kept = bound + slack >= score
        return [pair for pair in self._scored(rule, maybe[kept], bm25[kept]) if pair[0] >= score]

    def _channel(
        self, values: Floats, sure: Bools, maybe: Bools, depth: int, slack: float
    ) -> Offsets:
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
        names, margin = self.prepared.names, self.margin
        vector: list[tuple[float, int]] = []
        if rule.floor is not None and self.prepared.vector is not None:
            sure = self.approx - margin >= rule.floor
            maybe = self.approx + margin >= rule.floor
            offsets = self._channel(self.approx, sure, maybe, depth, margin)
            cosine = self.exact(offsets)
            kept = cosine >= rule.floor
            vector = self._pairs(cosine[kept], offsets[kept])
        if rule.gate is None:
            offsets = self._channel(self.raws, self.matched, self.matched, depth, 0.0)
        else:
            sure = self.matched & (self.approx - margin >= rule.gate)
            maybe = self.matched & (self.approx + margin >= rule.gate)
            offsets = self._channel(self.raws, sure, maybe, depth, 0.0)
            offsets = offsets[self.exact(offsets) >= rule.gate]
        words = self._pairs(self.raws[offsets], offsets)
        return [p for _, p in top(vector, depth, names)], [p for _, p in top(words, depth, names)]
