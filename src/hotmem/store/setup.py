"""The store's SQLite file: HotMem's connection settings and setup in one transaction.

Settings (``docs/concurrency.md`` explains them): WAL journal, so that readers never wait for
a writer and a writer never waits for readers; ``synchronous = NORMAL``, so a commit survives
the process being killed (not necessarily a power cut, which may lose the last commits but
never corrupts the file); an explicit busy timeout, how long a writer waits for another
writer's lock before giving up with a ``StoreError``.

Setup (:func:`setup`) reads what the database holds (:func:`inspect`), decides what to do
(:func:`plan`: nothing, create, re-initialise or complete) and, unless the store is ready, does
it in one ``BEGIN IMMEDIATE`` transaction that inspects again first. Processes opening a new
store at once therefore wait for the first one's transaction and then find the store ready,
and a process killed during setup leaves the database as it was before.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable

from hotmem.errors import StoreError
from hotmem.fields import shown
from hotmem.records import record
from hotmem.store import changes, lexical_index, schema, spaces
from hotmem.store.migration_progress import Publisher, take_setup_lock
from hotmem.store.migrations import migrate
from hotmem.store.sqlerrors import translated

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)

__all__ = [
    "BUSY_TIMEOUT",
    "Inspection",
    "connect",
    "incompatibility",
    "initialise",
    "inspect",
    "plan",
    "setup",
    "use_wal",
]

#: Seconds a write waits for another connection's write lock before a ``StoreError``.
BUSY_TIMEOUT = 10.0
# The WAL file is truncated to this size once checkpointed (a large import grows it).
_JOURNAL_SIZE_LIMIT = 64 * 2**20
# Keys whose stored value may differ from this version's until the migrations have run.
_MIGRATED_KEYS = frozenset({"schema_version", "fts_tokenizer"})

if TYPE_CHECKING:
    from typing import Literal

    Action = Literal["ready", "create", "reinitialise", "complete"]
else:  # at run time, what the values are
    Action = str


def connect(
    path: str | os.PathLike[str], *, busy_timeout: float = BUSY_TIMEOUT
) -> sqlite3.Connection:
    """A connection with HotMem's settings: autocommit (explicit transactions) and the busy
    timeout. The journal mode is the caller's (:func:`use_wal` for a shared store).

    Raises:
        StoreError: the path cannot be opened.
    """
    target = os.fspath(path)
    if "\x00" in target:
        raise StoreError(f"cannot open store {target!r}: expected a path, found a NUL character")
    if not target:  # SQLite would open a private temporary database, gone when closed
        raise StoreError(
            "cannot open store '': expected a path (or ':memory:'), found an empty string"
        )
    if target != ":memory:":
        parent = os.path.dirname(os.path.realpath(target))
        if not os.path.isdir(parent):
            raise StoreError(
                f"cannot open store {target!r}: directory {str(parent)!r} does not exist"
            )
    with translated(target, "open", busy_timeout):
        return sqlite3.connect(target, isolation_level=None, timeout=busy_timeout)


def _switch_to_wal(connection: sqlite3.Connection, busy_timeout: float) -> str:
    """``PRAGMA journal_mode = WAL``, retried until the busy timeout: the switch needs the
    file to itself and SQLite answers SQLITE_BUSY at once, without its busy handler, while
    another process holds it (processes opening a new store at the same moment)."""
    deadline = time.monotonic() + busy_timeout
    pause = 0.001
    while True:
        try:
            return str(connection.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            name = getattr(exc, "sqlite_errorname", "") or ""
            if not name.startswith("SQLITE_BUSY") or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def use_wal(
    connection: sqlite3.Connection, target: str, *, busy_timeout: float = BUSY_TIMEOUT
) -> None:
    """Put the store in WAL mode with ``synchronous = NORMAL``.

    A read-only store file cannot change its journal mode: it stays as it is, readable, and
    every write raises a ``StoreError`` saying that it is read-only.

    Raises:
        StoreError: the journal mode cannot be set (the file is locked, not a database, ...).
    """
    with translated(target, "open", busy_timeout):
        mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
        if mode not in ("wal", "memory"):  # an in-memory database has no file to journal
            try:
                mode = _switch_to_wal(connection, busy_timeout)
            except sqlite3.OperationalError as exc:
                if getattr(exc, "sqlite_errorname", "") == "SQLITE_READONLY":
                    return
                raise
        if mode not in ("wal", "memory"):
            raise StoreError(
                f"cannot open store {target!r}: expected journal_mode='wal', "
                f"found journal_mode={mode!r}"
            )
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute(f"PRAGMA journal_size_limit = {_JOURNAL_SIZE_LIMIT}")


@record
class Inspection:
    """What a database holds, as far as setting it up as a store is concerned.

    Attributes:
        objects: the names of its tables, indexes and triggers (SQLite's own left out).
        triggers: trigger name -> its SQL with whitespace collapsed.
        meta: the ``hotmem_meta`` pairs, ``None`` without that table.
        has_memories: whether the ``memories`` table exists and holds a row.
        deferred: whether ``hotmem_fts_deferred`` holds a row (only ever true inside a bulk
            write's transaction, or after an old or foreign writer left one behind).
    """

    objects: frozenset[str]
    triggers: dict[str, str]
    meta: dict[str, str] | None
    has_memories: bool
    deferred: bool


def _collapsed(sql: str) -> str:
    return " ".join(sql.split())


def _has_row(connection: sqlite3.Connection, table: str) -> bool:
    row = connection.execute(f"SELECT EXISTS (SELECT 1 FROM {table})").fetchone()
    return bool(row[0])


def inspect(connection: sqlite3.Connection) -> Inspection:
    """Read what the database behind ``connection`` holds (run it inside a transaction)."""
    rows = connection.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite^_%' ESCAPE '^'"
    ).fetchall()
    objects = frozenset(name for _, name, _ in rows)
    meta = None
    if "hotmem_meta" in objects:
        meta = {str(k): str(v) for k, v in connection.execute("SELECT key, value FROM hotmem_meta")}
    return Inspection(
        objects=objects,
        triggers={name: _collapsed(sql or "") for kind, name, sql in rows if kind == "trigger"},
        meta=meta,
        has_memories="memories" in objects and _has_row(connection, "memories"),
        deferred="hotmem_fts_deferred" in objects and _has_row(connection, "hotmem_fts_deferred"),
    )


def _incompatible(target: str, key: str, expected: str, found: str | None) -> StoreError:
    return StoreError(
        f"store {target!r} is incompatible: expected {key}={expected!r}, found {key}={shown(found)}"
    )


def _check_meta(meta: dict[str, str], target: str, *, complete: bool) -> None:
    """Refuse metadata that contradicts this version (``complete``: every key must be there)."""
    found = meta.get("schema_version")
    if found is not None:
        # At most 9 digits before int(): a 5,000-digit text passes Python's int() limit.
        if not (found.isdecimal() and found.isascii()) or len(found) > 9 or int(found) < 1:
            raise _incompatible(target, "schema_version", str(schema.SCHEMA_VERSION), found)
        if int(found) > schema.SCHEMA_VERSION:
            raise StoreError(
                f"store {target!r} was written by a newer HotMem: expected schema_version at "
                f"most {schema.SCHEMA_VERSION}, found schema_version={found!r}"
            )
    for key, expected in schema.expected_meta().items():
        value = meta.get(key)
        if key in _MIGRATED_KEYS or (value is None and not complete):
            continue
        if value != expected:
            raise _incompatible(target, key, expected, value)


def _ready(found: Inspection) -> bool:
    return (
        found.objects >= schema.HOTMEM_OBJECTS
        and found.meta is not None
        and all(found.meta.get(key) == value for key, value in schema.expected_meta().items())
        and all(found.triggers.get(n) == _collapsed(sql) for n, sql in schema.TRIGGERS.items())
        and not found.deferred
    )


def plan(found: Inspection, target: str) -> Action:
    """What setting the inspected database up as a store takes.

    ``ready``: nothing. ``create``: the database is empty. ``reinitialise``: an incomplete
    store without memories (a first open that was interrupted), dropped and created again.
    ``complete``: a store with memories that is of an older schema version or misses derived
    objects; migrated, completed, and its full-text index rebuilt when it may be stale.

    Raises:
        StoreError: the database is not a HotMem store, or one this version cannot use.
    """
    if not found.objects:
        return "create"
    foreign = found.objects - schema.HOTMEM_OBJECTS
    if foreign and not {"hotmem_meta", "memories"} <= found.objects:
        raise StoreError(f"{target!r} is a SQLite database but not a HotMem store")
    meta = found.meta or {}
    _check_meta(meta, target, complete=False)
    if _ready(found):
        return "ready"
    if not found.has_memories:
        return "complete" if foreign else "reinitialise"
    for key in ("schema_version", "embedding_model", "embedding_dimension"):
        if key not in meta:  # memories of an unknown model or schema: never guess
            raise _incompatible(target, key, schema.expected_meta()[key], None)
    return "complete"


def initialise(connection: sqlite3.Connection, *, with_triggers: bool = True) -> None:
    """Create HotMem's tables in an empty database (the triggers may be added later).

    Runs statement by statement, so that it can be part of a larger transaction.
    """
    for sql in schema.CREATE_TABLES:
        connection.execute(sql)
    connection.executemany(
        "INSERT INTO hotmem_meta (key, value) VALUES (?, ?)", sorted(schema.expected_meta().items())
    )
    spaces.write_space(connection, spaces.HASH_SPACE)
    if with_triggers:
        for sql in schema.FTS_TRIGGERS:
            connection.execute(sql)


def _create(connection: sqlite3.Connection, _found: Inspection, _status: Publisher) -> None:
    initialise(connection)


def _reinitialise(connection: sqlite3.Connection, found: Inspection, _status: Publisher) -> None:
    for name in sorted(found.objects & set(schema.TRIGGERS)):
        connection.execute(f"DROP TRIGGER {name}")
    for index in ("memories_fts", "memories_cjk"):
        if index in found.objects:
            connection.execute(f"DROP TABLE {index}")  # and its shadow tables
    leftovers = (*schema.FTS_SHADOW_TABLES, *schema.CJK_SHADOW_TABLES)
    tables = (
        "hotmem_fts_deferred",
        "hotmem_changes",
        "hotmem_index",
        "hotmem_index_postings",
        "space_vectors",
        "vector_spaces",
        "memories",
        "hotmem_meta",
    )
    for name in (*leftovers, *tables):
        connection.execute(f"DROP TABLE IF EXISTS {name}")
    initialise(connection)


def _complete(connection: sqlite3.Connection, found: Inspection, status: Publisher) -> None:
    meta = found.meta or {}
    version = int(meta.get("schema_version", schema.SCHEMA_VERSION))
    status.begin(version, schema.SCHEMA_VERSION, steps=schema.SCHEMA_VERSION - version + 1)
    indexes = {
        "memories_fts": {"memories_fts", *schema.FTS_SHADOW_TABLES},
        "memories_cjk": {"memories_cjk", *schema.CJK_SHADOW_TABLES},
    }
    lexical = set().union(*indexes.values())
    stale = found.deferred or not (lexical | set(schema.TRIGGERS)) <= found.objects
    migrate(connection, version, schema.SCHEMA_VERSION, status)
    status.step("completing the indexes")
    now = inspect(connection)
    for index, objects in indexes.items():
        if not objects <= now.objects:  # the index or a shadow table is missing: recreate
            if index in now.objects:
                connection.execute(f"DROP TABLE {index}")
            for name in objects - {index}:
                connection.execute(f"DROP TABLE IF EXISTS {name}")
            stale = True
    now = inspect(connection)
    for name, sql in schema.TABLES.items():
        if name not in now.objects:
            connection.execute(sql)
    for name, sql in schema.TRIGGERS.items():
        if now.triggers.get(name) != _collapsed(sql):
            stale = stale or name in now.triggers  # a trigger of another text may have missed rows
            connection.execute(f"DROP TRIGGER IF EXISTS {name}")
            connection.execute(sql)
    if stale:
        lexical_index.rebuild(connection, progress=status.rows)
    connection.execute(changes.EVERY_MEMORY_CHANGED)  # derived data may have been rebuilt
    connection.execute(schema.RESUME_FTS)
    if not any(space.name == spaces.HASH_SPACE.name for space in spaces.read_spaces(connection)):
        spaces.write_space(connection, spaces.HASH_SPACE)
    connection.executemany(
        "INSERT OR REPLACE INTO hotmem_meta (key, value) VALUES (?, ?)",
        sorted(schema.expected_meta().items()),
    )


_ACTIONS: dict[Action, Callable[[sqlite3.Connection, Inspection, Publisher], None]] = {
    "create": _create,
    "reinitialise": _reinitialise,
    "complete": _complete,
}


def _read_plan(connection: sqlite3.Connection, target: str) -> tuple[Inspection, Action]:
    """Inspect the database and :func:`plan` its setup, in one read transaction."""
    connection.execute("BEGIN")
    try:
        found = inspect(connection)
        return found, plan(found, target)
    finally:
        if connection.in_transaction:  # SQLite may have rolled back after an error
            connection.execute("COMMIT")


def setup(
    connection: sqlite3.Connection, target: str, *, busy_timeout: float = BUSY_TIMEOUT
) -> None:
    """Make the database behind ``connection`` a ready store of this version, or refuse it.

    A read transaction decides; a database that is not refused is put in WAL mode
    (:func:`use_wal`); when there is work, one ``BEGIN IMMEDIATE`` transaction
    inspects again (another process may have done it meanwhile), does it, checks the result
    and commits. Waiting for that lock, the process follows another's migration and stops
    waiting once the store is ready (``migration_progress``); a migration publishes its
    progress beside the store. Nothing is changed when it raises.

    Raises:
        StoreError: the database is not a compatible HotMem store, or cannot be written.
    """
    with translated(target, "open", busy_timeout):
        first, action = _read_plan(connection, target)
    # Only a database that will be used gets WAL (a refused one is left exactly as it was).
    use_wal(connection, target, busy_timeout=busy_timeout)
    if action == "ready":
        return
    with translated(target, "set up", busy_timeout):
        ready = lambda: _read_plan(connection, target)[1] == "ready"  # noqa: E731
        if not take_setup_lock(connection, target, first.meta, busy_timeout, ready):
            return  # another process set it up meanwhile
        with Publisher(target) as status:
            try:
                found = inspect(connection)
                action = plan(found, target)
                if action != "ready":
                    _ACTIONS[action](connection, found, status)
                    after = inspect(connection)
                    _check_meta(after.meta or {}, target, complete=True)
                    if not _ready(after):
                        raise StoreError(f"cannot set up store {target!r}: it is still incomplete")
                connection.execute("COMMIT")
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise


def incompatibility(connection: sqlite3.Connection, target: str) -> str | None:
    """Why the database behind ``connection`` cannot serve as a HotMem store, or None.

    An empty or an incomplete database without memories is compatible (setup creates it),
    and so is a store of an older schema version (setup migrates it).
    """
    try:
        plan(inspect(connection), target)
    except StoreError as exc:
        return str(exc)
    return None
