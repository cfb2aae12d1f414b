"""The metric plots: a metric per category and profile, and the forest of paired differences.

Both take a frame checked by ``plot_frames.validate`` (with at least one row) and return a
``matplotlib.figure.Figure``; ``hotmem_eval.plots`` renders them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from hotmem_eval.plot_frames import first_seen
from hotmem_eval.plot_style import GREY, WIDTH, colour, figure, sized

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["category_metric", "paired_differences"]

#: At most this many panels side by side; more wrap onto further rows.
_COLUMNS = 3


def category_metric(frame: pl.DataFrame) -> Figure:
    """One panel per metric: each category a row (frame order, top to bottom), each profile a
    marker with its CI as a horizontal whisker, on [0, 1]."""
    metrics = first_seen(frame, "metric")
    categories = first_seen(frame, "category")
    profiles = first_seen(frame, "profile")
    per_row = 0.12 + 0.1 * len(profiles)
    fig = figure(max(WIDTH, 3.6 * len(metrics)), sized(per_row, len(categories), base=1.6))
    panels = fig.subplots(1, len(metrics), sharey=True, squeeze=False)[0]
    for axes, metric in zip(panels, metrics, strict=True):
        _metric_panel(axes, frame.filter(pl.col("metric") == metric), categories, profiles)
    counts = frame.group_by("category", maintain_order=True).agg(pl.col("n").max())
    most = dict(counts.iter_rows())
    panels[0].set_yticks(range(len(categories)), labels=[f"{c} (n={most[c]})" for c in categories])
    panels[0].set_ylim(len(categories) - 0.5, -0.5)
    handles, labels = panels[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(profiles), 4))
    fig.suptitle("Metric per category and profile, with confidence intervals")
    return fig


def _metric_panel(
    axes: Axes, frame: pl.DataFrame, categories: list[str], profiles: list[str]
) -> None:
    step = 0.7 / len(profiles)
    for index, profile in enumerate(profiles):
        offset = (index - (len(profiles) - 1) / 2) * step
        ys: list[float] = []
        xs: list[float] = []
        whiskers: list[tuple[float, float, float]] = []
        for row in frame.filter(pl.col("profile") == profile).iter_rows(named=True):
            if row["value"] is None:
                continue
            y = categories.index(row["category"]) + offset
            ys.append(y)
            xs.append(row["value"])
            if row["ci_low"] is not None and row["ci_high"] is not None:
                whiskers.append((y, row["ci_low"], row["ci_high"]))
        if whiskers:
            y_ci, low, high = zip(*whiskers, strict=True)
            axes.hlines(y_ci, low, high, color=colour(index), linewidth=1.4)
        axes.plot(xs, ys, "o", color=colour(index), markersize=5, label=profile)
    if categories[0] == "overall" and len(categories) > 1:
        axes.axhline(0.5, color=GREY, linewidth=0.8)
    axes.set_xlim(-0.02, 1.02)  # a value of 0 or 1 (common: a perfect category) stays whole
    axes.set_xlabel(first_seen(frame, "label")[0] if frame.height else "")
    axes.grid(axis="x", alpha=0.3)


def paired_differences(frame: pl.DataFrame) -> Figure:
    """A forest plot: one panel per candidate (and metric), one row per scope ("overall"
    first), Δ = candidate − baseline with its CI; filled when significant, hollow when not."""
    panels = frame.select("baseline", "candidate", "metric", "label").unique(maintain_order=True)
    scopes = first_seen(frame, "scope")
    if "overall" in scopes:
        scopes = ["overall", *(s for s in scopes if s != "overall")]
    candidates = first_seen(frame, "candidate")
    columns = min(panels.height, _COLUMNS)
    rows = -(-panels.height // columns)
    fig = figure(max(WIDTH, 3.4 * columns), rows * sized(0.28, len(scopes), base=1.2))
    grid = fig.subplots(rows, columns, sharey=True, squeeze=False)
    cells = [axes for row in grid for axes in row]
    for axes, (baseline, candidate, metric, label) in zip(cells, panels.iter_rows(), strict=False):
        chosen = frame.filter(
            (pl.col("baseline") == baseline)
            & (pl.col("candidate") == candidate)
            & (pl.col("metric") == metric)
        )
        _forest(axes, chosen, scopes, colour(1 + candidates.index(candidate)))
        axes.set_title(f"{candidate} − {baseline}, {label}")
    for axes in cells[panels.height :]:
        axes.set_visible(False)
    cells[0].set_yticks(range(len(scopes)), labels=scopes)
    cells[0].set_ylim(len(scopes) - 0.5, -0.5)
    fig.legend(*_significance_legend(), loc="outside lower center", ncols=2)
    return fig


def _forest(axes: Axes, frame: pl.DataFrame, scopes: list[str], tint: str) -> None:
    from matplotlib.ticker import MaxNLocator

    reach = 0.0
    for row in frame.iter_rows(named=True):
        if row["delta"] is None:
            continue
        y = scopes.index(row["scope"])
        reach = max(reach, abs(row["delta"]))
        if row["ci_low"] is not None and row["ci_high"] is not None:
            axes.hlines(y, row["ci_low"], row["ci_high"], color=tint, linewidth=1.4)
            reach = max(reach, abs(row["ci_low"]), abs(row["ci_high"]))
        face = tint if row["significant"] else "white"
        axes.plot([row["delta"]], [y], "o", color=tint, markerfacecolor=face, markersize=6)
    axes.axvline(0.0, color=GREY, linewidth=1.0, linestyle="--")
    reach = 1.1 * reach if reach > 0 else 1.0
    axes.set_xlim(-reach, reach)
    axes.xaxis.set_major_locator(MaxNLocator(nbins=4, symmetric=True))
    axes.set_xlabel("Δ")
    axes.grid(axis="x", alpha=0.3)


def _significance_legend() -> tuple[list[Artist], list[str]]:
    from matplotlib.lines import Line2D

    handles: list[Artist] = [
        Line2D([], [], marker="o", linestyle="", color="black", markerfacecolor=face)
        for face in ("black", "white")
    ]
    return handles, ["significant (adjusted p)", "not significant"]
