"""The comparison and ablation tables, rendered from hand-written comparisons frames."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from hotmem_eval.comparison import COMPARED_METRICS, COMPARISON_COLUMNS
from hotmem_eval.comparison_report import render_ablation_table, render_comparison_table
from hotmem_eval.errors import EvalError

BLANK: dict[str, Any] = dict.fromkeys(COMPARISON_COLUMNS)


def comparison(
    candidate: str,
    scope: str,
    metric: str,
    n: int = 0,
    means: tuple[float, float] | None = None,
    wlt: tuple[int, int, int] = (0, 0, 0),
    p: tuple[float, float] | None = None,
    method: str | None = None,
) -> dict[str, Any]:
    row = {**BLANK, "baseline": "default", "candidate": candidate, "scope": scope}
    row.update(metric=metric, n=n, wins=wlt[0], losses=wlt[1], ties=wlt[2])
    if means is not None:
        row.update(baseline_mean=means[0], candidate_mean=means[1], delta=means[1] - means[0])
        row.update(ci_low=means[1] - means[0] - 0.1, ci_high=means[1] - means[0] + 0.1)
    if p is not None:
        row.update(p_value=p[0], p_adjusted=p[1], method=method or "exact")
    return row


def frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=COMPARISON_COLUMNS, orient="row")


ROWS = [
    # Out of order on purpose: the table orders by metric (registry), then overall first.
    comparison("bm25-only", "exact_lexical", "mrr_at_k", 10, (0.9, 0.7), (0, 3, 7), (0.25, 0.75)),
    comparison(
        "bm25-only",
        "overall",
        "recall_at_k",
        80,
        (0.85, 0.6),
        (1, 21, 58),
        (1e-5, 1e-5),
        "monte-carlo",
    ),
    comparison("bm25-only", "overall", "mrr_at_k", 80, (0.8, 0.75), (2, 6, 72), (0.0625, 0.0625)),
    comparison("bm25-only", "exact_lexical", "recall_at_k", 10, (1.0, 1.0), (0, 0, 10), (1.0, 1.0)),
    # No paired query: left out of the comparison table, a dash in the ablation table.
    comparison("bm25-only", "exact_lexical", "negative_fpr_at_k"),
    comparison(
        "bm25-only", "overall", "negative_fpr_at_k", 10, (0.8, 0.3), (5, 0, 5), (0.0625, 0.0625)
    ),
]


def test_comparison_table_written_out() -> None:
    assert render_comparison_table(frame(ROWS), k=5) == (
        "**bm25-only** against **default**\n"
        "\n"
        "| metric | scope | n | default | bm25-only | Δ | W/L/T | p | p adj |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|\n"
        "| R@5 | overall | 80 | 0.850 | 0.600 | -0.250 | 1/21/58 | ~<0.001 | ~<0.001 |\n"
        "| R@5 | exact_lexical | 10 | 1.000 | 1.000 | 0.000 | 0/0/10 | 1.000 | 1.000 |\n"
        "| MRR@5 | overall | 80 | 0.800 | 0.750 | -0.050 | 2/6/72 | 0.062 | 0.062 |\n"
        "| MRR@5 | exact_lexical | 10 | 0.900 | 0.700 | -0.200 | 0/3/7 | 0.250 | 0.750 |\n"
        "| neg FPR@5 | overall | 10 | 0.800 | 0.300 | -0.500 | 5/0/5 | 0.062 | 0.062 |\n"
        "\n"
        "Δ: mean of candidate - baseline over the n paired queries. W/L/T: queries where the "
        "candidate is better, worse, equal (lower is better for neg FPR@5, dup slots@5, "
        "scope leak@5). p: two-sided paired sign-flip test (~: Monte-Carlo); p adj: Holm "
        "across the categories of the metric (overall: unadjusted).\n"
    )


def test_comparison_table_one_block_per_candidate_and_k_in_labels() -> None:
    rows = [
        comparison(
            "a-very-long-profile-name", "overall", "ndcg_at_k", 3, (0.5, 0.5), (0, 0, 3), (1.0, 1.0)
        ),
        comparison("rrf", "overall", "ndcg_at_k", 3, (0.5, 0.75), (1, 0, 2), (1.0, 1.0)),
    ]
    text = render_comparison_table(frame(rows), k=10)
    blocks = text.split("\n\n")
    assert blocks[0] == "**a-very-long-profile-name** against **default**"
    assert "| metric | scope | n | default | a-very-long… | Δ |" in blocks[1]
    assert "| nDCG@10 | overall | 3 | 0.500 | 0.500 | 0.000 | 0/0/3 | 1.000 | 1.000 |" in blocks[1]
    assert blocks[2] == "**rrf** against **default**"
    assert "| nDCG@10 | overall | 3 | 0.500 | 0.750 | +0.250 | 1/0/2 | 1.000 | 1.000 |" in blocks[3]


def test_comparison_table_of_no_rows_is_empty() -> None:
    assert render_comparison_table(frame([]), k=5) == ""
    assert render_comparison_table(frame([comparison("rrf", "overall", "mrr_at_k")]), k=5) == (
        "**rrf** against **default**\n"
        "\n"
        "| metric | scope | n | default | rrf | Δ | W/L/T | p | p adj |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|\n"
        "\n"
        "Δ: mean of candidate - baseline over the n paired queries. W/L/T: queries where the "
        "candidate is better, worse, equal (lower is better for neg FPR@5, dup slots@5, "
        "scope leak@5). p: two-sided paired sign-flip test (~: Monte-Carlo); p adj: Holm "
        "across the categories of the metric (overall: unadjusted).\n"
    )


ABLATION = [
    *(
        comparison("no-bm25", "overall", metric, 80, (0.5, 0.375), (0, 10, 70), (0.001, 0.001))
        for metric in COMPARED_METRICS
    ),
    *(
        comparison("no-cosine", "overall", metric, 80, (0.5, 0.5), (0, 0, 80), (1.0, 1.0))
        for metric in COMPARED_METRICS
        if metric != "scope_leak_rate_at_k"
    ),
    comparison("no-cosine", "overall", "scope_leak_rate_at_k"),
    # Another scope: not in the overall table.
    comparison(
        "no-bm25", "exact_lexical", "recall_at_1", 10, (1.0, 0.0), (0, 10, 0), (0.002, 0.04)
    ),
    comparison("no-cosine", "exact_lexical", "recall_at_1", 10, (1.0, 0.9), (0, 1, 9), (1.0, 1.0)),
]


def test_ablation_table_written_out() -> None:
    text = render_ablation_table(frame(ABLATION), k=5, labels={"no-bm25": "BM25"})
    assert text == (
        "| removed (overall) | R@1 | R@5 | MRR@5 | nDCG@5 | P@5 | AP@5 | group R@5 | α-nDCG@5 "
        "| neg FPR@5 | dup slots@5 | scope leak@5 |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        "| BM25 | -0.125* | -0.125* | -0.125* | -0.125* | -0.125* | -0.125* | -0.125* | -0.125* "
        "| -0.125* | -0.125* | -0.125* |\n"
        "| no-cosine | 0.000 | 0.000 | 0.000 | 0.000 | 0.000 | 0.000 | 0.000 | 0.000 | 0.000 "
        "| 0.000 | – |\n"
        "\n"
        "Δ against default: the variant's mean minus the baseline's over the paired queries; "
        "* p adj < 0.05; –: no paired query.\n"
    )


def test_ablation_table_of_one_category_marks_the_adjusted_p() -> None:
    text = render_ablation_table(frame(ABLATION), k=5, scope="exact_lexical")
    lines = text.splitlines()
    assert lines[0].startswith("| removed (exact_lexical) | R@1 |")
    # p adj 0.04 < 0.05 is marked; the other metrics have no row there.
    assert lines[2] == "| no-bm25 | -1.000* | – | – | – | – | – | – | – | – | – | – |"
    assert lines[3] == "| no-cosine | -0.100 | – | – | – | – | – | – | – | – | – | – |"


def test_bad_comparisons_are_refused() -> None:
    with pytest.raises(EvalError, match="found metric='success_at_k'"):
        render_comparison_table(frame([comparison("rrf", "overall", "success_at_k")]), k=5)
    with pytest.raises(EvalError, match="missing \\['p_adjusted'\\]"):
        render_ablation_table(frame(ABLATION).drop("p_adjusted"), k=5)
    with pytest.raises(EvalError, match="expected comparisons of scope='paraphrase', found none"):
        render_ablation_table(frame(ABLATION), k=5, scope="paraphrase")
