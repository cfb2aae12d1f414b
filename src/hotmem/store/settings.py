"""A store's settings: which profile its searches run when they name none, and the profiles
of its own it keeps.

The store keeps the default profile's name and the vector spaces it searches: the profiles
are ``hotmem.retrieval``'s, which checks a name before recording it
(``hotmem.set_default_profile``). The spaces are kept so that a space the default profile
searches is not dropped (``MemoryStore.drop_space``). A profile imported into the store
(``hotmem.import_profile``) is kept as the JSON of its fields under ``profile:NAME``;
``hotmem.retrieval`` reads it back and checks it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager

from hotmem.embedding.hash_v1 import MODEL_NAME
from hotmem.errors import MissingExtraError
from hotmem.store.spaces import VectorSpace, read_spaces

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)

__all__ = ["DEFAULT_PROFILE", "Settings", "default_spaces"]

_DEFAULT_PROFILE_SQL = "SELECT value FROM hotmem_meta WHERE key = 'default_profile'"
_DEFAULT_SPACES_SQL = "SELECT value FROM hotmem_meta WHERE key = 'default_profile_spaces'"
_PROFILE_KEY = "profile:"
_KEPT_SQL = (
    "SELECT substr(key, 9), value FROM hotmem_meta "
    "WHERE substr(key, 1, 8) = 'profile:' ORDER BY key"
)
#: The profile a store searches with until another is made its default.
DEFAULT_PROFILE = "default"


def default_spaces(connection: sqlite3.Connection) -> tuple[str, ...]:
    """The vector spaces the store's default profile searches, read in the caller's
    transaction (``()`` when none is recorded, or the value is not a JSON list)."""
    row = connection.execute(_DEFAULT_SPACES_SQL).fetchone()
    if row is None:
        return ()
    try:
        names = json.loads(row[0]) if isinstance(row[0], str) else None
    except (ValueError, RecursionError):
        names = None
    return tuple(str(name) for name in names) if isinstance(names, list) else ()


class Settings:
    """The settings of a store (mixed into ``MemoryStore``, which provides the rest)."""

    if TYPE_CHECKING:  # provided by MemoryStore

        def reading(self) -> AbstractContextManager[sqlite3.Connection]: ...

        def _writing(self) -> AbstractContextManager[sqlite3.Connection]: ...

        def space(self, name: str) -> VectorSpace: ...

        @property
        def path(self) -> str: ...

    @property
    def default_profile(self) -> str:
        """The name of the profile a search runs when it names none (``"default"`` unless
        ``hotmem.set_default_profile`` chose another; kept in the store and in its packages).

        Raises:
            StoreError: the store cannot be read.
        """
        with self.reading() as connection:
            row = connection.execute(_DEFAULT_PROFILE_SQL).fetchone()
        return DEFAULT_PROFILE if row is None else str(row[0])

    @property
    def default_profile_spaces(self) -> tuple[str, ...]:
        """The vector spaces the store's default profile searches (so that none is dropped).

        Raises:
            StoreError: the store cannot be read.
        """
        with self.reading() as connection:
            return default_spaces(connection)

    def record_default_profile(self, name: str, spaces: Sequence[str]) -> None:
        """Record ``name`` as the store's default profile, which searches ``spaces`` (each
        checked to be a space of the store). ``hotmem.set_default_profile`` checks the name
        and calls this; the store does not know the profiles.

        Raises:
            ValidationError: the store lacks one of ``spaces`` (the message says how to build
                it).
            StoreError: the store cannot be written.
        """
        for space in spaces:
            self.space(space)  # the message says how to build it
        with self._writing() as connection:
            # Again in the write transaction: a space dropped meanwhile is not recorded.
            kept = {found.name for found in read_spaces(connection)}
            for space in spaces:
                if space not in kept:
                    self.space(space)  # raises ValidationError, which rolls back
            connection.executemany(
                "INSERT OR REPLACE INTO hotmem_meta (key, value) VALUES (?, ?)",
                (
                    ("default_profile", name),
                    ("default_profile_spaces", json.dumps(list(spaces))),
                ),
            )

    def kept_profiles(self) -> dict[str, str]:
        """The profiles imported into this store: name -> the JSON text of its fields, by
        name.

        Raises:
            StoreError: the store cannot be read.
        """
        with self.reading() as connection:
            rows = connection.execute(_KEPT_SQL).fetchall()
        return {str(name): str(value) for name, value in rows}

    def record_profile(self, name: str, document: str) -> None:
        """Keep the profile ``name`` (the JSON text of its fields), replacing one of that name.
        ``hotmem.import_profile`` checks the profile and calls this.

        Raises:
            StoreError: the store cannot be written.
        """
        with self._writing() as connection:
            connection.execute(
                "INSERT OR REPLACE INTO hotmem_meta (key, value) VALUES (?, ?)",
                (_PROFILE_KEY + name, document),
            )

    def _check_default_extras(self) -> None:
        """Refuse a store whose default profile searches a space whose embedder needs an
        extra that is not installed, with the install hint (``open_store``)."""
        spaces = [space for space in self.default_profile_spaces if space != MODEL_NAME]
        if not spaces:
            return
        from hotmem.embedding.registry import EMBEDDERS, install_hint  # a rare store only

        for space in spaces:
            entry = EMBEDDERS.get(space)
            missing = () if entry is None else entry.missing_modules()
            if entry is not None and entry.extra is not None and missing:
                raise MissingExtraError(
                    f"store {self.path!r}: its default profile {self.default_profile!r} "
                    f"searches the space {space!r}, whose embedder needs the {entry.extra!r} "
                    f"extra, which is not installed (missing modules: {', '.join(missing)}); "
                    f"install it with {install_hint(entry.extra)}, or make another profile "
                    f"the default: hotmem --db {self.path} profiles --set-default default",
                    extra=entry.extra,
                    missing=missing,
                )
