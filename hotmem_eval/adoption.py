"""Whether to adopt a compared profile: the decision that comes before the seed's rules.

With two or more profiles, a candidate is **eligible** when it beats the baseline on the
objective (the headline metric, nDCG@k at the run's first cutoff, overall) with a
Holm-adjusted p below ``ALPHA`` (the family: every candidate's overall p-value of the
objective) and a positive mean difference, and loses Recall@k significantly in no category
(a category row with a negative difference and a Holm-adjusted p below ``ALPHA``). The
eligible candidate with the highest objective (ties: the first in the run's order) is the one
to adopt, with the command that makes it a store's default (a profile of one's own is
imported from the run's ``--profiles`` file first). Without an eligible candidate the
seed's rules (``decision.py``) stand alone.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import polars as pl

import hotmem
from hotmem_eval.comparison_report import ALPHA
from hotmem_eval.metric_registry import METRICS, OVERALL
from hotmem_eval.paired import holm_adjust

__all__ = ["OBJECTIVE", "Adoption", "Candidate", "adoption_block", "decide_adoption"]

#: The metric a candidate must beat the baseline on (overall, at the run's first cutoff).
OBJECTIVE: Final = "ndcg_at_k"
#: The metric a candidate must not lose significantly in any category.
GUARDED: Final = "recall_at_k"


@dataclass(frozen=True, slots=True)
class Candidate:
    """One compared profile against the baseline, on the objective."""

    name: str
    mean: float | None
    delta: float | None
    p_value: float | None
    p_adjusted: float | None
    recall_losses: tuple[str, ...]
    eligible: bool


@dataclass(frozen=True, slots=True)
class Adoption:
    """The decision: ``profile`` to adopt (``None``: none is eligible), why, and how."""

    baseline: str
    k: int
    objective: str
    profile: str | None
    text: str
    command: str | None
    candidates: tuple[Candidate, ...]


def _command(profile: hotmem.Profile, profiles_file: str | None) -> str | None:
    """The commands that make ``profile`` a store's default: a built-in by its name, a profile
    of one's own imported from ``profiles_file`` (the run's ``--profiles``; None: a profile
    given in Python, which has no file to import, so no command)."""
    built_in = hotmem.PROFILES.get(profile.name) == profile
    if not built_in and profiles_file is None:
        return None
    steps = [
        f"hotmem --db STORE reindex --space {space}"
        for space in profile.spaces
        if space != hotmem.MODEL_NAME
    ]
    source = "" if built_in else f"--import {shlex.quote(profiles_file or '')} "
    steps.append(f"hotmem --db STORE profiles {source}--set-default {profile.name}")
    return " && ".join(steps)


def _candidates(comparisons: pl.DataFrame, names: Sequence[str], objective: str) -> list[Candidate]:
    overall = comparisons.filter(pl.col("scope") == OVERALL, pl.col("metric") == objective)
    rows = {row["candidate"]: row for row in overall.iter_rows(named=True)}
    family = [rows[name]["p_value"] if name in rows else None for name in names]
    adjusted = holm_adjust(family)
    losses = comparisons.filter(
        pl.col("scope") != OVERALL,
        pl.col("metric") == GUARDED,
        pl.col("delta") < 0,
        pl.col("p_adjusted") < ALPHA,
    )
    found = []
    for name, p_adjusted in zip(names, adjusted, strict=True):
        row = rows.get(name, {})
        lost = tuple(sorted(losses.filter(pl.col("candidate") == name)["scope"].to_list()))
        delta = row.get("delta")
        eligible = (
            delta is not None and delta > 0 and p_adjusted is not None and p_adjusted < ALPHA
        ) and not lost
        found.append(
            Candidate(
                name,
                row.get("candidate_mean"),
                delta,
                row.get("p_value"),
                p_adjusted,
                lost,
                eligible,
            )
        )
    return found


def decide_adoption(
    comparisons: pl.DataFrame,
    profiles: Sequence[hotmem.Profile],
    *,
    k: int,
    profiles_file: str | None = None,
    objective: str = OBJECTIVE,
) -> Adoption:
    """The adoption decision of a run over ``profiles`` (baseline first), from its paired
    ``comparisons`` (``comparison.compare_profiles``' frame) at cutoff ``k``; a profile of
    one's own is imported from ``profiles_file`` (the run's ``--profiles``). ``objective`` is
    the metric to beat (``hotmem-eval tune``'s; nDCG@k otherwise)."""
    baseline, names = profiles[0].name, [p.name for p in profiles[1:]]
    candidates = _candidates(comparisons, names, objective)
    eligible = [c for c in candidates if c.eligible]
    label = METRICS[objective].label.format(k=k)
    if not eligible:
        return Adoption(
            baseline,
            k,
            objective,
            None,
            f"No profile beats {baseline} on {label} with a Holm-adjusted p below {ALPHA} "
            f"without losing Recall@{k} significantly in a category: keep {baseline}.",
            None,
            tuple(candidates),
        )
    best = max(eligible, key=lambda c: c.mean if c.mean is not None else float("-inf"))
    profile = next(p for p in profiles if p.name == best.name)
    command = _command(profile, profiles_file)
    how = (
        f"`{command}`"
        if command is not None
        else "search with it (`profile=`), or write it in a TOML file for `hotmem profiles "
        "--import`"
    )
    text = (
        f"Adopt {best.name}: {label} {best.mean:.3f}, {best.delta:+.3f} over {baseline} "
        f"(Holm-adjusted p = {best.p_adjusted:.2g}), and no category loses Recall@{k} "
        f"significantly. {how}."
    )
    return Adoption(baseline, k, objective, best.name, text, command, tuple(candidates))


def adoption_block(adoption: Adoption) -> dict[str, Any]:
    """The ``adoption`` object of a result document."""
    return {
        "objective": f"{adoption.objective}@{adoption.k}",
        "baseline": adoption.baseline,
        "profile": adoption.profile,
        "text": adoption.text,
        "command": adoption.command,
        "candidates": [
            {
                "name": c.name,
                "mean": c.mean,
                "delta": c.delta,
                "p_value": c.p_value,
                "p_adjusted": c.p_adjusted,
                "recall_losses": list(c.recall_losses),
                "eligible": c.eligible,
            }
            for c in adoption.candidates
        ],
    }
