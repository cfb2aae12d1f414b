"""A bulk ingest's batch checked a column at a time (``models.memories_from_mappings``) gives
exactly the memories record-by-record validation gives, and refuses a batch exactly when one
of its records breaks a rule (the caller then validates one by one, for the message)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import example, given, settings
from hypothesis import strategies as st

from hotmem.errors import ValidationError
from hotmem.models import Memory, fixed_clock, memories_from_mappings, memory_from_mapping

_TEXTS = st.one_of(
    st.text(min_size=0, max_size=12),
    st.sampled_from(["", "  ", "ok", "a\x00b", "\ud800", "x" * 513, "Ünïcödé 東京"]),
    st.integers(0, 3),
    st.none(),
)
_IMPORTANCES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, 2, -1, 0.0, 1.0, 0.5, True, False, "0.5", 10**400]),
)
_TAGS = st.one_of(
    st.lists(_TEXTS, max_size=3),
    st.lists(_TEXTS, max_size=3).map(tuple),
    st.sampled_from(["tag", None, 3, {"t": 1}]),
)
_MOMENTS = st.one_of(
    st.sampled_from(
        [
            "2026-01-02T03:04:05Z",
            "2026-01-02T03:04:05+02:00",
            "2026-01-02T03:04:05",
            "yesterday",
            "0001-01-01T00:00:00+01:00",
            None,
            5,
        ]
    ),
    st.datetimes(timezones=st.just(UTC)),
    st.datetimes(),
)
_RECORDS = st.fixed_dictionaries(
    {"fact": _TEXTS, "identifier": _TEXTS},
    optional={
        "memory_id": _TEXTS,
        "importance": _IMPORTANCES,
        "tags": _TAGS,
        "created_at": _MOMENTS,
        "colour": st.just("red"),
    },
)
_VALID = {"fact": "fact", "identifier": "org"}


def _one_by_one(records: list[object]) -> list[Memory] | None:
    clock = fixed_clock("2026-05-01T00:00:00Z")
    found = []
    for record in records:
        try:
            found.append(memory_from_mapping(record, clock=clock))  # type: ignore[arg-type]
        except ValidationError:
            return None
    return found


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_RECORDS, st.just(_VALID)), max_size=6))
@example([{**_VALID, "tags": ["a\x00b"]}])  # a NUL is allowed in a tag, not in a text
@example([{**_VALID, "fact": "a\x00b"}])
@example([_VALID, {**_VALID, "importance": float("nan")}])
@example([{**_VALID, "identifier": "x" * 512, "memory_id": "y" * 512}])
@example([{**_VALID, "memory_id": None, "created_at": None}])
@example([{"fact": "\ud800", "identifier": "org"}, _VALID])
@example([{**_VALID, "tags": ("t",) * 3, "importance": 1}])
def test_a_batch_checked_by_columns_gives_what_records_checked_one_by_one_give(
    records: list[object],
) -> None:
    expected = _one_by_one(records)
    found = memories_from_mappings(records, clock=fixed_clock("2026-05-01T00:00:00Z"))
    assert found == expected


def test_the_clock_is_asked_once_for_each_record_without_a_time_in_order() -> None:
    times = iter(datetime(2026, 1, d, tzinfo=UTC) for d in range(1, 10))
    asked: list[datetime] = []

    def clock() -> datetime:
        asked.append(next(times))
        return asked[-1]

    records: list[object] = [_VALID, {**_VALID, "created_at": "2025-01-01T00:00:00Z"}, _VALID]
    found = memories_from_mappings(records, clock=clock)
    assert found is not None
    assert [m.created_at.day for m in found] == [1, 1, 2]
    assert [m.created_at.year for m in found] == [2026, 2025, 2026]
    assert len(asked) == 2
    # a batch refused for a bad time asks the clock nothing: one-by-one validation asks it
    assert memories_from_mappings([_VALID, {**_VALID, "created_at": "never"}], clock=clock) is None
    assert len(asked) == 2


def test_shapes_outside_the_plain_ones_are_left_to_record_by_record_validation() -> None:
    class Text(str):
        pass

    records: list[object] = [{"fact": Text("fact"), "identifier": "org"}]
    assert memories_from_mappings(records) is None
    assert memory_from_mapping(records[0]).fact == "fact"  # type: ignore[arg-type]
