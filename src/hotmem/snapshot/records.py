"""Record lines of a snapshot: encoding a store row, and the rules and fast check of lines.

A record line is one JSON object with exactly the six fields of a memory, sorted keys, no
whitespace, non-ASCII kept as UTF-8. Validation applies the store's field rules
(``fields.FIELD_RULES``) with stricter ones, since a package must hydrate to exactly what it
says: every field is required (no defaults), ``created_at`` is canonical UTC text
(``fields.format_timestamp``), and a record holds at most ``format.MAX_TAGS`` tags.

Lines are checked column by column with C-level builtins (one ``json.loads`` for a whole group
of lines, ``set(map(type, ...))``, ``min``/``max``, ``str.join``: ``fast_decode``), which keeps
the per-record Python work near zero. Only when that fast check fails are the lines parsed one
by one (``decoding``), to report each bad line with what was expected and what was found.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Sequence
from datetime import datetime
from itertools import chain, islice
from operator import itemgetter, lt
from typing import Any

from hotmem.errors import SnapshotError
from hotmem.fields import (
    MAX_ID_LENGTH,
    Breach,
    canonical_timestamp_breach,
    field_breach,
    shown,
    texts_obey_rule,
)
from hotmem.snapshot import format as fmt

__all__ = [
    "RECORD_FIELDS",
    "Column",
    "LineProblem",
    "columns_of",
    "fast_decode",
    "field_problem",
    "record_line",
    "record_problem",
    "reject_constant",
]

RECORD_FIELDS = ("created_at", "fact", "identifier", "importance", "memory_id", "tags")
_FIELD_SET = frozenset(RECORD_FIELDS)
_FIELD_GETTERS = tuple(
    itemgetter(field)
    for field in ("memory_id", "identifier", "fact", "importance", "tags", "created_at")
)


def columns_of(records: list[dict[str, Any]]) -> list[Column]:
    """The six columns of ``records``, one C-level pass a field (a transposing ``zip(*rows)``
    over 10,000 rows costs twice as much). Raises KeyError for a missing field."""
    return [tuple(map(getter, records)) for getter in _FIELD_GETTERS]


# Canonical timestamps (fields.format_timestamp) with every digit mapped to 9, one a line.
_DIGITS_TO_9 = bytes.maketrans(b"0123456789", b"9" * 10)
_WHOLE_SECOND, _FRACTION = b"9999-99-99T99:99:99Z\n", b"9999-99-99T99:99:99.999999Z\n"
_LINE_NOT_AN_OBJECT = re.compile("\n[^{]")

# (line number, check, expected, found)
LineProblem = tuple[int, str, str, str]
#: One field's values down a chunk, in line order: JSON values until the chunk is validated.
Column = tuple[Any, ...]

# -- encoding ------------------------------------------------------------------------------------
_quote = json.encoder.encode_basestring  # json.dumps' own C string encoder (no ASCII escaping)
_TAG_CACHE: dict[str, str] = {}
_TAG_CACHE_LIMIT = 1 << 16


def _compact_tags(stored: str, memory_id: str) -> str:
    """The compact JSON of a store's ``tags`` column (``["a", "b"]`` -> ``["a","b"]``).

    Raises:
        SnapshotError: the memory holds more tags than a record may (``format.MAX_TAGS``).
        TypeError, ValueError: ``stored`` is not a JSON array of strings (a damaged row).
    """
    compact = _TAG_CACHE.get(stored)
    if compact is None:
        tags = json.loads(stored)
        if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
            raise TypeError(f"expected tags as a JSON array of strings, found {stored!r}")
        if len(tags) > fmt.MAX_TAGS:
            raise SnapshotError(
                f"memory_id={memory_id!r} holds {len(tags)} tags; the format allows "
                f"{fmt.MAX_TAGS} (a memory with this many tags cannot be snapshotted)"
            )
        compact = "[" + ",".join(map(_quote, tags)) + "]"
        if len(_TAG_CACHE) >= _TAG_CACHE_LIMIT:
            _TAG_CACHE.clear()
        _TAG_CACHE[stored] = compact
    return compact


def record_line(row: Sequence[Any]) -> str:
    """One record line (without its newline) from a ``memories`` row.

    ``row`` starts with ``(memory_id, identifier, fact, importance, tags, created_at)`` as the
    table holds them (``tags`` as JSON text, ``created_at`` as canonical text); further items
    are ignored. The result equals ``json.dumps(record, sort_keys=True, ensure_ascii=False,
    separators=(",", ":"))``; it is built field by field because that is twice as fast.

    Raises:
        SnapshotError: the memory holds more than ``format.MAX_TAGS`` tags.
    """
    return (
        f'{{"created_at":{_quote(row[5])},"fact":{_quote(row[2])},'
        f'"identifier":{_quote(row[1])},"importance":{float(row[3])!r},'
        f'"memory_id":{_quote(row[0])},"tags":{_compact_tags(row[4], row[0])}}}'
    )


# -- field rules (the reference, used to explain a failure) --------------------------------------
def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {str: "a string", int: "a number", float: "a number", list: "an array"}.get(
        type(value), "an object"
    )


def field_problem(field: str, value: object) -> Breach | None:
    """How ``value`` breaks the rule of ``field`` in a record line, else ``None``.

    The store's rules (``fields.FIELD_RULES``), with ``created_at`` in its stored, canonical
    form: a package must hydrate to exactly what it says.
    """
    if field == "created_at":
        return canonical_timestamp_breach(value)
    return field_breach(field, value)


def record_problem(record: object) -> tuple[str, str] | None:
    if not isinstance(record, dict):
        return "a JSON object", f"{_json_type(record)} {shown(record)}"
    if record.keys() != _FIELD_SET:
        missing = [field for field in RECORD_FIELDS if field not in record]
        unknown = sorted(set(record) - _FIELD_SET)
        found = "; ".join(
            part
            for part in (
                missing and "missing " + ", ".join(missing),
                unknown and "unknown " + ", ".join(map(repr, unknown)),
            )
            if part
        )
        return "exactly the fields " + ", ".join(RECORD_FIELDS), found
    for field in RECORD_FIELDS:
        problem = field_problem(field, record[field])
        if problem is not None:
            return problem
    return None


# -- fast whole-chunk check ----------------------------------------------------------------------
def _timestamps_ok(stamps: set[Any]) -> bool:
    """Every distinct ``created_at`` is canonical UTC text, checked in C-level passes.

    With its digits mapped to 9, every line must be one of the two canonical shapes: the
    shapes hold one newline each, at their end, so occurrences of them cannot overlap, and
    when they add up to the whole text they are exactly its lines. Then no fraction may be
    zero (the canonical form drops it) and every value must be a real date and time.
    """
    if not stamps:
        return True
    if set(map(type, stamps)) != {str}:
        return False
    try:
        joined = ("\n".join(stamps) + "\n").encode("ascii")
    except UnicodeEncodeError:
        return False
    shapes = joined.translate(_DIGITS_TO_9)
    covered = len(_WHOLE_SECOND) * shapes.count(_WHOLE_SECOND)
    covered += len(_FRACTION) * shapes.count(_FRACTION)
    if covered != len(shapes) or b".000000Z" in joined:
        return False
    try:
        deque(map(datetime.fromisoformat, stamps), maxlen=0)
    except ValueError:  # a month, day or hour out of range
        return False
    return True


def _columns_ok(columns: list[Column]) -> bool:
    memory_ids, identifiers, facts, importances, tags, created = columns
    if not (
        texts_obey_rule(memory_ids, MAX_ID_LENGTH)
        and texts_obey_rule(identifiers, MAX_ID_LENGTH)
        and texts_obey_rule(facts, None)
    ):
        return False
    if not set(map(type, importances)) <= {float, int}:
        return False
    # No NaN can reach here (``reject_constant``), so min and max bound every value.
    if min(importances) < 0.0 or max(importances) > 1.0:
        return False
    if set(map(type, tags)) != {list} or max(map(len, tags)) > fmt.MAX_TAGS:
        return False
    flat = list(chain.from_iterable(tags))
    if flat and not texts_obey_rule(flat, None, nul=True):  # the store allows NUL in tags
        return False
    if not _timestamps_ok(set(created)):
        return False
    return all(map(lt, memory_ids, islice(memory_ids, 1, None)))


def reject_constant(name: str) -> float:
    """``parse_constant`` for ``json.loads``: NaN and Infinity are not JSON."""
    raise ValueError(f"{name} is not valid JSON")


def fast_decode(data: bytes) -> list[Column] | None:
    """The six columns of the records when the whole chunk is certainly valid, else ``None``.

    The lines are joined with commas into one JSON array and parsed in one call. Every line
    must start with ``{``, so a line break inside an object would put a ``{`` where a key
    belongs, which is invalid JSON. The array could then split differently from the lines only
    where a line break sits inside a nested array, which puts an object inside ``tags``, and
    the field rules refuse that. So a valid array of as many valid records as there are lines
    is exactly one record per line.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.endswith("\n") or not text.startswith("{"):
        return None
    body = text[:-1]
    if _LINE_NOT_AN_OBJECT.search(body) is not None:
        return None
    try:
        records = json.loads("[" + body.replace("\n", ",") + "]", parse_constant=reject_constant)
    except (ValueError, RecursionError):
        return None
    if len(records) != text.count("\n") or set(map(type, records)) != {dict}:
        return None
    if set(map(len, records)) != {len(RECORD_FIELDS)}:
        return None
    try:
        columns = columns_of(records)
    except KeyError:
        return None
    return columns if _columns_ok(columns) else None
