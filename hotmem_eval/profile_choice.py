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

from collections.abc import Sequence
from pathlib import Path

import hotmem
from hotmem_eval.errors import UsageError

__all__ = ["choose_profiles", "load_profiles_file"]


def load_profiles_file(path: Path) -> tuple[hotmem.Profile, ...]:
    """The profiles of a TOML file, in file order (``hotmem.read_profiles``).

    Raises:
        UsageError: as ``hotmem.read_profiles``' ``ValidationError``, with its message.
    """
    try:
        return hotmem.read_profiles(path)
    except hotmem.ValidationError as exc:
        raise UsageError(str(exc)) from None


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
