"""The report's diversity evidence for a run over several profiles: does a candidate (a
reranker such as ``default+mmr``, or any other) return more of the distinct relevant groups of
the near-duplicate queries without costing recall elsewhere?

Read from the paired comparison rows only (``comparison.compare_profiles``): group recall@k and
alpha-nDCG@k in ``near_duplicate_diversity`` against the baseline, and every other category's
Recall@k. A candidate *improves diversity* when either diversity metric rises, and does so
*without a significant loss* when no other category's Recall@k falls with a Holm-adjusted
p below ``ALPHA``.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from hotmem_eval.comparison_report import ALPHA
from hotmem_eval.fixture_schema import DUPLICATE_CATEGORY
from hotmem_eval.tables import Block, table

__all__ = ["DIVERSITY_METRICS", "diversity_lines"]

#: The metrics a diversity gain is read from, in the order shown.
DIVERSITY_METRICS = ("group_recall_at_k", "alpha_ndcg_at_k")


def _row(rows: pl.DataFrame, candidate: str, scope: str, metric: str) -> dict[str, Any] | None:
    found = rows.filter(
        (pl.col("candidate") == candidate)
        & (pl.col("scope") == scope)
        & (pl.col("metric") == metric)
    )
    return found.row(0, named=True) if found.height else None


def _cell(row: dict[str, Any] | None) -> str:
    if row is None or row["delta"] is None:
        return "–"
    p = row["p_adjusted"]
    star = "*" if p is not None and p < ALPHA else ""
    shown = "n/a" if p is None else f"{p:.3f}"
    return f"{row['delta']:+.3f}{star} (p adj {shown})"


def _losses(rows: pl.DataFrame, candidate: str) -> list[str]:
    """Categories other than the near-duplicate one whose Recall@k falls significantly."""
    lost = rows.filter(
        (pl.col("candidate") == candidate)
        & (pl.col("metric") == "recall_at_k")
        & ~pl.col("scope").is_in(["overall", DUPLICATE_CATEGORY])
        & (pl.col("delta") < 0)
        & (pl.col("p_adjusted") < ALPHA)
    ).sort("scope")
    return [f"{r['scope']} {r['delta']:+.3f}" for r in lost.iter_rows(named=True)]


def _verdict(gains: list[dict[str, Any] | None], losses: list[str]) -> str:
    rising = [g for g in gains if g is not None and g["delta"] is not None and g["delta"] > 0]
    if not rising:
        return "no: neither group recall nor alpha-nDCG rises"
    if losses:
        return "no: Recall falls significantly elsewhere"
    significant = any(g["p_adjusted"] is not None and g["p_adjusted"] < ALPHA for g in rising)
    return "yes" + ("" if significant else f" (the gain is not significant at {ALPHA})")


def diversity_lines(result: dict[str, Any], comparisons: pl.DataFrame, *, k: int) -> list[Block]:
    """The ``### Diversity`` subsection; empty when no query of the near-duplicate category
    was compared on the diversity metrics."""
    rows = comparisons.filter(pl.col("baseline") == result["profiles"][0]["name"])
    present = rows.filter(
        (pl.col("scope") == DUPLICATE_CATEGORY) & pl.col("metric").is_in(DIVERSITY_METRICS)
    )
    if not present.height:
        return []
    found: list[tuple[str, ...]] = []
    for entry in result["profiles"][1:]:
        name = entry["name"]
        gains = [_row(rows, name, DUPLICATE_CATEGORY, metric) for metric in DIVERSITY_METRICS]
        slots = _row(rows, name, DUPLICATE_CATEGORY, "duplicate_slot_rate_at_k")
        losses = _losses(rows, name)
        found.append(
            (
                name,
                _cell(gains[0]),
                _cell(gains[1]),
                _cell(slots),
                ", ".join(losses) or "none",
                _verdict(gains, losses),
            )
        )
    columns = [
        "candidate",
        f"group recall@{k} Δ",
        f"α-nDCG@{k} Δ",
        f"duplicate slots@{k} Δ",
        f"significant Recall@{k} losses elsewhere",
        "improves diversity without a loss",
    ]
    return [
        f"### Diversity ({DUPLICATE_CATEGORY})",
        "",
        f"Does a candidate return more distinct relevant groups (group recall@{k}, "
        f"α-nDCG@{k} in {DUPLICATE_CATEGORY}) without a significant Recall@{k} loss in any "
        f"other category? Δ against the baseline, * Holm-adjusted p < {ALPHA}.",
        "",
        table(columns, found, right=columns[1:4]),
        "",
    ]
