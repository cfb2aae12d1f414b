"""Cross-validated choice of a profile from a search space, on the channel table.

Every candidate's ranking is fused from the channel table (``channel_frame``: the search's
own values, no new search) and scored per query with the metric engine at the objective's
cutoff. The queries are split into ``folds`` deterministic folds (``fold_of``); for each fold,
the candidate with the best mean objective on the *other* folds is chosen (ties: the first in
the search space's order) and scored on the fold's own queries, so every figure reported as
out-of-fold comes from a choice that never saw those queries. The training figure beside it
(the chosen candidate's mean on the folds it was chosen on) shows how much the choice flatters
itself. The profile written is the candidate best on all queries; its expected quality is the
out-of-fold figure, not its own.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

import hotmem
from hotmem_eval.channel_frame import ChannelFrame, channel_frame, fused_ranking
from hotmem_eval.comparison import compare_profiles, compared_metrics
from hotmem_eval.errors import EvalError
from hotmem_eval.fixtures import Fixture
from hotmem_eval.metrics import per_query_metrics
from hotmem_eval.paired import bootstrap_ci

__all__ = ["OUT_OF_FOLD", "Fold", "Tuned", "fold_of", "tune"]

#: The profile name of the out-of-fold rankings in comparisons.
OUT_OF_FOLD = "tuned (out-of-fold)"


def fold_of(
    query_ids: Sequence[str], categories: Sequence[str | None], folds: int, seed: int
) -> dict[str, int]:
    """query_id -> fold (0-based): within each category (all queries together when none has
    one), the queries ordered by sha256 of ``seed`` and their id, dealt round-robin. So each
    fold holds about as many of every category, and the split depends on the ids and the seed
    only.

    Raises:
        EvalError: fewer queries than folds, or fewer than 2 folds.
    """
    if folds < 2 or len(query_ids) < folds:
        raise EvalError(
            f"expected 2..{len(query_ids)} folds for {len(query_ids)} queries, found {folds}"
        )
    by_category: dict[str, list[str]] = {}
    for query_id, category in zip(query_ids, categories, strict=True):
        by_category.setdefault(category or "", []).append(query_id)
    found: dict[str, int] = {}
    dealt = 0
    for category in sorted(by_category):
        ordered = sorted(
            by_category[category],
            key=lambda q: hashlib.sha256(f"{seed}\x00{q}".encode()).digest(),
        )
        for query_id in ordered:
            found[query_id] = dealt % folds
            dealt += 1
    return found


@dataclass(frozen=True, slots=True)
class Fold:
    """One fold: the candidate chosen on the other folds, its mean objective there (training)
    and on this fold's queries (out-of-fold)."""

    fold: int
    queries: int
    chosen: str
    training: float
    out_of_fold: float


@dataclass(frozen=True, slots=True)
class Tuned:
    """The outcome of ``tune``.

    Attributes:
        chosen: the candidate best on every query (the profile to write).
        chosen_mean: its mean objective on every query (in-sample).
        folds: each fold's choice and figures.
        out_of_fold_mean: the mean objective of the out-of-fold choices over all queries.
        out_of_fold_ci: its 95% bootstrap interval.
        per_query: every metric per query, for the out-of-fold rankings (``OUT_OF_FOLD``) and
            each baseline, stacked with a ``profile`` column.
        comparisons: the out-of-fold rankings against each baseline (``compare_profiles``).
        candidates: how many candidates were scored.
    """

    chosen: hotmem.Profile
    chosen_mean: float
    folds: tuple[Fold, ...]
    out_of_fold_mean: float
    out_of_fold_ci: tuple[float, float]
    per_query: pl.DataFrame
    comparisons: pl.DataFrame
    candidates: int


def _per_query(
    table: ChannelFrame, fixture: Fixture, profile: hotmem.Profile, k: int
) -> pl.DataFrame:
    """Every metric per query of ``profile``'s fused ranking at cutoff ``k``."""
    ranking = fused_ranking(table, profile, limit=k)
    scopes = pl.from_arrow(fixture.queries.select(["query_id", "identifier"]))
    results = ranking.join(scopes, on="query_id", how="left")  # type: ignore[arg-type]
    return per_query_metrics(
        results.select("query_id", "rank", "memory_id", "identifier"),
        fixture.qrels,
        fixture.queries,
        fixture.groups,
        k=k,
        relevant_grade=fixture.relevant_grade,
    )


def _objective_values(
    frames: Sequence[pl.DataFrame], objective: str
) -> tuple[list[str], np.ndarray[Any, Any]]:
    """The queries that have the objective, and each candidate's value on each of them."""
    target = frames[0].filter(pl.col("metric") == objective, pl.col("applicable"))
    judged = [str(q) for q in target["query_id"].to_list()]
    if not judged:
        raise EvalError(f"no query has a value of {objective} (no relevant memory)")
    position = {query_id: i for i, query_id in enumerate(judged)}
    values = np.zeros((len(frames), len(judged)))
    for row, scored in enumerate(frames):
        kept = scored.filter(pl.col("metric") == objective, pl.col("applicable"))
        for query_id, value in kept.select("query_id", "value").iter_rows():
            values[row, position[query_id]] = value
    return judged, values


def _cross_validate(
    values: np.ndarray[Any, Any], fold_ids: np.ndarray[Any, Any], names: Sequence[str]
) -> tuple[list[Fold], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Each fold's choice on the other folds: the folds, every query's out-of-fold value, and
    the candidate (row) that ranked it."""
    results: list[Fold] = []
    out_of_fold = np.zeros(values.shape[1])
    chosen_rows = np.zeros(values.shape[1], dtype=np.int64)
    for fold in sorted(set(fold_ids.tolist())):
        test = fold_ids == fold
        training = values[:, ~test].mean(axis=1)
        best = int(np.argmax(training))  # the first of the best
        out_of_fold[test] = values[best, test]
        chosen_rows[test] = best
        results.append(
            Fold(
                fold,
                int(test.sum()),
                names[best],
                float(training[best]),
                float(values[best, test].mean()),
            )
        )
    return results, out_of_fold, chosen_rows


def _out_of_fold_frame(
    frames: Sequence[pl.DataFrame],
    judged: list[str],
    chosen_rows: np.ndarray[Any, Any],
    query_ids: list[str],
) -> pl.DataFrame:
    """Every metric per query of the out-of-fold rankings (a query without the objective
    takes the first fold's choice: no choice was made for it)."""
    pieces = [
        frames[row].filter(
            pl.col("query_id").is_in([judged[i] for i in np.flatnonzero(chosen_rows == row)])
        )
        for row in sorted(set(chosen_rows.tolist()))
    ]
    judged_set = set(judged)
    unjudged = [q for q in query_ids if q not in judged_set]
    if unjudged:
        pieces.append(frames[int(chosen_rows[0])].filter(pl.col("query_id").is_in(unjudged)))
    stacked: pl.DataFrame = pl.concat(pieces)
    return stacked.with_columns(profile=pl.lit(OUT_OF_FOLD))


def tune(
    table: pa.Table,
    fixture: Fixture,
    candidates: Sequence[hotmem.Profile],
    *,
    objective: str,
    k: int,
    folds: int,
    seed: int,
    baselines: Sequence[hotmem.Profile],
    progress: hotmem.ProgressCallback | None = None,
) -> Tuned:
    """Choose a candidate by ``folds``-fold cross-validation on ``objective`` (a metric name
    of the registry, at cutoff ``k``), and compare the out-of-fold rankings with each of
    ``baselines`` (the module docstring). ``progress`` is called with (candidates scored,
    candidates).

    Raises:
        EvalError: no query has the objective (no relevant memory), or as ``fold_of`` and
            ``channel_frame.fused_ranking``.
    """
    frame = channel_frame(table)  # converted once, read by every candidate
    query_ids = [str(q) for q in fixture.queries.column("query_id").to_pylist()]
    assigned = fold_of(query_ids, fixture.queries.column("category").to_pylist(), folds, seed)
    frames = []
    for profile in candidates:
        frames.append(_per_query(frame, fixture, profile, k))
        if progress is not None:
            progress(len(frames), len(candidates))
    judged, values = _objective_values(frames, objective)
    fold_ids = np.array([assigned[q] for q in judged])
    results, out_of_fold, chosen_rows = _cross_validate(
        values, fold_ids, [c.name for c in candidates]
    )
    overall = values.mean(axis=1)
    chosen = int(np.argmax(overall))
    tuned = _out_of_fold_frame(frames, judged, chosen_rows, query_ids)
    stacked, comparisons = [tuned], []
    metrics = compared_metrics(fixture.groups.num_rows > 0)  # groups: else they restate others
    for baseline in baselines:
        scores = _per_query(frame, fixture, baseline, k).with_columns(profile=pl.lit(baseline.name))
        stacked.append(scores)
        both = pl.concat([scores, tuned])
        comparisons.append(
            compare_profiles(both, profiles=[baseline.name, OUT_OF_FOLD], metrics=metrics)
        )
    return Tuned(
        chosen=candidates[chosen],
        chosen_mean=float(overall[chosen]),
        folds=tuple(results),
        out_of_fold_mean=math.fsum(out_of_fold.tolist()) / len(judged),
        out_of_fold_ci=bootstrap_ci(out_of_fold.tolist()),
        per_query=pl.concat(stacked),
        comparisons=pl.concat(comparisons) if comparisons else pl.DataFrame(),
        candidates=len(candidates),
    )
