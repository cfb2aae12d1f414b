"""The data behind the HTML report's plots: five polars frames, their schemas and their check.

``PlotFrames`` holds one frame per plot (``hotmem_eval.plots.render_plots`` draws them). Each
frame must have at least its schema's columns, with exactly those types (a column of nulls only,
``pl.Null``, is taken as the schema's type); other columns are ignored. A column marked
nullable below may hold nulls; the others may not. Rows are drawn in the frame's order:
profiles, categories, scopes and candidates appear as they first appear in the frame.

==========================  =====================================================================
``category_metric``         a metric per category and profile, with its bootstrap CI
``paired_differences``      candidate − baseline per scope, with its CI and adjusted p-value
``channel_scores``          every candidate's channel value, relevant or not, and the floor
``first_relevant_rank``     the rank of each query's first relevant memory (null: not in top k)
``latency``                 every search's latency in milliseconds
==========================  =====================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Final

import polars as pl

from hotmem_eval.errors import EvalError

__all__ = [
    "CATEGORY_METRIC_SCHEMA",
    "CHANNEL_SCORES_SCHEMA",
    "FIRST_RELEVANT_RANK_SCHEMA",
    "LATENCY_SCHEMA",
    "NULLABLE",
    "PAIRED_DIFFERENCES_SCHEMA",
    "SCHEMAS",
    "PlotFrames",
    "first_seen",
    "validate",
]

#: Metric per category and profile; ``category`` holds ``"overall"`` and the categories.
CATEGORY_METRIC_SCHEMA: Final[dict[str, pl.DataType]] = {
    "profile": pl.String(),
    "category": pl.String(),
    "metric": pl.String(),
    "label": pl.String(),
    "value": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "n": pl.Int64(),
}
#: Paired differences candidate − baseline per scope (``"overall"`` and the categories).
PAIRED_DIFFERENCES_SCHEMA: Final[dict[str, pl.DataType]] = {
    "baseline": pl.String(),
    "candidate": pl.String(),
    "scope": pl.String(),
    "metric": pl.String(),
    "label": pl.String(),
    "delta": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "p_adjusted": pl.Float64(),
    "significant": pl.Boolean(),
    "n": pl.Int64(),
}
#: One candidate's value in one channel (``cosine``, ``bm25_normalised``, ``importance``).
CHANNEL_SCORES_SCHEMA: Final[dict[str, pl.DataType]] = {
    "profile": pl.String(),
    "query_id": pl.String(),
    "memory_id": pl.String(),
    "relevant": pl.Boolean(),
    "channel": pl.String(),
    "value": pl.Float64(),
    "floor": pl.Float64(),
}
#: The rank of a query's first relevant memory in a profile's top ``k`` (null: none there).
FIRST_RELEVANT_RANK_SCHEMA: Final[dict[str, pl.DataType]] = {
    "profile": pl.String(),
    "category": pl.String(),
    "query_id": pl.String(),
    "rank": pl.Int64(),
    "k": pl.Int64(),
}
#: One search's latency.
LATENCY_SCHEMA: Final[dict[str, pl.DataType]] = {"profile": pl.String(), "ms": pl.Float64()}

#: frame name -> its schema, in the order the plots are drawn.
SCHEMAS: Final[dict[str, dict[str, pl.DataType]]] = {
    "category_metric": CATEGORY_METRIC_SCHEMA,
    "paired_differences": PAIRED_DIFFERENCES_SCHEMA,
    "channel_scores": CHANNEL_SCORES_SCHEMA,
    "first_relevant_rank": FIRST_RELEVANT_RANK_SCHEMA,
    "latency": LATENCY_SCHEMA,
}
#: frame name -> the columns that may hold nulls.
NULLABLE: Final[dict[str, frozenset[str]]] = {
    "category_metric": frozenset({"value", "ci_low", "ci_high"}),
    "paired_differences": frozenset({"delta", "ci_low", "ci_high", "p_adjusted"}),
    "channel_scores": frozenset({"floor"}),
    "first_relevant_rank": frozenset({"rank"}),
    "latency": frozenset(),
}


@dataclass(frozen=True, slots=True)
class PlotFrames:
    """The five frames the report's plots are drawn from (schemas in ``SCHEMAS``)."""

    category_metric: pl.DataFrame
    paired_differences: pl.DataFrame
    channel_scores: pl.DataFrame
    first_relevant_rank: pl.DataFrame
    latency: pl.DataFrame


def validate(frames: PlotFrames) -> PlotFrames:
    """The frames reduced to their schemas' columns and types, or ``EvalError`` naming the
    frame and the column that is missing, of the wrong type, or null where it may not be."""
    checked = {
        field.name: _checked(field.name, getattr(frames, field.name)) for field in fields(frames)
    }
    return PlotFrames(**checked)


def _checked(name: str, frame: object) -> pl.DataFrame:
    if not isinstance(frame, pl.DataFrame):
        raise EvalError(
            f"plot frame {name!r} must be a polars DataFrame, found {type(frame).__name__}"
        )
    schema = SCHEMAS[name]
    missing = [column for column in schema if column not in frame.columns]
    if missing:
        raise EvalError(
            f"plot frame {name!r} has no column {missing[0]!r} "
            f"(missing: {', '.join(missing)}; expected columns: {', '.join(schema)})"
        )
    for column, dtype in schema.items():
        found = frame.schema[column]
        if found != dtype and found != pl.Null:
            raise EvalError(f"plot frame {name!r} column {column!r} must be {dtype}, found {found}")
    selected = frame.select(pl.col(column).cast(dtype) for column, dtype in schema.items())
    for column in schema:
        nulls = selected[column].null_count()
        if nulls and column not in NULLABLE[name]:
            raise EvalError(
                f"plot frame {name!r} column {column!r} has {nulls} null(s); it may have none"
            )
    return selected


def first_seen(frame: pl.DataFrame, column: str) -> list[str]:
    """The distinct values of a string column, in the order they first appear."""
    return [str(value) for value in frame[column].unique(maintain_order=True).to_list()]
