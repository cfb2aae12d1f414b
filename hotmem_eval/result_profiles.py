"""The blocks of a result document that compare its profiles (empty with one profile):

- ``comparisons``: ``comparison.compare_profiles`` of the profiles, baseline first, one object
  per row (``COMPARISON_COLUMNS``);
- ``adoption``: ``adoption.decide_adoption`` of those comparisons;
- ``ablation``: the baseline against itself with each channel removed in turn: ``baseline``,
  ``variants`` (``removed``, ``name``, ``configuration``) and ``comparisons`` (as above).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from hotmem_eval.ablation import Ablation
from hotmem_eval.adoption import adoption_block, decide_adoption
from hotmem_eval.comparison import COMPARISON_COLUMNS, compare_profiles, compared_metrics
from hotmem_eval.errors import EvalError
from hotmem_eval.evaluate import EvalRun

__all__ = ["comparison_blocks", "comparison_rows", "stacked_per_query"]


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


def comparison_blocks(
    runs: Sequence[EvalRun], ablation: Ablation | None, *, profiles_file: str | None = None
) -> dict[str, Any]:
    """``comparisons``, ``adoption`` and ``ablation`` of a result document (the module
    docstring): empty and null for one profile. ``profiles_file``, the run's ``--profiles``, is
    what the adoption command imports.

    Raises:
        EvalError: no run, or two runs of one profile name.
    """
    names = [run.profile.name for run in runs]
    if not names or len(set(names)) != len(names):
        raise EvalError(f"expected one or more runs of distinct profiles, found {names!r}")
    if len(runs) == 1:
        return {"comparisons": [], "adoption": None, "ablation": None}
    groups = runs[0].fixture.groups.num_rows > 0
    comparisons = comparison_rows(stacked_per_query(runs), names, groups=groups)
    frame = pl.DataFrame(comparisons, schema=COMPARISON_COLUMNS)
    profiles = [run.profile for run in runs]
    decision = decide_adoption(frame, profiles, k=runs[0].top_k, profiles_file=profiles_file)
    blocks: dict[str, Any] = {
        "comparisons": comparisons,
        "adoption": adoption_block(decision),
        "ablation": None,
    }
    if ablation is not None:
        blocks["ablation"] = {
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
    return blocks
