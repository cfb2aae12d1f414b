"""``dumps_indented`` writes the bytes of ``json.dumps(..., indent, sort_keys=True,
ensure_ascii=False)``: on random documents and the edge cases of JSON's scalars and keys (an
evaluator's result file: ``tests/eval/test_retrieval_eval.py``)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotmem_eval.json_text import dumps_indented


def reference(value: object, indent: int = 2) -> str:
    return json.dumps(value, indent=indent, sort_keys=True, ensure_ascii=False)


scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
    | st.sampled_from(["", '\x00\n\t"\\', "é東京", "\u2028", "\U0001f600"])
)
documents = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5)
        | st.lists(children, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=4), children, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=400)
@given(document=documents, indent=st.sampled_from([0, 1, 2, 4]))
def test_the_text_of_json_dumps(document: object, indent: int) -> None:
    assert dumps_indented(document, indent) == reference(document, indent)


@pytest.mark.parametrize(
    "document",
    [
        {},
        [],
        [[]],
        {"a": {}, "b": [], "c": [{}], "d": [[], 1]},
        [1, [2, [3, [4]]], {"x": [5, {"y": None}]}, "s"],
        {"b": 1, "a": {"z": [1.5, -0.0, 1e16, 1e-07, math.inf, -math.inf]}, "c": "t"},
        {10: "int", 2: {3: [True, False]}, -1: [[0]]},
        {2.5: "float", 1e16: [1], float("inf"): {"x": 1}},
        [{True: "bool"}, {False: [[]]}, {None: "null"}, {None: [None]}],
        {"z": [1, 2, {"q": 3}, 4, 5], "y": (1, (2, 3), [])},
        [float("nan"), {"n": float("nan")}, [float("nan")]],
        "a scalar",
        17,
        None,
    ],
)
def test_edge_cases(document: object) -> None:
    assert dumps_indented(document) == reference(document)


def test_refusals_are_json_dumps_errors() -> None:
    loop: list[Any] = [1]
    loop.append([loop])
    with pytest.raises(ValueError, match="Circular reference detected"):
        dumps_indented(loop)
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        dumps_indented({"a": [1, {2}]})
    with pytest.raises(TypeError, match="Object of type bytes is not JSON serializable"):
        dumps_indented({"a": b"x", "b": [[1]]})
    with pytest.raises(TypeError, match="keys must be str"):
        dumps_indented({(1, 2): [[1]]})
    with pytest.raises(TypeError):
        dumps_indented({1: [[1]], "a": 2})  # keys that cannot be sorted together
