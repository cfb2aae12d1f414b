"""A running migration seen from other processes: its progress file, and the wait for it.

Setting a store up (``setup.setup``) is one write transaction; migrating a large store holds
the write lock for seconds or more. Meanwhile:

- The migrating process publishes its progress beside the store, in ``<store>.migrating``
  (:class:`Publisher`): a small JSON object with its pid and host, the schema versions, the
  step and, where the step can say so, rows done of total. Each write goes to a hidden
  temporary file that is renamed into place; a thread rewrites it every ``HEARTBEAT`` seconds
  (so it changes while one long SQL statement runs), and it is removed once the transaction
  has committed or rolled back. Failing to write it never fails the migration: the other
  processes then behave as if there were none.
- Another process that needs the store set up and finds the lock taken
  (:func:`take_setup_lock`) reads the file. While it belongs to a live migration, the process
  waits however long that takes (its busy timeout starts again when the migration ends),
  says so on stderr (once; on a terminal the line follows the progress), and after each poll
  checks whether the store is set up: once it is, it goes on without the lock, so a read-only
  search never waits for a write it does not make. A file is live when its process is alive
  (checked by pid on the same host) and it changed within the last ``STALE_AFTER`` seconds;
  any other file is ignored and blocks nobody. Without a live file the busy timeout applies
  as to any write; when a migration it waited for stops without finishing and the lock stays
  taken for the busy timeout after that, the error names the file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from types import TracebackType

from hotmem.errors import StoreError
from hotmem.progress import Progress
from hotmem.records import record
from hotmem.store.schema import SCHEMA_VERSION

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    import threading
    from typing import Any

__all__ = [
    "HEARTBEAT",
    "POLL",
    "STALE_AFTER",
    "SUFFIX",
    "Publisher",
    "Status",
    "progress_file",
    "read_status",
    "take_setup_lock",
]

#: The progress file is the store's path with this suffix.
SUFFIX = ".migrating"
#: Seconds between two writes of the progress file while a migration runs.
HEARTBEAT = 1.0
#: Seconds without a change after which a progress file is a dead migration's.
STALE_AFTER = 30.0
#: Seconds between two attempts at the write lock of a process waiting for it.
POLL = 0.5
_MAX_BYTES = 4096  # a larger file is not a progress file
_INTEGERS = ("pid", "from", "to", "step", "steps")


def progress_file(target: str) -> str:
    """The path of the progress file of the store at ``target``."""
    return target + SUFFIX


def _host() -> str:
    return os.uname().nodename if hasattr(os, "uname") else ""


@record
class Status:
    """What a progress file says: who migrates the store, from and to which schema, how far."""

    pid: int
    host: str
    found: int
    to: int
    step: int
    steps: int
    doing: str
    done: int | None = None
    total: int | None = None

    def describe(self, target: str) -> str:
        """The waiting process's line: who migrates the store, and how far it is."""
        who = f"pid {self.pid}" if self.host == _host() else f"pid {self.pid} on {self.host}"
        if self.found < self.to:
            what = f"migrating store {target!r} from schema {self.found} to {self.to}"
        else:
            what = f"completing store {target!r} (schema {self.to})"
        text = f"hotmem: waiting for another process ({who}) {what}: step {self.step} of "
        text += f"{self.steps} ({self.doing})"
        if self.done is not None and self.total:
            text += f", {self.done:,} of {self.total:,} rows"
        return text


def _count(value: object) -> int | None:
    """``value`` when it is a whole number in [0, 2**31), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31:
        return value
    return None


def _parse(raw: bytes) -> Status | None:
    """The status ``raw`` holds, or None when it is not a progress file's content."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    numbers = [_count(data.get(key)) for key in _INTEGERS]
    host, doing = data.get("host"), data.get("doing")
    if None in numbers or not isinstance(host, str) or not isinstance(doing, str):
        return None
    pid, found, to, step, steps = (n for n in numbers if n is not None)
    return Status(
        pid=pid,
        host="".join(c for c in host if c.isprintable())[:100],
        found=found,
        to=to,
        step=step,
        steps=steps,
        doing="".join(c for c in doing if c.isprintable())[:100],
        done=_count(data.get("done")),
        total=_count(data.get("total")),
    )


def _read(path: str) -> tuple[bytes, float] | None:
    """The bytes and modification time of the regular file ``path`` (no link followed)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError:
        return None
    try:
        found = os.fstat(descriptor)
        if not stat.S_ISREG(found.st_mode):
            return None
        raw = os.read(descriptor, _MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    return (raw, found.st_mtime) if len(raw) <= _MAX_BYTES else None


def read_status(target: str) -> Status | None:
    """The status in the progress file of the store at ``target`` (live or not), or None."""
    found = _read(progress_file(target))
    return None if found is None else _parse(found[0])


def _alive(pid: int) -> bool:
    """Whether process ``pid`` of this host exists (True where that cannot be checked)."""
    if os.name != "posix":
        return True  # os.kill would end the process on Windows: the file's age decides
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another account's process (EPERM): alive
        return True
    return True


class Publisher:
    """Publishes a migration's progress in the store's progress file, from :meth:`begin` to
    the end of its ``with`` block (the file is then removed). Nothing is written for an
    in-memory store, and nothing more once a write has failed."""

    def __init__(self, target: str) -> None:
        self._path = None if target == ":memory:" else progress_file(target)
        self._state: dict[str, Any] | None = None
        self._lock: threading.Lock | None = None
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None
        self._published = False
        self._failed = False

    def begin(self, found: int, to: int, steps: int) -> None:
        """Start publishing: schema ``found`` to ``to``, in ``steps`` steps."""
        if self._path is None or self._state is not None:
            return
        import threading  # only a migrating process needs a thread

        self._state = {"pid": os.getpid(), "host": _host(), "from": found, "to": to}
        self._state.update(step=0, steps=steps, doing="starting", done=None, total=None)
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._write()
        if not self._failed:
            self._thread = threading.Thread(
                target=self._beat, args=(self._stop,), name="hotmem-migrating", daemon=True
            )
            self._thread.start()

    def step(self, doing: str) -> None:
        """The next step begins, ``doing`` what it says (written at once)."""
        if self._state is not None:
            step = self._state["step"] + 1
            self._state = {**self._state, "step": step, "doing": doing, "done": None}
            self._write()

    def rows(self, done: int, total: int | None) -> None:
        """Rows done of ``total`` in the current step (written with the next heartbeat); a
        ``hotmem.ProgressCallback``."""
        if self._state is not None:
            self._state = {**self._state, "done": done, "total": total}

    def _beat(self, stop: threading.Event) -> None:
        while not stop.wait(HEARTBEAT):
            self._write()

    def _write(self) -> None:
        if self._failed or self._path is None or self._lock is None:
            return
        directory, name = os.path.split(self._path)
        with self._lock:
            data = json.dumps({**(self._state or {}), "written": time.time()}).encode()
            temporary = os.path.join(directory, f".{name}.{os.urandom(6).hex()}")
            try:
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                descriptor = os.open(temporary, flags, 0o666)
                try:
                    os.write(descriptor, data)
                finally:
                    os.close(descriptor)
                os.replace(temporary, self._path)
                self._published = True
            except OSError:  # a full disk, a directory it may not write: publish nothing
                self._failed = True
                with suppress(OSError):
                    os.unlink(temporary)
                self._remove()

    def _remove(self) -> None:
        if self._published and self._path is not None:
            with suppress(OSError):
                os.unlink(self._path)
            self._published = False

    def __enter__(self) -> Publisher:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._stop is not None and self._thread is not None:
            self._stop.set()
            self._thread.join()
        self._failed = True  # no write after the removal
        self._remove()


class _Watch:
    """What a process waiting for the lock knows of a migration: the progress file's last
    content, when it last changed, the live migration it follows and its display."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.path = progress_file(target)
        self.seen: bytes | None = None
        self.changed = 0.0
        self.followed: Status | None = None
        self.stopped: str | None = None  # why the migration it followed is no longer live
        self.display: Progress | None = None

    def live(self) -> Status | None:
        """The live migration the progress file shows (displayed), or None."""
        found = _read(self.path)
        status = None if found is None else _parse(found[0])
        if found is None or status is None:
            self.followed = self.stopped = None  # finished (or never there)
            return None
        raw, modified = found
        now = time.monotonic()
        if raw != self.seen:
            self.seen, self.changed = raw, now
        if status.host == _host() and not _alive(status.pid):
            reason = f"process {status.pid} exited without finishing"
        elif now - self.changed > STALE_AFTER or time.time() - modified > STALE_AFTER:
            reason = f"process {status.pid} has not updated it for {STALE_AFTER:g} s"
        else:
            self.followed, self.stopped = status, None
            self._show(status.describe(self.target))
            return status
        if self.followed is not None:  # the migration it followed stopped
            self.followed, self.stopped = None, reason
        return None

    def _show(self, text: str) -> None:
        if self.display is None:
            self.display = Progress(text)
            if not self.display.enabled:  # said once, on a line of its own
                with suppress(AttributeError, OSError, ValueError):
                    sys.stderr.write(text + "\n")
                    sys.stderr.flush()
        self.display.label = text
        self.display()

    def close(self) -> None:
        if self.display is not None:
            self.display.close()

    def refusal(self, meta: dict[str, str] | None, busy_timeout: float) -> StoreError:
        """The error of a process that did not get the lock within its busy timeout."""
        found = (meta or {}).get("schema_version")
        needs = (
            f"a migration from schema_version={found} to {SCHEMA_VERSION}"
            if found is not None and found.isdecimal() and int(found) < SCHEMA_VERSION
            else "setting up"
        )
        if self.stopped is not None:
            return StoreError(
                f"cannot open store {self.target!r}: it needs {needs}, and the migration it "
                f"waited for stopped ({self.stopped}; progress file {self.path!r}); another "
                f"process has held the store's write lock for the busy timeout ({busy_timeout:g}"
                " s) since; retry when it is done"
            )
        # The process that holds the lock is, most often, migrating the same store without
        # a progress file (one it could not write, or an older HotMem).
        return StoreError(
            f"cannot open store {self.target!r}: it needs {needs}, and another process held the "
            f"store's write lock past the busy timeout ({busy_timeout:g} s), most likely doing "
            "exactly that (about 20 s for 200,000 memories, announced on its stderr); retry "
            "when it is done, or open the store with a longer busy_timeout"
        )


def _busy(exc: sqlite3.OperationalError) -> bool:
    return (getattr(exc, "sqlite_errorname", "") or "").startswith("SQLITE_BUSY")


def take_setup_lock(
    connection: sqlite3.Connection,
    target: str,
    meta: dict[str, str] | None,
    busy_timeout: float,
    set_up: Callable[[], bool],
) -> bool:
    """Begin setup's write transaction (``BEGIN IMMEDIATE``), waiting for a live migration.

    The lock is tried every ``POLL`` seconds; after each miss, ``set_up()`` says (in a read
    transaction) whether another process has set the store up meanwhile, and then nothing is
    left to do. ``meta`` is what the store held when it was first read (for the error).

    Returns:
        True with the transaction begun; False when the store needs no setup any more.

    Raises:
        StoreError: the lock stayed taken for the busy timeout without a live migration.
    """
    watch = _Watch(target)
    deadline = time.monotonic() + busy_timeout
    try:
        while True:
            left = deadline - time.monotonic()
            wait = POLL if watch.followed is not None else max(0.0, min(POLL, left))
            connection.execute(f"PRAGMA busy_timeout = {round(wait * 1000)}")
            try:
                connection.execute("BEGIN IMMEDIATE")
                return True
            except sqlite3.OperationalError as exc:
                if not _busy(exc):
                    raise
            if set_up():
                return False
            following = watch.followed is not None
            if watch.live() is not None or following:  # the timeout starts when it ends
                deadline = time.monotonic() + busy_timeout
            elif time.monotonic() >= deadline:
                raise watch.refusal(meta, busy_timeout)
    finally:
        watch.close()
        connection.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
