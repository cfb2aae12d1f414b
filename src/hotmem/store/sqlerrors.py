"""Every ``sqlite3.Error`` as a :class:`~hotmem.errors.StoreError` that says what happened.

SQLite's error name (``sqlite_errorname``: ``SQLITE_BUSY``, ``SQLITE_READONLY_DIRECTORY``,
``SQLITE_CORRUPT_VTAB``, ...) chooses the explanation; the message says what the store tried to
do, what was expected and what SQLite found, and for a lock what to do about it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hotmem.errors import StoreError

__all__ = ["store_error", "translated"]

# SQLite error name prefix -> why, given what SQLite said (the most specific prefix first).
_REASONS: tuple[tuple[str, Callable[[str, float], str]], ...] = (
    (
        "SQLITE_BUSY",
        lambda found, timeout: (
            "another connection held its write lock for longer than the busy timeout "
            f"({timeout:g} s); expected the lock within the timeout, found {found!r}. Retry when "
            "the other writer is done, or open the store with a longer busy_timeout"
        ),
    ),
    (
        "SQLITE_LOCKED",
        lambda found, _: f"expected the store unlocked, found {found!r}; retry",
    ),
    (
        "SQLITE_READONLY_DIRECTORY",
        lambda found, _: (
            "expected a writable directory (SQLite keeps the store's -wal and -shm files beside "
            f"it), found a read-only one ({found})"
        ),
    ),
    (
        "SQLITE_READONLY",
        lambda found, _: f"expected a writable store file, found a read-only one ({found})",
    ),
    (
        "SQLITE_CORRUPT",
        lambda found, _: (
            f"the store is damaged: expected a sound SQLite file and full-text index, found "
            f"{found!r}; check_integrity() lists the problems; restore the store from a snapshot"
        ),
    ),
    ("SQLITE_NOTADB", lambda found, _: f"expected a SQLite database, found {found!r}"),
    ("SQLITE_FULL", lambda found, _: f"expected free disk space, found {found!r}"),
    (
        "SQLITE_CANTOPEN",
        lambda found, _: f"expected a file SQLite can open or create, found {found!r}",
    ),
    ("SQLITE_IOERR", lambda found, _: f"an I/O error: {found}"),
)


#: What FTS5 says, in a plain SQLITE_ERROR, of an index whose own tables were altered:
#: "no such fts5 table: main.memories_fts", "invalid fts5 file format (found 99, expected 4)".
_FTS5_DAMAGE = ("no such fts5 table", "invalid fts5 file format")


def store_error(exc: sqlite3.Error, target: str, action: str, busy_timeout: float) -> StoreError:
    """The :class:`StoreError` for ``exc``, raised while trying to ``action`` the store at
    ``target`` (whose connection waits ``busy_timeout`` seconds for a lock)."""
    name = getattr(exc, "sqlite_errorname", None) or ""
    found = str(exc)
    if name == "SQLITE_ERROR" and found.startswith(_FTS5_DAMAGE):
        # A full-text index's own tables altered (its config, its shadow tables): FTS5 says
        # so as a plain error, in other words for a read than for a write. It is damage.
        name = "SQLITE_CORRUPT_VTAB"
    if name.startswith("SQLITE_READONLY") and name != "SQLITE_READONLY_DIRECTORY":
        foreign = _foreign_side_files(target)
        if foreign:
            return StoreError(f"cannot {action} store {target!r}: {foreign}")
    for prefix, reason in _REASONS:
        if name.startswith(prefix):
            hint = _package_hint(target) if prefix == "SQLITE_NOTADB" else ""
            return StoreError(
                f"cannot {action} store {target!r}: {reason(found, busy_timeout)}{hint}"
            )
    return StoreError(f"cannot {action} store {target!r}: SQLite reported {found!r}")


def _owner(uid: int) -> str:
    try:
        import pwd  # POSIX only, and only for this message

        return f"{pwd.getpwuid(uid).pw_name!r} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _foreign_side_files(target: str) -> str:
    """Why a write failed when SQLite's ``-wal``/``-shm`` beside the store belong to another
    account and this one cannot write them (that account read the store, in a shared
    directory, and its files stayed): which files, whose, and what to do; else ``""``."""
    found = []
    for suffix in ("-wal", "-shm"):
        side = f"{target}{suffix}"
        try:
            info = os.stat(side)
        except OSError:
            continue
        if info.st_uid != os.geteuid() and not os.access(side, os.W_OK):
            found.append((side, info))
    if not found:
        return ""
    wal = next((info.st_size for side, info in found if side.endswith("-wal")), 0)
    advice = (
        "remove them (they hold no memory), or let this account write them (a group-writable "
        "shared directory, umask 002)"
        if not wal
        else f"have that account open the store once (its -wal holds {wal} bytes not yet in the "
        "store), then remove them"
    )
    named = ", ".join(f"{side!r} owned by account {_owner(info.st_uid)}" for side, info in found)
    return (
        f"expected SQLite's side files writable by this account, {_owner(os.geteuid())}, "
        f"found {named}, left by that account's read; once no process has the store open, "
        f"{advice}"
    )


def _package_hint(target: str) -> str:
    """What to do with a ZIP file given as a store: a package is hydrated, not opened."""
    try:
        with open(target, "rb") as file:
            magic = file.read(4)
    except OSError:
        return ""
    if magic != b"PK\x03\x04":
        return ""
    return (
        "; it is a ZIP file, as a HotMem package is: check it with `hotmem verify "
        f"{target}` and make a store of it with `hotmem --db NEW.db hydrate {target}`"
    )


@contextmanager
def translated(target: str, action: str, busy_timeout: float) -> Iterator[None]:
    """Raise every ``sqlite3.Error`` of the block as a :class:`StoreError` (see store_error)."""
    try:
        yield
    except sqlite3.Error as exc:
        raise store_error(exc, target, action, busy_timeout) from None
