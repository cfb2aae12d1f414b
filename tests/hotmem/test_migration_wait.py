"""A migration seen from other processes (issue 35): the migrating process publishes its
progress beside the store, and a process that needs the store meanwhile, a read-only search
included, waits for it with a message that says how far it is instead of failing after its
busy timeout. Progress files of dead or stalled migrations block nobody."""

from __future__ import annotations

import json
import os
import pty
import select
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import hotmem
from hotmem.store import migration_progress, migrations, schema
from hotmem.store import setup as storage
from hotmem.store.migration_progress import Publisher, Status, read_status
from tests.hotmem import v1_store
from tests.processes import run

HOTMEM = [sys.executable, "-m", "hotmem"]
FACTS = {"m-1": "A copper kettle boils water.", "m-2": "Tea leaves are kept in a tin."}
HOST = os.uname().nodename
TO = schema.SCHEMA_VERSION
STEPS = TO  # from version 1: TO - 1 migrations, then completing the indexes
# How long a test waits for a child process's output before failing (never asserted on).
PATIENCE = 60.0


def _environment(home: Path) -> dict[str, str]:
    return {**os.environ, "HOME": str(home), "HOTMEM_HOME": str(home / ".hotmem")}


def _search(path: Path, *extra: str) -> list[str]:
    return [*HOTMEM, "--db", str(path), *extra, "search", "copper kettle"]


def _waiting(path: Path, pid: int, step: int, doing: str, rows: str = "") -> str:
    return (
        f"hotmem: waiting for another process (pid {pid}) migrating store {str(path)!r} from "
        f"schema 1 to {TO}: step {step} of {STEPS} ({doing}){rows}"
    )


@contextmanager
def _write_lock(path: Path) -> Iterator[sqlite3.Connection]:
    """The store's write lock, held as a migration's transaction holds it."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield connection
    finally:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        connection.close()


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _progress_file(path: Path, pid: int, **changes: object) -> Path:
    """A progress file as a migrating process writes it."""
    status = {"pid": pid, "host": HOST, "from": 1, "to": TO, "step": 2, "steps": STEPS}
    status.update(doing="schema 2 to 3", done=None, total=None, written=time.time(), **changes)
    side = Path(f"{path}.migrating")
    side.write_text(json.dumps(status), encoding="utf-8")
    return side


def _left_beside(path: Path) -> list[str]:
    """The files beside the store other than the store's own (SQLite's included)."""
    ours = {path.name, f"{path.name}-wal", f"{path.name}-shm"}
    return sorted(name for name in os.listdir(path.parent) if name not in ours)


def _finish(process: subprocess.Popen[str]) -> None:
    """Let ``process`` end (killed after PATIENCE seconds)."""
    try:
        process.communicate(timeout=PATIENCE)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()


def _read_line(stream: object) -> str:
    """One line of a child's pipe, or fail after PATIENCE seconds."""
    descriptor = stream.fileno()  # type: ignore[attr-defined]
    ready, _, _ = select.select([descriptor], [], [], PATIENCE)
    assert ready, "the child process said nothing"
    return stream.readline()  # type: ignore[attr-defined, no-any-return]


# -- the migrating process ---------------------------------------------------------------------


def test_a_migration_publishes_each_step_beside_the_store_and_removes_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v1.db"
    v1_store.build(path, facts=FACTS)
    seen: list[Status | None] = []
    for step in (2, 4):
        original = migrations.MIGRATIONS[step]

        def observed(connection: sqlite3.Connection, original: migrations.Migration = original):
            seen.append(read_status(str(path)))
            original(connection)

        monkeypatch.setitem(migrations.MIGRATIONS, step, observed)
    with hotmem.open_store(path) as store:
        assert store.get("m-1").fact == FACTS["m-1"]
    pid = os.getpid()
    assert seen == [
        Status(pid, HOST, 1, TO, 2, STEPS, "schema 2 to 3"),
        Status(pid, HOST, 1, TO, 4, STEPS, "schema 4 to 5"),
    ]
    assert _left_beside(path) == []  # the progress file and its temporary files are gone
    # Where the file cannot be written (a directory of its name here), the migration runs.
    seen.clear()
    other = tmp_path / "other" / "v1.db"
    other.parent.mkdir()
    v1_store.build(other, facts=FACTS)
    Path(f"{other}.migrating").mkdir()
    path = other  # what the observing migrations read
    with hotmem.open_store(other) as store:
        assert store.get("m-1").fact == FACTS["m-1"]
    assert seen == [None, None]
    assert _left_beside(other) == ["v1.db.migrating"]
    assert os.listdir(f"{other}.migrating") == []


def test_a_failed_migration_removes_its_progress_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v1.db"
    v1_store.build(path, facts=FACTS)
    original = migrations.MIGRATIONS[3]
    seen = []

    def half_done(connection: sqlite3.Connection) -> None:
        original(connection)
        seen.append(read_status(str(path)))
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(migrations.MIGRATIONS, 3, half_done)
    with pytest.raises(RuntimeError, match="disk on fire"):
        hotmem.open_store(path)
    assert seen == [Status(os.getpid(), HOST, 1, TO, 3, STEPS, "schema 3 to 4")]
    assert _left_beside(path) == []


def test_the_progress_file_follows_the_rows_of_a_step_with_each_heartbeat(
    tmp_path: Path,
) -> None:
    target = str(tmp_path / "s.db")
    with Publisher(target) as status:
        status.begin(4, 5, steps=2)
        assert read_status(target) == Status(os.getpid(), HOST, 4, 5, 0, 2, "starting")
        status.step("schema 4 to 5")
        status.step("completing the indexes")
        status.rows(120_000, 200_000)
        deadline = time.monotonic() + PATIENCE
        while (found := read_status(target)) is not None and found.done is None:
            assert time.monotonic() < deadline, "no heartbeat wrote the rows"
            time.sleep(0.05)
        assert found == Status(
            os.getpid(), HOST, 4, 5, 2, 2, "completing the indexes", 120_000, 200_000
        )
    assert os.listdir(tmp_path) == []


# -- the processes that wait ---------------------------------------------------------------------

_MIGRATOR = textwrap.dedent(
    """
    import os, sys, time
    import hotmem
    from hotmem.store import migrations

    original = migrations.MIGRATIONS[2]

    def held(connection):
        print("migrating", flush=True)
        while not os.path.exists(sys.argv[2]):
            time.sleep(0.01)
        original(connection)

    migrations.MIGRATIONS[2] = held
    store = hotmem.open_store(sys.argv[1])
    store.connection.execute("BEGIN IMMEDIATE")  # another write, right after the migration
    print("writing", flush=True)
    while not os.path.exists(sys.argv[3]):
        time.sleep(0.01)
    store.connection.execute("ROLLBACK")
    store.close()
    """
)


@pytest.mark.slow
def test_a_read_only_search_waits_for_another_process_migrating_the_store(
    tmp_path: Path,
) -> None:
    # Issue 35: a 200k store migrates in 18 to 25 s, and every other process, read-only
    # searches included, failed after its busy timeout (10 s).
    path = tmp_path / "v1.db"
    v1_store.build(path, facts=FACTS)
    go, done = tmp_path / "go", tmp_path / "done"
    environment = _environment(tmp_path)
    migrator = subprocess.Popen(
        [sys.executable, "-c", _MIGRATOR, str(path), str(go), str(done)],
        stdout=subprocess.PIPE,
        text=True,
        env=environment,
    )
    search = None
    try:
        assert _read_line(migrator.stdout) == "migrating\n"  # in step 2, holding the lock
        search = subprocess.Popen(
            _search(path, "--busy-timeout", "0.1"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment,
        )
        waiting = _read_line(search.stderr)
        assert waiting == _waiting(path, migrator.pid, 2, "schema 2 to 3") + "\n"
        go.touch()
        # The migration commits and the migrator writes again at once: the search needs no
        # write of its own any more and does not wait for that lock.
        out, err = search.communicate(timeout=PATIENCE)
        assert (search.returncode, err) == (0, "")
        assert _read_line(migrator.stdout) == "writing\n"
    finally:
        go.touch()
        done.touch()
        for process in (migrator, search):
            if process is not None:
                _finish(process)
    assert migrator.returncode == 0
    assert out.splitlines()[0].split()[2:4] == ["m-1", "(acme):"]
    assert run(_search(path), home=tmp_path).out == out  # what a search finds afterwards
    assert _left_beside(path) == ["done", "go"]


@pytest.mark.slow
def test_a_search_waits_while_another_process_holds_the_lock_after_migrating(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v1.db"
    v1_store.build(path, facts=FACTS)
    with _write_lock(path) as connection:
        try:
            with Publisher(str(path)) as status:
                status.begin(1, TO, STEPS)
                status.step("schema 1 to 2")
                search = subprocess.Popen(
                    _search(path, "--busy-timeout", "0"),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=_environment(tmp_path),
                )
                waiting = _read_line(search.stderr)
                storage._complete(connection, storage.inspect(connection), status)
                # The migration commits and another writer takes the lock at once (here the
                # same connection): the search may not take it, and must not need to.
                connection.execute("COMMIT")
                connection.execute("BEGIN IMMEDIATE")
            out, err = search.communicate(timeout=PATIENCE)  # its file gone, the lock held
        finally:
            if search.poll() is None:
                search.kill()
                search.communicate()
        assert connection.in_transaction
    assert waiting == _waiting(path, os.getpid(), 1, "schema 1 to 2") + "\n"
    assert (search.returncode, err) == (0, "")
    assert out.splitlines()[0].split()[2:4] == ["m-1", "(acme):"]
    assert _left_beside(path) == []


def _read_terminal(descriptor: int, until: str | None, received: bytearray) -> None:
    """Read a child's terminal into ``received`` until ``until`` appears in it (None: until
    the child closes it)."""
    deadline = time.monotonic() + PATIENCE
    while until is None or until not in received.decode("utf-8", "replace"):
        left = deadline - time.monotonic()
        ready, _, _ = select.select([descriptor], [], [], max(0.0, left))
        assert ready, f"the terminal never showed {until!r}: {bytes(received)!r}"
        try:
            data = os.read(descriptor, 65536)
        except OSError:  # EIO: the child closed the terminal
            data = b""
        if not data and until is None:
            return
        assert data, f"the terminal closed before showing {until!r}: {bytes(received)!r}"
        received += data


@pytest.mark.slow
def test_on_a_terminal_the_waiting_line_follows_the_progress(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    v1_store.build(path, facts=FACTS)
    master, slave = pty.openpty()
    received = bytearray()
    # Leaving the block releases the lock, then removes the file (as a migration does).
    with Publisher(str(path)) as status, _write_lock(path):
        status.begin(1, TO, STEPS)
        status.step("schema 1 to 2")
        search = subprocess.Popen(
            _search(path, "--busy-timeout", "0.1"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=slave,
            env=_environment(tmp_path),
        )
        os.close(slave)
        try:
            first = _waiting(path, os.getpid(), 1, "schema 1 to 2")
            _read_terminal(master, first, received)
            for _ in range(TO - 1):
                status.step("completing the indexes")
            status.rows(120_000, 200_000)
            later = _waiting(
                path, os.getpid(), STEPS, "completing the indexes", ", 120,000 of 200,000 rows"
            )
            _read_terminal(master, later, received)
        except BaseException:
            search.kill()
            search.communicate()
            raise
    # The lock and the file are gone: the search migrates the store itself, and searches.
    out, _ = search.communicate(timeout=PATIENCE)
    _read_terminal(master, None, received)
    os.close(master)
    shown = received.decode("utf-8")
    assert search.returncode == 0, shown
    assert shown.startswith("\r" + first)
    assert f"\r{later}" in shown
    # One line, redrawn in place, erased at the end (nothing else is written on a terminal).
    assert "\n" not in shown
    assert shown.endswith("\r" + " " * len(later) + "\r")
    assert out.decode().splitlines()[0].split()[2:4] == ["m-1", "(acme):"]
    assert _left_beside(path) == []


def test_a_progress_file_left_by_a_dead_or_stalled_process_blocks_nobody(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v1.db"
    v1_store.build(path, facts=FACTS)
    refusal = (
        f"cannot open store {str(path)!r}: it needs a migration from schema_version=1 to "
        f"{TO}, and another process held the store's write lock past the busy timeout (0.1 s), "
        "most likely doing exactly that (about 20 s for 200,000 memories, announced on its "
        "stderr); retry when it is done, or open the store with a longer busy_timeout"
    )
    dead = _progress_file(path, _dead_pid())
    with _write_lock(path), pytest.raises(hotmem.StoreError) as raised:
        hotmem.open_store(path, busy_timeout=0.1)
    assert str(raised.value) == refusal
    stalled = _progress_file(path, os.getpid())  # a live process, but a file an hour old
    an_hour_ago = time.time() - 3600
    os.utime(stalled, (an_hour_ago, an_hour_ago))
    with _write_lock(path), pytest.raises(hotmem.StoreError) as raised:
        hotmem.open_store(path, busy_timeout=0.1)
    assert str(raised.value) == refusal
    # Without the lock held, the store opens at once: migrated, the file replaced and removed.
    _progress_file(path, _dead_pid())
    with hotmem.open_store(path, busy_timeout=0) as store:
        assert store.get("m-1").fact == FACTS["m-1"]
    assert not dead.exists()
    assert _left_beside(path) == []


@pytest.mark.slow
def test_a_migration_whose_process_dies_fails_the_waiting_process_naming_its_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v1.db"
    v1_store.build(path, facts=FACTS)
    migrator = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    side = _progress_file(path, migrator.pid)
    with _write_lock(path):  # still held: by another writer, once the migrator is gone
        search = subprocess.Popen(
            _search(path, "--busy-timeout", "0.2"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_environment(tmp_path),
        )
        try:
            waiting = _read_line(search.stderr)
            migrator.kill()
            migrator.wait()
            out, err = search.communicate(timeout=PATIENCE)
        finally:
            for process in (migrator, search):
                if process.poll() is None:
                    process.kill()
                    process.communicate()
    assert waiting == _waiting(path, migrator.pid, 2, "schema 2 to 3") + "\n"
    assert (search.returncode, out) == (1, "")
    assert err == (
        f"hotmem: cannot open store {str(path)!r}: it needs a migration from schema_version=1 "
        f"to {TO}, and the migration it waited for stopped (process {migrator.pid} exited "
        f"without finishing; progress file {str(side)!r}); another process has held the "
        "store's write lock for the busy timeout (0.2 s) since; retry when it is done\n"
    )


def test_a_migration_whose_file_stops_changing_fails_the_waiting_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "v1.db"
    v1_store.build(path, facts=FACTS)
    # A live process (this one) whose file never changes: stale after STALE_AFTER seconds
    # (30 s, lowered for the test).
    monkeypatch.setattr(migration_progress, "STALE_AFTER", 0.3)
    side = _progress_file(path, os.getpid())
    with _write_lock(path), pytest.raises(hotmem.StoreError) as raised:
        hotmem.open_store(path, busy_timeout=0.1)
    assert str(raised.value) == (
        f"cannot open store {str(path)!r}: it needs a migration from schema_version=1 to {TO}, "
        f"and the migration it waited for stopped (process {os.getpid()} has not updated it "
        f"for 0.3 s; progress file {str(side)!r}); another process has held the store's write "
        "lock for the busy timeout (0.1 s) since; retry when it is done"
    )
    assert capsys.readouterr().err == _waiting(path, os.getpid(), 2, "schema 2 to 3") + "\n"


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{not json",
        b"[" * 4000,
        b'"a string"',
        b'{"pid": "12", "host": "h", "from": 1, "to": 5, "step": 1, "steps": 5, "doing": "x"}',
        b'{"pid": true, "host": "h", "from": 1, "to": 5, "step": 1, "steps": 5, "doing": "x"}',
        b'{"pid": 12, "host": "h", "from": -1, "to": 5, "step": 1, "steps": 5, "doing": "x"}',
        b'{"pid": 12, "host": 7, "from": 1, "to": 5, "step": 1, "steps": 5, "doing": "x"}',
        b" " * 5000,
    ],
    ids=["empty", "not-json", "deep", "string", "pid-text", "pid-bool", "negative", "host", "big"],
)
def test_a_progress_file_that_is_not_one_is_ignored(tmp_path: Path, content: bytes) -> None:
    target = str(tmp_path / "s.db")
    Path(f"{target}.migrating").write_bytes(content)
    assert read_status(target) is None


def test_what_a_progress_file_says_is_shown_printable() -> None:
    raw = json.dumps(
        {"pid": 7, "host": "other\x1b[2J", "from": 4, "to": 5, "step": 1, "steps": 2}
        | {"doing": "doing\rit", "done": 5, "total": 10, "written": 1.5}
    ).encode()
    status = migration_progress._parse(raw)
    assert status == Status(7, "other[2J", 4, 5, 1, 2, "doingit", 5, 10)
    assert status.describe("s.db") == (
        "hotmem: waiting for another process (pid 7 on other[2J) migrating store 's.db' "
        "from schema 4 to 5: step 1 of 2 (doingit), 5 of 10 rows"
    )
    completing = Status(7, HOST, 5, 5, 1, 1, "completing the indexes")
    assert completing.describe("s.db") == (
        "hotmem: waiting for another process (pid 7) completing store 's.db' (schema 5): "
        "step 1 of 1 (completing the indexes)"
    )
