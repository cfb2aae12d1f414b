"""``hotmem-eval query``: ad-hoc SQL over the Parquet exports of one or more runs.

Each export table becomes a DuckDB view of the same name, with a ``run`` column (the export
directory's name) so several runs can be compared in one query. The metric registry is the
table ``metrics`` (the SQL files' input of that name). With exactly one run, every versioned SQL
file whose columns that run's tables have is also a view, ``sql_<name>`` (for example
``sql_category_metrics``), computed over that run's tables with its top-k.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import duckdb

from hotmem_eval.errors import UsageError
from hotmem_eval.metric_registry import metrics_frame
from hotmem_eval.outputs import EXPORT_TABLES, MANIFEST
from hotmem_eval.sqlfiles import sql_files

__all__ = ["Format", "format_rows", "open_runs", "run_query"]

Format = Literal["table", "csv", "json"]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _run_names(directories: Sequence[Path]) -> list[str]:
    names: list[str] = []
    for directory in directories:
        name = directory.resolve().name or str(directory)
        names.append(name if name not in names else f"{name}#{len(names) + 1}")
    return names


def _manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(
            f"{directory}: not a run export (no {MANIFEST}); create one with --export-dir"
        ) from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read the manifest: {exc}") from None


def open_runs(directories: Sequence[Path]) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with every export table of ``directories`` as a view.

    Raises:
        UsageError: a directory is not a run export or misses a table.
    """
    if not directories:
        raise UsageError("expected at least one run directory")
    manifests = [_manifest(directory) for directory in directories]
    names = _run_names(directories)
    con = duckdb.connect()
    for table in EXPORT_TABLES:
        parts = []
        for directory, name in zip(directories, names, strict=True):
            path = directory / f"{table}.parquet"
            if not path.is_file():
                raise UsageError(f"{directory}: missing {path.name} (expected every export table)")
            parts.append(f"SELECT {_quote(name)} AS run, * FROM read_parquet({_quote(str(path))})")
        con.execute(f"CREATE VIEW {table} AS " + " UNION ALL BY NAME ".join(parts))
    # A table copied from the registry, so the connection does not hold a Python object.
    con.register("metric_registry", metrics_frame())
    con.execute("CREATE TABLE metrics AS FROM metric_registry")
    con.unregister("metric_registry")
    if len(directories) == 1:
        con.execute("SET VARIABLE k = ?", [int(manifests[0]["top_k"])])
        for name, file in sql_files().items():
            body = file.text.strip().rstrip(";")
            try:
                con.execute(f"CREATE VIEW sql_{name} AS {body}")
            except duckdb.BinderException:
                # The file reads a column these exports lack (paired_deltas needs a profile
                # column): no view, rather than no query at all.
                continue
    return con


def format_rows(columns: list[str], rows: list[tuple[Any, ...]], fmt: Format) -> str:
    """Render a result as an aligned text table, CSV, or a JSON array of objects."""
    if fmt == "json":
        return (
            json.dumps(
                [dict(zip(columns, row, strict=True)) for row in rows],
                indent=2,
                ensure_ascii=False,
                default=str,
            )
            + "\n"
        )
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(["" if v is None else v for v in row] for row in rows)
        return buffer.getvalue()

    def text(value: Any) -> str:
        if value is None:
            return "NULL"
        return f"{value:.6g}" if isinstance(value, float) else str(value)

    cells = [[text(v) for v in row] for row in rows]
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


def run_query(directories: Sequence[Path], sql: str, *, fmt: Format = "table") -> str:
    """Run ``sql`` over the runs in ``directories`` and format the result.

    Raises:
        UsageError: a directory is not a run export, or DuckDB rejects the SQL.
    """
    con = open_runs(directories)
    try:
        relation = con.sql(sql)
        if relation is None:
            return ""
        return format_rows(list(relation.columns), relation.fetchall(), fmt)
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0]
        raise UsageError(f"query failed: {first}") from None
    finally:
        con.close()
