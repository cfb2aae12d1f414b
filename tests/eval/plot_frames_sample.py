"""A small, hand-built set of plot frames with two profiles (``default`` and ``semantic``)."""

from __future__ import annotations

import polars as pl

from hotmem_eval.plots import (
    CATEGORY_METRIC_SCHEMA,
    CHANNEL_SCORES_SCHEMA,
    FIRST_RELEVANT_RANK_SCHEMA,
    LATENCY_SCHEMA,
    PAIRED_DIFFERENCES_SCHEMA,
    PlotFrames,
)

__all__ = ["empty_frames", "sample_frames"]

PROFILES = ("default", "semantic")
CATEGORIES = ("overall", "paraphrase", "temporal", "negation")


def _category_metric() -> pl.DataFrame:
    rows = []
    for p, profile in enumerate(PROFILES):
        for c, category in enumerate(CATEGORIES):
            value = None if (profile, category) == ("semantic", "negation") else 0.4 + 0.1 * c
            value = value if value is None else value + 0.05 * p
            low = None if value is None or category == "temporal" else value - 0.1
            high = None if low is None or value is None else value + 0.08
            n = 12 if category == "overall" else 4
            rows.append((profile, category, "ndcg_cut_5", "nDCG@5", value, low, high, n))
    return pl.DataFrame(rows, schema=CATEGORY_METRIC_SCHEMA, orient="row")


def _paired_differences() -> pl.DataFrame:
    rows = []
    for s, scope in enumerate(CATEGORIES):
        delta = None if scope == "negation" else 0.05 * (s - 1)
        low = None if delta is None else delta - 0.04
        high = None if delta is None else delta + 0.04
        p = None if delta is None else 0.01 * (s + 1) * 3
        significant = delta is not None and scope in {"overall", "temporal"}
        n = 12 if scope == "overall" else 4
        rows.append(
            ("default", "semantic", scope, "ndcg_cut_5", "nDCG@5", delta, low, high, p,
             significant, n)
        )  # fmt: skip
    return pl.DataFrame(rows, schema=PAIRED_DIFFERENCES_SCHEMA, orient="row")


def _channel_scores() -> pl.DataFrame:
    rows = []
    floors = {"default": 0.25, "semantic": None}
    for p, profile in enumerate(PROFILES):
        for q in range(4):
            for m in range(6):
                relevant = m == q
                base = 0.7 if relevant else 0.2
                for c, channel in enumerate(("importance", "cosine", "bm25_normalised")):
                    if profile == "default" and channel == "importance" and q == 3:
                        continue
                    value = base + 0.03 * m + 0.02 * q + 0.05 * c - 0.1 * p
                    rows.append(
                        (profile, f"q{q}", f"m{m}", relevant, channel, value, floors[profile])
                    )
    return pl.DataFrame(rows, schema=CHANNEL_SCORES_SCHEMA, orient="row")


def _first_relevant_rank() -> pl.DataFrame:
    rows = []
    ranks = (1, 2, None, 1, 5, 3, None, 1)
    for p, profile in enumerate(PROFILES):
        for q, rank in enumerate(ranks):
            category = CATEGORIES[1 + q % 3]
            shifted = rank if rank is None or p == 0 else max(1, rank - 1)
            rows.append((profile, category, f"q{q}", shifted, 5))
    return pl.DataFrame(rows, schema=FIRST_RELEVANT_RANK_SCHEMA, orient="row")


def _latency() -> pl.DataFrame:
    rows = [("default", 0.4 + 0.1 * i) for i in range(20)]
    rows += [("semantic", 3.0 + 1.7 * i) for i in range(20)]
    rows.append(("semantic", 0.0))
    return pl.DataFrame(rows, schema=LATENCY_SCHEMA, orient="row")


def sample_frames() -> PlotFrames:
    """Every frame with rows, nulls where the schema allows them."""
    return PlotFrames(
        category_metric=_category_metric(),
        paired_differences=_paired_differences(),
        channel_scores=_channel_scores(),
        first_relevant_rank=_first_relevant_rank(),
        latency=_latency(),
    )


def empty_frames() -> PlotFrames:
    """Every frame with its schema and no rows."""
    return PlotFrames(
        category_metric=pl.DataFrame(schema=CATEGORY_METRIC_SCHEMA),
        paired_differences=pl.DataFrame(schema=PAIRED_DIFFERENCES_SCHEMA),
        channel_scores=pl.DataFrame(schema=CHANNEL_SCORES_SCHEMA),
        first_relevant_rank=pl.DataFrame(schema=FIRST_RELEVANT_RANK_SCHEMA),
        latency=pl.DataFrame(schema=LATENCY_SCHEMA),
    )
