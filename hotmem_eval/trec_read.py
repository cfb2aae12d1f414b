"""TREC run and qrels files read back, for ``compare --qrels`` (``trec_output`` writes them).

**Reading** (``read_run``, ``read_qrels``) splits on whitespace each line that
``collection_files.read_text_lines`` gives (UTF-8; blank lines skipped, as trec_eval does); a
malformed line is a ``path:line: reason`` problem, and the reader raises one ``FixtureError``
with every problem of the file (stopping after ``MAX_PROBLEMS``).
Run problems: not 6 columns, a rank that is not an integer, a score that is not a finite
decimal number, a memory twice in one query, a run name other than the first line's. Qrels
problems: not 4 columns, a grade that is not an integer up to ``MAX_ANY_GRADE``, a pair twice,
no line at all; a negative grade (pooled but not judged, for trec_eval) is left out with one
warning, as the collection reader does. ``Q0``, the qrels' iteration and the rank are read but
not used. An empty run is written and read (a profile that returned nothing), though
trec_eval refuses one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import polars as pl

from hotmem_eval.collection_files import parse_grade, read_text_lines
from hotmem_eval.errors import FixtureError, Problem
from hotmem_eval.fixture_schema import MAX_ANY_GRADE
from hotmem_eval.trec_input import negative_grades
from hotmem_eval.trec_output import TREC_QRELS_COLUMNS, TREC_RUN_COLUMNS

__all__ = ["MAX_PROBLEMS", "read_qrels", "read_run"]

#: A reader stops after this many problems in one file, and says at which line.
MAX_PROBLEMS: Final = 20

_INTEGER = re.compile(r"[+-]?[0-9]{1,18}")
# What C's strtod reads as a finite decimal number (no hex, inf or nan); Python's float() also
# takes "1_0", "inf" and "nan", which trec_eval does not.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_RUN_LAYOUT = "query_id Q0 memory_id rank score run_name"
_QRELS_LAYOUT = "query_id iteration memory_id grade"


class _Problems:
    """The problems of one file: ``add`` them; ``full`` once ``MAX_PROBLEMS`` are found."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        self.found: list[Problem] = []

    def add(self, line: int | None, reason: str) -> None:
        self.found.append(Problem(self.path, line, reason))

    @property
    def full(self) -> bool:
        return len(self.found) >= MAX_PROBLEMS


def _records(
    path: Path, problems: _Problems, columns: int, layout: str
) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` of every non-blank line of ``columns`` fields; the other
    lines' problems go to ``problems``. Stops once ``problems`` is full."""
    kind = f"a TREC {'run' if columns == 6 else 'qrels'} file"
    for item in read_text_lines(path, kind):
        if problems.full:
            where = item.line if isinstance(item, Problem) else item[0]
            problems.add(
                None, f"stopped reading at line {where}, after {len(problems.found)} problems"
            )
            return
        if isinstance(item, Problem):
            problems.found.append(item)
            continue
        number, text = item
        fields = text.split()
        if len(fields) == columns:
            yield number, fields
        else:
            problems.add(
                number,
                f"expected {columns} whitespace-separated columns ({layout}), found {len(fields)}",
            )


def _score(text: str) -> float | None:
    """The finite number ``text`` spells as C's ``strtod`` reads it, else None."""
    if not _DECIMAL.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def read_run(path: Path) -> pl.DataFrame:
    """The lines of the TREC run at ``path``, as ``TREC_RUN_COLUMNS`` in file order.

    Raises:
        FixtureError: the file cannot be read or a line is malformed (the module docstring
            lists the problems), each ``path:line: reason``.
    """
    problems = _Problems(path)
    rows: list[tuple[str, int, str, float, str]] = []
    first_line: dict[tuple[str, str], int] = {}
    named: tuple[str, int] | None = None
    for number, (query_id, _, memory_id, rank, score, name) in _records(
        path, problems, 6, _RUN_LAYOUT
    ):
        reasons = []
        if not _INTEGER.fullmatch(rank):
            reasons.append(f"expected an integer rank, found rank={rank!r}")
        value = _score(score)
        if value is None:
            reasons.append(f"expected a finite decimal score, found score={score!r}")
        earlier = first_line.setdefault((query_id, memory_id), number)
        if earlier != number:
            reasons.append(
                f"expected each memory once per query, found query_id={query_id!r}, "
                f"memory_id={memory_id!r} again (first on line {earlier})"
            )
        named = named or (name, number)
        if name != named[0]:
            reasons.append(
                f"expected one run name per file, found run_name={name!r} "
                f"(line {named[1]}: {named[0]!r})"
            )
        for reason in reasons:
            problems.add(number, reason)
        if value is not None and not reasons:
            rows.append((query_id, int(rank), memory_id, value, name))
    if problems.found:
        raise FixtureError(tuple(problems.found))
    return pl.DataFrame(rows, schema=TREC_RUN_COLUMNS, orient="row")


def _qrels_reasons(
    number: int,
    query_id: str,
    memory_id: str,
    grade: str,
    value: int | None,
    first_line: dict[tuple[str, str], int],
) -> list[str]:
    """What is wrong with one qrels line: its grade, or a pair judged on an earlier line."""
    reasons = []
    if value is None:
        reasons.append(f"expected an integer grade up to {MAX_ANY_GRADE}, found grade={grade!r}")
    earlier = first_line.setdefault((query_id, memory_id), number)
    if earlier != number:
        reasons.append(
            f"expected one grade per (query_id, memory_id), found query_id={query_id!r}, "
            f"memory_id={memory_id!r} again (first on line {earlier})"
        )
    return reasons


def read_qrels(path: Path, warnings: list[Problem] | None = None) -> pl.DataFrame:
    """The judgments of the TREC qrels file at ``path``, as ``TREC_QRELS_COLUMNS`` sorted by
    (query_id, memory_id). A judgment with a negative grade is left out, as the collection
    reader leaves it out (``trec_input``): one warning, appended to ``warnings``.

    Raises:
        FixtureError: the file cannot be read, holds no judgment, or a line is malformed (the
            module docstring lists the problems), each ``path:line: reason``.
    """
    problems = _Problems(path)
    rows: list[tuple[str, str, int]] = []
    first_line: dict[tuple[str, str], int] = {}
    negative: list[int] = []
    for number, (query_id, _, memory_id, grade) in _records(path, problems, 4, _QRELS_LAYOUT):
        value = parse_grade(grade, negative=True)
        reasons = _qrels_reasons(number, query_id, memory_id, grade, value, first_line)
        for reason in reasons:
            problems.add(number, reason)
        if value is not None and value < 0 and not reasons:
            negative.append(number)
        elif value is not None and not reasons:
            rows.append((query_id, memory_id, value))
    if negative and warnings is not None:
        warnings.append(negative_grades(path, len(negative), negative[0]))
    if not rows and not problems.found:
        found = f"only {len(negative)} with a negative grade" if negative else "none"
        problems.add(None, f"expected at least one judgment line, found {found}")
    if problems.found:
        raise FixtureError(tuple(problems.found))
    frame = pl.DataFrame(rows, schema=TREC_QRELS_COLUMNS, orient="row")
    return frame.sort("query_id", "memory_id")
