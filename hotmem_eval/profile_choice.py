"""Which retrieval profiles a run evaluates: ``--profile NAME`` (repeatable) and
``--profiles FILE.toml``.

A profiles file is TOML; each top-level table is one profile, named by its header, with the
fields of ``hotmem.Profile.from_mapping`` (missing fields take the ``default`` profile's)::

    [strict-floor]
    vector = { floor = 0.5 }

    [words-heavy]
    lexical = { weight = 0.5 }
    importance = 0.0

The choice, in order (the first profile is the baseline of every comparison):

- ``--profile`` given: those names, each a built-in (``hotmem.PROFILES``) or a table of the
  file, in the order given;
- else a file given: its profiles, in file order;
- else: ``default`` alone.

Every problem is a ``UsageError`` (the CLI exits 2): an unknown or repeated name (the message
lists the known ones), a file that cannot be read or is not TOML (``path:line: reason``), a
table whose fields ``from_mapping`` refuses (``path:line`` of its header), a table named like a
built-in.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

import hotmem
from hotmem_eval.errors import UsageError

__all__ = ["choose_profiles", "load_profiles_file"]

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


def load_profiles_file(path: Path) -> tuple[hotmem.Profile, ...]:
    """The profiles of a TOML file, in file order.

    Raises:
        UsageError: the file cannot be read, is not UTF-8 TOML, holds no table, holds a value
            that is not a table at top level, names a built-in profile, or a table's fields
            are refused; the message starts ``path:line:`` where the line is known.
    """
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such profiles file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the profiles file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: expected UTF-8 TOML, found {exc.reason}") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        place = _PLACE.search(message)
        if place is None:
            raise UsageError(f"{path}: invalid TOML: {message}") from None
        reason = message[: place.start()]
        raise UsageError(
            f"{path}:{place.group(1)}: invalid TOML: {reason} (column {place.group(2)})"
        ) from None
    if not document:
        raise UsageError(
            f"{path}: expected at least one [name] table of profile fields, found none"
        )
    profiles = []
    for name, fields in document.items():
        line = _header_line(text, name)
        where = f"{path}:{line}" if line is not None else str(path)
        if not isinstance(fields, Mapping):
            raise UsageError(
                f"{where}: expected a [name] table of profile fields at top level, "
                f"found {name} = {fields!r}"
            )
        if name in hotmem.PROFILES:
            raise UsageError(
                f"{where}: profile {name!r} is a built-in; give a profile of your own another "
                f"name (built-ins: {', '.join(hotmem.PROFILES)})"
            )
        try:
            profiles.append(hotmem.Profile.from_mapping(name, fields))
        except hotmem.ValidationError as exc:
            reason = str(exc)
            if not reason.startswith("profile "):
                reason = f"profile {name!r}: {reason}"
            raise UsageError(f"{where}: {reason}") from None
    return tuple(profiles)


def choose_profiles(names: Sequence[str], file: Path | None) -> tuple[hotmem.Profile, ...]:
    """The profiles a run evaluates, baseline first (see the module docstring).

    Raises:
        UsageError: as ``load_profiles_file``; a name that is neither a built-in nor in the
            file (listing the known names); a name given twice.
    """
    custom = load_profiles_file(file) if file is not None else ()
    if not names:
        return custom or (hotmem.PROFILES["default"],)
    known = {**hotmem.PROFILES, **{profile.name: profile for profile in custom}}
    chosen: list[hotmem.Profile] = []
    for name in names:
        if name not in known:
            source = f" or in {file}" if file is not None else ""
            raise UsageError(
                f"unknown profile {name!r}; expected a built-in{source}: {', '.join(known)}"
            )
        if any(profile.name == name for profile in chosen):
            raise UsageError(f"profile {name!r} is given twice; give each profile once")
        chosen.append(known[name])
    return tuple(chosen)
