"""Indented JSON text, the bytes of ``json.dumps(value, indent=..., sort_keys=True,
ensure_ascii=False)``, written faster.

With ``indent``, the standard library encodes in Python, one generator step a value (2 to 3 s
for the 47 MB result of a collection of 1,000 queries and three profiles). ``dumps_indented``
walks the containers in Python and hands each run of scalars of a container (all of a metric
block or a result's components, the scalar fields of a result) to the C encoder in one call,
with the item separator of its depth: that text is the run's items as the indented text has
them, between brackets that are cut. The C encoder and the Python one write a scalar the same
way (``float.__repr__``, ``int.__repr__``, the same string escaping), sort keys the same way
(``sorted(d.items())``, and a run of sorted items is sorted) and convert non-string keys the
same way, so the text is the same (``tests/eval/test_json_text.py`` compares them on random
documents).
"""

from __future__ import annotations

import json
from functools import cache
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

__all__ = ["dumps_indented"]

_SCALARS = (str, int, float, type(None))  # bool is an int
_INFINITY = float("inf")


@cache
def _flat(indent: int, depth: int) -> Any:
    """The encoder of a container of scalars whose items sit at ``depth``: the C encoder
    (the standard library's, made once), else the Python one."""
    separator = ",\n" + " " * (indent * depth)
    if c_make_encoder is None:  # pragma: no cover - CPython has the C encoder
        encoder = json.JSONEncoder(
            ensure_ascii=False, sort_keys=True, check_circular=False, separators=(separator, ": ")
        )
        return encoder.encode
    made = c_make_encoder(
        None, _unserialisable, encode_basestring, None, ": ", separator, True, False, True
    )
    return lambda value: "".join(made(value, 0))


def _unserialisable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _scalar(value: object) -> str:
    """A scalar as ``json.dumps`` writes it (``float('nan')`` as ``NaN``, as it does)."""
    if isinstance(value, str):
        text: str = encode_basestring(value)
        return text
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    assert isinstance(value, float)
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)


def _key(key: object) -> str:
    """A dict key as ``json.dumps`` writes it: text, or a scalar converted to text."""
    if isinstance(key, str):
        return _scalar(key)
    if key is None or isinstance(key, int | float):
        return _scalar(_scalar(key))  # true, false, null, 1, 1.5 as the string it makes
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _write(value: object, indent: int, depth: int, out: list[str], path: set[int]) -> None:
    """``value`` as ``json.dumps`` indents it at ``depth``, appended to ``out`` (``path``:
    the containers it is inside)."""
    if isinstance(value, _SCALARS):
        out.append(_scalar(value))
        return
    if isinstance(value, dict):
        items: list[Any] = sorted(value.items())
        values = [v for _, v in items]
        opening, closing = "{", "}"
    elif isinstance(value, list | tuple):
        items = values = list(value)
        opening, closing = "[", "]"
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
    if not values:
        out.append(opening + closing)
        return
    inner, outer = "\n" + " " * (indent * (depth + 1)), "\n" + " " * (indent * depth)
    encode = _flat(indent, depth + 1)
    if all(isinstance(v, _SCALARS) for v in values):
        out.append(opening + inner + encode(value)[1:-1] + outer + closing)
        return
    if id(value) in path:
        raise ValueError("Circular reference detected")
    path.add(id(value))
    keyed = opening == "{"
    out.append(opening)
    separator, start = inner, 0
    while start < len(values):
        if isinstance(values[start], _SCALARS):
            # a run of scalars, in one call: the text of these items alone, brackets cut
            end = start + 1
            while end < len(values) and isinstance(values[end], _SCALARS):
                end += 1
            run = dict(items[start:end]) if keyed else values[start:end]
            out.append(separator + encode(run)[1:-1])
            start = end
        else:
            out.append(separator + (_key(items[start][0]) + ": " if keyed else ""))
            _write(values[start], indent, depth + 1, out, path)
            start += 1
        separator = "," + inner
    out.append(outer + closing)
    path.discard(id(value))


def dumps_indented(value: object, indent: int = 2) -> str:
    """``json.dumps(value, indent=indent, sort_keys=True, ensure_ascii=False)``, the same text.

    Raises:
        TypeError: a value JSON cannot hold (as ``json.dumps``), or keys of a dict that cannot
            be sorted together.
        ValueError: a container that contains itself.
    """
    out: list[str] = []
    _write(value, indent, 0, out, set())
    return "".join(out)
