"""Decoding one records member as its bytes stream in, within a fixed memory bound.

A records member may hold up to 64 MiB, and a hostile one is built to make a naive reader
build far more than that (22 million ``{}`` lines; one line of 22 million empty objects; arrays
nested a million deep). The decoder is fed the member block by block and keeps its cost
bounded whatever the bytes are:

- lines are counted before any is decoded; past ``max_lines`` (the format's 10,000) nothing
  more is decoded, only counted;
- whole lines are decoded a group (about ``group_bytes``) at a time, so no more than one
  group's text and objects exist at once;
- a group goes through the one-call fast path of ``records`` only when it holds at most
  ``VALUE_BUDGET`` commas, brackets and braces, an upper bound on the values ``json.loads``
  builds from it; otherwise it is decoded line by line, and a line above the budget must
  first have a record's shape (``shape``): one object, at most one array, a bounded number of
  commas, so ``json.loads`` then builds little and never recurses deeply (a deeply nested line
  within the budget makes it raise ``RecursionError``, which is a problem of that line too);
- a line longer than a group is followed by ``shape.LineShape`` as it arrives, and held
  (once, in a growing buffer) only while it can still be a record;
- problems past ``max_problems`` are counted, not listed;
- the decoded values are dropped as soon as they are checked, unless the caller keeps them
  (``keep``), and then only what it keeps.

Cutting the member into blocks and groups does not change the outcome: every check but the
order of ``memory_id`` is about one line, and the order is checked across groups; problems
come in line order. Only the wording can differ: a line refused by its shape is reported as
a ``record`` problem of shape, where ``json.loads`` and the field rules would name the field.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Any

from hotmem.snapshot import format as fmt
from hotmem.snapshot.records import (
    Column,
    LineProblem,
    columns_of,
    fast_decode,
    record_problem,
    reject_constant,
)
from hotmem.snapshot.shape import LineShape, shape_problem

__all__ = [
    "GROUP_BYTES",
    "VALUE_BUDGET",
    "ChunkRecords",
    "Keep",
    "RecordsDecoder",
    "decode_records",
]

#: Bytes of whole lines decoded together (a chunk the writer makes holds about 2 MB).
GROUP_BYTES = 2**20
#: At most this many commas, brackets and braces go to one ``json.loads`` call.
VALUE_BUDGET = 2**18
_INVALID = object()  # a line whose problem is recorded
#: What a caller keeps of a decoded group's six columns (``None``: nothing).
Keep = Callable[[list[Column]], list[Column]]


def _budget(data: bytes) -> int:
    """An upper bound on the values ``json.loads`` would build from ``data``, less its lines."""
    return data.count(b",") + data.count(b"[") + data.count(b"{")


class ChunkRecords:
    """The outcome of decoding one records member.

    Attributes:
        columns: what ``keep`` kept of the six columns, concatenated in line order; empty
            when any line has a problem, when nothing was kept, or past ``max_lines``.
        line_count: number of lines (records) in the member, counted even past ``max_lines``.
        first_id, last_id: the smallest and largest valid memory_id, for checks across chunks.
        problems: ``(line, check, expected, found)`` per bad line, at most ``max_problems``.
        more_problems: how many further bad lines were not listed.
    """

    __slots__ = ("columns", "first_id", "last_id", "line_count", "more_problems", "problems")

    def __init__(self) -> None:
        self.columns: list[Column] = []
        self.line_count = 0
        self.first_id: str | None = None
        self.last_id: str | None = None
        self.problems: list[LineProblem] = []
        self.more_problems = 0


class RecordsDecoder:
    """Decodes and validates one records member fed as blocks of bytes (any cut).

    Call :meth:`feed` with each block in order, then :meth:`finish` once.
    """

    def __init__(
        self,
        *,
        keep: Keep | None = None,
        max_problems: int = 20,
        max_lines: int = fmt.CHUNK_RECORDS,
        group_bytes: int = GROUP_BYTES,
    ) -> None:
        self._keep, self._max_problems = keep, max_problems
        self._max_lines, self._group_bytes = max_lines, group_bytes
        self._result = ChunkRecords()
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._newlines = 0
        self._open_line = False  # the bytes so far end inside a line
        self._next_line = 1  # number of the first line of the next group
        self._kept: list[list[Column]] = []
        self._failed = False  # a line had a problem: nothing is kept
        self._previous: str | None = None  # the largest valid memory_id so far
        self._long: bytearray | None = None  # the line longer than a group, while it arrives
        self._shape: LineShape | None = None  # its shape so far; None once refused
        self.decoding = True  # false once past max_lines: blocks are only counted

    def feed(self, block: bytes) -> None:
        """Take the next bytes of the member."""
        if not block:
            return
        self._newlines += block.count(b"\n")
        self._open_line = not block.endswith(b"\n")
        if not self.decoding:
            return
        if self._newlines + self._open_line > self._max_lines:
            self._stop_decoding()
            return
        if self._long is not None:
            cut = block.find(b"\n")
            if cut < 0:
                self._extend_long(block)
                return
            self._extend_long(block[:cut])
            self._end_long(terminated=True)
            block = block[cut + 1 :]
            if not block:
                return
        self._pending.append(block)
        self._pending_bytes += len(block)
        if self._pending_bytes < self._group_bytes:
            return
        data = block if len(self._pending) == 1 else b"".join(self._pending)
        self._pending, self._pending_bytes = [], 0
        end = data.rfind(b"\n") + 1
        if end > len(data) - len(block):  # the newest block ends a line: cut after it
            rest = data[end:]
            if rest:
                self._pending, self._pending_bytes = [rest], len(rest)
            self._group(data[:end] if rest else data)
            return
        # The newest block holds no line end: the lines before it go, its line is long.
        if end:
            self._group(data[:end])
        self._start_long(data[end:])

    def finish(self) -> ChunkRecords:
        """Decode what is left and return the outcome."""
        result = self._result
        result.line_count = self._newlines + self._open_line
        if self.decoding and self._long is not None:
            self._end_long(terminated=False)
        elif self.decoding and self._pending:
            data = b"".join(self._pending)
            self._pending = []
            self._group(data)
        if self.decoding and not self._failed and self._kept:
            kept = self._kept
            result.columns = kept[0] if len(kept) == 1 else _concatenated(kept)
        self._kept = []
        return result

    # -- a line longer than a group --------------------------------------------------------------
    def _start_long(self, start: bytes) -> None:
        self._long, self._shape = bytearray(), LineShape()
        self._extend_long(start)

    def _extend_long(self, part: bytes) -> None:
        if self._shape is None or self._long is None:  # refused: its bytes are only counted
            return
        problem = self._shape.feed(part)
        if problem is None:
            self._long += part
            return
        self._shape, self._long = None, bytearray()
        self._problem(self._next_line, "record", *problem)

    def _end_long(self, *, terminated: bool) -> None:
        number = self._next_line
        self._next_line += 1
        raw, self._long = self._long, None
        if self._shape is None or raw is None:  # refused while it arrived
            return
        self._shape = None
        if not terminated:
            found = f"{len(raw)} bytes after"
            self._problem(number, "json", "every line ended by a newline", found)
        text = self._text(raw, number)
        del raw  # each copy of a long line goes as soon as the next exists
        if text is None:
            return
        record = self._loads(text, number)
        del text
        if record is _INVALID or not self._take(record, number):
            return
        if self._keep is not None and not self._failed:
            self._kept.append(self._keep(columns_of([record])))

    def _stop_decoding(self) -> None:
        self.decoding, self._pending, self._kept, self._long = False, [], [], None
        self._result.first_id = self._result.last_id = None

    # -- one group of whole lines ----------------------------------------------------------------
    def _group(self, data: bytes) -> None:
        first = self._next_line
        self._next_line += data.count(b"\n")
        if len(data) <= 2 * self._group_bytes and _budget(data) <= VALUE_BUDGET:
            columns = fast_decode(data)
            if columns is not None and (self._previous is None or columns[0][0] > self._previous):
                self._accept(columns)
                return
        self._lines(data, first)

    def _accept(self, columns: list[Column]) -> None:
        result = self._result
        if result.first_id is None:
            result.first_id = columns[0][0]
        result.last_id = self._previous = columns[0][-1]
        if self._keep is not None and not self._failed:
            self._kept.append(self._keep(columns))

    def _problem(self, line: int, check: str, expected: str, found: str) -> None:
        self._failed, self._kept = True, []
        result = self._result
        if len(result.problems) < self._max_problems:
            result.problems.append((line, check, expected, found))
        else:
            result.more_problems += 1

    def _lines(self, data: bytes, first: int) -> None:
        """The slow path: each line parsed and checked on its own, to name each bad one."""
        lines = data.split(b"\n")
        unterminated = first + len(lines) - 1 if lines[-1] else None  # only in the last group
        if unterminated is None:
            lines.pop()
        records = []
        for number, raw in enumerate(lines, start=first):
            if number == unterminated:
                found = f"{len(raw)} bytes after"
                self._problem(number, "json", "every line ended by a newline", found)
            text = self._text(raw, number)
            if text is None:
                continue
            if _budget(raw) > VALUE_BUDGET:
                problem = shape_problem(raw)
                if problem is not None:
                    self._problem(number, "record", *problem)
                    continue
            record = self._loads(text, number)
            if record is not _INVALID and self._take(record, number):
                records.append(record)
        if records and self._keep is not None and not self._failed:
            # The fast path refused lines these rules accept (a line with spaces around its
            # object, say): the rules decide.
            self._kept.append(self._keep(columns_of(records)))

    def _text(self, raw: bytes | bytearray, number: int) -> str | None:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            found = f"{exc.reason} at byte {exc.start} of the line"
            self._problem(number, "json", "UTF-8 text", found)
            return None

    def _loads(self, text: str, number: int) -> Any:
        """The line's JSON value, or ``_INVALID`` once its problem is recorded."""
        try:
            return json.loads(text, parse_constant=reject_constant)
        except RecursionError:
            found = "arrays or objects nested too deeply to parse"
            self._problem(number, "json", "one JSON object", found)
        except ValueError as exc:
            self._problem(number, "json", "one JSON object", str(exc))
        return _INVALID

    def _take(self, record: Any, number: int) -> bool:
        """Whether a parsed line is a valid record in order; else its problem is recorded."""
        try:
            problem = record_problem(record)
        except RecursionError:  # nesting json.loads could parse but repr() cannot show
            problem = ("a JSON object of the six fields", "values nested too deeply to show")
        if problem is not None:
            self._problem(number, "record", *problem)
            return False
        result, memory_id, previous = self._result, record["memory_id"], self._previous
        in_order = previous is None or memory_id > previous
        if not in_order:
            check = "duplicate-id" if memory_id == previous else "order"
            expected = f"memory_id after {previous!r} (ascending, unique)"
            self._problem(number, check, expected, f"memory_id={memory_id!r}")
        if result.first_id is None:
            result.first_id = memory_id
        result.last_id = self._previous = max(memory_id, previous or memory_id)
        return in_order


def _concatenated(parts: list[list[Column]]) -> list[Column]:
    return [tuple(chain.from_iterable(column)) for column in zip(*parts, strict=True)]


def _all_columns(columns: list[Column]) -> list[Column]:
    return columns


def decode_records(
    data: bytes | Iterable[bytes],
    *,
    max_problems: int = 20,
    group_bytes: int = GROUP_BYTES,
    keep: Keep | None = _all_columns,
) -> ChunkRecords:
    """Decode and validate the bytes of one records member (keeping every column by default).

    ``data`` may be the whole member or its blocks, cut anywhere.
    """
    decoder = RecordsDecoder(keep=keep, max_problems=max_problems, group_bytes=group_bytes)
    for block in [data] if isinstance(data, bytes) else data:
        decoder.feed(block)
    return decoder.finish()
