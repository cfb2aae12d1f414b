"""Concurrency benchmark: N writer processes and one reader process share one store file.

Run: ``uv run python benchmarks/concurrency_bench.py [--writers 4] [--adds 5000] [--batch 100]``

Each scenario starts from a new store file (created by this process before the workers start),
then spawns ``--writers`` processes that add memories with distinct ids, either one ``add`` at a
time (``single``) or ``add_many`` batches of ``--batch`` (``batched``), while one reader process
runs ``search_memories`` in a loop until the writers are done. Every process uses only the
public API. The table reports, per scenario:

- adds attempted / acknowledged (the call returned) / stored (found in the store afterwards);
  ``lost`` counts acknowledged memories not stored, ``phantom`` stored ones never acknowledged;
- errors: every exception the writers and the reader saw (listed after the table by class
  and message);
- throughput: acknowledged adds per second of the writers' wall-clock time (first start to
  last finish);
- reader: searches completed under write load and their p50 / p95 latency in ms.

A further scenario, ``single, no reader`` with one writer, is single-add throughput alone.

``--bulk-rows N`` times instead, for N pre-embedded rows inserted in one transaction, the ways
of keeping the full-text index in step during a bulk write (best of 3): the per-row trigger
alone; dropping the trigger and indexing the batch in one statement (schema 1, which broke
readers in other processes); and the deferral row of schema 2 (the trigger stays, its
``WHEN`` condition skips the batch, which is indexed in one statement).

Figures are local diagnostics for this machine, not guarantees.
"""

from __future__ import annotations

import argparse
import multiprocessing
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import synthetic_memories, synthetic_queries

import hotmem

_CREATED = "2026-01-01T00:00:00Z"


def _error(exc: BaseException) -> str:
    first = (str(exc).splitlines() or [""])[0]
    # Numbers vary from one failure to the next (a rowid, a time); group by the message's shape.
    return f"{type(exc).__name__}: {re.sub(r'[0-9]+', 'N', first)[:120]}"


def _writer(path: str, writer: int, adds: int, batch: int, start: Any, out: Any) -> None:
    memories = synthetic_memories(adds, seed=writer)
    for i, memory in enumerate(memories):
        memory["memory_id"] = f"w{writer}-{i:07d}"
    acknowledged: list[str] = []
    errors: Counter[str] = Counter()
    start.wait()
    began = time.perf_counter()
    try:
        with hotmem.open_store(path) as store:
            if batch <= 1:
                for memory in memories:
                    try:
                        store.add(
                            memory["fact"],
                            identifier=memory["identifier"],
                            importance=memory["importance"],
                            tags=memory["tags"],
                            memory_id=memory["memory_id"],
                            created_at=_CREATED,
                        )
                    except Exception as exc:  # every failure is counted, not hidden
                        errors[_error(exc)] += 1
                    else:
                        acknowledged.append(memory["memory_id"])
            else:
                for first in range(0, adds, batch):
                    chunk = memories[first : first + batch]
                    try:
                        store.add_many(chunk)
                    except Exception as exc:
                        errors[_error(exc)] += len(chunk)
                    else:
                        acknowledged.extend(m["memory_id"] for m in chunk)
    except Exception as exc:  # the open itself failed
        errors[_error(exc)] += adds - len(acknowledged)
    out.put(("writer", began, time.perf_counter(), acknowledged, dict(errors)))


def _reader(path: str, start: Any, stop: Any, out: Any) -> None:
    queries = synthetic_queries(200)
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    start.wait()
    with hotmem.open_store(path) as store:
        i = 0
        while not stop.is_set():
            query = queries[i % len(queries)]
            i += 1
            began = time.perf_counter()
            try:
                hotmem.search_memories(store, query, limit=5)
            except Exception as exc:
                errors[_error(exc)] += 1
            else:
                latencies.append((time.perf_counter() - began) * 1000)
    out.put(("reader", latencies, dict(errors)))


def _quantile(samples: list[float], q: float) -> float:
    if len(samples) < 2:
        return samples[0] if samples else float("nan")
    return statistics.quantiles(sorted(samples), n=100, method="inclusive")[int(q * 100) - 1]


def scenario(writers: int, adds: int, batch: int, *, reader: bool, seed: int) -> dict[str, Any]:
    """Run one scenario in a new store; return its figures."""
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "shared.db")
        with hotmem.open_store(path) as store:  # a few memories so that searches have work
            store.add_many(synthetic_memories(1000, seed=seed))
        start, stop, out = ctx.Event(), ctx.Event(), ctx.Queue()
        procs = [
            ctx.Process(target=_writer, args=(path, w, adds, batch, start, out))
            for w in range(writers)
        ]
        if reader:
            procs.append(ctx.Process(target=_reader, args=(path, start, stop, out)))
        for proc in procs:
            proc.start()
        time.sleep(1.0)  # let every process import hotmem before the clock starts
        start.set()
        results = [out.get() for _ in range(writers)]
        stop.set()
        reader_result = out.get() if reader else ("reader", [], {})
        for proc in procs:
            proc.join()
        with hotmem.open_store(path) as store:
            stored = {m.memory_id for m in store if m.memory_id.startswith("w")}
    acknowledged = {memory_id for r in results for memory_id in r[3]}
    errors: Counter[str] = Counter()
    for r in results:
        errors.update(r[4])
    writer_errors = sum(errors.values())
    errors.update({f"reader {k}": v for k, v in reader_result[2].items()})
    elapsed = max(r[2] for r in results) - min(r[1] for r in results)
    latencies = reader_result[1]
    return {
        "mode": ("single" if batch <= 1 else f"batched ({batch})")
        + ("" if reader else ", no reader"),
        "writers": writers,
        "attempted": writers * adds,
        "acknowledged": len(acknowledged),
        "stored": len(stored),
        "lost": len(acknowledged - stored),
        "phantom": len(stored - acknowledged),
        "errors": errors,
        "writer_errors": writer_errors,
        "reader_errors": sum(reader_result[2].values()),
        "adds_per_s": len(acknowledged) / elapsed,
        "searches": len(latencies),
        "p50": _quantile(latencies, 0.50),
        "p95": _quantile(latencies, 0.95),
    }


def _bulk(connection: Any, rows: list[tuple[Any, ...]], mechanism: str) -> None:
    from hotmem.store import schema  # the bulk part needs schema 2 (the process part runs on any)

    insert = (
        "INSERT INTO memories (memory_id, identifier, fact, importance, tags, created_at, "
        "embedding) VALUES (?, ?, ?, ?, ?, ?, ?)"
    )
    connection.execute("BEGIN IMMEDIATE")
    if mechanism == "drop":
        connection.execute("DROP TRIGGER memories_fts_insert")
    elif mechanism == "defer":
        connection.execute(schema.DEFER_FTS, (0,))
    connection.executemany(insert, rows)
    if mechanism != "trigger":
        connection.execute(schema.INDEX_ROWS_AFTER, (0,))
    if mechanism == "drop":
        connection.execute(schema.CREATE_INSERT_TRIGGER)
    elif mechanism == "defer":
        connection.execute(schema.RESUME_FTS)
    connection.execute("COMMIT")


def bulk_mechanisms(count: int) -> None:
    """Print rows/s of each way of indexing a bulk write (see the module docstring)."""
    from hotmem.models import memory_from_mapping
    from hotmem.store.rows import memory_row

    rows = [memory_row(memory_from_mapping(m)) for m in synthetic_memories(count)]
    names = {
        "trigger": "trigger per row",
        "drop": "drop the trigger, index in one statement (schema 1)",
        "defer": "deferral row, index in one statement (schema 2)",
    }
    print(f"| bulk write of {count:,} rows | rows/s (best of 3) |")
    print("|---|---:|")
    for mechanism, name in names.items():
        best = float("inf")
        for _ in range(3):
            with tempfile.TemporaryDirectory() as tmp, hotmem.open_store(Path(tmp) / "b.db") as s:
                began = time.perf_counter()
                _bulk(s.connection, rows, mechanism)
                best = min(best, time.perf_counter() - began)
                if s.check_integrity() != ():
                    raise RuntimeError(f"{mechanism}: the index is not in step")
        print(f"| {name} | {count / best:,.0f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--adds", type=int, default=5000, help="adds per writer")
    parser.add_argument("--batch", type=int, default=100, help="add_many size when batched")
    parser.add_argument("--bulk-rows", type=int, help="time the bulk indexing mechanisms instead")
    args = parser.parse_args()
    if args.bulk_rows:
        bulk_mechanisms(args.bulk_rows)
        return
    scenarios = [
        (1, args.adds, 1, False),
        (args.writers, args.adds, 1, True),
        (args.writers, args.adds, args.batch, True),
    ]
    print(
        "| scenario | writers | attempted | acknowledged | stored | lost | phantom "
        "| writer errors | adds/s | reader searches | reader errors | reader p50 (ms) "
        "| reader p95 (ms) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    all_errors: Counter[str] = Counter()
    for seed, (writers, adds, batch, reader) in enumerate(scenarios, start=100):
        r = scenario(writers, adds, batch, reader=reader, seed=seed)
        all_errors.update(r["errors"])
        print(
            f"| {r['mode']} | {r['writers']} | {r['attempted']:,} | {r['acknowledged']:,} "
            f"| {r['stored']:,} | {r['lost']} | {r['phantom']} | {r['writer_errors']} "
            f"| {r['adds_per_s']:,.0f} | {r['searches']:,} | {r['reader_errors']} "
            f"| {r['p50']:.1f} | {r['p95']:.1f} |",
            flush=True,
        )
    for message, count in sorted(all_errors.items()):
        print(f"- {count} x {message}")


if __name__ == "__main__":
    main()
