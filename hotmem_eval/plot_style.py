"""What every plot shares: its figure, the profiles' colours and the "no data" figure.

matplotlib is imported inside the functions, so importing this module costs nothing; the
figures are ``matplotlib.figure.Figure`` objects (no pyplot, no global figure manager).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "DPI",
    "GREY",
    "WIDTH",
    "colour",
    "figure",
    "no_data",
    "no_data_figure",
    "sized",
]

#: Every figure's resolution (the SVG's size in points is inches x 72 whatever it is).
DPI: Final = 100
#: The width of a one-panel figure, in inches.
WIDTH: Final = 8.0
#: Okabe and Ito's colour-blind safe palette, one colour a profile in the frame's order.
PALETTE: Final = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#000000",
    "#F0E442",
)
#: Things that are not a profile: non-relevant candidates, "not in top k".
GREY: Final = "#9E9E9E"


def colour(index: int) -> str:
    """The colour of the profile at ``index`` (frame order)."""
    return PALETTE[index % len(PALETTE)]


def sized(per_row: float, rows: int, *, base: float = 1.4, most: float = 40.0) -> float:
    """A figure height: ``base`` inches plus ``per_row`` for each row, at most ``most``."""
    return min(most, base + per_row * max(rows, 1))


def figure(width: float, height: float) -> Figure:
    """A new figure with constrained layout, not attached to any pyplot state."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def no_data(axes: Axes, *, keep_ticks: bool = False) -> None:
    """Write "no data" in the middle of an empty panel, and hide its ticks unless
    ``keep_ticks`` (a panel sharing its axis with others keeps them)."""
    axes.text(0.5, 0.5, "no data", ha="center", va="center", color=GREY, transform=axes.transAxes)
    if not keep_ticks:
        axes.set_xticks([])
        axes.set_yticks([])


def no_data_figure(title: str) -> Figure:
    """A small figure that says the plot has no data."""
    fig = figure(6.0, 1.2)
    axes = fig.add_subplot()
    axes.set_title(title)
    no_data(axes)
    for spine in axes.spines.values():
        spine.set_visible(False)
    return fig
