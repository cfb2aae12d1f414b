"""The ablation of a baseline profile: the baseline with each of its channels removed in turn,
searched and scored beside it (``evaluate.evaluate_profiles``), and what a run searches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import polars as pl

import hotmem
from hotmem_eval.fixtures import Fixture

__all__ = ["ABLATED_CHANNELS", "Ablation", "ablation_variants", "search_plan"]

#: The channels the ablation removes from the baseline, in turn (``hotmem.Profile.without``).
ABLATED_CHANNELS: Final = ("vector", "lexical", "importance")


@dataclass(frozen=True, slots=True)
class Ablation:
    """The baseline with each of its channels removed in turn, searched and scored.

    Attributes:
        baseline: the profile the channels are removed from.
        variants: (channel removed, the variant profile), in ``ABLATED_CHANNELS`` order; a
            channel the baseline lacks (or whose weight is 0) has no variant.
        per_query: ``per_query_metrics`` of the baseline and every variant, stacked, with a
            ``profile`` column (``comparison.compare_profiles``' input).
    """

    baseline: hotmem.Profile
    variants: tuple[tuple[str, hotmem.Profile], ...]
    per_query: pl.DataFrame


def ablation_variants(baseline: hotmem.Profile) -> tuple[tuple[str, hotmem.Profile], ...]:
    """(channel, ``baseline.without(channel)``) for each channel of ``ABLATED_CHANNELS`` whose
    removal changes the baseline (a channel it lacks, or weighs 0, has no variant) and leaves
    a retrieval channel."""
    unnamed = {**baseline.to_dict(), "name": None}
    variants = []
    for channel in ABLATED_CHANNELS:
        try:
            variant = baseline.without(channel)
        except hotmem.ValidationError:  # the last retrieval channel: nothing would be left
            continue
        if {**variant.to_dict(), "name": None} != unnamed:
            variants.append((channel, variant))
    return tuple(variants)


def search_plan(fixture: Fixture, profiles: Sequence[hotmem.Profile], *, ablation: bool) -> str:
    """What ``evaluate_profiles`` searches, for its progress line: "98 queries × 5 runs (2
    profiles, 3 ablation variants of default)", or "98 queries × 1 profile"."""
    variants = len(ablation_variants(profiles[0])) if ablation and profiles else 0
    queries = fixture.queries.num_rows
    if not variants and len(profiles) == 1:
        return f"{queries} queries × 1 profile"
    runs = len(profiles) + variants
    parts = f"{len(profiles)} profile{'s' if len(profiles) != 1 else ''}"
    if variants:
        parts += f", {variants} ablation variant{'s' if variants != 1 else ''}"
        parts += f" of {profiles[0].name}"
    return f"{queries} queries × {runs} runs ({parts})"
