"""How ``hotmem-eval query`` prints a result: an aligned text table, CSV, or JSON."""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Literal

__all__ = ["Format", "format_rows"]

Format = Literal["table", "csv", "json"]


def format_rows(columns: list[str], rows: list[tuple[Any, ...]], fmt: Format) -> str:
    """Render a result as an aligned text table, CSV, or a JSON array of objects."""
    if fmt == "json":
        objects = [dict(zip(columns, row, strict=True)) for row in rows]
        return json.dumps(objects, indent=2, ensure_ascii=False, default=str) + "\n"
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(["" if v is None else v for v in row] for row in rows)
        return buffer.getvalue()
    return _text_table(columns, rows)


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _text_table(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    """An aligned text table: numbers right-aligned, NULL for a missing value, a row count."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    numeric = [
        all(isinstance(row[i], int | float) for row in rows if row[i] is not None)
        for i in range(len(columns))
    ]

    def line(values: list[str]) -> str:
        return " | ".join(
            v.rjust(w) if right else v.ljust(w)
            for v, w, right in zip(values, widths, numeric, strict=True)
        ).rstrip()

    lines = [line(list(columns)), "-+-".join("-" * w for w in widths)]
    lines += [line(r) for r in cells]
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(lines) + "\n"
