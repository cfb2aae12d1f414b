"""Memory records, their validation, and the injectable clock."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from itertools import chain

from hotmem.errors import ValidationError
from hotmem.fields import (
    FIELD_NAMES,
    FIELD_RULES,
    MAX_ID_LENGTH,
    MAX_TAGS,
    Breach,
    format_timestamp,
    texts_obey_rule,
    timestamp_or_breach,
)
from hotmem.records import record

try:  # built into CPython: "import hashlib" would load OpenSSL first (2-3 ms)
    from _sha256 import sha256 as _sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # Python 3.12+ or another Python
    from hashlib import sha256 as _sha256

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import Any, cast
else:

    def cast(_type: object, value: object) -> object:  # typing.cast, without typing
        return value


__all__ = [
    "Clock",
    "Memory",
    "fixed_clock",
    "make_memory",
    "memories_from_mappings",
    "memory_from_mapping",
    "parse_timestamp",
    "system_clock",
]

Clock = Callable[[], datetime]
_MEMORY_FIELDS = frozenset(FIELD_NAMES)


@record
class Memory:
    """One fact, scoped to an identifier (an organisation or project).

    Attributes:
        memory_id: unique id of the memory.
        identifier: the organisation or project the memory belongs to.
        fact: the text of the memory.
        importance: static importance in [0, 1].
        tags: free-form labels, in the order given.
        created_at: when the memory was created, timezone-aware UTC.
    """

    memory_id: str
    identifier: str
    fact: str
    importance: float
    tags: tuple[str, ...]
    created_at: datetime

    def to_dict(self) -> dict[str, object]:
        """Return the memory as a JSON-ready dict (``created_at`` as canonical ISO-8601)."""
        return {
            "memory_id": self.memory_id,
            "identifier": self.identifier,
            "fact": self.fact,
            "importance": self.importance,
            "tags": list(self.tags),
            "created_at": format_timestamp(self.created_at),
        }


def system_clock() -> datetime:
    """The default clock: the current time in UTC."""
    return datetime.now(UTC)


def fixed_clock(moment: datetime | str) -> Clock:
    """Return a clock that always answers ``moment`` (for tests and the evaluator)."""
    fixed = parse_timestamp(moment, field="moment")
    return lambda: fixed


def parse_timestamp(value: object, *, field: str = "created_at") -> datetime:
    """Parse a timezone-aware datetime or ISO-8601 text with an offset into aware UTC.

    Raises:
        ValidationError: the value is not one, or lies outside what UTC can represent.
    """
    parsed = timestamp_or_breach(value, field=field)
    if isinstance(parsed, Breach):
        raise ValidationError(str(parsed))
    return parsed


def _valid(field: str, value: object) -> object:
    """``value`` once it obeys the rule of ``field`` (``fields.FIELD_RULES``)."""
    breach = FIELD_RULES[field](value)
    if breach is not None:
        raise ValidationError(str(breach))
    return value


def _derived_id(identifier: str, fact: str, created_at: datetime) -> str:
    material = "\x00".join((identifier, fact, format_timestamp(created_at))).encode("utf-8")
    digest: str = _sha256(material).hexdigest()
    return "mem-" + digest[:20]


def make_memory(
    fact: object,
    *,
    identifier: object,
    importance: object = 0.5,
    tags: object = (),
    memory_id: object = None,
    created_at: object = None,
    clock: Clock = system_clock,
) -> Memory:
    """Validate the fields of a memory and return it.

    A missing ``memory_id`` is derived from the identifier, fact and creation time
    (``mem-`` + 20 hex digits of SHA-256), so the same input always yields the same id.

    Raises:
        ValidationError: a field is missing, of the wrong type or out of range.
    """
    fact_text = cast(str, _valid("fact", fact))
    identifier_text = cast(str, _valid("identifier", identifier))
    created = parse_timestamp(clock() if created_at is None else created_at)
    if memory_id is None:
        memory_id = _derived_id(identifier_text, fact_text, created)
    return Memory(
        memory_id=cast(str, _valid("memory_id", memory_id)),
        identifier=identifier_text,
        fact=fact_text,
        importance=float(cast(float, _valid("importance", importance))),
        tags=tuple(cast("list[str] | tuple[str, ...]", _valid("tags", tags))),
        created_at=created,
    )


def memory_from_mapping(record: Mapping[str, object], *, clock: Clock = system_clock) -> Memory:
    """Validate a dict with the fields of a memory (unknown keys are refused)."""
    if not isinstance(record, Mapping):
        raise ValidationError(f"a memory must be an object; found {type(record).__name__}")
    unknown = sorted(set(record) - _MEMORY_FIELDS)
    if unknown:
        raise ValidationError(
            f"unknown memory field(s) {', '.join(map(repr, unknown))}; "
            f"expected some of {', '.join(sorted(_MEMORY_FIELDS))}"
        )
    for required in ("fact", "identifier"):
        if required not in record:
            raise ValidationError(f"a memory needs {required!r}; found keys {sorted(record)}")
    return make_memory(
        record["fact"],
        identifier=record["identifier"],
        importance=record.get("importance", 0.5),
        tags=record.get("tags", ()),
        memory_id=record.get("memory_id"),
        created_at=record.get("created_at"),
        clock=clock,
    )


def memories_from_mappings(
    records: Sequence[object], *, clock: Clock = system_clock
) -> list[Memory] | None:
    """The memories :func:`memory_from_mapping` makes of each of ``records``, the field rules
    checked a column at a time (a bulk ingest's batch: a few µs a memory less); ``None`` when
    a record breaks a rule or is not of the plain shapes this checks (a ``dict``, ``str``
    texts, ``int`` or ``float`` importance, tags a list or tuple of ``str``): then
    :func:`memory_from_mapping`, record by record, gives the memory or says which rule and
    why. The clock is called for each record without ``created_at``, in order, as there."""
    rows = _plain_rows(records)
    if rows is None or not _sound_columns(rows):
        return None
    given = [r.get("created_at") for r in rows]
    moments = [None if m is None else timestamp_or_breach(m) for m in given]
    if any(isinstance(m, Breach) for m in moments):
        return None  # before the clock is asked anything
    found: list[Memory] = []
    for r, moment in zip(rows, moments, strict=True):
        created = timestamp_or_breach(clock()) if moment is None else moment
        if isinstance(created, Breach):  # a clock answering what is not a time
            return None
        found.append(_memory_of(r, created))
    return found


def _plain_rows(records: Sequence[object]) -> list[dict[str, Any]] | None:
    """``records`` when each is a ``dict`` of memory fields with a fact and an identifier."""
    plain = all(
        type(r) is dict and r.keys() <= _MEMORY_FIELDS and "fact" in r and "identifier" in r
        for r in records
    )
    return list(records) if plain else None  # type: ignore[arg-type]  # dicts, just checked


def _sound_columns(rows: list[dict[str, Any]]) -> bool:
    """Whether every row's fields obey their rules, checked a column at a time."""
    importances = [r.get("importance", 0.5) for r in rows]
    tags = [r.get("tags", ()) for r in rows]
    return (
        texts_obey_rule([r["fact"] for r in rows], None)
        and texts_obey_rule([r["identifier"] for r in rows], MAX_ID_LENGTH)
        and texts_obey_rule(
            [r["memory_id"] for r in rows if r.get("memory_id") is not None], MAX_ID_LENGTH
        )
        and set(map(type, importances)) <= {float, int}
        and all(map((0.0).__le__, importances))
        and all(map((1.0).__ge__, importances))
        and set(map(type, tags)) <= {list, tuple}
        and max(map(len, tags), default=0) <= MAX_TAGS
        and texts_obey_rule(list(chain.from_iterable(tags)), None, nul=True)
    )


def _memory_of(row: dict[str, Any], created: datetime) -> Memory:
    """The memory of a row whose fields obey their rules, created at ``created``."""
    fact, identifier, memory_id = row["fact"], row["identifier"], row.get("memory_id")
    if memory_id is None:
        memory_id = _derived_id(identifier, fact, created)
    importance = float(row.get("importance", 0.5))
    return Memory(memory_id, identifier, fact, importance, tuple(row.get("tags", ())), created)


def count_of(count: int, singular: str, plural: str) -> str:
    """``count`` with the word that agrees with it: ``1 memory``, ``2 memories``, ``0 memories``."""
    return f"{count} {singular if count == 1 else plural}"
