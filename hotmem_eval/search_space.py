"""The search space of ``hotmem-eval tune``: a TOML file of grids and ranges over a profile's
fields, every combination one candidate profile.

Each key takes a list of values or a range ``{ from = A, to = B, step = S }`` (both ends
included); a key left out keeps the ``default`` profile's value::

    fusion = ["weighted", "rrf"]
    vector_space = ["hotmem-hash-v1", "all-minilm-l6-v2"]   # "none": no vector channel
    vector_weight = { from = 0.2, to = 0.8, step = 0.2 }
    vector_floor = [0.3, 0.4]
    lexical_weight = [0.0, 0.2, 0.4]                        # "none": no lexical channel
    lexical_gate = ["none", 0.25]
    importance = [0.0, 0.2]
    rrf_k = [20, 60]
    depth = [100]

Combinations are taken in the order of ``KEYS``, the last key varying fastest. A combination
with neither channel is left out; a gate without a vector channel is dropped; fields that
fusion ignores (importance under RRF; rrf_k and depth under weighted fusion) take the default's
value, and a combination equal to an earlier one is left out, so every candidate ranks
differently in principle. Candidates are named ``c0001``, ``c0002``, ... in that order. Every
problem is a ``UsageError`` naming the file (``path:line`` for TOML syntax).
"""

from __future__ import annotations

import itertools
import math
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import hotmem
from hotmem_eval.errors import UsageError

__all__ = ["DEFAULT_SPACE", "KEYS", "MAX_CANDIDATES", "candidates", "read_search_space"]

KEYS: Final = (
    "fusion",
    "vector_space",
    "vector_weight",
    "vector_floor",
    "lexical_weight",
    "lexical_gate",
    "importance",
    "rrf_k",
    "depth",
)
#: The most candidates a search space may give.
MAX_CANDIDATES: Final = 10_000
_BASE = hotmem.PROFILES["default"]
_DEFAULTS: Final[dict[str, object]] = {
    "fusion": _BASE.fusion,
    "vector_space": hotmem.MODEL_NAME,
    "vector_weight": _BASE.vector.weight if _BASE.vector else 0.6,
    "vector_floor": _BASE.vector.floor if _BASE.vector else 0.4,
    "lexical_weight": _BASE.lexical.weight if _BASE.lexical else 0.2,
    "lexical_gate": "none",
    "importance": _BASE.importance,
    "rrf_k": _BASE.rrf_k,
    "depth": _BASE.depth,
}
#: Without ``--search-space``: 96 weighted profiles over the first space given (see
#: docs/collections.md#tuning-a-profile).
DEFAULT_SPACE: Final[dict[str, list[object]]] = {
    "vector_weight": [0.0, 0.2, 0.4, 0.6, 0.8, 1.0],
    "vector_floor": [0.2, 0.3, 0.4, 0.5],
    "lexical_weight": [0.2, 0.6],
    "importance": [0.0, 0.2],
}


# Python 3.11's TOMLDecodeError carries its place only in the message: "... (at line 3, column 5)".
_PLACE = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def _where(path: Path, text: str, key: str) -> str:
    """``path:line`` of the line that sets ``key`` (``path`` when it is not found)."""
    pattern = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\")\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return f"{path}:{number}"
    return str(path)


def _values(path: str, key: str, value: object) -> list[object]:
    if isinstance(value, list):
        if not value:
            raise UsageError(f"{path}: {key} has no value; give a list of one or more")
        return list(value)
    if isinstance(value, Mapping) and set(value) == {"from", "to", "step"}:
        start, stop, step = value["from"], value["to"], value["step"]
        numbers = [start, stop, step]
        if not all(
            isinstance(n, int | float) and not isinstance(n, bool) and math.isfinite(n)
            for n in numbers
        ):
            raise UsageError(f"{path}: {key}: a range's from, to and step are finite numbers")
        if not (step > 0 and stop >= start):
            raise UsageError(f"{path}: {key}: a range needs step > 0 and to >= from")
        count = math.floor((stop - start) / step + 1e-9) + 1
        if count > MAX_CANDIDATES:
            raise UsageError(f"{path}: {key}: the range has {count} values, too many")
        return [round(start + i * step, 10) for i in range(count)]
    raise UsageError(
        f"{path}: {key} takes a list of values or a range {{ from = A, to = B, step = S }}, "
        f"found {value!r}"
    )


def read_search_space(path: Path) -> dict[str, list[object]]:
    """The grid of a search-space file: key -> its values (see the module docstring).

    Raises:
        UsageError: the file cannot be read, is not TOML, has an unknown key or a bad value.
    """
    try:
        text = path.read_bytes().decode("utf-8")
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        place = _PLACE.search(message)
        if place is None:
            raise UsageError(f"{path}: invalid TOML: {message}") from None
        raise UsageError(
            f"{path}:{place.group(1)}: invalid TOML: {message[: place.start()]} "
            f"(column {place.group(2)})"
        ) from None
    except FileNotFoundError:
        raise UsageError(f"{path}: no such search-space file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the search-space file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: expected UTF-8 TOML, found {exc.reason}") from None
    for key in document:
        if key not in KEYS:
            raise UsageError(
                f"{_where(path, text, key)}: unknown key {key!r}; expected some of "
                f"{', '.join(KEYS)}"
            )
    return {
        key: _values(_where(path, text, key), key, document[key]) for key in KEYS if key in document
    }


def _profile(name: str, point: dict[str, Any]) -> hotmem.Profile | None:
    rrf = point["fusion"] == "rrf"
    vector = None
    if point["vector_space"] != "none":
        vector = {
            "space": point["vector_space"],
            "weight": point["vector_weight"],
            "floor": point["vector_floor"],
        }
    lexical = None
    if point["lexical_weight"] != "none":
        gate = point["lexical_gate"]
        lexical = {"weight": point["lexical_weight"]}
        if gate != "none" and vector is not None:
            lexical["gate"] = gate
    if vector is None and lexical is None:
        return None
    fields = {
        "fusion": point["fusion"],
        "vector": vector if vector is not None else False,
        "lexical": lexical if lexical is not None else False,
        "importance": _DEFAULTS["importance"] if rrf else point["importance"],
        "rrf_k": point["rrf_k"] if rrf else _DEFAULTS["rrf_k"],
        "depth": point["depth"] if rrf else _DEFAULTS["depth"],
    }
    return hotmem.Profile.from_mapping(name, fields)


def candidates(grid: Mapping[str, list[object]], *, source: str) -> list[hotmem.Profile]:
    """Every distinct profile of ``grid`` (``read_search_space``'s, or ``DEFAULT_SPACE``), in
    grid order, named ``c0001``, ... (``source`` names the grid in errors).

    Raises:
        UsageError: more than ``MAX_CANDIDATES`` combinations, or a combination that is not a
            valid profile (the message names it).
    """
    axes = [grid.get(key, [_DEFAULTS[key]]) for key in KEYS]
    total = math.prod(len(values) for values in axes)
    if total > MAX_CANDIDATES:
        raise UsageError(f"{source}: {total} combinations, more than {MAX_CANDIDATES}")
    found: list[hotmem.Profile] = []
    seen: set[str] = set()
    for values in itertools.product(*axes):
        point = dict(zip(KEYS, values, strict=True))
        try:
            profile = _profile("candidate", point)
        except hotmem.ValidationError as exc:
            raise UsageError(f"{source}: the combination {point} is not a profile: {exc}") from None
        if profile is None:
            continue
        key = repr({k: v for k, v in profile.to_dict().items() if k != "name"})
        if key in seen:
            continue
        seen.add(key)
        found.append(hotmem.Profile.from_mapping(f"c{len(found) + 1:04d}", _fields(profile)))
    if not found:
        raise UsageError(f"{source}: no combination has a channel")
    return found


def _fields(profile: hotmem.Profile) -> dict[str, object]:
    """``profile``'s fields as ``Profile.from_mapping`` reads them (a missing channel false)."""
    fields = {k: v for k, v in profile.to_dict().items() if k != "name"}
    return {k: (False if v is None else v) for k, v in fields.items()}
