"""HotMem's error hierarchy.

::

    HotmemError                      every error HotMem raises on purpose
    ├── ValidationError (ValueError) a memory or argument is malformed
    │   └── DuplicateMemoryError     a memory_id already exists
    ├── MemoryNotFoundError (KeyError)
    ├── StoreError                   the store cannot be opened, read or written (not a
    │                                HotMem store, locked, read-only, damaged)
    ├── SnapshotError                a snapshot package cannot be written, read or trusted
    │   ├── VerificationError        verification found problems (carries the report)
    │   └── HydrationError           the target cannot be hydrated (not empty, incompatible)
    ├── EmbedderError                an embedder cannot be loaded (model files missing or altered)
    └── MissingExtraError            an optional extra is not installed (names the extra)

Messages say what was expected and what was found.
"""

from __future__ import annotations

__all__ = [
    "DuplicateMemoryError",
    "EmbedderError",
    "HotmemError",
    "HydrationError",
    "MemoryNotFoundError",
    "MissingExtraError",
    "SnapshotError",
    "StoreError",
    "ValidationError",
    "VerificationError",
]


class HotmemError(Exception):
    """Base class of every error HotMem raises on purpose."""


class ValidationError(HotmemError, ValueError):
    """A memory, query or argument is malformed; nothing was written."""


class DuplicateMemoryError(ValidationError):
    """A memory with this ``memory_id`` already exists; nothing was written.

    Attributes:
        position: which item of a stream clashed (from 0), when known.
        reason: the message without the item's ``memory #N:`` prefix.
    """

    def __init__(self, message: str, *, position: int | None = None) -> None:
        super().__init__(message if position is None else f"memory #{position}: {message}")
        self.position = position
        self.reason = message


class MemoryNotFoundError(HotmemError, KeyError):
    """No memory has the requested ``memory_id``."""

    def __str__(self) -> str:
        # KeyError quotes its argument; a message reads better without the quotes.
        return str(self.args[0]) if self.args else "memory not found"


class StoreError(HotmemError):
    """The store cannot be opened, read or written: it is not a compatible HotMem store, or
    SQLite failed (locked past the busy timeout, read-only, damaged), or a stored row holds a
    value the store never writes. Every ``sqlite3.Error`` reaches callers as one of these."""


class SnapshotError(HotmemError):
    """A snapshot package cannot be written, read or trusted."""


class VerificationError(SnapshotError):
    """Verification of a snapshot package found problems.

    Attributes:
        report: the full verification report, listing every problem.
    """

    def __init__(self, message: str, report: object) -> None:
        super().__init__(message)
        self.report = report


class HydrationError(SnapshotError):
    """A package cannot be hydrated into the target (not empty, or incompatible)."""


class EmbedderError(HotmemError):
    """An embedder cannot be loaded: a model file is missing, unreadable or not the pinned one."""


class MissingExtraError(HotmemError):
    """An optional capability needs an extra that is not installed.

    Attributes:
        extra: the extra's name (``pip install '.[<extra>]'`` in a checkout).
        missing: the modules that could not be imported.
    """

    def __init__(self, message: str, *, extra: str, missing: tuple[str, ...]) -> None:
        super().__init__(message)
        self.extra = extra
        self.missing = missing
