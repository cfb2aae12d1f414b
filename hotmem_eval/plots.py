"""The HTML report's static plots: SVG drawn by matplotlib from the frames of ``PlotFrames``.

``render_plots(frames)`` returns plot name -> SVG bytes, in the order of ``PLOT_NAMES``:

=======================  =========================================================================
``category_metric``      a metric per category (rows) and profile (markers), with CI whiskers
``paired_differences``   forest plot of candidate − baseline per scope, significant ones filled
                         (left out when the frame has no rows)
``channel_scores``       relevant and non-relevant candidates' values per profile and channel,
                         the profile's cosine floor dashed
``first_relevant_rank``  share of queries whose first relevant memory is at rank 1 … k, or not
                         in the top k, per category and profile
``latency``              box plot of each profile's latency on a log axis, p50 and p95 beside it
=======================  =========================================================================

A frame with no rows gives a small "no data" figure (except ``paired_differences``, left out).
**Deterministic:** the same frames give the same bytes, in every process: the figures start
from matplotlib's own defaults (not the user's matplotlibrc), the SVG ids are hashed with a
fixed salt (``svg.hashsalt``), glyphs are drawn as paths (``svg.fonttype`` "path": no font is
needed to view them, and the bundled DejaVu Sans is used to draw them), the SVG carries no date
and no creator, sizes and DPI are fixed, and everything is drawn in the frames' order.

matplotlib is imported on the first call, not with this module. The figures are
``matplotlib.figure.Figure`` objects (no pyplot); a lock serialises rendering, because the
settings above are matplotlib's process-wide ``rcParams``.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final

import polars as pl

from hotmem_eval.errors import EvalError
from hotmem_eval.plot_distributions import channel_scores, first_relevant_rank, latency
from hotmem_eval.plot_frames import (
    CATEGORY_METRIC_SCHEMA,
    CHANNEL_SCORES_SCHEMA,
    FIRST_RELEVANT_RANK_SCHEMA,
    LATENCY_SCHEMA,
    PAIRED_DIFFERENCES_SCHEMA,
    SCHEMAS,
    PlotFrames,
    validate,
)
from hotmem_eval.plot_metrics import category_metric, paired_differences
from hotmem_eval.plot_style import no_data_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "CATEGORY_METRIC_SCHEMA",
    "CHANNEL_SCORES_SCHEMA",
    "FIRST_RELEVANT_RANK_SCHEMA",
    "HASH_SALT",
    "LATENCY_SCHEMA",
    "PAIRED_DIFFERENCES_SCHEMA",
    "PLOT_NAMES",
    "SCHEMAS",
    "PlotFrames",
    "render_plots",
]

#: The plots, in the order ``render_plots`` returns them.
PLOT_NAMES: Final = (
    "category_metric",
    "paired_differences",
    "channel_scores",
    "first_relevant_rank",
    "latency",
)
#: The salt of the SVG's element ids (so that they are the same on every run).
HASH_SALT: Final = "hotmem-eval"
#: The settings every plot is drawn with, over matplotlib's defaults (keys typed ``Any``: the
#: stubs type them as a ``Literal`` of every rcParams key).
SETTINGS: Final[dict[Any, Any]] = {
    "svg.hashsalt": HASH_SALT,
    "svg.fonttype": "path",
    "svg.id": None,
    "font.family": ["DejaVu Sans"],
    "font.size": 9.0,
    # A profile or category name is text, never mathtext (a "$" is drawn as a "$").
    "text.parse_math": False,
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "savefig.bbox": None,
    "savefig.transparent": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
#: No date (a run's bytes do not depend on when it ran) and no creator (nor on the version).
_METADATA: Final[dict[str, Any]] = {"Date": None, "Creator": None}
#: The titles of the "no data" figures.
_TITLES: Final = {
    "category_metric": "Metric per category and profile",
    "channel_scores": "Channel scores of relevant and non-relevant candidates",
    "first_relevant_rank": "Rank of the first relevant memory",
    "latency": "Search latency",
}
_DRAW: Final[dict[str, Callable[[pl.DataFrame], Figure]]] = {
    "category_metric": category_metric,
    "paired_differences": paired_differences,
    "channel_scores": channel_scores,
    "first_relevant_rank": first_relevant_rank,
    "latency": latency,
}
_LOCK: Final = threading.Lock()


def render_plots(frames: PlotFrames) -> dict[str, bytes]:
    """Plot name -> its SVG, in the order of ``PLOT_NAMES`` (``paired_differences`` left out
    when its frame has no rows). Raises ``EvalError`` naming the frame and the column when a
    frame lacks a column of its schema, has it with another type, or has a null where it may
    not; or when matplotlib is not installed."""
    checked = validate(frames)
    try:
        import matplotlib
    except ImportError as error:
        raise EvalError(
            "the HTML report's plots need matplotlib, part of the 'eval' extra; "
            "install it with pip install '.[eval]'"
        ) from error
    with _LOCK, matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(SETTINGS)
        return {name: _svg(fig) for name, fig in _figures(checked)}


def _figures(frames: PlotFrames) -> Iterator[tuple[str, Figure]]:
    for name in PLOT_NAMES:
        frame: pl.DataFrame = getattr(frames, name)
        if frame.height:
            yield name, _DRAW[name](frame)
        elif name != "paired_differences":
            yield name, no_data_figure(_TITLES[name])


def _svg(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", metadata=_METADATA)
    return buffer.getvalue()
