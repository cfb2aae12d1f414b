"""Markdown tables of a profile comparison: the paired comparison and the ablation.

Pure functions: a comparisons frame (``comparison.compare_profiles``, ``COMPARISON_COLUMNS``)
in, Markdown text out. Columns are kept narrow so the tables read on a docs page; the metric
headers are the registry's labels with ``k`` filled in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import polars as pl

from hotmem_eval.comparison import COMPARED_METRICS, COMPARISON_COLUMNS
from hotmem_eval.errors import EvalError
from hotmem_eval.metric_registry import METRICS, OVERALL
from hotmem_eval.metric_statistics import FrameLike, canonical
from hotmem_eval.tables import DASH, Block, markdown, table

__all__ = [
    "ALPHA",
    "ablation_blocks",
    "comparison_blocks",
    "render_ablation_table",
    "render_comparison_table",
]

#: The significance level the tables mark, applied to ``p_adjusted``.
ALPHA: Final = 0.05


def comparison_blocks(comparisons: FrameLike, *, k: int) -> list[Block]:
    """One table per (baseline, candidate): every metric, overall then each category.

    Columns: metric, scope, n (paired queries), the two means, delta (candidate - baseline),
    W/L/T (queries the candidate wins, loses, ties), p and p adj (Holm). Scopes where no query
    was paired are left out. A Monte-Carlo p-value is marked ``~``.

    Raises:
        EvalError: ``comparisons`` lacks a column of ``COMPARISON_COLUMNS`` or names a metric
            that is not compared.
    """
    frame = _checked(comparisons)
    out: list[Block] = []
    columns = ["metric", "scope", "n", "baseline", "candidate", "Δ", "W/L/T", "p", "p adj"]
    for (baseline, candidate), part in frame.group_by("baseline", "candidate", maintain_order=True):
        if out:
            out.append("")
        rows = part.filter(pl.col("n") > 0).with_columns(_order())
        out += [
            f"**{candidate}** against **{baseline}**",
            "",
            table(
                columns,
                [
                    (
                        _label(row["metric"], k),
                        row["scope"],
                        row["n"],
                        _mean(row["baseline_mean"]),
                        _mean(row["candidate_mean"]),
                        _delta(row["delta"]),
                        f"{row['wins']}/{row['losses']}/{row['ties']}",
                        _p(row["p_value"], row["method"]),
                        _p(row["p_adjusted"], row["method"]),
                    )
                    for row in rows.sort("metric_order", "scope_order", "scope").iter_rows(
                        named=True
                    )
                ],
                right=columns[2:],
                headers=[*columns[:3], _short(baseline), _short(candidate), *columns[5:]],
            ),
        ]
    if out:
        lower = [_label(m, k) for m, better in COMPARED_METRICS.items() if better == "lower"]
        out += [
            "",
            f"Δ: mean of candidate - baseline over the n paired queries. W/L/T: queries where the "
            f"candidate is better, worse, equal (lower is better for {', '.join(lower)}). "
            "p: two-sided paired sign-flip test (~: Monte-Carlo); p adj: Holm across the "
            "categories of the metric (overall: unadjusted).",
        ]
    return out


def render_comparison_table(comparisons: FrameLike, *, k: int) -> str:
    """``comparison_blocks`` as Markdown text ("" without a comparison).

    Raises:
        EvalError: as ``comparison_blocks``.
    """
    lines = markdown(comparison_blocks(comparisons, k=k))
    return "\n".join(lines) + "\n" if lines else ""


def ablation_blocks(
    comparisons: FrameLike,
    *,
    k: int,
    scope: str = OVERALL,
    labels: Mapping[str, str] | None = None,
) -> list[Block]:
    """The delta each variant causes, one row a variant, one column a metric.

    ``comparisons`` compares a baseline with variants that each remove one channel (the
    candidates); a cell is the variant's delta (its mean minus the baseline's) in ``scope``,
    marked ``*`` where ``p_adjusted`` < ``ALPHA``, ``–`` where no query was paired.

    Args:
        labels: the row label of each candidate (e.g. ``{"no-bm25": "BM25"}``); the candidate
            name otherwise.

    Raises:
        EvalError: as ``comparison_blocks``, or no row has ``scope``.
    """
    frame = _checked(comparisons).filter(pl.col("scope") == scope)
    if not frame.height:
        raise EvalError(f"expected comparisons of scope={scope!r}, found none")
    metrics = list(COMPARED_METRICS)
    baselines = list(dict.fromkeys(frame["baseline"].to_list()))
    cells: dict[tuple[str, str], dict[str, Any]] = {
        (row["candidate"], row["metric"]): row for row in frame.iter_rows(named=True)
    }
    candidates = list(dict.fromkeys(frame["candidate"].to_list()))
    return [
        table(
            ["removed", *metrics],
            [
                [
                    (labels or {}).get(candidate, candidate),
                    *(_ablation_cell(cells.get((candidate, metric))) for metric in metrics),
                ]
                for candidate in candidates
            ],
            right=metrics,
            headers=[f"removed ({scope})", *(_label(m, k) for m in metrics)],
        ),
        "",
        f"Δ against {', '.join(baselines)}: the variant's mean minus the baseline's over the "
        f"paired queries; * p adj < {ALPHA}; {DASH}: no paired query.",
    ]


def render_ablation_table(
    comparisons: FrameLike,
    *,
    k: int,
    scope: str = OVERALL,
    labels: Mapping[str, str] | None = None,
) -> str:
    """``ablation_blocks`` as Markdown text.

    Raises:
        EvalError: as ``ablation_blocks``.
    """
    return "\n".join(markdown(ablation_blocks(comparisons, k=k, scope=scope, labels=labels))) + "\n"


def _checked(comparisons: FrameLike) -> pl.DataFrame:
    frame = canonical(comparisons, COMPARISON_COLUMNS, "comparisons")
    unknown = frame.filter(~pl.col("metric").is_in(list(COMPARED_METRICS)))
    if unknown.height:
        raise EvalError(
            f"expected comparisons of {list(COMPARED_METRICS)}, "
            f"found metric={unknown['metric'][0]!r}"
        )
    return frame


def _order() -> list[pl.Expr]:
    order = {name: position for position, name in enumerate(METRICS)}
    return [
        pl.col("metric").replace_strict(order, return_dtype=pl.Int64).alias("metric_order"),
        (pl.col("scope") != OVERALL).cast(pl.Int64).alias("scope_order"),
    ]


def _label(metric: str, k: int) -> str:
    return METRICS[metric].label.format(k=k)


def _short(profile: str) -> str:
    # A profile name is a column header here: keep the column narrow.
    return profile if len(profile) <= 12 else profile[:11] + "…"


def _mean(value: float | None) -> str:
    return DASH if value is None else f"{value:.3f}"


def _delta(value: float | None) -> str:
    if value is None:
        return DASH
    text = f"{value:+.3f}"
    return "0.000" if text in ("+0.000", "-0.000") else text


def _p(value: float | None, method: str | None) -> str:
    if value is None:
        return DASH
    text = "<0.001" if value < 0.001 else f"{value:.3f}"
    return f"~{text}" if method == "monte-carlo" else text


def _ablation_cell(row: Mapping[str, Any] | None) -> str:
    if row is None or not row["n"]:
        return DASH
    mark = "*" if row["p_adjusted"] is not None and row["p_adjusted"] < ALPHA else ""
    return _delta(row["delta"]) + mark
