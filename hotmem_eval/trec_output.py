"""TREC run and qrels files: written into the export directory, read back by ``compare``.

The plain-text formats of trec_eval (and of ranx and ir_measures), columns split by whitespace:

- **run** ``query_id Q0 memory_id rank score run_name``, one line per returned slot, written
  (``run_text``, ``write_run``) in (query_id, rank) order, ids in byte order, one space between
  columns, the score as Python's ``repr(float)``: the shortest text that reads back as the same
  double, so trec_eval's ``atof`` sees our score bit for bit.
- **qrels** ``query_id 0 memory_id grade``, one line per judged pair, grade 0 included, in
  (query_id, memory_id) order (``qrels_text``, ``write_qrels``).

The writers are not atomic by themselves: the export wraps each in ``outputs.atomic_write``.

**Tie order.** trec_eval ignores the rank column: it sorts a query's lines by score descending
and breaks ties by document id *descending* (``comp_sim_docno`` in ``form_res_rels.c``);
ir_measures computes nDCG@k, P@k, R@k and AP@k with pytrec_eval, which embeds that code (but
RR@k with its msmarco provider, which breaks ties by id *ascending*). HotMem breaks ties by
memory_id *ascending*. So where tied slots of a query differ in grade, those tools can score a
run differently from our report (nDCG, AP, trec_eval's RR; P and R where the tie straddles the
cutoff). The scores are written as the profile computed them: only other scores or other ids
could make trec_eval reproduce our order, never the ranks it does not read. ``rank_as_trec_eval``
ranks a run as trec_eval does, so the difference can be measured; ``compare_trec_runs`` ranks so.

**Names** are written as they are, never escaped (no tool of the field would undo it).
``check_run_names`` refuses (``UsageError``) a run name, which is also the file name
``runs/<name>.trec``, that is not 1..64 ASCII letters, digits, ``.``, ``_``, ``+``, ``-``
starting with a letter, digit or ``_``, and two names equal but for case (one file on a
case-insensitive file system). The writers refuse (``UsageError``) an id that is empty or holds
whitespace or NUL (it would shift the columns), and a query id starting with ``#`` (trec_eval
skips such a line as a comment).

Reading them back is ``trec_read``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Final

import polars as pl

from hotmem_eval.errors import EvalError, UsageError
from hotmem_eval.metric_statistics import FrameLike, canonical

__all__ = [
    "RUN_FILE_COLUMNS",
    "TREC_QRELS_COLUMNS",
    "TREC_RUN_COLUMNS",
    "check_run_names",
    "check_trec_ids",
    "qrels_text",
    "rank_as_trec_eval",
    "run_text",
    "write_qrels",
    "write_run",
]

#: What ``write_run`` reads from a results frame (other columns are ignored).
RUN_FILE_COLUMNS: Final[dict[str, pl.DataType]] = {
    "query_id": pl.String(),
    "rank": pl.Int64(),
    "memory_id": pl.String(),
    "score": pl.Float64(),
}
#: ``read_run``'s frame: one row a line, in file order.
TREC_RUN_COLUMNS: Final[dict[str, pl.DataType]] = {
    "query_id": pl.String(),
    "rank": pl.Int64(),
    "memory_id": pl.String(),
    "score": pl.Float64(),
    "run_name": pl.String(),
}
#: ``read_qrels``'s frame (and what ``write_qrels`` reads): one row a judged pair, sorted by
#: (query_id, memory_id).
TREC_QRELS_COLUMNS: Final[dict[str, pl.DataType]] = {
    "query_id": pl.String(),
    "memory_id": pl.String(),
    "grade": pl.Int32(),
}

_RUN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]{0,63}")


def check_run_names(names: Iterable[str]) -> None:
    """Refuse run names that cannot be a TREC run's file name and sixth column.

    Raises:
        UsageError: a name is not 1..64 ASCII letters, digits, ``.``, ``_``, ``+``, ``-``
            starting with a letter, digit or ``_``; or two names differ only in case.
    """
    seen: dict[str, str] = {}
    for name in names:
        if not isinstance(name, str) or not _RUN_NAME.fullmatch(name):
            raise UsageError(
                f"cannot write a TREC run named {name!r}: its name is the file name "
                "runs/<name>.trec and the run's sixth column, so it must be 1..64 ASCII letters, "
                "digits, '.', '_', '+' or '-', starting with a letter, digit or '_'"
            )
        other = seen.setdefault(name.casefold(), name)
        if other != name:
            raise UsageError(
                f"cannot write TREC runs named {other!r} and {name!r}: on a case-insensitive "
                "file system they are one file"
            )


def _id_problem(value: str, *, first_column: bool) -> str | None:
    if not value:
        return "is empty"
    if "\x00" in value or any(character.isspace() for character in value):
        return "holds whitespace or NUL, which would split a column"
    if first_column and value.startswith("#"):
        return "starts with '#', which trec_eval reads as a comment line"
    return None


def check_trec_ids(
    query_ids: Iterable[str], memory_ids: Iterable[str], *, what: str = "files"
) -> None:
    """Refuse ids a TREC file cannot hold as they are (the module docstring), so that a run
    can check its collection's ids before it searches.

    Raises:
        UsageError: the first such id, query ids first, each kind in byte order.
    """
    for column, values in (("query_id", query_ids), ("memory_id", memory_ids)):
        for value in sorted(set(values)):
            reason = _id_problem(value, first_column=column == "query_id")
            if reason is not None:
                raise UsageError(f"cannot write the TREC {what}: {column}={value!r} {reason}")


def _checked(data: FrameLike, columns: dict[str, pl.DataType], what: str) -> pl.DataFrame:
    frame = canonical(data, columns, what)
    for column in columns:
        nulls = frame[column].null_count()
        if nulls:
            raise EvalError(f"expected {what} {column} non-null, found {nulls} null(s)")
    repeated = frame.filter(pl.struct("query_id", "memory_id").is_duplicated())
    if repeated.height:
        query_id, memory_id = repeated.select("query_id", "memory_id").sort(pl.all()).row(0)
        raise EvalError(
            f"expected each (query_id, memory_id) once in the {what}, found "
            f"query_id={query_id!r}, memory_id={memory_id!r} {repeated.height} times"
        )
    check_trec_ids(frame["query_id"], frame["memory_id"], what=what)
    return frame


def run_text(results: FrameLike, run_name: str) -> str:
    """The TREC run of ``results``: one line per row, in (query_id, rank) order.

    Parameters:
        results: ``query_id``, ``rank``, ``memory_id``, ``score`` (other columns ignored), a
            polars DataFrame or LazyFrame or a pyarrow Table.
        run_name: the sixth column (``check_run_names``).

    Raises:
        UsageError: ``run_name`` or an id cannot be written (the module docstring).
        EvalError: a column is missing, does not cast or holds a null; a score is not
            finite; a (query_id, rank) or (query_id, memory_id) pair repeats.
    """
    check_run_names([run_name])
    frame = _checked(results, RUN_FILE_COLUMNS, "run")
    infinite = frame.filter(~pl.col("score").is_finite())
    if infinite.height:
        raise EvalError(f"expected finite run scores, found score={infinite['score'][0]!r}")
    if frame.select(pl.struct("query_id", "rank").is_duplicated().any()).item():
        raise EvalError("expected each (query_id, rank) once in the run, found a repeat")
    rows = frame.sort("query_id", "rank").iter_rows()
    return "".join(
        f"{query_id} Q0 {memory_id} {rank} {score!r} {run_name}\n"
        for query_id, rank, memory_id, score in rows
    )


def qrels_text(qrels: FrameLike) -> str:
    """The TREC qrels of ``qrels`` (``query_id``, ``memory_id``, ``grade``), one line per row,
    in (query_id, memory_id) order, the iteration column ``0``.

    Raises:
        UsageError: an id cannot be written (the module docstring).
        EvalError: a column is missing, does not cast or holds a null; a grade is negative;
            a (query_id, memory_id) pair repeats.
    """
    frame = _checked(qrels, TREC_QRELS_COLUMNS, "qrels")
    negative = frame.filter(pl.col("grade") < 0)
    if negative.height:
        raise EvalError(f"expected grades >= 0, found grade={negative['grade'][0]!r}")
    rows = frame.sort("query_id", "memory_id").iter_rows()
    return "".join(f"{query_id} 0 {memory_id} {grade}\n" for query_id, memory_id, grade in rows)


def write_run(results: FrameLike, path: Path, run_name: str) -> None:
    """Write ``run_text(results, run_name)`` to ``path``, UTF-8 with ``\\n`` line ends.

    Not atomic by itself: ``outputs.write_exports`` calls it on ``outputs.atomic_write``'s
    temporary file (this module cannot import ``outputs``, which imports it).

    Raises:
        UsageError, EvalError: as ``run_text``, before anything is written.
    """
    path.write_bytes(run_text(results, run_name).encode("utf-8"))


def write_qrels(qrels: FrameLike, path: Path) -> None:
    """Write ``qrels_text(qrels)`` to ``path``, as ``write_run`` writes a run.

    Raises:
        UsageError, EvalError: as ``qrels_text``, before anything is written.
    """
    path.write_bytes(qrels_text(qrels).encode("utf-8"))


def rank_as_trec_eval(run: FrameLike) -> pl.DataFrame:
    """``run``'s rows re-ranked as trec_eval ranks them, whatever their ``rank`` column says.

    Each query's rows are sorted by score descending, ties by memory_id descending (byte order;
    -0.0 ties with 0.0 as in C), and numbered 1, 2, ... in that order.

    Parameters:
        run: ``query_id``, ``memory_id``, ``score`` (other columns ignored), such as
            ``read_run``'s frame.

    Returns:
        ``query_id``, ``rank`` (Int32), ``memory_id``, ``score``, sorted by (query_id, rank).

    Raises:
        EvalError: a column is missing or does not cast.
    """
    columns = {"query_id": pl.String(), "memory_id": pl.String(), "score": pl.Float64()}
    frame = canonical(run, columns, "run")
    return (
        frame.sort("query_id", "score", "memory_id", descending=[False, True, True])
        .with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("query_id"))
        .select("query_id", "rank", "memory_id", "score")
    )
