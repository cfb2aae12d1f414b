"""The report's diversity verdict, on comparison rows written out by hand."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from hotmem_eval.comparison import COMPARISON_COLUMNS
from hotmem_eval.report_diversity import diversity_lines
from hotmem_eval.tables import markdown

DUP = "near_duplicate_diversity"


def _row(candidate: str, scope: str, metric: str, delta: float, p: float) -> dict[str, Any]:
    return {
        "baseline": "default",
        "candidate": candidate,
        "scope": scope,
        "metric": metric,
        "n": 10,
        "baseline_mean": 0.5,
        "candidate_mean": 0.5 + delta,
        "delta": delta,
        "wins": 0,
        "losses": 0,
        "ties": 10,
        "p_value": p,
        "p_adjusted": p,
        "method": "exact",
        "ci_low": delta,
        "ci_high": delta,
    }


def _lines(rows: list[dict[str, Any]], *names: str) -> list[str]:
    result = {"profiles": [{"name": "default"}, *({"name": n} for n in names)]}
    blocks = diversity_lines(result, pl.DataFrame(rows, schema=COMPARISON_COLUMNS), k=5)
    return markdown(blocks)


def _verdict(lines: list[str], name: str) -> list[str]:
    [line] = [x for x in lines if x.startswith(f"| {name} |")]
    return [cell.strip() for cell in line.strip("|").split("|")]


@pytest.mark.parametrize(
    ("rows", "cells"),
    [
        (  # alpha-nDCG rises significantly, nothing lost elsewhere
            [
                _row("c", DUP, "group_recall_at_k", 0.0, 1.0),
                _row("c", DUP, "alpha_ndcg_at_k", 0.1, 0.01),
                _row("c", "temporal", "recall_at_k", -0.1, 0.2),
            ],
            ["+0.000 (p adj 1.000)", "+0.100* (p adj 0.010)", "–", "none", "yes"],
        ),
        (  # a gain that is not significant is said to be so
            [_row("c", DUP, "group_recall_at_k", 0.05, 0.3)],
            ["+0.050 (p adj 0.300)", "–", "–", "none", "yes (the gain is not significant at 0.05)"],
        ),
        (  # a significant recall loss in another category outweighs the gain
            [
                _row("c", DUP, "alpha_ndcg_at_k", 0.1, 0.01),
                _row("c", "temporal", "recall_at_k", -0.4, 0.02),
                _row("c", "overall", "recall_at_k", -0.2, 0.01),  # overall is not "elsewhere"
            ],
            ["–", "+0.100* (p adj 0.010)", "–", "temporal -0.400", "no: Recall falls "
             "significantly elsewhere"],
        ),
        (  # no gain
            [
                _row("c", DUP, "group_recall_at_k", 0.0, 1.0),
                _row("c", DUP, "alpha_ndcg_at_k", -0.012, 0.438),
                _row("c", DUP, "duplicate_slot_rate_at_k", -0.048, 0.062),
            ],
            ["+0.000 (p adj 1.000)", "-0.012 (p adj 0.438)", "-0.048 (p adj 0.062)", "none",
             "no: neither group recall nor alpha-nDCG rises"],
        ),
    ],
)  # fmt: skip
def test_the_verdict_reads_the_paired_rows(rows: list[dict[str, Any]], cells: list[str]) -> None:
    assert _verdict(_lines(rows, "c"), "c")[1:] == cells


def test_no_diversity_rows_no_section() -> None:
    assert _lines([_row("c", "temporal", "recall_at_k", -0.1, 0.2)], "c") == []
