"""The profile settings a package carries: the store's default profile and the profiles it
keeps, as the manifest's ``profiles`` field (``docs/snapshot-v2.md``, "Profiles").

A store keeps them in ``hotmem_meta`` (``store/settings.py``): ``default_profile``, the spaces
it searches (``default_profile_spaces``) and each kept profile as the JSON of its fields under
``profile:NAME``. A snapshot copies them into the manifest (only when the store has any other
than the built-in ``default``, so other packages are what they were); verification checks
their shape and that the default searches only spaces the package has; hydration writes them
into the new store, where ``hotmem.retrieval`` reads a kept profile back with the same checks
as any other. A package without the field hydrates with the ``default`` profile.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hotmem.embedding.hash_v1 import MODEL_NAME
from hotmem.fields import MAX_ID_LENGTH, text_breach
from hotmem.store.settings import DEFAULT_PROFILE

if TYPE_CHECKING:
    from hotmem.snapshot.manifest import Manifest
    from hotmem.snapshot.space_plan import SpaceChoice

__all__ = [
    "PROFILE_KEYS",
    "ProfileSettings",
    "check_profiles",
    "hydrated_profiles",
    "profiles_of",
    "write_profiles",
]

#: The fields of the manifest's ``profiles`` object.
PROFILE_KEYS = frozenset({"default", "default_spaces", "kept"})
#: At most this many kept profiles in a package.
MAX_KEPT = 1000
_META = (
    "SELECT key, value FROM hotmem_meta WHERE key IN ('default_profile', "
    "'default_profile_spaces') OR substr(key, 1, 8) = 'profile:' ORDER BY key"
)
_Add = Callable[..., None]


@dataclass(frozen=True, slots=True)
class ProfileSettings:
    """A store's default profile, the spaces it searches, and its kept profiles (name ->
    the profile's fields, as ``Profile.to_dict()`` gives them)."""

    default: str = DEFAULT_PROFILE
    default_spaces: tuple[str, ...] = ()
    kept: dict[str, dict[str, object]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """The manifest's ``profiles`` field."""
        return {
            "default": self.default,
            "default_spaces": list(self.default_spaces),
            "kept": self.kept,
        }

    def without(self, dropped: Collection[str]) -> ProfileSettings:
        """These settings in a store without the spaces ``dropped``: a default that searches
        one of them gives way to the built-in ``default``."""
        if not set(self.default_spaces) & set(dropped):
            return self
        return ProfileSettings(DEFAULT_PROFILE, (), self.kept)

    def meta_rows(self) -> list[tuple[str, str]]:
        """The ``hotmem_meta`` rows a store keeps them in."""
        rows = [
            ("default_profile", self.default),
            ("default_profile_spaces", json.dumps(list(self.default_spaces))),
        ]
        return rows + [
            (f"profile:{name}", json.dumps(fields, sort_keys=True))
            for name, fields in sorted(self.kept.items())
        ]


def profiles_of(connection: sqlite3.Connection) -> ProfileSettings | None:
    """The settings of the store behind ``connection``; ``None`` when it has none but the
    built-in default (inside the caller's read transaction)."""
    rows = dict(connection.execute(_META).fetchall())
    kept = {
        str(key)[8:]: json.loads(value)
        for key, value in rows.items()
        if str(key).startswith("profile:")
    }
    default = str(rows.get("default_profile", DEFAULT_PROFILE))
    if default == DEFAULT_PROFILE and not kept:
        return None
    spaces = json.loads(rows.get("default_profile_spaces", "[]"))
    return ProfileSettings(default, tuple(map(str, spaces)), kept)


def hydrated_profiles(manifest: Manifest | None, choices: Sequence[SpaceChoice]) -> ProfileSettings:
    """The settings a store hydrated from a package with ``manifest`` gets, its further spaces
    handled as ``choices`` say: the package's, but for a default searching a dropped space."""
    if manifest is None or manifest.profiles is None:
        return ProfileSettings()
    return manifest.profiles.without([c.space.name for c in choices if c.action == "drop"])


def write_profiles(connection: sqlite3.Connection, settings: ProfileSettings) -> None:
    """Keep ``settings`` in the new store behind ``connection`` (inside its transaction);
    nothing for the built-in default alone, which a store needs no row for."""
    if settings != ProfileSettings():
        connection.executemany(
            "INSERT OR REPLACE INTO hotmem_meta (key, value) VALUES (?, ?)", settings.meta_rows()
        )


def _name_breach(value: object) -> str | None:
    breach = text_breach("profile", value, max_length=MAX_ID_LENGTH)
    return None if breach is None else str(breach)


def check_profiles(value: object, spaces: Collection[str], add: _Add) -> ProfileSettings | None:
    """Check the manifest's ``profiles`` field against the package's further ``spaces``;
    the settings, or ``None`` (said with ``add``) when they are malformed."""
    where = "profiles"
    if not isinstance(value, dict) or value.keys() != PROFILE_KEYS:
        add("profiles", f"{where} as {{{', '.join(sorted(PROFILE_KEYS))}}}", repr(value)[:200])
        return None
    default, default_spaces, kept = value["default"], value["default_spaces"], value["kept"]
    problems = 0
    if (breach := _name_breach(default)) is not None:
        add("profiles", f"{where}.default as a profile name", breach)
        problems += 1
    known = {MODEL_NAME, *spaces}
    if not isinstance(default_spaces, list) or not all(s in known for s in default_spaces):
        expected = f"{where}.default_spaces as a list of the package's spaces ({sorted(known)})"
        add("profiles", expected, repr(default_spaces)[:200])
        problems += 1
    if not isinstance(kept, dict) or len(kept) > MAX_KEPT:
        add("profiles", f"{where}.kept as an object of at most {MAX_KEPT}", repr(kept)[:200])
        return None
    for name, fields in kept.items():
        if (breach := _name_breach(name)) is not None or not isinstance(fields, dict):
            found = breach or f"{type(fields).__name__} for {name!r}"
            add("profiles", f"{where}.kept: a profile name -> an object of its fields", found)
            problems += 1
    if problems:
        return None
    return ProfileSettings(str(default), tuple(map(str, default_spaces)), dict(kept))
