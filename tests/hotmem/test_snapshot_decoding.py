"""The streaming records decoder: any cut of the bytes decodes as the whole, within its bounds."""

from __future__ import annotations

import json
from itertools import pairwise

from hypothesis import example, given
from hypothesis import strategies as st

from hotmem.snapshot.decoding import ChunkRecords, RecordsDecoder, decode_records
from hotmem.snapshot.shape import MAX_COMMAS, LineShape, shape_problem
from tests.hotmem.test_snapshot_records import chunks, valid_records


def cut(data: bytes, positions: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(p % (len(data) + 1) for p in positions)})
    return [data[a:b] for a, b in pairwise(points)]


def outcome(decoded: ChunkRecords) -> tuple:
    # A line long enough to be followed as it streams in is refused by its shape before
    # json.loads and the field rules see it, so its problem is worded by the shape check: the
    # same line and check, other words.
    problems = [(line, check) for line, check, _, _ in decoded.problems]
    return (decoded.columns, decoded.line_count, decoded.first_id, decoded.last_id, problems)


@given(chunks(), st.lists(st.integers(min_value=0), max_size=12), st.integers(1, 300))
@example(b'{"a":1\n"b":2}\n', [3, 9], 2)
@example(b'{"memory_id":"x"}\n{"memory_id":"y"}', [5], 1)
@example(b"", [], 1)
def test_any_cut_and_group_size_decodes_as_the_whole(
    data: bytes, positions: list[int], group_bytes: int
) -> None:
    whole = decode_records(data, max_problems=100)
    pieces = decode_records(cut(data, positions), max_problems=100, group_bytes=group_bytes)
    assert outcome(pieces) == outcome(whole)
    assert pieces.more_problems == whole.more_problems


def test_problems_past_the_cap_are_counted() -> None:
    data = b"nope\n" * 30
    decoded = decode_records(data, max_problems=20)
    assert [line for line, *_ in decoded.problems] == list(range(1, 21))
    assert decoded.more_problems == 10


def test_lines_past_the_limit_are_counted_not_decoded() -> None:
    decoder = RecordsDecoder(max_lines=3)
    decoder.feed(b"nope\nnope\n")
    assert decoder.decoding
    decoder.feed(b"nope\nnope\nnope")
    assert not decoder.decoding
    decoded = decoder.finish()
    assert (decoded.line_count, decoded.problems, decoded.columns) == (5, [], [])


@given(valid_records, st.booleans(), st.lists(st.integers(min_value=0), max_size=8))
@example(
    {
        "memory_id": "m",
        "identifier": "i",
        "fact": 'a "quoted" fact \\" with a run of backslashes \\\\\\\\" {[,]}',
        "importance": 0.5,
        "tags": ["x\\", '"', ",,", "[{"],
        "created_at": "2026-01-01T00:00:00Z",
    },
    True,
    list(range(0, 120, 3)),
)
def test_every_record_line_has_a_record_shape(
    record: dict, ascii_only: bool, positions: list[int]
) -> None:
    line = json.dumps(record, ensure_ascii=ascii_only).encode()
    shape = LineShape()
    assert [shape.feed(piece) for piece in cut(line, positions)] == [None] * len(
        cut(line, positions)
    )


@given(valid_records, st.sampled_from(["fact", "identifier", "tags"]), st.lists(st.integers(0)))
def test_a_nested_value_is_out_of_shape_wherever_the_line_is_cut(
    record: dict, field: str, positions: list[int]
) -> None:
    record[field] = [["nested"]] if field == "tags" else {"a": record[field]}
    line = json.dumps(record).encode()
    shape = LineShape()
    found = [problem for piece in cut(line, positions) if (problem := shape.feed(piece))]
    assert found[0][1].startswith("a nested ")


def test_commas_are_bounded_outside_strings_only() -> None:
    inside = b'{"fact":"' + b"," * (MAX_COMMAS * 2) + b'"}'
    assert shape_problem(inside) is None
    outside = b'{"tags":[' + b'"a",' * (MAX_COMMAS + 1) + b'"a"]}'
    assert shape_problem(outside.replace(b'"a",', b"", 1)) is None
    assert shape_problem(outside) == (
        "one object of the six fields, with at most one array (the tags)",
        f"more than {MAX_COMMAS} commas outside strings",
    )
