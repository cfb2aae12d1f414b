"""Profiles a store keeps: imported ones (``import_profile``), and its default
(``set_default_profile``), resolved by name for a search (``resolve_in``).

A store keeps a profile of its own as the JSON of ``Profile.to_dict()`` (``store/settings.py``);
reading it back is ``Profile.from_mapping``, so a kept profile obeys the same checks as one
given in Python or in a TOML file, and a damaged one is a ``StoreError`` naming it. A kept
profile cannot take a built-in's name. Snapshot packages carry the kept profiles and the
default (the manifest's ``profiles`` field, ``hotmem.snapshot.profiles``), so a hydrated copy
searches as its source did.
"""

from __future__ import annotations

import json

from hotmem.errors import StoreError, ValidationError
from hotmem.retrieval.profiles import DEFAULT_PROFILE, PROFILES, Profile
from hotmem.store.memory_store import MemoryStore

__all__ = ["import_profile", "kept_profiles", "resolve_in", "set_default_profile"]


def import_profile(store: MemoryStore, profile: Profile) -> None:
    """Keep ``profile`` in ``store`` under its name (replacing a kept one of that name), so
    that a search may name it and ``set_default_profile`` may make it the default.

    Raises:
        ValidationError: ``profile`` is not a ``hotmem.Profile``, or takes a built-in's name.
        StoreError: the store cannot be written.
    """
    if not isinstance(profile, Profile):
        raise ValidationError(f"expected a hotmem.Profile to import, found {profile!r}")
    if profile.name in PROFILES:
        raise ValidationError(
            f"profile {profile.name!r} is a built-in; give a profile of your own another name "
            f"(built-ins: {', '.join(PROFILES)})"
        )
    store.record_profile(profile.name, json.dumps(profile.to_dict(), sort_keys=True))


def kept_profiles(store: MemoryStore) -> dict[str, Profile]:
    """The profiles imported into ``store``, by name.

    Raises:
        StoreError: the store cannot be read, or keeps a damaged profile (named).
    """
    found = {}
    for name, document in store.kept_profiles().items():
        try:
            found[name] = Profile.from_mapping(name, json.loads(document))
        except (ValueError, ValidationError) as exc:
            raise StoreError(
                f"store {store.path!r} keeps a damaged profile {name!r}: {exc}"
            ) from None
    return found


def resolve_in(store: MemoryStore, profile: str | Profile | None, *, default: str) -> Profile:
    """The profile ``profile`` names on ``store``: a ``Profile`` itself, a built-in, or one the
    store keeps; ``default`` (a name) when ``None``.

    Raises:
        ValidationError: no built-in or kept profile has this name.
        StoreError: as ``kept_profiles``.
    """
    if isinstance(profile, Profile):
        return profile
    name = default if profile is None else profile
    if isinstance(name, str) and name in PROFILES:
        return PROFILES[name]
    kept = kept_profiles(store) if isinstance(name, str) else {}
    if isinstance(name, str) and name in kept:
        return kept[name]
    names = ", ".join([*PROFILES, *kept])
    raise ValidationError(
        f"unknown profile {name!r}; expected one of {names} (built-in or kept in the store: "
        "hotmem profiles --import FILE) or a hotmem.Profile"
    )


def set_default_profile(store: MemoryStore, name: str) -> None:
    """Make the profile ``name`` (built-in, ``hotmem.PROFILES``, or kept in the store,
    ``import_profile``) the default of ``store``: the profile its searches run when they name
    none (``store.default_profile``).

    Raises:
        ValidationError: no built-in or kept profile has this name, or the profile needs a
            vector space the store does not have (the message says how to build it).
        StoreError: the store cannot be written.
    """
    if not isinstance(name, str):
        raise ValidationError(f"a default profile is named by a string; found {name!r}")
    store.record_default_profile(name, resolve_in(store, name, default=DEFAULT_PROFILE).spaces)
