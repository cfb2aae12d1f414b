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

A profiles file may be hostile (the evaluator reads one given on its command line), so it is
bounded before anything else is done with it: at most ``MAX_FILE_BYTES`` (1 MiB) read, at
most ``MAX_PROFILES`` (256) tables, TOML nested no deeper than its parser can go (a
``RecursionError`` is a refusal), and every profile named by ``PROFILE_NAME`` (letters,
digits and ``._+-``: a name goes into report tables and file names, so it carries no Markdown
or path). A vector space a profile names must be a model id (``store.spaces.SPACE_NAME``),
so ``../../etc/passwd`` is refused here, before any memory is ingested.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path

from hotmem.errors import ValidationError
from hotmem.fields import shown
from hotmem.retrieval.profiles import PROFILES, Profile

__all__ = ["MAX_FILE_BYTES", "MAX_PROFILES", "PROFILE_NAME", "read_profiles"]

#: The largest profiles file read, in bytes.
MAX_FILE_BYTES = 2**20
#: The most profiles (top-level tables) one file may hold.
MAX_PROFILES = 256
#: What a profile of a file may be named (the built-ins' names fit it too).
PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")

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


def _text(path: Path) -> str:
    """The file's text: at most ``MAX_FILE_BYTES`` read, UTF-8."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise ValidationError(
                f"{path}: expected a profiles file of at most {MAX_FILE_BYTES} bytes, found more"
            )
        return data.decode("utf-8")
    except FileNotFoundError:
        raise ValidationError(f"{path}: no such profiles file") from None
    except OSError as exc:
        raise ValidationError(f"{path}: cannot read the profiles file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path}: expected UTF-8 TOML, found {exc.reason}") from None


def _document(path: Path, text: str) -> dict[str, object]:
    """The parsed TOML: one to ``MAX_PROFILES`` top-level entries."""
    try:
        document = tomllib.loads(text)
    except RecursionError:
        raise ValidationError(
            f"{path}: expected TOML nested a few levels deep, found nesting too deep to read"
        ) from None
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
    if len(document) > MAX_PROFILES:
        raise ValidationError(
            f"{path}: expected at most {MAX_PROFILES} profiles, found {len(document)} tables"
        )
    return document


def _profile(where: str, name: str, fields: object) -> Profile:
    """The profile of one top-level entry; ``where`` is ``path:line`` of its header."""
    if not isinstance(fields, Mapping):
        raise ValidationError(
            f"{where}: expected a [name] table of profile fields at top level, "
            f"found {name} = {fields!r}"
        )
    if not PROFILE_NAME.fullmatch(name):
        raise ValidationError(
            f"{where}: expected a profile name of letters, digits and ._+- (at most 64, "
            f"from a letter or digit), found {shown(name)}"
        )
    if name in PROFILES:
        raise ValidationError(
            f"{where}: profile {name!r} is a built-in; give a profile of your own another "
            f"name (built-ins: {', '.join(PROFILES)})"
        )
    try:
        return Profile.from_mapping(name, fields)
    except ValidationError as exc:
        reason = str(exc)
        if not reason.startswith("profile "):
            reason = f"profile {name!r}: {reason}"
        raise ValidationError(f"{where}: {reason}") from None


def read_profiles(path: str | os.PathLike[str]) -> tuple[Profile, ...]:
    """The profiles of a TOML file, in file order.

    Raises:
        ValidationError: the file cannot be read, is larger than ``MAX_FILE_BYTES``, is not
            UTF-8 TOML or nested too deeply, holds no table or more than ``MAX_PROFILES``,
            names a profile against ``PROFILE_NAME``, holds a value that is not a table at
            top level, names a built-in profile, or a table's fields are refused; the message
            starts ``path:line:`` where the line is known.
    """
    path = Path(path)
    text = _text(path)
    profiles = []
    for name, fields in _document(path, text).items():
        line = _header_line(text, name)
        profiles.append(_profile(f"{path}:{line}" if line is not None else str(path), name, fields))
    return tuple(profiles)
