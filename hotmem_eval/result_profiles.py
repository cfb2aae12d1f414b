"""The result document of a run over several profiles (schema version 2).

The document is the baseline's (the first profile's) ``result.build_result``, unchanged, with
three keys added:

- ``profiles``: one entry per profile, baseline first: ``name``, ``configuration`` (the
  profile's ``to_dict``), ``metrics``, ``queries``, ``transfer``, ``recommendation``, in the
  shapes of the top-level keys of those names;
- ``comparisons``: ``comparison.compare_profiles`` of the profiles, one object per row
  (``COMPARISON_COLUMNS``);
- ``ablation``: the baseline against itself with each channel removed in turn: ``baseline``,
  ``variants`` (``removed``, ``name``, ``configuration``) and ``comparisons`` (as above).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import polars as pl

from hotmem_eval.adoption import adoption_block, decide_adoption
from hotmem_eval.comparison import COMPARISON_COLUMNS, compare_profiles, compared_metrics
from hotmem_eval.errors import EvalError
from hotmem_eval.evaluate import Ablation, EvalRun
from hotmem_eval.result import (
    build_result,
    metrics_block,
    metrics_by_k,
    queries_block,
    recommendation_block,
    transfer_block,
)

__all__ = ["build_profiles_result", "comparison_rows", "stacked_per_query"]


def stacked_per_query(runs: Sequence[EvalRun]) -> pl.DataFrame:
    """Every run's per-query metrics with a ``profile`` column, stacked in run order."""
    return pl.concat([run.per_query.with_columns(profile=pl.lit(run.profile.name)) for run in runs])


def comparison_rows(
    per_query: pl.DataFrame, names: Sequence[str], *, groups: bool = True
) -> list[dict[str, Any]]:
    """``compare_profiles`` of ``names`` (baseline first) as JSON-ready objects; without
    ``groups`` (a fixture with no near-duplicate group), the group metrics are left out."""
    return compare_profiles(
        per_query, profiles=list(names), metrics=compared_metrics(groups)
    ).to_dicts()


def build_profiles_result(
    runs: Sequence[EvalRun],
    ablation: Ablation | None,
    *,
    generated_at: datetime,
    git_commit: str | None,
    profiles_file: str | None = None,
) -> dict[str, Any]:
    """The JSON document of a run over two or more profiles (see the module docstring);
    ``profiles_file``, the run's ``--profiles``, is what the adoption command imports.

    Raises:
        EvalError: fewer than two runs, or two with one name.
    """
    names = [run.profile.name for run in runs]
    if len(names) < 2 or len(set(names)) != len(names):
        raise EvalError(f"expected two or more runs of distinct profiles, found {names!r}")
    document = build_result(runs[0], generated_at=generated_at, git_commit=git_commit)
    document["profiles"] = [
        {
            "name": run.profile.name,
            "configuration": run.profile.to_dict(),
            "metrics": metrics_block(run.aggregate),
            "metrics_by_k": metrics_by_k(run),
            "queries": queries_block(run),
            "transfer": transfer_block(run),
            "recommendation": recommendation_block(run),
            "stages_s": dict(run.stages_s),
        }
        for run in runs
    ]
    groups = runs[0].fixture.groups.num_rows > 0
    document["comparisons"] = comparison_rows(stacked_per_query(runs), names, groups=groups)
    frame = pl.DataFrame(document["comparisons"], schema=COMPARISON_COLUMNS)
    profiles = [run.profile for run in runs]
    decision = decide_adoption(frame, profiles, k=runs[0].top_k, profiles_file=profiles_file)
    document["adoption"] = adoption_block(decision)
    if ablation is not None:
        document["ablation"] = {
            "baseline": ablation.baseline.name,
            "variants": [
                {"removed": channel, "name": variant.name, "configuration": variant.to_dict()}
                for channel, variant in ablation.variants
            ],
            "comparisons": comparison_rows(
                ablation.per_query,
                [ablation.baseline.name, *(variant.name for _, variant in ablation.variants)],
                groups=groups,
            )
            if ablation.variants
            else [],
        }
    return document
