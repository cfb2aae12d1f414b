"""The first screen of the report: the decision and its evidence, then the categories.

The decision is the adoption's (several profiles) or the baseline's recommendation; its
evidence is the headline metric (``report_profiles.HEADLINE``) of every profile with its 95%
bootstrap interval (``result.intervals_block``), and only the paired differences that are
significant (Holm-adjusted p below ``ALPHA``). The categories follow, one row each, the
headline of every profile with its interval.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from hotmem_eval.comparison import COMPARISON_COLUMNS
from hotmem_eval.comparison_report import ALPHA
from hotmem_eval.metric_registry import METRICS, OVERALL
from hotmem_eval.report_metrics import by_category, cell
from hotmem_eval.report_profiles import HEADLINE, verdict_lines
from hotmem_eval.tables import Block, table

__all__ = ["category_blocks", "decision_blocks", "decision_line", "interval_text"]


def interval_text(interval: dict[str, Any] | None) -> str:
    """``value (low–high)``, the value alone without an interval, ``–`` without a value."""
    if interval is None or interval["value"] is None:
        return "–"
    if interval["ci_low"] is None:
        return f"{interval['value']:.3f}"
    return f"{interval['value']:.3f} ({interval['ci_low']:.3f}–{interval['ci_high']:.3f})"


def _intervals(entry: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {interval["scope"]: interval for interval in entry["intervals"]}


def decision_line(result: dict[str, Any]) -> str:
    """The one line a reader needs: the adoption, or else the baseline's recommendation."""
    adoption = result.get("adoption")
    if adoption is not None:
        return f"**{adoption['text']}**"
    recommendation = result["profiles"][0]["recommendation"]
    return (
        f"**Next retrieval investment (rule {recommendation['rule']}, "
        f"`{recommendation['code']}`)**: {recommendation['text']}"
    )


def _summary(result: dict[str, Any], label: str, k: int) -> Block:
    columns = ["profile", "headline", "recall", "mrr", "failed", "transfer"]
    rows = []
    for entry in result["profiles"]:
        overall = entry["metrics"]["overall"]
        transfer = entry["transfer"]
        rows.append(
            (
                entry["name"],
                interval_text(_intervals(entry).get(OVERALL)),
                cell(overall.get("recall_at_k")),
                cell(overall.get("mrr_at_k")),
                len(entry["failed_query_ids"]),
                f"{transfer['equivalent_queries']}/{transfer['total_queries']}",
            )
        )
    headers = [
        "profile",
        f"{label} (95% CI)",
        METRICS["recall_at_k"].label.format(k=k),
        METRICS["mrr_at_k"].label.format(k=k),
        "failed queries",
        "transfer",
    ]
    return table(columns, rows, right=columns[1:5], headers=headers)


def _significant(result: dict[str, Any], k: int) -> list[Block]:
    frame = pl.DataFrame(result["comparisons"], schema=COMPARISON_COLUMNS)
    order = {name: position for position, name in enumerate(METRICS)}
    found = frame.filter(pl.col("n") > 0, pl.col("p_adjusted") < ALPHA).with_columns(
        pl.col("metric").replace_strict(order, return_dtype=pl.Int64).alias("order"),
        (pl.col("scope") != OVERALL).alias("category"),
    )
    baseline = result["profiles"][0]["name"]
    if not found.height:
        return [
            f"No paired difference against {baseline} is significant (Holm-adjusted p < {ALPHA})."
        ]
    rows = [
        (
            row["candidate"],
            METRICS[row["metric"]].label.format(k=k),
            row["scope"],
            row["n"],
            f"{row['delta']:+.3f} ({row['ci_low']:+.3f} to {row['ci_high']:+.3f})",
            "<0.001" if row["p_adjusted"] < 0.001 else f"{row['p_adjusted']:.3f}",
            "better"
            if (row["delta"] > 0) == (METRICS[row["metric"]].better == "higher")
            else "worse",
        )
        for row in found.sort("candidate", "order", "category", "scope").iter_rows(named=True)
    ]
    columns = ["candidate", "metric", "scope", "n", "Δ (95% CI)", "p adj", "direction"]
    return [
        f"Significant paired differences against {baseline} (Holm-adjusted p < {ALPHA}; "
        "every comparison is in the appendix):",
        "",
        table(columns, rows, right=["n", "Δ (95% CI)", "p adj"]),
    ]


def decision_blocks(result: dict[str, Any]) -> list[Block]:
    """The ``## Decision`` section."""
    k = result["configuration"]["top_k"]
    label = METRICS[HEADLINE].label.format(k=k)
    fixture = result["fixture"]
    names = [entry["name"] for entry in result["profiles"]]
    out: list[Block] = [
        "## Decision",
        "",
        f"{fixture['memory_count']} memories, {fixture['query_count']} queries; "
        + (
            f"{len(names)} profiles, baseline **{names[0]}**."
            if len(names) > 1
            else f"profile **{names[0]}**."
        ),
        "",
        _summary(result, label, k),
        "",
    ]
    if len(names) == 1:  # the decision line is the recommendation
        return out
    comparisons = pl.DataFrame(result["comparisons"], schema=COMPARISON_COLUMNS)
    out += [*verdict_lines(result, comparisons), "", *_significant(result, k), ""]
    recommendation = result["profiles"][0]["recommendation"]
    return [
        *out,
        f"**Next retrieval investment** (the decision rules on {names[0]}): rule "
        f"{recommendation['rule']} (`{recommendation['code']}`): {recommendation['text']}",
        "",
    ]


def category_blocks(result: dict[str, Any], view: dict[str, Any]) -> list[Block]:
    """The ``## By category`` table: every profile's headline with its interval."""
    k = result["configuration"]["top_k"]
    label = METRICS[HEADLINE].label.format(k=k)
    entries = result["profiles"]
    counts = result["fixture"]["category_counts"]
    scopes = [OVERALL, *(category for category, _ in by_category(view))]
    intervals = [_intervals(entry) for entry in entries]
    rows = [
        (
            scope,
            result["fixture"]["query_count"] if scope == OVERALL else counts.get(scope, 0),
            *(interval_text(found.get(scope)) for found in intervals),
        )
        for scope in scopes
    ]
    columns = ["scope", "queries", *(f"profile {i}" for i in range(len(entries)))]
    headers = ["scope", "queries", *(f"{entry['name']} {label}" for entry in entries)]
    return [
        "## By category",
        "",
        f"{label} with its 95% bootstrap interval (queries with a relevant memory; – none).",
        "",
        table(columns, rows, right=columns[1:], headers=headers),
        "",
    ]
