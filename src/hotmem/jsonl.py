"""The one JSON Lines reader of HotMem: ``hotmem import`` and the evaluator's fixtures use it.

The policy, the same for every caller:

- The file is UTF-8. One UTF-8 byte-order mark at the very start of the file is skipped
  (editors on Windows add one); a byte-order mark anywhere else is a problem.
- Lines end with ``\\n``; a ``\\r`` before it is JSON whitespace, so CRLF files read the same.
  Line numbers count every line from 1. A line of whitespace only is skipped.
- Every other line is one JSON object (RFC 8259), with nothing after it. ``NaN``,
  ``Infinity`` and ``-Infinity`` are read as floats, as Python's ``json`` reads them, and left
  to the caller's rules (which name the field: ``found importance=nan``).
- An object names each key once (Python's ``json`` would silently keep the last value).
- Arrays and objects nest at most :data:`MAX_JSON_DEPTH` levels deep, and a number literal has
  at most :data:`MAX_JSON_NUMBER` characters: deeper nesting would exhaust the parser's
  recursion, and Python refuses to convert integers past 4,300 digits anyway.
- A problem concerns one line (``path:line: reason``) and reading goes on, so one pass finds
  every problem; a file that cannot be read, or holds no object, is one problem without a line.

The file is read a line at a time, so memory does not grow with its length.
"""

from __future__ import annotations

import codecs
import json
import os
import re
from collections.abc import Iterator

from hotmem.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = ["MAX_JSON_DEPTH", "MAX_JSON_NUMBER", "JsonlProblem", "JsonlRecord", "read_jsonl"]

#: Deepest nesting of arrays and objects a line may have (a memory needs 2).
MAX_JSON_DEPTH = 64
#: Longest number literal a line may hold, in characters.
MAX_JSON_NUMBER = 100
_BOM_TEXT = "\ufeff"
# A JSON string (escapes included) or one bracket: nesting is counted outside strings only.
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_KINDS = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


@record
class JsonlRecord:
    """One JSON object read from a line."""

    path: str
    line: int
    value: dict[str, object]


@record
class JsonlProblem:
    """Why a line (or the whole file, ``line=None``) cannot be read; ``str()`` is
    ``path:line: reason``."""

    path: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.reason}"


class _LineError(ValueError):
    """A line breaks the policy; the message is the reason."""


def _object_without_repeats(pairs: list[tuple[str, object]]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            raise _LineError(f"invalid JSON object: expected each key once, found {key!r} twice")
        result[key] = value
    return result


def _number(convert: type[int] | type[float]) -> object:
    def parse(literal: str) -> int | float:
        if len(literal) > MAX_JSON_NUMBER:
            raise _LineError(
                f"expected numbers of at most {MAX_JSON_NUMBER} characters, "
                f"found one of {len(literal)}"
            )
        return convert(literal)

    return parse


_DECODER = json.JSONDecoder(
    object_pairs_hook=_object_without_repeats,
    parse_int=_number(int),  # type: ignore[arg-type]
    parse_float=_number(float),  # type: ignore[arg-type]
)


def _depth(raw: bytes) -> int:
    depth = deepest = 0
    for token in _TOKENS.finditer(raw):
        mark = token.group()
        if mark in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif mark in (b"]", b"}"):
            depth -= 1
    return deepest


def _parse(raw: bytes) -> dict[str, object] | None:
    """The object on one line, ``None`` for a blank line.

    Raises:
        _LineError: the line breaks the policy (the message says how).
    """
    raw = raw.removesuffix(b"\n")  # columns are counted on the line itself
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _LineError(
            f"expected UTF-8 text, found byte 0x{raw[exc.start]:02x} at column "
            f"{exc.start + 1} ({exc.reason})"
        ) from None
    if not text.strip():
        return None
    if text.lstrip().startswith(_BOM_TEXT):
        raise _LineError("expected a byte-order mark only at the start of the file, found one here")
    # Counting brackets is done in C; only a line that might be too deep is scanned.
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH:
        deepest = _depth(raw)
        if deepest > MAX_JSON_DEPTH:
            raise _LineError(
                f"expected JSON nested at most {MAX_JSON_DEPTH} levels deep, found {deepest}"
            )
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise _LineError(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:  # not reachable within MAX_JSON_DEPTH; kept as a guard
        raise _LineError(f"expected JSON nested at most {MAX_JSON_DEPTH} levels deep") from None
    if not isinstance(value, dict):
        kind = _KINDS.get(type(value), type(value).__name__)
        raise _LineError(f"expected a JSON object, found {kind}")
    return value


def _lines(stream: BinaryIO) -> Iterator[bytes]:
    first = True
    for raw in stream:
        if first:
            raw = raw.removeprefix(codecs.BOM_UTF8)
            first = False
        yield raw


def read_jsonl(
    source: str | os.PathLike[str] | BinaryIO,
    *,
    name: str | None = None,
    allow_empty: bool = False,
) -> Iterator[JsonlRecord | JsonlProblem]:
    """Read a JSON Lines file a line at a time, by the policy of this module.

    Args:
        source: a path, or a binary stream (such as ``sys.stdin.buffer``).
        name: the name problems give the file (default: the path; ``<stream>`` for a stream).
        allow_empty: whether a file without any object is fine (by default it is a problem).

    Yields:
        In line order, a :class:`JsonlRecord` for each object and a :class:`JsonlProblem` for
        each line that breaks the policy, then one for the file when it could not be read
        or (unless ``allow_empty``) held no object.
    """
    if isinstance(source, str | os.PathLike):
        label = name if name is not None else os.fspath(source)
        opened = _opened(source, label)
        if isinstance(opened, JsonlProblem):
            yield opened
            return
        stream: BinaryIO = opened
    else:
        label, stream = (name if name is not None else "<stream>"), source
    found = False
    try:
        for item in _items(stream, label):
            found = True
            yield item
    finally:
        if stream is not source:
            stream.close()
    if not found and not allow_empty:
        yield JsonlProblem(label, None, "expected at least one JSON object, found no records")


def _opened(path: str | os.PathLike[str], label: str) -> BinaryIO | JsonlProblem:
    """The file at ``path`` opened for reading, or the problem that it cannot be."""
    try:
        return open(path, "rb")
    except FileNotFoundError:
        return JsonlProblem(label, None, "expected a JSON Lines file, found no such file")
    except IsADirectoryError:
        return JsonlProblem(label, None, "expected a JSON Lines file, found a directory")
    except OSError as exc:
        reason = f"expected a readable JSON Lines file, found {exc.strerror or exc}"
        return JsonlProblem(label, None, reason)


def _items(stream: BinaryIO, label: str) -> Iterator[JsonlRecord | JsonlProblem]:
    """A record or a problem for each line of ``stream`` that is not blank, then one for the
    stream when it could not be read to its end."""
    try:
        for number, raw in enumerate(_lines(stream), start=1):
            try:
                value = _parse(raw)
            except _LineError as exc:
                yield JsonlProblem(label, number, str(exc))
                continue
            if value is not None:
                yield JsonlRecord(label, number, value)
    except OSError as exc:
        yield JsonlProblem(label, None, f"expected a readable file, found {exc.strerror or exc}")
