"""Crash safety: a child process is killed (``os._exit``) the moment SQLite starts a chosen
statement, during a store's first open, a migration or a write; the next open must find a
store that works: it is completed or set up again, single adds are indexed, nothing is
half-written.

The kill comes from a trace callback (``Connection.set_trace_callback``) installed on every
connection the child makes, so the process dies at a real point of HotMem's own SQL.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import hotmem
from hotmem.store import schema
from tests.hotmem import v1_store

pytestmark = pytest.mark.slow

KILLED = 137
CHILD = textwrap.dedent(
    """
    import os, sqlite3, sys

    path, marker, occurrence, action = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    seen = 0
    connect = sqlite3.connect

    def traced(*args, **kwargs):
        connection = connect(*args, **kwargs)

        def trace(statement):
            global seen
            if marker in statement:
                seen += 1
                if seen == occurrence:
                    os._exit(137)

        connection.set_trace_callback(trace)
        return connection

    sqlite3.connect = traced
    import hotmem

    memory = {"identifier": "acme", "created_at": "2026-01-01T00:00:00Z"}
    with hotmem.open_store(path) as store:
        if action == "add":
            store.add("Killed while adding this.", memory_id="m-killed", **memory)
        elif action == "add_many":
            store.add_many(
                {"memory_id": f"b-{i}", "fact": f"Killed in bulk {i}.", **memory}
                for i in range(100)
            )
        elif action == "delete":
            store.delete("m-0")
    sys.exit(0)
    """
)


def kill_at(path: Path, marker: str, action: str = "open", occurrence: int = 1) -> None:
    """Run ``action`` on the store at ``path`` in a child killed at ``marker``'s occurrence."""
    completed = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), marker, str(occurrence), action],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    # 137: the child reached the statement and died there (0 would mean it never ran).
    assert (completed.returncode, completed.stderr) == (KILLED, "")


def assert_works(path: Path, *, memories: set[str]) -> None:
    """The store opens, holds exactly ``memories``, and indexes adds and deletes."""
    with hotmem.open_store(path) as store:
        assert {m.memory_id for m in store} == memories
        assert store.check_integrity() == ()
        store.add("Tungsten kettles boil at noon.", identifier="acme", memory_id="m-new")
        assert [r.memory_id for r in hotmem.search_memories(store, "tungsten noon")] == ["m-new"]
        # Found by its words, not only by its vector: the full-text index has it.
        assert hotmem.explain(store, "tungsten", "m-new").components.lexical_match
        assert store.check_integrity() == ()
        store.delete("m-new")
        assert store.check_integrity() == ()
    with hotmem.open_store(path) as store:
        assert store.connection.execute("SELECT count(*) FROM hotmem_fts_deferred").fetchone() == (
            0,
        )
        meta = dict(store.connection.execute("SELECT key, value FROM hotmem_meta"))
        assert meta == schema.expected_meta()


FIRST_OPEN = [
    ("CREATE TABLE hotmem_meta", 1),
    ("CREATE TABLE memories", 1),
    ("CREATE VIRTUAL TABLE memories_fts", 1),
    ("INSERT INTO hotmem_meta", 1),
    ("CREATE TRIGGER memories_fts_insert", 1),
    ("CREATE TRIGGER memories_fts_delete", 1),
    ("CREATE TRIGGER memories_fts_update", 1),
    ("COMMIT", 2),  # the setup transaction's (the first COMMIT ends the read check)
]


@pytest.mark.parametrize(("marker", "occurrence"), FIRST_OPEN)
def test_a_first_open_killed_at_any_statement_leaves_a_store_the_next_open_sets_up(
    tmp_path: Path, marker: str, occurrence: int
) -> None:
    path = tmp_path / "new.db"
    kill_at(path, marker, occurrence=occurrence)
    assert_works(path, memories=set())


def _store_with(path: Path, count: int) -> None:
    with hotmem.open_store(path) as store:
        store.add_many(
            {"memory_id": f"m-{i}", "identifier": "acme", "fact": f"Kept fact {i}."}
            for i in range(count)
        )


@pytest.mark.parametrize(
    ("action", "marker"),
    [
        ("add", "INSERT INTO memories ("),
        ("add", "COMMIT"),
        ("add_many", schema.DEFER_FTS.split("(")[0]),
        ("add_many", "INSERT INTO memories_fts (rowid, fact) SELECT"),
        ("add_many", schema.RESUME_FTS),
        ("delete", "DELETE FROM memories"),
    ],
)
def test_a_write_killed_midway_leaves_the_store_as_before(
    tmp_path: Path, action: str, marker: str
) -> None:
    path = tmp_path / "s.db"
    _store_with(path, 3)
    # The store's own open runs one COMMIT (its read check) before the write's.
    kill_at(path, marker, action, occurrence=2 if marker == "COMMIT" else 1)
    assert_works(path, memories={"m-0", "m-1", "m-2"})


@pytest.mark.parametrize(
    "marker",
    [
        "CREATE TABLE IF NOT EXISTS hotmem_fts_deferred",
        "DROP TRIGGER IF EXISTS",
        "INSERT OR REPLACE",
    ],
)
def test_a_migration_killed_midway_is_run_again_by_the_next_open(
    tmp_path: Path, marker: str
) -> None:
    path = tmp_path / "v1.db"
    v1_store.build(path, facts={"m-1": "Copper kettles boil fast."})
    kill_at(path, marker)
    connection = sqlite3.connect(path)
    assert connection.execute(
        "SELECT value FROM hotmem_meta WHERE key = 'schema_version'"
    ).fetchone() == ("1",)
    connection.close()
    assert_works(path, memories={"m-1"})


def test_a_completion_killed_while_rebuilding_the_index_is_run_again(tmp_path: Path) -> None:
    path = tmp_path / "half.db"
    steps = v1_store.STEPS.index("META") + 1  # tables and meta, no triggers
    v1_store.build(path, steps, facts={"m-1": "Copper kettles boil fast."})
    kill_at(path, "VALUES ('rebuild')")
    assert_works(path, memories={"m-1"})
    with hotmem.open_store(path) as store:
        assert [r.memory_id for r in hotmem.search_memories(store, "copper kettle")] == ["m-1"]
