"""Report tables: a polars frame in, Markdown or HTML out.

Every table of the evaluator's reports is a frame rendered here, so a table's layout is decided
once: a cell is its value as text (``–`` for null; callers format numbers), Markdown cells have
pipes escaped and line breaks folded, and the columns named in ``right`` are right-aligned
(numbers). ``headers`` replaces the column names when two headers would be equal or a header
is not a valid column name. The same frame renders as an HTML ``<table>``, where the little
Markdown a cell may hold (``**bold**`` and ```code```) becomes ``<strong>`` and ``<code>``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import polars as pl

from hotmem_eval.errors import EvalError

__all__ = [
    "DASH",
    "Block",
    "Table",
    "cell_text",
    "html_table",
    "markdown",
    "markdown_table",
    "table",
    "text_frame",
]

#: What an empty cell (a null) shows.
DASH = "–"

_BOLD = re.compile(r"\*\*(.+?)\*\*")
_CODE = re.compile(r"`([^`]+)`")


def cell_text(value: object) -> str:
    """A value as one line of cell text: ``DASH`` for None, whitespace folded to one space."""
    return DASH if value is None else " ".join(str(value).split())


def text_frame(columns: Sequence[str], rows: Iterable[Sequence[object]]) -> pl.DataFrame:
    """Rows of cell values as a frame of text columns, one a header (None stays null).

    Raises:
        EvalError: two equal headers (pass distinct names and ``headers`` to the renderer), or
            a row of another length.
    """
    if len(set(columns)) != len(columns):
        raise EvalError(f"expected distinct column names, found {list(columns)}")
    data = [[None if value is None else str(value) for value in row] for row in rows]
    if any(len(row) != len(columns) for row in data):
        raise EvalError(f"expected rows of {len(columns)} cells for columns {list(columns)}")
    return pl.DataFrame(data, schema=dict.fromkeys(columns, pl.String()), orient="row")


def _layout(
    frame: pl.DataFrame, headers: Sequence[str] | None, right: Sequence[str]
) -> tuple[list[str], list[bool]]:
    """The table's headers and which columns are right-aligned.

    Raises:
        EvalError: ``headers`` of another length than the columns, or ``right`` naming a
            column the frame lacks (a report bug).
    """
    names = frame.columns
    shown = list(names if headers is None else headers)
    if len(shown) != len(names):
        raise EvalError(f"expected {len(names)} headers for columns {names}, found {shown}")
    unknown = sorted(set(right) - set(names))
    if unknown:
        raise EvalError(f"right-aligned columns {unknown} are not columns of {names}")
    return shown, [name in right for name in names]


def markdown_table(
    frame: pl.DataFrame, *, headers: Sequence[str] | None = None, right: Sequence[str] = ()
) -> list[str]:
    """The frame as Markdown table lines: the header, the alignment row, one line a row.

    Raises:
        EvalError: as ``_layout``.
    """
    shown, aligned = _layout(frame, headers, right)

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    lines = [line([cell_text(h) for h in shown])]
    lines.append("|" + "".join("---:|" if r else "---|" for r in aligned))
    lines += [line([cell_text(value) for value in row]) for row in frame.iter_rows()]
    return lines


def _inline_html(text: str) -> str:
    escaped = html.escape(text, quote=False)
    return _CODE.sub(r"<code>\1</code>", _BOLD.sub(r"<strong>\1</strong>", escaped))


def html_table(
    frame: pl.DataFrame, *, headers: Sequence[str] | None = None, right: Sequence[str] = ()
) -> str:
    """The frame as an HTML ``<table>`` (right-aligned columns have class ``num``).

    Raises:
        EvalError: as ``_layout``.
    """
    shown, aligned = _layout(frame, headers, right)

    classes = [' class="num"' if r else "" for r in aligned]

    def row(tag: str, cells: Sequence[str]) -> str:
        inner = "".join(
            f"<{tag}{attribute}>{_inline_html(cell)}</{tag}>"
            for cell, attribute in zip(cells, classes, strict=True)
        )
        return f"<tr>{inner}</tr>"

    body = [row("td", [cell_text(v) for v in values]) for values in frame.iter_rows()]
    return "\n".join(
        [
            "<table>",
            "<thead>" + row("th", [cell_text(h) for h in shown]) + "</thead>",
            "<tbody>",
            *body,
            "</tbody>",
            "</table>",
        ]
    )


@dataclass(frozen=True, slots=True)
class Table:
    """A table of a report: its frame and how to render it (``markdown_table``)."""

    frame: pl.DataFrame
    right: tuple[str, ...] = ()
    headers: tuple[str, ...] | None = None


#: A report is a sequence of blocks: a line of Markdown text, or a table.
Block = str | Table


def table(
    columns: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    right: Sequence[str] = (),
    headers: Sequence[str] | None = None,
) -> Table:
    """A ``Table`` of ``text_frame(columns, rows)``."""
    return Table(
        text_frame(columns, rows), tuple(right), None if headers is None else tuple(headers)
    )


def markdown(blocks: Iterable[Block]) -> list[str]:
    """The blocks as Markdown lines: text as it is, each table by ``markdown_table``."""
    lines: list[str] = []
    for block in blocks:
        if isinstance(block, Table):
            lines += markdown_table(block.frame, headers=block.headers, right=block.right)
        else:
            lines.append(block)
    return lines
