"""Profiles of one's own in a TOML file: what ``hotmem profiles --import`` and the evaluator's
``--profiles`` read.

Each top-level table is one profile, named by its header, with the fields of
``Profile.from_mapping`` (missing fields take the ``default`` profile's)::

    [strict-floor]
    vector = { floor = 0.5 }

    [words-heavy]
    lexical = { weight = 0.5 }
    importance = 0.0

Every problem is a ``ValidationError`` whose message starts ``path:line:`` where the line is
known: a file that cannot be read or is not UTF-8 TOML, no table, a value that is not a table
at top level, a table named like a built-in, fields ``from_mapping`` refuses.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path

from hotmem.errors import ValidationError
from hotmem.retrieval.profiles import PROFILES, Profile

__all__ = ["read_profiles"]

# Python 3.11's TOMLDecodeError carries its place only in the message: "... (at line 3, column 5)".
_PLACE = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def _header_line(text: str, name: str) -> int | None:
    """The 1-based line of the ``[name]`` (or ``["name"]``) header in ``text``, if found."""
    quoted = re.escape(name)
    pattern = re.compile(rf"^\s*\[\s*(?:{quoted}|\"{quoted}\"|'{quoted}')\s*\]")
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return number
    return None


def read_profiles(path: str | os.PathLike[str]) -> tuple[Profile, ...]:
    """The profiles of a TOML file, in file order.

    Raises:
        ValidationError: the file cannot be read, is not UTF-8 TOML, holds no table, holds a value
            that is not a table at top level, names a built-in profile, or a table's fields
            are refused; the message starts ``path:line:`` where the line is known.
    """
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ValidationError(f"{path}: no such profiles file") from None
    except OSError as exc:
        raise ValidationError(f"{path}: cannot read the profiles file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path}: expected UTF-8 TOML, found {exc.reason}") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        place = _PLACE.search(message)
        if place is None:
            raise ValidationError(f"{path}: invalid TOML: {message}") from None
        reason = message[: place.start()]
        raise ValidationError(
            f"{path}:{place.group(1)}: invalid TOML: {reason} (column {place.group(2)})"
        ) from None
    if not document:
        raise ValidationError(
            f"{path}: expected at least one [name] table of profile fields, found none"
        )
    profiles = []
    for name, fields in document.items():
        line = _header_line(text, name)
        where = f"{path}:{line}" if line is not None else str(path)
        if not isinstance(fields, Mapping):
            raise ValidationError(
                f"{where}: expected a [name] table of profile fields at top level, "
                f"found {name} = {fields!r}"
            )
        if name in PROFILES:
            raise ValidationError(
                f"{where}: profile {name!r} is a built-in; give a profile of your own another "
                f"name (built-ins: {', '.join(PROFILES)})"
            )
        try:
            profiles.append(Profile.from_mapping(name, fields))
        except ValidationError as exc:
            reason = str(exc)
            if not reason.startswith("profile "):
                reason = f"profile {name!r}: {reason}"
            raise ValidationError(f"{where}: {reason}") from None
    return tuple(profiles)
