"""Record lines: the fast encoder and the fast chunk check against naive references."""

from __future__ import annotations

import json
from datetime import UTC

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from hotmem.errors import ValidationError
from hotmem.models import format_timestamp, memory_from_mapping, parse_timestamp
from hotmem.snapshot.decoding import decode_records
from hotmem.snapshot.records import (
    RECORD_FIELDS,
    _timestamps_ok,
    fast_decode,
    field_problem,
    record_line,
)

texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30
).filter(str.strip)
moments = st.datetimes(timezones=st.just(UTC)).map(format_timestamp)
valid_records = st.fixed_dictionaries(
    {
        "memory_id": texts.filter(lambda t: "\x00" not in t),
        "identifier": texts.filter(lambda t: "\x00" not in t),
        "fact": texts.filter(lambda t: "\x00" not in t),
        "importance": st.floats(min_value=0.0, max_value=1.0),
        "tags": st.lists(texts, max_size=3),
        "created_at": moments,
    }
)


def canonical(record: dict) -> str:
    return json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@given(valid_records)
@example({**dict.fromkeys(RECORD_FIELDS, '"\\\n\t\x7f\u2028'), "importance": 1.0, "tags": []})
def test_record_line_is_canonical_json(record: dict) -> None:
    stored_tags = json.dumps(record["tags"], ensure_ascii=False)
    row = (
        record["memory_id"],
        record["identifier"],
        record["fact"],
        record["importance"],
        stored_tags,
        record["created_at"],
        b"vector",
    )
    assert record_line(row) == canonical(record)


# -- the naive reference of validation -----------------------------------------------------------
def reference_problem(line: bytes) -> str | None:
    """The store's rules (memory_from_mapping) plus the snapshot's, one record at a time."""

    def refuse(name: str) -> float:
        raise ValueError(name)

    try:
        record = json.loads(line.decode("utf-8"), parse_constant=refuse)
    except ValueError:
        return "json"
    if not isinstance(record, dict) or set(record) != set(RECORD_FIELDS):
        return "record"
    # The store derives a missing id and takes a missing time from its clock; a package
    # must say both.
    if not isinstance(record["memory_id"], str) or not isinstance(record["created_at"], str):
        return "record"
    try:
        memory = memory_from_mapping(record)
    except (ValidationError, OverflowError):
        return "record"
    created = record["created_at"]
    if (
        not isinstance(record["tags"], list)
        or format_timestamp(parse_timestamp(created)) != created
    ):
        return "record"
    strings = [record["memory_id"], record["identifier"], record["fact"], *record["tags"]]
    try:
        "".join(strings).encode("utf-8")
    except UnicodeEncodeError:
        return "record"
    assert memory.to_dict() == {**record, "importance": float(record["importance"])}
    return None


def reference(data: bytes) -> tuple[list[tuple[int, str]], list[tuple] | None]:
    lines = data.split(b"\n")
    assert lines[-1] == b""
    problems, rows, previous = [], [], None
    for number, line in enumerate(lines[:-1], start=1):
        problem = reference_problem(line)
        if problem is not None:
            problems.append((number, problem))
            continue
        record = json.loads(line)
        if previous is not None and record["memory_id"] <= previous:
            problems.append(
                (number, "duplicate-id" if record["memory_id"] == previous else "order")
            )
        previous = max(previous or record["memory_id"], record["memory_id"])
        rows.append(tuple(record[f] for f in ("memory_id", "identifier", "fact")))
    return problems, None if problems else rows


# Values that break a rule, per field, next to valid ones.
bad_text = st.sampled_from(["", " ", "\t\n", "a\x00b", "x" * 513, 7, None, ["a"], "\ud800"])
bad_importance = st.sampled_from([-0.1, 1.5, True, "0.5", None, 10**400, 2, 0, 1, -0.0])
bad_tags = st.sampled_from(["a", [""], [" "], [1], {"a": 1}, None, ["\udfff"], ["ok", 3]])
bad_created = st.sampled_from(
    [
        "2026-01-01T00:00:00+00:00",
        "2026-01-01 00:00:00Z",
        "2026-01-01T00:00:00.000000Z",
        "2026-13-01T00:00:00Z",
        "2026-02-30T00:00:00Z",
        "2026-01-01T00:00Z",
        "２０２６-01-01T00:00:00Z",
        "0999-01-01T00:00:00Z",
        1,
    ]
)


@st.composite
def records(draw: st.DrawFn) -> dict:
    record = draw(valid_records)
    if draw(st.integers(0, 5)) == 0:
        field = draw(st.sampled_from([*RECORD_FIELDS, "extra", "missing"]))
        if field == "extra":
            record["extra"] = 1
        elif field == "missing":
            del record[draw(st.sampled_from(RECORD_FIELDS))]
        elif field == "importance":
            record[field] = draw(bad_importance)
        elif field == "tags":
            record[field] = draw(bad_tags)
        elif field == "created_at":
            record[field] = draw(bad_created)
        else:
            record[field] = draw(bad_text)
    return record


@st.composite
def chunks(draw: st.DrawFn) -> bytes:
    items = draw(st.lists(records(), max_size=8))
    if draw(st.booleans()):
        items.sort(key=lambda r: str(r.get("memory_id")))
    lines = [json.dumps(r, sort_keys=True, ensure_ascii=draw(st.booleans())) for r in items]
    if lines and draw(st.integers(0, 5)) == 0:
        lines[draw(st.integers(0, len(lines) - 1))] = draw(
            st.sampled_from(['{"a":1', "", " ", "[]", "null", "NaN", '{"x":Infinity}', "{}{}"])
        )
    return "".join(line + "\n" for line in lines).encode("utf-8", "surrogatepass")


@given(chunks())
@example(b"")
@example(b'{"a":1\n"b":2}\n')
@example(b"\xff\n")
def test_chunk_check_agrees_with_the_store_rules(data: bytes) -> None:
    problems, rows = reference(data)
    chunk = decode_records(data, max_problems=100)
    assert [(line, check) for line, check, _, _ in chunk.problems] == problems
    if rows is None:
        assert chunk.columns == []
    else:
        assert list(zip(*chunk.columns[:3], strict=True)) == rows
        assert chunk.line_count == len(rows)
        # Every valid chunk the writer could produce takes the one-call path.
        assert fast_decode(data) is not None or not rows


def test_lines_merged_into_one_array_are_not_one_record_per_line() -> None:
    first = canonical(
        {
            "created_at": "2026-01-01T00:00:00Z",
            "fact": "f",
            "identifier": "i",
            "importance": 0.5,
            "memory_id": "a",
            "tags": [],
        }
    )
    second = first.replace('"a"', '"b"')
    # Line 1 opens a record that line 2 closes; line 3 holds two records: three lines that
    # parse as three valid records once joined with commas.
    split = first.index(',"identifier"')
    data = f"{first[:split]}\n{first[split + 1 :]}\n{second},{second.replace('b', 'c')}\n"
    chunk = decode_records(data.encode())
    assert [(line, check) for line, check, _, _ in chunk.problems] == [
        (1, "json"),
        (2, "json"),
        (3, "json"),
    ]


@pytest.mark.parametrize(
    ("field", "value", "expected", "found"),
    [
        ("memory_id", "", "memory_id not blank", "memory_id=''"),
        ("memory_id", "x" * 513, "memory_id of at most 512 characters", "513 characters"),
        ("identifier", 7, "identifier as a string", "a number 7"),
        ("fact", "a\x00b", "fact without NUL characters", "a NUL at position 1"),
        ("fact", "ok\ud800", "fact as valid Unicode text", "a lone surrogate U+D800 at position 2"),
        ("importance", True, "importance as a number in [0, 1]", "a boolean True"),
        ("importance", 1.5, "importance in [0, 1]", "importance=1.5"),
        ("importance", 10**400, "importance in [0, 1]", None),
        ("tags", "a", "tags as a list of strings", "a string 'a'"),
        ("tags", {"a": 1}, "tags as a list of strings", "an object {'a': 1}"),
        ("tags", ["ok", " "], "every tag a non-blank string", "tag=' '"),
        (
            "created_at",
            "2026-01-01T00:00:00+00:00",
            "created_at as canonical UTC text such as '2025-01-31T09:00:00Z'",
            "created_at='2026-01-01T00:00:00+00:00'",
        ),
        (
            "created_at",
            None,
            "created_at as canonical UTC text such as '2025-01-31T09:00:00Z'",
            "null",
        ),
    ],
)
def test_field_rules_say_what_was_expected_and_found(
    field: str, value: object, expected: str, found: str | None
) -> None:
    problem = field_problem(field, value)
    assert problem is not None
    assert problem[0] == expected
    if found is not None:
        assert problem[1] == found


@pytest.mark.parametrize(
    ("stamps", "ok"),
    [
        ({"2026-01-31T09:00:00Z"}, True),
        ({"2026-01-31T09:00:00.000001Z", "0001-01-01T00:00:00Z"}, True),
        ({"9999-12-31T23:59:59.999999Z"}, True),
        ({"2026-01-31T09:00:00.000000Z"}, False),  # a zero fraction is not canonical
        ({"2026-01-31T09:00:00+00:00"}, False),
        ({"2026-01-31 09:00:00Z"}, False),
        ({"2026-01-31T09:00Z"}, False),
        ({"20260131T090000Z"}, False),
        ({"2026-02-29T09:00:00Z"}, False),
        ({"2026-01-31T24:00:00Z"}, False),
        ({"0000-01-01T00:00:00Z"}, False),
        ({"2026-01-31T09:00:00Z\n2026-01-31T09:00:00Z"}, False),  # two lines in one value
        ({"2026-01-31T09:00:00Z", "2026-01-31T09:00:0"}, False),
        ({"２０２６-01-31T09:00:00Z"}, False),
        ({"2026-01-31T09:00:00Z", 7}, False),
        (set(), True),
    ],
)
def test_canonical_timestamps(stamps: set, ok: bool) -> None:
    assert _timestamps_ok(stamps) is ok
    for stamp in stamps:
        if isinstance(stamp, str) and ok:
            assert format_timestamp(parse_timestamp(stamp)) == stamp
