"""Code that runs in the child processes of the multi-process tests (importable under spawn).

Every worker reports through a queue: the exceptions it saw as ``"Class: message"`` strings,
so that the test process can assert on them, and never raises past its own loop.
"""

from __future__ import annotations

import time
from typing import Any

import hotmem

CREATED = "2026-01-01T00:00:00Z"


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def churn(path: str, stop: Any, ready: Any, out: Any, *, bulk: int = 1) -> None:
    """Add and delete memories about copper kettles until ``stop`` is set.

    With ``bulk > 1`` the adds are ``add_many`` batches of that size (the bulk path), and
    nothing is deleted (so that bulk writes are as frequent as they can be).
    """
    errors: list[str] = []
    rounds = 0
    with hotmem.open_store(path) as store:
        ready.set()
        while not stop.is_set():
            batch = [
                {
                    "memory_id": f"churn-{rounds}-{i}",
                    "identifier": "acme" if i % 2 else "beta",
                    "fact": f"Copper kettle number {rounds} {i} boils water quickly.",
                    "created_at": CREATED,
                }
                for i in range(bulk)
            ]
            try:
                if bulk == 1:
                    store.add(**batch[0])
                    store.delete(batch[0]["memory_id"])
                else:
                    store.add_many(batch)
            except Exception as exc:
                errors.append(_error(exc))
            rounds += 1
    out.put(("churn", rounds, errors))


def open_and_add(paths: list[str], worker: int, barrier: Any, out: Any) -> None:
    """For each (new) store in ``paths``: wait until every worker is ready, then open it and
    add one memory; report ``(path, worker, error or None)``."""
    for path in paths:
        barrier.wait()
        try:
            with hotmem.open_store(path) as store:
                store.add(
                    f"Tungsten kettle {worker} boils at noon.",
                    identifier="acme",
                    memory_id=f"opener-{worker}",
                    created_at=CREATED,
                )
        except Exception as exc:
            out.put((path, worker, _error(exc)))
        else:
            out.put((path, worker, None))


def hold_read(path: str, reading: Any, written: Any, out: Any, *, wait: float) -> None:
    """Hold one read transaction open while another process writes; report what it saw."""
    with hotmem.open_store(path) as store:
        connection = store.connection
        connection.execute("BEGIN")
        before = connection.execute("SELECT count(*) FROM memories").fetchone()[0]
        reading.set()
        saw_write = written.wait(wait)
        after = connection.execute("SELECT count(*) FROM memories").fetchone()[0]
        connection.execute("COMMIT")
        now = connection.execute("SELECT count(*) FROM memories").fetchone()[0]
    out.put((saw_write, before, after, now))


def hold_write(path: str, holding: Any, release: Any, *, wait: float) -> None:
    """Hold the store's write lock (an open write transaction) until ``release`` or ``wait``."""
    with hotmem.open_store(path) as store:
        store.connection.execute("BEGIN IMMEDIATE")
        holding.set()
        release.wait(wait)
        store.connection.execute("ROLLBACK")


def add_memories(path: str, writer: int, count: int, batch: int, start: Any, out: Any) -> None:
    """Add ``count`` memories with ids ``w{writer}-{i}``, one by one or in batches."""
    acknowledged: list[str] = []
    errors: list[str] = []
    memories = [
        {
            "memory_id": f"w{writer}-{i:05d}",
            "identifier": f"org-{i % 7}",
            "fact": f"Writer {writer} records vendor invoice {i} for approval.",
            "created_at": CREATED,
        }
        for i in range(count)
    ]
    start.wait()
    try:
        with hotmem.open_store(path) as store:
            for first in range(0, count, batch):
                chunk = memories[first : first + batch]
                try:
                    if batch == 1:
                        store.add(**chunk[0])
                    else:
                        store.add_many(chunk)
                except Exception as exc:
                    errors.append(_error(exc))
                else:
                    acknowledged.extend(m["memory_id"] for m in chunk)
    except Exception as exc:  # opening or closing failed
        errors.append(_error(exc))
    out.put((writer, acknowledged, errors))


def search_loop(path: str, seconds: float, queries: list[str]) -> list[str]:
    """Search (and explain the top hit) for ``seconds``; return the errors seen."""
    errors: list[str] = []
    deadline = time.monotonic() + seconds
    with hotmem.open_store(path) as store:
        i = 0
        while time.monotonic() < deadline:
            query = queries[i % len(queries)]
            i += 1
            try:
                results = hotmem.search_memories(store, query, limit=10)
                if results:
                    hotmem.explain(store, query, results[-1].memory_id)
            except hotmem.MemoryNotFoundError:
                pass  # the memory was deleted between the two calls: a correct answer
            except Exception as exc:
                errors.append(_error(exc))
    return errors
