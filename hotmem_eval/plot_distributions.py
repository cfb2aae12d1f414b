"""The distribution plots: channel scores with the floor, first relevant rank, and latency.

Each takes a frame checked by ``plot_frames.validate`` (with at least one row) and returns a
``matplotlib.figure.Figure``; ``hotmem_eval.plots`` renders them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import polars as pl

from hotmem_eval.plot_frames import first_seen
from hotmem_eval.plot_style import GREY, WIDTH, colour, figure, no_data, no_data_figure, sized

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["CHANNELS", "channel_scores", "first_relevant_rank", "latency"]

#: The channels in the order their columns are drawn (any other channel follows, frame order).
CHANNELS: Final = ("cosine", "bm25_normalised", "importance")
#: Bins of a channel's histograms (shared by every profile in the channel's column).
_BINS: Final = 25
#: The least latency drawn on the log axis (a 0 ms search is drawn there).
_LEAST_MS: Final = 1e-3


def channel_scores(frame: pl.DataFrame) -> Figure:
    """A grid, a row per profile and a column per channel: histograms (densities) of the
    relevant and the non-relevant candidates' values, with the profile's floor on cosine."""
    frame = frame.filter(pl.col("value").is_finite())
    profiles = first_seen(frame, "profile")
    present = first_seen(frame, "channel")
    channels = [c for c in CHANNELS if c in present] + [c for c in present if c not in CHANNELS]
    if not channels:
        return no_data_figure("Channel scores of relevant and non-relevant candidates")
    fig = figure(max(WIDTH, 3.3 * len(channels)), sized(2.1, len(profiles), base=0.7))
    grid = fig.subplots(len(profiles), len(channels), squeeze=False, sharex="col")
    for column, channel in enumerate(channels):
        values = frame.filter(pl.col("channel") == channel)["value"]
        low, high = min(0.0, float(values.min())), max(1.0, float(values.max()))  # type: ignore[arg-type]
        bins = [low + (high - low) * i / _BINS for i in range(_BINS + 1)]
        for row, profile in enumerate(profiles):
            axes = grid[row][column]
            cell = frame.filter((pl.col("profile") == profile) & (pl.col("channel") == channel))
            _histograms(axes, cell, bins, colour(row))
            if channel == "cosine":
                _floor(axes, cell)
            if cell.height:
                axes.legend(fontsize="x-small", loc="best")
            else:
                no_data(axes, keep_ticks=True)
            axes.set_title(f"{profile} · {channel}", fontsize="small")
        grid[-1][column].set_xlabel(channel)
    for row in grid:
        row[0].set_ylabel("density")
    fig.suptitle("Channel scores of relevant and non-relevant candidates")
    return fig


def _histograms(axes: Axes, cell: pl.DataFrame, bins: list[float], tint: str) -> None:
    for relevant, name, shade in ((False, "non-relevant", GREY), (True, "relevant", tint)):
        values = cell.filter(pl.col("relevant") == relevant)["value"].to_list()
        label = f"{name} (n={len(values)})"
        if not values:
            continue
        if relevant:
            axes.hist(values, bins=bins, density=True, histtype="step", linewidth=1.6,
                      color=shade, label=label)  # fmt: skip
        else:
            axes.hist(values, bins=bins, density=True, histtype="stepfilled", alpha=0.4,
                      color=shade, label=label)  # fmt: skip


def _floor(axes: Axes, cell: pl.DataFrame) -> None:
    floors = cell["floor"].drop_nulls()
    if floors.len():
        floor = float(floors[0])
        axes.axvline(
            floor, color="black", linestyle="--", linewidth=1.0, label=f"floor {floor:.2f}"
        )


def first_relevant_rank(frame: pl.DataFrame) -> Figure:
    """A horizontal stacked bar per category and profile: the share of queries whose first
    relevant memory is at rank 1, 2, …, k, or not in the top k."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    k = int(frame["k"].max())  # type: ignore[arg-type]
    bars, size, shares = _rank_shares(frame)
    fig = figure(WIDTH, sized(0.3, len(bars), base=1.9))
    axes = fig.add_subplot()
    blues = colormaps["Blues"]
    left = [0.0] * len(bars)
    for rank in [*range(1, k + 1), 0]:
        shade = to_hex(blues(0.9 - 0.6 * (rank - 1) / max(k - 1, 1))) if rank else GREY
        widths = [shares.get((*bar, rank), 0.0) for bar in bars]
        label = f"rank {rank}" if rank else f"not in top {k}"
        axes.barh(range(len(bars)), widths, left=left, color=shade, label=label, height=0.7)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    for y, bar in enumerate(bars):
        axes.text(1.01, y, f"n={size[bar]}", va="center", fontsize="small",
                  transform=axes.get_yaxis_transform())  # fmt: skip
        if y and bar[0] != bars[y - 1][0]:
            axes.axhline(y - 0.5, color="black", linewidth=0.6)
    axes.set_yticks(range(len(bars)), labels=[f"{c} · {p}" for c, p in bars])
    axes.set_ylim(len(bars) - 0.5, -0.5)
    axes.set_xlim(0.0, 1.0)
    axes.set_xlabel("share of queries")
    axes.set_title("Rank of the first relevant memory")
    fig.legend(loc="outside lower center", ncols=min(k + 1, 6), fontsize="small")
    return fig


def _rank_shares(
    frame: pl.DataFrame,
) -> tuple[list[tuple[str, str]], dict[tuple[str, str], int], dict[tuple[str, str, int], float]]:
    """The bars (category, profile) in frame order, each one's number of queries, and the
    share of its queries in each bucket: rank 1 … k, or 0 for "not in the top k"."""
    bucket = pl.when(pl.col("rank").is_between(1, pl.col("k"))).then(pl.col("rank")).otherwise(0)
    counted = frame.group_by("category", "profile", bucket.alias("bucket")).len()
    size = {(c, p): n for c, p, n in frame.group_by("category", "profile").len().iter_rows()}
    shares = {(c, p, b): n / size[(c, p)] for c, p, b, n in counted.iter_rows()}
    bars = [(c, p) for c in first_seen(frame, "category") for p in first_seen(frame, "profile")]
    return [bar for bar in bars if bar in size], size, shares


def latency(frame: pl.DataFrame) -> Figure:
    """A horizontal box plot of each profile's latencies on a log axis, with p50 and p95
    (linear interpolation, as in the result's ``query_latency_ms``) written beside it."""
    from matplotlib.ticker import FuncFormatter, LogFormatter

    frame = frame.filter(pl.col("ms").is_finite())
    profiles = first_seen(frame, "profile")
    if not profiles:
        return no_data_figure("Search latency")
    fig = figure(WIDTH, sized(0.55, len(profiles), base=1.3))
    axes = fig.add_subplot()
    samples = [frame.filter(pl.col("profile") == p)["ms"] for p in profiles]
    drawn = [s.clip(lower_bound=_LEAST_MS).to_list() for s in samples]
    boxes = axes.boxplot(drawn, orientation="horizontal", tick_labels=profiles, widths=0.5,
                         patch_artist=True, medianprops={"color": "black"})  # fmt: skip
    for index, box in enumerate(boxes["boxes"]):
        box.set_facecolor(colour(index))
        box.set_alpha(0.6)
    for index, series in enumerate(samples, start=1):
        p50 = series.quantile(0.50, interpolation="linear")
        p95 = series.quantile(0.95, interpolation="linear")
        axes.text(1.01, index, f"p50 {_ms(p50)}\np95 {_ms(p95)}", va="center",
                  fontsize="small", transform=axes.get_yaxis_transform())  # fmt: skip
    axes.set_ylim(len(profiles) + 0.5, 0.5)
    axes.set_xscale("log")
    # Plain tick labels ("0.1", "10"): the log scale's own are mathtext, and no text is.
    axes.xaxis.set_major_formatter(FuncFormatter(_tick))
    axes.xaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False))
    axes.set_xlabel("search latency (ms, log scale)")
    axes.set_title("Search latency")
    return fig


def _tick(value: float, _position: int | None) -> str:
    return f"{value:g}"


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.1f} ms" if value >= 10 else f"{value:.2f} ms"
