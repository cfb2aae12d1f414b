"""File helpers shared by the snapshot modules; nothing here knows the package format.

The writer and hydration build their output in a new hidden file beside the target,
``.<target name>.<12 hex digits><suffix>``, and rename it into place once complete
(``create_beside``; hydration then syncs the directory, ``sync_directory``). The file is
created with an exclusive advisory lock (``fcntl.flock``) that its writer holds until the
rename, so a file of that name which nobody holds locked was left by a process that died
(killed, or the machine lost power): ``remove_leftovers`` deletes exactly those, and nothing
else, at the start of the next run for the same target. The lock belongs to the open file, not
to a process id, so neither a reused pid nor a process in another pid namespace can make a
live file look dead. Where ``flock`` is unavailable (Windows) nothing is locked and nothing is
removed.

The writer spools compressed members to an anonymous file (``temporary_file``). Writing,
verifying and hydrating run with the garbage collector paused (``gc_paused``).
"""

from __future__ import annotations

import gc
import os
import re
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; leftovers are never removed there
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "RENAMES_OPEN_FILES",
    "create_beside",
    "gc_paused",
    "output_refusal",
    "remove_leftovers",
    "store_file_names",
    "sync_directory",
    "temporary_file",
]

#: Whether a file may be renamed while open (not on Windows): the lock is held until the
#: rename, so the file is never unlocked under its temporary name.
RENAMES_OPEN_FILES = os.name != "nt"
_RANDOM_HEX = 12


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector, restoring its previous state afterwards.

    Snapshot, verify and hydrate allocate millions of small tuples, dicts and lists and create
    no reference cycles; the collector's passes over them cost a fifth of the time (measured).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def store_file_names(database: str | os.PathLike[str]) -> list[Path]:
    """A SQLite database file and the side files SQLite may keep beside it."""
    return [Path(f"{os.fspath(database)}{side}") for side in ("", "-wal", "-shm", "-journal")]


def output_refusal(path: Path, protected: Sequence[Path] = ()) -> str | None:
    """Why a new file may not be renamed onto ``path``, or ``None``.

    Refused: an existing ``path`` that is not a regular file (a directory; a symbolic link,
    even to a regular file; a FIFO; a socket; a device), and ``path`` as one of ``protected``:
    the same file under another name or a hard link (same device and inode), or the same name
    (a store's ``-wal`` file need not exist yet to be one).
    """
    try:
        found = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        found = None
    except OSError as exc:
        return f"cannot write {str(path)!r}: {exc.strerror}"
    if found is not None and not stat.S_ISREG(found.st_mode):
        kind = next((name for test, name in _KINDS if test(found.st_mode)), "not a regular file")
        return f"cannot write {str(path)!r}: it is {kind}, not a regular file"
    real = os.path.realpath(path)
    for other in protected:
        same_name = real == os.path.realpath(other)
        try:
            same_file = found is not None and os.path.samestat(found, os.stat(other))
        except OSError:
            same_file = False
        if same_name or same_file:
            return f"cannot write {str(path)!r}: it is {str(other)!r}, a file of the store"
    return None


def _same_file(descriptor: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``descriptor``."""
    try:
        named = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    opened = os.fstat(descriptor)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def create_beside(target: Path, suffix: str) -> tuple[int, Path]:
    """Create a new hidden file next to ``target``, locked; return its descriptor and path.

    The lock lasts until the descriptor is closed. Unlike ``tempfile.mkstemp`` (mode 0600) the
    file gets the permissions SQLite and ``open`` would give it (0666 less the umask), since it
    is renamed into place as the final file.
    """
    while True:
        candidate = target.parent / f".{target.name}.{os.urandom(_RANDOM_HEX // 2).hex()}{suffix}"
        try:
            descriptor = os.open(candidate, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        if fcntl is None:
            return descriptor, candidate
        with suppress(OSError):  # a file system without locks: nothing can remove it either
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        # Between creating and locking, another run may have found the file unlocked and
        # removed it: then take another name.
        if _same_file(descriptor, candidate):
            return descriptor, candidate
        os.close(descriptor)


def remove_leftovers(target: Path, suffix: str, side_suffixes: Sequence[str] = ()) -> list[Path]:
    """Delete the temporary files of ``target`` (``create_beside``) that no process holds.

    Only regular files named exactly ``.<target name>.<12 hex digits><suffix>`` are
    considered, and only one whose lock could be taken is removed (with the files named by it
    plus each of ``side_suffixes``, such as SQLite's ``-journal``). Anything that cannot be
    opened, locked or proven the same file is left alone.

    Returns:
        The files removed.
    """
    if fcntl is None:
        return []
    name = re.compile(
        re.escape(f".{target.name}.") + f"[0-9a-f]{{{_RANDOM_HEX}}}" + re.escape(suffix)
    )
    directory = target.absolute().parent
    try:
        entries = [entry for entry in os.scandir(directory) if name.fullmatch(entry.name)]
    except OSError:
        return []
    removed = []
    for entry in entries:
        path = Path(entry.path)
        try:
            # Never follow a link, never block on a FIFO swapped in after the listing.
            descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                continue
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # held by a live writer (or the file system has no locks)
                continue
            if not _same_file(descriptor, path):
                continue
            try:
                os.unlink(path)
            except OSError:
                continue
            for side in side_suffixes:
                with suppress(OSError):
                    os.unlink(f"{path}{side}")
            removed.append(path)
        finally:
            os.close(descriptor)
    return removed


def temporary_file(directory: Path) -> BinaryIO:
    """An anonymous file in ``directory``, deleted when closed."""
    # Imported here: at the top it would add 3 ms to every `import hotmem` (cold starts).
    import tempfile

    return tempfile.TemporaryFile(dir=directory)


def sync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable by syncing the directory itself."""
    # Not every platform can open a directory (Windows cannot).
    with suppress(OSError):
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
