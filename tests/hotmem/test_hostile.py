"""Hostile input on the store path: every public entry refuses text that cannot be stored,
and a damaged, tampered or read-only store is a StoreError saying what was expected and found.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path

import pytest

import hotmem
from hotmem import MemoryStore
from hotmem.store import schema

LONE = "\ud800"
SURROGATE = r"expected {} as valid Unicode text, found a lone surrogate U\+D800"

ENTRIES: list[tuple[str, Callable[[MemoryStore], object], str]] = [
    ("add fact", lambda s: s.add(f"x{LONE}", identifier="a"), "fact"),
    ("add identifier", lambda s: s.add("x", identifier=f"a{LONE}"), "identifier"),
    ("add memory_id", lambda s: s.add("x", identifier="a", memory_id=LONE), "memory_id"),
    ("add tag", lambda s: s.add("x", identifier="a", tags=["ok", LONE]), "every tag"),
    ("add_many", lambda s: s.add_many([{"fact": LONE, "identifier": "a"}]), "fact"),
    ("add_stream", lambda s: s.add_stream([{"fact": "x", "identifier": LONE}]), "identifier"),
    ("get", lambda s: s.get(f"m-1{LONE}"), "memory_id"),
    ("delete", lambda s: s.delete(f"m-1{LONE}"), "memory_id"),
    ("count", lambda s: s.count(f"a{LONE}"), "identifier"),
    ("iter_memories", lambda s: s.iter_memories(f"a{LONE}"), "identifier"),
    ("search query", lambda s: hotmem.search_memories(s, f"kettle{LONE}"), "query"),
    (
        "search identifier",
        lambda s: hotmem.search_memories(s, "kettle", identifier=LONE),
        "identifier",
    ),
    ("explain query", lambda s: hotmem.explain(s, f"kettle{LONE}", "m-1"), "query"),
    ("explain memory_id", lambda s: hotmem.explain(s, "kettle", f"m-1{LONE}"), "memory_id"),
    (
        "explain identifier",
        lambda s: hotmem.explain(s, "kettle", "m-1", identifier=LONE),
        "identifier",
    ),
]


@pytest.mark.parametrize(
    ("entry", "field"), [(e[1], e[2]) for e in ENTRIES], ids=[e[0] for e in ENTRIES]
)
def test_a_lone_surrogate_is_a_validation_error_at_every_entry(
    store: MemoryStore, entry: Callable[[MemoryStore], object], field: str
) -> None:
    store.add("Copper kettle.", identifier="a", memory_id="m-1")
    with pytest.raises(hotmem.ValidationError, match=SURROGATE.format(field)):
        entry(store)
    assert [m.memory_id for m in store] == ["m-1"]


class _Broken(tzinfo):
    """A tzinfo answering an offset datetime refuses (more than 24 hours)."""

    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(hours=30)

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)


EDGES = [
    (datetime.max.replace(tzinfo=timezone(timedelta(hours=-1))), "within years 1..9999"),
    (datetime.min.replace(tzinfo=timezone(timedelta(hours=1))), "within years 1..9999"),
    ("9999-12-31T23:59:59-00:01", "within years 1..9999"),
    ("0001-01-01T00:00:00+00:01", "within years 1..9999"),
    (datetime(2026, 1, 1, tzinfo=_Broken()), "with a valid timezone"),
]


@pytest.mark.parametrize(("created_at", "message"), EDGES)
def test_created_at_beyond_the_datetime_limits_is_a_validation_error(
    store: MemoryStore, created_at: object, message: str
) -> None:
    with pytest.raises(hotmem.ValidationError, match=message):
        store.add("x", identifier="a", created_at=created_at)
    with pytest.raises(hotmem.ValidationError, match=f"memory #0: .*{message}"):
        store.add_many([{"fact": "x", "identifier": "a", "created_at": created_at}])
    assert store.count() == 0


def test_the_datetime_limits_themselves_are_stored(store: MemoryStore) -> None:
    low = store.add("x", identifier="a", created_at=datetime.min.replace(tzinfo=UTC))
    high = store.add("y", identifier="a", created_at="9999-12-31T23:59:59.999999+00:00")
    assert store.get(low.memory_id).to_dict()["created_at"] == "0001-01-01T00:00:00Z"
    assert store.get(high.memory_id).to_dict()["created_at"] == "9999-12-31T23:59:59.999999Z"


# -- damaged and tampered stores -------------------------------------------------------------


@pytest.fixture
def on_disk(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    with hotmem.open_store(path) as store:
        store.add("Copper kettles boil fast.", identifier="acme", memory_id="m-1", tags=["t"])
        store.add("Iron pans rust.", identifier="acme", memory_id="m-2")
    return path


def tamper(path: Path, sql: str) -> None:
    """Change a row behind the store's back, the way another program could."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA ignore_check_constraints = ON")
    connection.execute(sql)
    connection.close()


DAMAGED = "holds a damaged memory, memory_id='m-1': "
# (tampering, what the store says, the reads that refuse it): get and iteration decode the
# whole row; search reads the vectors and the winners' rows; explain reads the vectors only.
ROWS, VECTORS = {"get", "iterate"}, {"search", "explain"}
TAMPERED = [
    (
        "UPDATE memories SET tags = '[\"t\",' WHERE memory_id = 'm-1'",
        "expected tags as a JSON array of strings, found tags='[\"t\",'",
        {"get", "iterate", "search"},
    ),
    (
        "UPDATE memories SET tags = '{\"a\": 1}' WHERE memory_id = 'm-1'",
        "expected tags as a JSON array of strings, found tags='{\"a\": 1}'",
        {"get", "iterate", "search"},
    ),
    (
        "UPDATE memories SET created_at = 'yesterday' WHERE memory_id = 'm-1'",
        "expected created_at as canonical UTC text such as '2025-01-31T09:00:00Z', "
        "found created_at='yesterday'",
        ROWS,
    ),
    (
        "UPDATE memories SET created_at = '2026-01-01T00:00:00+02:00' WHERE memory_id = 'm-1'",
        "expected created_at as canonical UTC text such as '2025-01-31T09:00:00Z', "
        "found created_at='2026-01-01T00:00:00+02:00'",
        ROWS,
    ),
    (
        "UPDATE memories SET importance = 'high' WHERE memory_id = 'm-1'",
        "expected importance in [0, 1], found 'high'",
        ROWS | VECTORS,
    ),
    (
        "UPDATE memories SET embedding = x'00' WHERE memory_id = 'm-1'",
        "expected an embedding of 256 bytes, found 1 bytes",
        VECTORS,
    ),
    (
        "UPDATE memories SET embedding = 'text' WHERE memory_id = 'm-1'",
        "expected an embedding of 256 bytes, found str",
        VECTORS,
    ),
]


@pytest.mark.parametrize(("sql", "breach", "refusing"), TAMPERED)
def test_a_tampered_row_is_a_store_error_naming_the_memory(
    on_disk: Path, sql: str, breach: str, refusing: set[str]
) -> None:
    tamper(on_disk, sql)
    with hotmem.open_store(on_disk) as store:
        reads: dict[str, Callable[[], object]] = {
            "get": lambda: store.get("m-1"),
            "iterate": lambda: list(store),
            "search": lambda: hotmem.search_memories(store, "copper kettle"),
            "explain": lambda: hotmem.explain(store, "copper", "m-1"),
        }
        messages = {}
        for name, read in reads.items():
            try:
                read()
            except hotmem.StoreError as exc:
                messages[name] = str(exc)
        expected = f"store {str(on_disk)!r} {DAMAGED}{breach}"
        assert messages == dict.fromkeys(sorted(refusing, key=list(reads).index), expected)
        assert store.get("m-2").fact == "Iron pans rust."  # the other rows still read


def test_a_corrupted_full_text_index_is_a_store_error(on_disk: Path) -> None:
    # Garbage at the start of every leaf page of the index (ids past the structure record).
    tamper(
        on_disk,
        "UPDATE memories_fts_data SET block = x'00000000ffffffff' || substr(block, 9) "
        "WHERE id > 10",
    )
    with hotmem.open_store(on_disk) as store:
        with pytest.raises(hotmem.StoreError) as raised:
            hotmem.search_memories(store, "copper kettle")
        assert str(raised.value) == (
            f"cannot read store {str(on_disk)!r}: the store is damaged: expected a sound SQLite "
            "file and full-text index, found 'database disk image is malformed'; "
            "check_integrity() lists the problems; restore the store from a snapshot"
        )
        assert store.check_integrity() == ("full-text index: database disk image is malformed",)


@pytest.mark.parametrize(
    ("damage", "read_found", "write_found"),
    [
        (  # garbage in every leaf: FTS5 writes new segments without reading these (issue 35)
            "UPDATE memories_fts_data SET block = x'00000000ffffffff' || substr(block, 9) "
            "WHERE id > 10",
            "'database disk image is malformed'",
            "'database disk image is malformed'",
        ),
        (  # FTS5 says this one as a plain error, in other words for a write (issue 35)
            "UPDATE memories_fts_config SET v = 99 WHERE k = 'version'",
            "'no such fts5 table: main.memories_fts'",
            "\"invalid fts5 file format (found 99, expected 4) - run 'rebuild'\"",
        ),
    ],
)
def test_add_and_delete_on_a_damaged_full_text_index_fail_as_search_does(
    on_disk: Path, damage: str, read_found: str, write_found: str
) -> None:
    tamper(on_disk, damage)
    damaged = (
        "the store is damaged: expected a sound SQLite file and full-text index, found {}; "
        "check_integrity() lists the problems; restore the store from a snapshot"
    )
    with hotmem.open_store(on_disk) as store:
        with pytest.raises(hotmem.StoreError) as searched:
            hotmem.search_memories(store, "copper kettle")
        assert str(searched.value) == (
            f"cannot read store {str(on_disk)!r}: {damaged.format(read_found)}"
        )
        for write in (
            lambda: store.add("A copper pot.", identifier="a"),
            lambda: store.delete("m-1"),
        ):
            with pytest.raises(hotmem.StoreError) as written:
                write()
            assert str(written.value) == (
                f"cannot write to store {str(on_disk)!r}: {damaged.format(write_found)}"
            )
        assert len(store) == 2  # nothing was written


@pytest.mark.parametrize("through", ["another connection", "the store's own connection"])
def test_an_index_damaged_between_two_adds_of_one_store_refuses_the_second(
    on_disk: Path, through: str
) -> None:
    # The store skips its look into the index while no other connection has committed since
    # its last add (PRAGMA data_version) and its own connection has changed no row
    # (total_changes): store.connection is documented for reading, but a write through it
    # changes no data_version. Either damage below must be seen.
    damage = (
        "UPDATE memories_fts_data SET block = x'00000000ffffffff' || substr(block, 9) WHERE id > 10"
    )
    with hotmem.open_store(on_disk) as store:
        store.add("A copper pot.", identifier="a", memory_id="m-3")
        store.add("A copper pan.", identifier="a", memory_id="m-4")  # no look: nothing changed
        if through == "another connection":
            tamper(on_disk, damage)
        else:
            store.connection.execute(damage)
            store.connection.commit()
        with pytest.raises(hotmem.StoreError, match="database disk image is malformed"):
            store.add("A copper lid.", identifier="a", memory_id="m-5")
        assert len(store) == 4


def test_an_index_entry_without_its_memory_is_a_store_error(on_disk: Path) -> None:
    tamper(on_disk, "DROP TRIGGER memories_fts_delete")
    tamper(on_disk, "DELETE FROM memories WHERE memory_id = 'm-1'")
    tamper(on_disk, schema.TRIGGERS["memories_fts_delete"])
    with (
        hotmem.open_store(on_disk) as store,
        pytest.raises(hotmem.StoreError, match="found rowid=1 in the index only"),
    ):
        hotmem.search_memories(store, "copper kettle")


def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"not a database" * 300)
    with pytest.raises(hotmem.StoreError) as raised:
        hotmem.open_store(path)
    assert str(raised.value) == (
        f"cannot open store {str(path)!r}: expected a SQLite database, "
        "found 'file is not a database'"
    )


# -- read-only stores (a child process without root's right to ignore file permissions) --------

READ_ONLY = textwrap.dedent(
    """
    import os, sys
    import hotmem, hotmem.cli
    hotmem.cli.build_parser().format_help()  # argparse's own lazy imports, while still allowed
    import importlib.util
    if importlib.util.find_spec("numpy"):  # the numpy engine's, too
        import hotmem.retrieval.vectorized
    import hotmem.store.reindex  # and a write's (a checkout may be readable by its owner only)
    if os.geteuid() == 0:  # root ignores permissions: drop to nobody once imports are done
        os.setgid(65534)
        os.setuid(65534)
    path, mode = sys.argv[1], sys.argv[2]
    if mode == "api":
        try:
            with hotmem.open_store(path) as store:
                print(store.count(), len(hotmem.search_memories(store, "copper kettle")))
                store.add("Another fact.", identifier="acme")
        except hotmem.StoreError as exc:
            print("StoreError:", exc)
    else:
        sys.exit(hotmem.cli.main(["--db", path, *sys.argv[3:]]))
    """
)


@pytest.fixture
def read_only(tmp_path: Path) -> Path:
    """A store file nobody may write, in a directory anybody may write (SQLite's -shm)."""
    directory = tmp_path / "shared"
    directory.mkdir()
    path = directory / "ro.db"
    with hotmem.open_store(path) as store:
        store.add("Copper kettles boil fast.", identifier="acme", memory_id="m-1")
    os.chmod(path, 0o444)
    os.chmod(directory, 0o777)
    os.chmod(tmp_path, 0o755)
    for parent in tmp_path.parents:  # nobody must reach the directory
        if parent.stat().st_uid == os.geteuid() and not parent.stat().st_mode & 0o001:
            os.chmod(parent, parent.stat().st_mode | 0o001)
    return path


def run_read_only(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", READ_ONLY, str(path), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.slow
def test_a_read_only_store_reads_and_refuses_writes_with_a_store_error(read_only: Path) -> None:
    completed = run_read_only(read_only, "api")
    assert completed.stderr == ""
    assert completed.stdout.splitlines() == [
        "1 1",
        f"StoreError: cannot write to store {str(read_only)!r}: expected a writable store "
        "file, found a read-only one (attempt to write a readonly database)",
    ]


@pytest.mark.slow
def test_the_cli_on_a_read_only_store_says_so_in_one_line(read_only: Path) -> None:
    completed = run_read_only(read_only, "cli", "add", "More.", "--identifier", "acme")
    assert (completed.returncode, completed.stdout) == (1, "")
    assert completed.stderr == (
        f"hotmem: cannot write to store {str(read_only)!r}: expected a writable store file, "
        "found a read-only one (attempt to write a readonly database)\n"
    )
    completed = run_read_only(read_only, "cli", "search", "copper kettle")
    assert (completed.returncode, completed.stderr) == (0, "")
    assert "m-1 (acme): Copper kettles boil fast." in completed.stdout


# -- a store in a directory shared by several accounts ------------------------------------------

AS_ACCOUNT = textwrap.dedent(
    """
    import os, sys
    import hashlib, datetime, importlib.util
    import hotmem, hotmem.models, hotmem.store.reindex, hotmem.retrieval.search
    import hotmem.retrieval.image
    if importlib.util.find_spec("numpy"):
        import hotmem.retrieval.vectorized
    uid = int(sys.argv[1])
    os.setgid(uid)
    os.setuid(uid)
    try:
        with hotmem.open_store(sys.argv[2]) as store:
            if sys.argv[3] == "write":
                store.add(f"A fact by uid {uid}.", identifier="acme")
            print(store.count(), len(hotmem.search_memories(store, "fact")))
    except hotmem.StoreError as exc:
        print("StoreError:", exc)
    """
)


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="needs two accounts")
def test_another_accounts_read_names_its_side_files_to_the_owner(tmp_path: Path) -> None:
    # Issue 35: the owner's next write failed with "found a read-only one" although the store
    # file was writable: the reader's -wal and -shm, its own, were not.
    import pwd

    directory = tmp_path / "shared"
    directory.mkdir()
    os.chmod(directory, 0o777)
    os.chmod(tmp_path, 0o755)
    for parent in tmp_path.parents:  # both accounts must reach the directory
        if parent.stat().st_uid == os.geteuid() and not parent.stat().st_mode & 0o001:
            os.chmod(parent, parent.stat().st_mode | 0o001)
    path = directory / "s.db"
    owner, reader = 65534, 1

    def as_account(uid: int, mode: str) -> str:
        completed = subprocess.run(
            [sys.executable, "-c", AS_ACCOUNT, str(uid), str(path), mode],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert completed.stderr == ""
        return completed.stdout

    assert as_account(owner, "write") == "1 1\n"
    assert as_account(reader, "read") == "1 1\n"
    names = {uid: pwd.getpwuid(uid).pw_name for uid in (owner, reader)}
    assert as_account(owner, "write") == (
        f"StoreError: cannot write to store {str(path)!r}: expected SQLite's side files "
        f"writable by this account, {names[owner]!r} (uid {owner}), found "
        f"'{path}-wal' owned by account {names[reader]!r} (uid {reader}), "
        f"'{path}-shm' owned by account {names[reader]!r} (uid {reader}), left by that "
        "account's read; once no process has the store open, remove them (they hold no "
        "memory), or let this account write them (a group-writable shared directory, umask "
        "002)\n"
    )
    for suffix in ("-wal", "-shm"):  # as the message says
        os.unlink(f"{path}{suffix}")
    assert as_account(owner, "write") == "2 2\n"


def test_a_damaged_cjk_index_refuses_the_adds_that_write_to_it(on_disk: Path) -> None:
    """An add looks into the lexical index it writes to: every add into the word index, an
    add with CJK grams into the CJK index too (issue 35, with issue 34's one-transaction add)."""
    tamper(on_disk, "UPDATE memories_cjk_config SET v = 99 WHERE k = 'version'")
    with hotmem.open_store(on_disk) as store:
        store.add("A copper pot.", identifier="a", memory_id="m-ascii")  # the word index only
        with pytest.raises(hotmem.StoreError) as written:
            store.add("東京の銅の鍋", identifier="a", memory_id="m-cjk")
        assert str(written.value) == (
            f"cannot write to store {str(on_disk)!r}: the store is damaged: expected a sound "
            'SQLite file and full-text index, found "invalid fts5 file format (found 99, '
            "expected 4) - run 'rebuild'\"; check_integrity() lists the problems; restore the "
            "store from a snapshot"
        )
        assert [m.memory_id for m in store] == ["m-1", "m-2", "m-ascii"]
