"""The verdict lines of a profile comparison: the winner on nDCG@k, then each candidate
against the baseline by its paired test."""

from __future__ import annotations

from typing import Any

import polars as pl

from hotmem_eval.comparison import COMPARISON_COLUMNS
from hotmem_eval.report_profiles import verdict_lines


def _result(values: dict[str, float]) -> dict[str, Any]:
    return {
        "configuration": {"top_k": 10},
        "profiles": [
            {"name": name, "metrics": {"overall": {"ndcg_at_k": {"value": value}}}}
            for name, value in values.items()
        ],
    }


def _row(candidate: str, delta: float, p: float, wins: int, losses: int) -> dict[str, Any]:
    return {
        "baseline": "default",
        "candidate": candidate,
        "scope": "overall",
        "metric": "ndcg_at_k",
        "n": 50,
        "baseline_mean": 0.5,
        "candidate_mean": 0.5 + delta,
        "delta": delta,
        "wins": wins,
        "losses": losses,
        "ties": 50 - wins - losses,
        "p_value": p,
        "p_adjusted": p,
        "ci_low": delta - 0.01,
        "ci_high": delta + 0.01,
    }


def test_each_candidate_is_better_worse_or_no_different() -> None:
    result = _result({"default": 0.5, "bm25-only": 0.6, "cosine-only": 0.45, "same": 0.5})
    rows = [
        _row("bm25-only", 0.1, 0.001, 30, 5),
        _row("cosine-only", -0.05, 0.2, 10, 15),
        _row("same", 0.0, 1.0, 0, 0),
    ]
    comparisons = pl.DataFrame(
        [{name: row.get(name) for name in COMPARISON_COLUMNS} for row in rows],
        schema=COMPARISON_COLUMNS,
    )
    assert verdict_lines(result, comparisons) == [
        "**Highest nDCG@10 overall: bm25-only** (0.600); default 0.500, same 0.500, "
        "cosine-only 0.450.",
        "",
        "- bm25-only is better than default on nDCG@10: Δ +0.100 (95% CI +0.090 to +0.110), "
        "p = 0.001 over 50 queries (30 won, 5 lost).",
        "- cosine-only is not significantly worse than default on nDCG@10: Δ -0.050 "
        "(95% CI -0.060 to -0.040), p = 0.2 over 50 queries (10 won, 15 lost).",
        "- same is no different from default on nDCG@10: Δ +0.000 (95% CI -0.010 to +0.010), "
        "p = 1 over 50 queries (0 won, 0 lost).",
    ]
