"""The rules every field of a memory obeys: one table, used by every reader of memories.

The store (``models.make_memory``), the snapshot reader (``snapshot/records.py``) and the
evaluator's fixture validator all check a memory's fields here, so a value one of them accepts
the others accept too. A rule returns ``None`` for a valid value, or a :class:`Breach` saying
what was expected and what was found; each caller words the breach for its own reader (a
``ValidationError``, a snapshot problem, ``path:line: reason``).

Which fields a record must carry depends on where it comes from (the store derives a missing
``memory_id``; a snapshot record carries all six), so requiredness is the caller's; the rules
here judge a value that is present.

``created_at`` has two forms. Input (:data:`FIELD_RULES`): a timezone-aware ``datetime`` or
ISO-8601 text with a UTC offset, converted to UTC. Stored (:func:`canonical_timestamp_breach`):
the canonical UTC text ``format_timestamp`` writes, ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z``.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime  # loaded already: sqlite3 imports it

from hotmem.errors import ValidationError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import NamedTuple

__all__ = [
    "FIELD_NAMES",
    "FIELD_RULES",
    "MAX_ID_LENGTH",
    "MAX_TAGS",
    "Breach",
    "canonical_timestamp_breach",
    "field_breach",
    "format_timestamp",
    "lookup_text",
    "shown",
    "text_breach",
    "texts_obey_rule",
    "timestamp_or_breach",
    "unicode_breach",
]

#: The fields of a memory, in the order a record lists them.
FIELD_NAMES = ("memory_id", "identifier", "fact", "importance", "tags", "created_at")
#: The longest ``memory_id`` or ``identifier``, in characters.
MAX_ID_LENGTH = 512
#: The most tags one memory may hold, wherever it enters (``add``, ``import``, a package): a
#: memory the store accepts is one every snapshot can carry.
MAX_TAGS = 2**16
_EXAMPLE = "'2025-01-31T09:00:00Z'"


if TYPE_CHECKING:

    class _Breach(NamedTuple):
        expected: str
        found: str

else:  # the same named tuple, without importing typing
    _Breach = namedtuple("_Breach", ("expected", "found"))


class Breach(_Breach):
    """Why a value breaks its field's rule: a named tuple ``(expected, found)``."""

    __slots__ = ()

    def __str__(self) -> str:
        return f"expected {self.expected}, found {self.found}"


def shown(value: object, width: int = 80) -> str:
    """``repr(value)``, cut to ``width`` characters (a 10,000-character fact stays readable)."""
    try:
        text = repr(value)
    except ValueError:  # an int past sys.get_int_max_str_digits()
        return f"an integer of {int(getattr(value, 'bit_length', lambda: 0)() * 0.30103)}+ digits"
    return text if len(text) <= width else text[: width - 3] + "..."


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _found(value: object) -> str:
    """What was found, by kind and value: ``a number 7``, ``null``."""
    return "null" if value is None else f"{_kind(value)} {shown(value)}"


def unicode_breach(field: str, text: str) -> Breach | None:
    """A lone surrogate cannot be stored as UTF-8 (SQLite, JSON files, packages)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        where = f"a lone surrogate U+{ord(text[exc.start]):04X} at position {exc.start}"
        return Breach(f"{field} as valid Unicode text", where)
    return None


def lookup_text(field: str, value: object) -> str:
    """``value`` as a string that can be looked up in the store (valid Unicode).

    Raises:
        ValidationError: it is not a string, or holds a lone surrogate.
    """
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a string; found {type(value).__name__}")
    breach = unicode_breach(field, value)
    if breach is not None:
        raise ValidationError(str(breach))
    return value


def text_breach(field: str, value: object, *, max_length: int | None = None) -> Breach | None:
    """The rule of every text field: a non-blank string of valid Unicode without NUL."""
    if not isinstance(value, str):
        return Breach(f"{field} as a string", _found(value))
    if not value.strip():
        return Breach(f"{field} not blank", f"{field}={shown(value)}")
    if max_length is not None and len(value) > max_length:
        return Breach(f"{field} of at most {max_length} characters", f"{len(value)} characters")
    if "\x00" in value:
        return Breach(f"{field} without NUL characters", f"a NUL at position {value.index(chr(0))}")
    return unicode_breach(field, value)


def texts_obey_rule(column: Sequence[object], max_length: int | None, *, nul: bool = False) -> bool:
    """Whether every value of ``column`` is a ``str`` that :func:`text_breach` accepts (not
    blank, at most ``max_length`` characters, valid Unicode, without NUL unless ``nul``: a
    tag's rule allows one), checked a column at a time in C-level passes (a bulk ingest's or
    a package chunk's fast path). ``False`` also for a ``str`` subclass: the caller checks
    such values one by one."""
    if not column:
        return True
    if set(map(type, column)) != {str} or not all(map(str.strip, column)):  # type: ignore[arg-type]
        return False
    texts: Sequence[str] = column  # type: ignore[assignment]  # every one a str, just checked
    if max_length is not None and max(map(len, texts)) > max_length:
        return False
    joined = "".join(texts)
    if not nul and "\x00" in joined:
        return False
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text(field: str, max_length: int | None) -> Callable[[object], Breach | None]:
    return lambda value: text_breach(field, value, max_length=max_length)


def _importance(value: object) -> Breach | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return Breach("importance as a number in [0, 1]", _found(value))
    # A huge int is compared as an int: float() of it would overflow. NaN fails both bounds.
    if not 0 <= value <= 1:
        return Breach("importance in [0, 1]", f"importance={shown(value)}")
    return None


def _tags(value: object) -> Breach | None:
    if not isinstance(value, list | tuple):
        return Breach("tags as a list of strings", _found(value))
    if len(value) > MAX_TAGS:
        return Breach(f"at most {MAX_TAGS} tags", f"{len(value)} tags")
    for tag in value:
        if not isinstance(tag, str) or not tag.strip():
            return Breach("every tag a non-blank string", f"tag={shown(tag)}")
        surrogate = unicode_breach("every tag", tag)
        if surrogate is not None:
            return surrogate
    return None


def timestamp_or_breach(value: object, *, field: str = "created_at") -> datetime | Breach:
    """``value`` (an aware datetime, or ISO-8601 text with an offset) as aware UTC, or why not."""
    moment = value
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            expected = f"{field} as ISO-8601 text such as {_EXAMPLE}"
            return Breach(expected, f"{field}={shown(value)}")
    if not isinstance(moment, datetime):
        expected = f"{field} as a datetime or ISO-8601 text such as {_EXAMPLE}"
        return Breach(expected, _found(value))
    try:
        offset = moment.utcoffset()
    except (ValueError, TypeError, OverflowError) as exc:  # a tzinfo answering nonsense
        expected = f"{field} with a valid timezone such as {_EXAMPLE}"
        return Breach(expected, f"{field}={shown(value)} ({exc})")
    if offset is None:
        expected = f"{field} with a timezone such as {_EXAMPLE}"
        return Breach(expected, f"{field}={shown(value)} (no timezone)")
    try:
        return moment.astimezone(UTC)
    except (OverflowError, ValueError):  # 0001-01-01T00:00:00+01:00 is before year 1 in UTC
        expected = f"{field} within years 1..9999 once converted to UTC"
        return Breach(expected, f"{field}={shown(value)}")


def _created_at(value: object) -> Breach | None:
    parsed = timestamp_or_breach(value)
    return parsed if isinstance(parsed, Breach) else None


def format_timestamp(moment: datetime) -> str:
    """Canonical UTC text: ``YYYY-MM-DDTHH:MM:SSZ``, with ``.ffffff`` only when non-zero."""
    # isoformat() omits the microseconds when they are zero, as the canonical form does.
    text = moment.isoformat()
    if text.endswith("+00:00"):  # at UTC already (every parsed timestamp is): its own fields
        return text[:-6] + "Z"
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"


def canonical_timestamp_breach(value: object) -> Breach | None:
    """The stored form of ``created_at``: exactly the text ``format_timestamp`` writes."""
    expected = f"created_at as canonical UTC text such as {_EXAMPLE}"
    if not isinstance(value, str):
        return Breach(expected, _found(value))
    if not value.endswith("Z"):
        return Breach(expected, f"created_at={shown(value)}")
    parsed = timestamp_or_breach(value)
    if isinstance(parsed, Breach) or format_timestamp(parsed) != value:
        return Breach(expected, f"created_at={shown(value)}")
    return None


#: field -> the rule its input value obeys (see the module docstring for ``created_at``).
FIELD_RULES: dict[str, Callable[[object], Breach | None]] = {
    "memory_id": _text("memory_id", MAX_ID_LENGTH),
    "identifier": _text("identifier", MAX_ID_LENGTH),
    "fact": _text("fact", None),
    "importance": _importance,
    "tags": _tags,
    "created_at": _created_at,
}


def field_breach(field: str, value: object) -> Breach | None:
    """How ``value`` breaks the rule of ``field`` (one of :data:`FIELD_NAMES`), or ``None``.

    Raises:
        KeyError: ``field`` is not a field of a memory.
    """
    return FIELD_RULES[field](value)
