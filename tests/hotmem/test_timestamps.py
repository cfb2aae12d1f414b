"""``format_timestamp`` writes the canonical text of any aware moment: its shortcut for a
moment at UTC (``isoformat`` of its own fields) equals the conversion every other moment takes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import example, given
from hypothesis import strategies as st

from hotmem.fields import format_timestamp

_ZONES = st.one_of(
    st.just(UTC),
    st.builds(
        timezone,
        st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23)),
    ),
)


def _converted(moment: datetime) -> str:
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"


@given(st.datetimes(timezones=_ZONES))
@example(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
@example(datetime(2026, 1, 2, 3, 4, 5, 120, tzinfo=timezone(timedelta(0))))
@example(datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(seconds=30))))
def test_the_canonical_text_of_any_aware_moment(moment: datetime) -> None:
    try:
        expected = _converted(moment)
    except OverflowError:  # before year 1 or after 9999 at UTC: refused either way
        return
    assert format_timestamp(moment) == expected
    assert expected.endswith("Z")
    assert "+" not in expected


def test_the_canonical_text_of_fixed_moments() -> None:
    assert format_timestamp(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02T03:04:05Z"
    assert format_timestamp(datetime(2026, 1, 2, 3, 4, 5, 7, tzinfo=UTC)) == (
        "2026-01-02T03:04:05.000007Z"
    )
    two_hours = timezone(timedelta(hours=2))
    assert format_timestamp(datetime(2026, 1, 2, 1, 0, tzinfo=two_hours)) == "2026-01-01T23:00:00Z"
