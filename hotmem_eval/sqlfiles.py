"""The versioned SQL files: found by name or number, headers parsed, run on DuckDB.

Each ``sql/NNN_name.sql`` holds one query and opens with a header comment::

    -- name: per_query_metrics
    -- version: 1
    -- inputs: results(...), qrels(...), ...
    -- output: one row per (query_id, metric) ...

``SQL_FILES`` is the registry, by name, in number order. A file's meaning never changes in
place: a change bumps its ``version``, and a result records the version that produced it.

Reading a file (``sql_file``) is apart from running it (``run_sql``); inputs are bound as views
over Arrow data or Parquet files (``bind_inputs``). The metric registry is an input too, the
relation ``metrics`` (``metric_registry.metrics_frame``), so the SQL restates no metric's name,
order, applicability or aggregation. The cutoff k and the relevant grade reach the SQL as
DuckDB variables, ``getvariable('k')`` and ``getvariable('relevant_grade')``, set with bound
parameters (``SET VARIABLE k = ?``), so the same text runs unchanged in the DuckDB CLI after
``SET VARIABLE k = 5; SET VARIABLE relevant_grade = 2;``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import duckdb
import polars as pl
import pyarrow as pa

from hotmem_eval.errors import EvalError
from hotmem_eval.fixture_schema import RELEVANT_GRADE
from hotmem_eval.metric_registry import metrics_frame
from hotmem_eval.metrics import MAX_K

__all__ = [
    "HEADER_KEYS",
    "SQL_DIR",
    "SqlFile",
    "bind_inputs",
    "parse_header",
    "run_sql",
    "sql_file",
    "sql_files",
    "sql_metrics",
]


def _sql_dir() -> Path:
    # In a checkout the files sit at the repository root; the wheel maps them into the package.
    checkout = Path(__file__).resolve().parent.parent / "sql"
    return checkout if checkout.is_dir() else Path(__file__).parent / "sql"


SQL_DIR: Final = _sql_dir()
#: The header keys every SQL file declares, in order.
HEADER_KEYS: Final = ("name", "version", "inputs", "output")

_FILE_NAME = re.compile(r"^(?P<number>\d{3})_(?P<name>[a-z0-9_]+)\.sql$")
_HEADER_LINE = re.compile(r"^--\s*(?P<key>[a-z_]+):\s*(?P<value>.*?)\s*$")


@dataclass(frozen=True, slots=True)
class SqlFile:
    """One versioned SQL file.

    Attributes:
        number: the ``NNN`` prefix of the file name.
        name: the header's ``name`` (equal to the file name after ``NNN_``).
        version: the header's ``version``.
        inputs: the tables, views and variables it reads.
        output: what one output row is, and the order.
        path: where it was read from.
        text: the SQL itself, header included.
    """

    number: int
    name: str
    version: int
    inputs: str
    output: str
    path: Path
    text: str


def parse_header(text: str, path: Path | str) -> dict[str, str]:
    """The ``-- key: value`` lines that open ``text``, up to the first other line.

    Raises:
        EvalError: a key of ``HEADER_KEYS`` is missing or repeated, as ``path:line``.
    """
    header: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        match = _HEADER_LINE.match(line)
        if match is None:
            break
        key = match["key"]
        if key in header:
            raise EvalError(f"{path}:{number}: expected one {key!r} header line, found another")
        header[key] = match["value"]
    missing = [key for key in HEADER_KEYS if key not in header]
    if missing:
        raise EvalError(
            f"{path}:1: expected header lines {list(HEADER_KEYS)} before the query, "
            f"found {list(header)} (missing {missing})"
        )
    return header


def _load(path: Path) -> SqlFile:
    match = _FILE_NAME.match(path.name)
    if match is None:
        raise EvalError(f"{path}: expected a file name NNN_name.sql, found {path.name!r}")
    text = path.read_text(encoding="utf-8")
    header = parse_header(text, path)
    if header["name"] != match["name"]:
        raise EvalError(
            f"{path}:1: expected name: {match['name']} (the file name), found {header['name']!r}"
        )
    if not header["version"].isdigit():
        raise EvalError(f"{path}:2: expected an integer version, found {header['version']!r}")
    return SqlFile(
        number=int(match["number"]),
        name=header["name"],
        version=int(header["version"]),
        inputs=header["inputs"],
        output=header["output"],
        path=path,
        text=text,
    )


@functools.cache
def sql_files(directory: Path = SQL_DIR) -> dict[str, SqlFile]:
    """The registry: every ``NNN_name.sql`` of ``directory`` by name, in number order.

    Raises:
        EvalError: a file is misnamed or has a bad header, or two files share a number.
    """
    files = [_load(path) for path in sorted(directory.glob("*.sql"))]
    numbers = [file.number for file in files]
    if len(set(numbers)) != len(numbers):
        raise EvalError(f"{directory}: expected one SQL file per number, found {numbers}")
    return {file.name: file for file in files}


def sql_file(key: str | int) -> SqlFile:
    """One SQL file by name (``"per_query_metrics"``), number (``1``, ``"001"``) or stem.

    Raises:
        EvalError: no file matches.
    """
    files = sql_files()
    for file in files.values():
        if key in (file.name, file.number, f"{file.number:03d}", file.path.stem):
            return file
    raise EvalError(f"expected a SQL file of {list(files)}, found key={key!r}")


Source = pl.DataFrame | pa.Table | Path | str


def bind_inputs(con: duckdb.DuckDBPyConnection, **tables: Source) -> None:
    """Make each keyword a view of that name: a polars frame, Arrow table, or Parquet path."""
    for name, source in tables.items():
        if isinstance(source, (pl.DataFrame, pa.Table)):
            con.register(name, source)
        else:
            con.read_parquet(str(source)).to_view(name, replace=True)


def run_sql(
    key: str | int,
    con: duckdb.DuckDBPyConnection,
    *,
    k: int = 5,
    relevant_grade: int = RELEVANT_GRADE,
) -> pl.DataFrame:
    """Run SQL file ``key`` on ``con``, whose inputs are bound, at cutoff ``k``.

    ``k`` and ``relevant_grade`` (the smallest grade counted relevant) are set as the DuckDB
    variables of those names.

    Raises:
        EvalError: ``k`` or ``relevant_grade`` is not an int in 1..MAX_K, or no file matches
            ``key``.
    """
    variables = {"k": k, "relevant_grade": relevant_grade}
    for name, value in variables.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_K:
            raise EvalError(
                f"expected {name} to be an int >= 1 (at most {MAX_K}), found {name}={value!r}"
            )
    file = sql_file(key)
    for name, value in variables.items():
        con.execute(f"SET VARIABLE {name} = ?", [value])
    frame: pl.DataFrame = con.sql(file.text).pl()
    return frame


def sql_metrics(
    results: Source,
    qrels: Source,
    queries: Source,
    groups: Source,
    *,
    k: int = 5,
    relevant_grade: int = RELEVANT_GRADE,
    metrics: Source | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-query and per-category metrics computed by the SQL files on a fresh DuckDB.

    Args:
        k: the cutoff, as ``metrics.per_query_metrics`` takes it.
        relevant_grade: the smallest grade counted relevant, likewise.
        metrics: the metric registry relation; ``metrics_frame()`` (the registry) by default.

    Returns:
        (per_query, per_category), as ``hotmem_eval.metrics`` returns them.

    Raises:
        duckdb.Error: ``metrics`` lists a metric the SQL has no formula for, or misses one it
            has, or gives an unknown ``applies_to`` or ``aggregation``.
    """
    with duckdb.connect() as con:
        bind_inputs(
            con,
            metrics=metrics_frame() if metrics is None else metrics,
            results=results,
            qrels=qrels,
            queries=queries,
            groups=groups,
        )
        per_query = run_sql("per_query_metrics", con, k=k, relevant_grade=relevant_grade)
        bind_inputs(con, per_query_metrics=per_query)
        return per_query, run_sql("category_metrics", con, k=k, relevant_grade=relevant_grade)
