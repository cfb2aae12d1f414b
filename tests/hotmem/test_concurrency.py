"""Many processes, one store: real processes (spawn), never threads.

Each test is one of the failures seen with several processes on one store: a search that
reads two states, a reader broken by a bulk write, openers of a new store racing each other,
a writer waiting behind a reader, and adds lost or refused under load.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hotmem
from tests.hotmem import workers

pytestmark = pytest.mark.slow

SPAWN = multiprocessing.get_context("spawn")
QUERIES = ["copper kettle boils", "How quickly does the kettle boil water?", "vendor invoices"]


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A store file with 3,000 memories, some of which share the churned words."""
    path = tmp_path / "shared.db"
    with hotmem.open_store(path) as store:
        store.add_many(
            {
                "memory_id": f"seed-{i:04d}",
                "identifier": "acme" if i % 3 else "beta",
                "fact": f"Kettle {i} of {'copper' if i % 10 else 'iron'} boils water; "
                f"vendor invoices {i} need approval.",
                "created_at": workers.CREATED,
            }
            for i in range(3000)
        )
    return path


@pytest.fixture
def churning(shared: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Path, Any]]:
    """A child process adding and deleting memories in ``shared`` for the whole test."""
    stop, ready, out = SPAWN.Event(), SPAWN.Event(), SPAWN.Queue()
    child = SPAWN.Process(
        target=workers.churn, args=(str(shared), stop, ready, out), kwargs=request.param
    )
    child.start()
    assert ready.wait(30), "the churning process did not start"
    yield shared, (stop, out)
    stop.set()
    child.join(30)


def _finish(handles: tuple[Any, Any]) -> tuple[int, list[str]]:
    stop, out = handles
    stop.set()
    _, rounds, errors = out.get(timeout=30)
    return rounds, errors


@pytest.mark.parametrize("churning", [{"bulk": 1}], indirect=True)
def test_searches_read_one_state_while_another_process_adds_and_deletes(
    churning: tuple[Path, Any],
) -> None:
    path, handles = churning
    errors = workers.search_loop(str(path), 2.5, QUERIES)
    rounds, writer_errors = _finish(handles)
    assert rounds > 0
    assert (errors, writer_errors) == ([], [])


@pytest.mark.parametrize("churning", [{"bulk": 64}], indirect=True)
def test_bulk_adds_do_not_disturb_readers_in_other_processes(
    churning: tuple[Path, Any],
) -> None:
    path, handles = churning
    errors = workers.search_loop(str(path), 2.5, QUERIES)
    rounds, writer_errors = _finish(handles)
    assert rounds > 0
    assert (errors, writer_errors) == ([], [])
    with hotmem.open_store(path) as store:
        assert store.check_integrity() == ()


def test_processes_opening_a_new_store_at_once_all_succeed(tmp_path: Path) -> None:
    processes, paths = 6, [str(tmp_path / f"new-{n}.db") for n in range(8)]
    barrier, out = SPAWN.Barrier(processes), SPAWN.Queue()
    children = [
        SPAWN.Process(target=workers.open_and_add, args=(paths, w, barrier, out))
        for w in range(processes)
    ]
    for child in children:
        child.start()
    results = [out.get(timeout=120) for _ in range(processes * len(paths))]
    for child in children:
        child.join(30)
    problems = [(path, error) for path, _, error in results if error is not None]
    for path in paths:
        with hotmem.open_store(path) as store:
            problems += [(path, problem) for problem in store.check_integrity()]
            for w in range(processes):
                hits = hotmem.search_memories(store, f"tungsten kettle {w}", limit=processes)
                if f"opener-{w}" not in {hit.memory_id for hit in hits}:
                    problems.append((path, f"opener-{w} is not found by search"))
                try:
                    store.delete(f"opener-{w}")  # deleting needs the memory to be indexed
                except Exception as exc:
                    problems.append((path, f"deleting opener-{w}: {type(exc).__name__}: {exc}"))
            problems += [(path, problem) for problem in store.check_integrity()]
    assert problems == []


def test_a_writer_does_not_wait_for_a_reader_and_the_reader_keeps_its_state(
    shared: Path,
) -> None:
    reading, written, out = SPAWN.Event(), SPAWN.Event(), SPAWN.Queue()
    reader = SPAWN.Process(
        target=workers.hold_read, args=(str(shared), reading, written, out), kwargs={"wait": 3.0}
    )
    reader.start()
    assert reading.wait(30)
    with hotmem.open_store(shared) as store:
        store.add("Written while another process reads.", identifier="acme", memory_id="new")
    written.set()
    saw_write, before, after, now = out.get(timeout=30)
    reader.join(30)
    # The write completed while the reader's transaction was still open, and the reader saw
    # one state throughout its transaction and the new one after it.
    assert (saw_write, before, after, now) == (True, 3000, 3000, 3001)


def test_a_write_lock_held_past_the_busy_timeout_is_a_store_error(shared: Path) -> None:
    holding, release = SPAWN.Event(), SPAWN.Event()
    holder = SPAWN.Process(
        target=workers.hold_write, args=(str(shared), holding, release), kwargs={"wait": 20.0}
    )
    holder.start()
    try:
        assert holding.wait(30)
        with hotmem.open_store(shared, busy_timeout=0.2) as store:
            with pytest.raises(hotmem.StoreError) as raised:
                store.add("Waits for the lock.", identifier="acme")
            assert str(raised.value) == (
                f"cannot write to store {str(shared)!r}: another connection held its write lock "
                "for longer than the busy timeout (0.2 s); expected the lock within the timeout, "
                "found 'database is locked'. Retry when the other writer is done, or open the "
                "store with a longer busy_timeout"
            )
            # Reading is never blocked by a writer.
            assert store.count() == 3000
            assert len(hotmem.search_memories(store, "copper kettle")) == 5
    finally:
        release.set()
        holder.join(30)


def test_single_and_batched_adds_from_several_processes_are_all_stored(shared: Path) -> None:
    start, out = SPAWN.Event(), SPAWN.Queue()
    plan = [(0, 300, 1), (1, 300, 1), (2, 300, 1), (3, 300, 50)]  # writer, count, batch
    children = [
        SPAWN.Process(target=workers.add_memories, args=(str(shared), w, n, b, start, out))
        for w, n, b in plan
    ]
    for child in children:
        child.start()
    start.set()
    results = [out.get(timeout=120) for _ in children]
    for child in children:
        child.join(30)
    acknowledged = {memory_id for _, ids, _ in results for memory_id in ids}
    assert [errors for _, _, errors in results] == [[], [], [], []]
    assert len(acknowledged) == 1200
    with hotmem.open_store(shared) as store:
        stored = {m.memory_id for m in store if m.memory_id.startswith("w")}
        assert stored == acknowledged
        assert store.check_integrity() == ()
        fts_rows = store.connection.execute("SELECT count(*) FROM memories_fts_docsize")
        assert fts_rows.fetchone()[0] == 4200
