"""The one JSON Lines reader: its policy, line by line, as a table of inputs and results."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

import hotmem
from hotmem import JsonlProblem, JsonlRecord, read_jsonl

DEEP = "[" * 65 + "]" * 65
DEEPEST_ALLOWED = "[" * 63 + "]" * 63  # inside the object: 64 levels


def read(data: bytes, **options: bool) -> list[tuple[int | None, object]]:
    """(line, object) for records, (line, reason) for problems."""
    return [
        (item.line, item.value if isinstance(item, JsonlRecord) else item.reason)
        for item in read_jsonl(io.BytesIO(data), name="f.jsonl", **options)
    ]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b'{"a": 1}\n{"b": 2}', [(1, {"a": 1}), (2, {"b": 2})], id="two-lines"),
        pytest.param(
            b'{"a": 1}\r\n\r\n  \t\n{"b": 2}\r\n', [(1, {"a": 1}), (4, {"b": 2})], id="crlf-blank"
        ),
        pytest.param(b'\xef\xbb\xbf{"a": 1}\n', [(1, {"a": 1})], id="leading-bom"),
        pytest.param(
            b'{"a": 1}\n\xef\xbb\xbf{"b": 2}\n',
            [
                (1, {"a": 1}),
                (2, "expected a byte-order mark only at the start of the file, found one here"),
            ],
            id="bom-later",
        ),
        pytest.param(
            b'{"fact": "caf\xe9"}\n',
            [(1, "expected UTF-8 text, found byte 0xe9 at column 14 (invalid continuation byte)")],
            id="latin-1",
        ),
        pytest.param(
            b"not json\n", [(1, "invalid JSON: Expecting value at column 1")], id="not-json"
        ),
        pytest.param(
            b'{"a": 1,\n',
            [(1, "invalid JSON: Expecting property name enclosed in double quotes at column 9")],
            id="truncated",
        ),
        pytest.param(
            b'{"a": 1} {"b": 2}\n', [(1, "invalid JSON: Extra data at column 10")], id="two-objects"
        ),
        pytest.param(b"[1, 2]\n", [(1, "expected a JSON object, found an array")], id="array"),
        pytest.param(b"null\n", [(1, "expected a JSON object, found null")], id="null"),
        pytest.param(b"7\n", [(1, "expected a JSON object, found a number")], id="number"),
        pytest.param(
            b'{"a": 1, "a": 2}\n',
            [(1, "invalid JSON object: expected each key once, found 'a' twice")],
            id="repeated-key",
        ),
        pytest.param(
            b'{"x": {"a": 1, "a": 1}}\n',
            [(1, "invalid JSON object: expected each key once, found 'a' twice")],
            id="repeated-nested-key",
        ),
        pytest.param(
            b'{"n": ' + b"9" * 5000 + b"}\n",
            [(1, "expected numbers of at most 100 characters, found one of 5000")],
            id="5000-digits",
        ),
        pytest.param(
            b'{"n": 1.' + b"5" * 200 + b"}\n",
            [(1, "expected numbers of at most 100 characters, found one of 202")],
            id="long-float",
        ),
        pytest.param(
            b'{"n": ' + b"9" * 100 + b"}\n", [(1, {"n": int("9" * 100)})], id="100-digits"
        ),
        pytest.param(
            b'{"deep": ' + DEEP.encode() + b"}\n",
            [(1, "expected JSON nested at most 64 levels deep, found 66")],
            id="deep",
        ),
        pytest.param(
            b'{"deep": ' + b"[" * 100000 + b"}\n",
            [(1, "expected JSON nested at most 64 levels deep, found 100001")],
            id="very-deep-unclosed",
        ),
        pytest.param(
            b'{"deep": ' + DEEPEST_ALLOWED.encode() + b"}\n",
            [(1, {"deep": eval(DEEPEST_ALLOWED)})],
            id="64-levels",
        ),
        pytest.param(
            b'{"text": "' + b"[" * 500 + b'"}\n',
            [(1, {"text": "[" * 500})],
            id="brackets-in-a-string",
        ),
        pytest.param(
            b'{"i": NaN}\n', [(1, {"i": pytest.approx(float("nan"), nan_ok=True)})], id="nan"
        ),
        pytest.param(
            b'{"s": "\\ud800"}\n', [(1, {"s": "\ud800"})], id="escaped-surrogate-left-to-callers"
        ),
        pytest.param(
            b"", [(None, "expected at least one JSON object, found no records")], id="empty"
        ),
        pytest.param(
            b"\n  \n", [(None, "expected at least one JSON object, found no records")], id="blank"
        ),
        pytest.param(b"[]\n", [(1, "expected a JSON object, found an array")], id="only-a-problem"),
    ],
)
def test_each_line_is_read_by_one_policy(
    data: bytes, expected: list[tuple[int | None, object]]
) -> None:
    assert read(data) == expected


def test_an_empty_file_may_be_allowed() -> None:
    assert read(b"\n", allow_empty=True) == []


def test_problems_render_as_path_line_reason(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"a": 1}\n[]\n')
    items = list(read_jsonl(path))
    assert items == [
        JsonlRecord(str(path), 1, {"a": 1}),
        JsonlProblem(str(path), 2, "expected a JSON object, found an array"),
    ]
    assert str(items[1]) == f"{path}:2: expected a JSON object, found an array"
    assert str(JsonlProblem("f", None, "why")) == "f: why"


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: p / "absent.jsonl", "expected a JSON Lines file, found no such file"),
        (lambda p: p, "expected a JSON Lines file, found a directory"),
    ],
)
def test_a_file_that_cannot_be_read_is_one_problem(tmp_path: Path, make, reason: str) -> None:
    path = make(tmp_path)
    assert list(read_jsonl(path)) == [JsonlProblem(str(path), None, reason)]


def test_the_reader_is_lazy(tmp_path: Path) -> None:
    stream = io.BytesIO(b'{"a": 1}\n' * 1000)
    items = read_jsonl(stream)
    assert next(items) == JsonlRecord("<stream>", 1, {"a": 1})
    assert stream.tell() < 9000  # buffered, but not the whole stream


def test_the_limits_are_public() -> None:
    assert (hotmem.MAX_JSON_DEPTH, hotmem.MAX_JSON_NUMBER) == (64, 100)
