"""Memory records, their validation, and the injectable clock."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from hotmem.errors import ValidationError

__all__ = [
    "MAX_ID_LENGTH",
    "Clock",
    "Memory",
    "fixed_clock",
    "format_timestamp",
    "make_memory",
    "memory_from_mapping",
    "parse_timestamp",
    "system_clock",
]

Clock = Callable[[], datetime]
MAX_ID_LENGTH = 512
_MEMORY_FIELDS = frozenset({"memory_id", "identifier", "fact", "importance", "tags", "created_at"})


@dataclass(frozen=True, slots=True)
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


def format_timestamp(moment: datetime) -> str:
    """Canonical UTC text: ``YYYY-MM-DDTHH:MM:SSZ``, with ``.ffffff`` only when non-zero."""
    # isoformat() omits the microseconds when they are zero, as the canonical form does.
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"


def parse_timestamp(value: object, *, field: str = "created_at") -> datetime:
    """Parse a timezone-aware datetime or ISO-8601 text into an aware UTC datetime."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise ValidationError(
                f"{field} must be ISO-8601 text such as '2025-01-31T09:00:00Z'; "
                f"found {field}={value!r}"
            ) from None
    if not isinstance(value, datetime):
        raise ValidationError(
            f"{field} must be a datetime or ISO-8601 text; found {type(value).__name__}"
        )
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(
            f"{field} must carry a timezone (UTC expected); found naive {value.isoformat()!r}"
        )
    return value.astimezone(UTC)


def _require_text(name: str, value: object, *, max_length: int | None = None) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be a string; found {type(value).__name__}")
    if not value.strip():
        raise ValidationError(f"{name} must not be empty; found {name}={value!r}")
    if max_length is not None and len(value) > max_length:
        raise ValidationError(f"{name} must be at most {max_length} characters; found {len(value)}")
    if "\x00" in value:
        raise ValidationError(f"{name} must not contain NUL characters")
    return value


def _require_importance(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(
            f"importance must be a number in [0, 1]; found {type(value).__name__} {value!r}"
        )
    if isinstance(value, int) and not 0 <= value <= 1:
        # float() of a huge int overflows; an int outside [0, 1] is out of range anyway.
        raise ValidationError(f"importance must be in [0, 1]; found importance={value!r}")
    importance = float(value)
    if math.isnan(importance) or not 0.0 <= importance <= 1.0:
        raise ValidationError(f"importance must be in [0, 1]; found importance={value!r}")
    return importance


def _require_tags(value: object) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        raise ValidationError(
            f"tags must be a list of strings; found {type(value).__name__} {value!r}"
        )
    tags = tuple(value)
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip():
            raise ValidationError(f"every tag must be a non-empty string; found tag={tag!r}")
    return tags


def _derived_id(identifier: str, fact: str, created_at: datetime) -> str:
    material = "\x00".join((identifier, fact, format_timestamp(created_at))).encode("utf-8")
    return "mem-" + hashlib.sha256(material).hexdigest()[:20]


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
    fact_text = _require_text("fact", fact)
    identifier_text = _require_text("identifier", identifier, max_length=MAX_ID_LENGTH)
    moment = clock() if created_at is None else created_at
    created = parse_timestamp(moment)
    if memory_id is None:
        memory_id = _derived_id(identifier_text, fact_text, created)
    return Memory(
        memory_id=_require_text("memory_id", memory_id, max_length=MAX_ID_LENGTH),
        identifier=identifier_text,
        fact=fact_text,
        importance=_require_importance(importance),
        tags=_require_tags(tags),
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
