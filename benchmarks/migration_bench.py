"""Migration benchmark: how long the first open of an older store takes, code against code.

Run: ``uv run python benchmarks/migration_bench.py --size 200000 --rounds 5 --src
/path/to/other/checkout/src --src src``

Builds, once, a store of ``--size`` synthetic memories (``benchmarks/synthetic.py``) at schema
version 4 (a store of this version with what the migration to 5 adds removed) and at version
1 (written with version 1's SQL, ``tests/hotmem/v1_store.py``, which migrates through every
version and rebuilds the lexical indexes). Then, for each round, each version and each
``--src`` in turn (interleaved, so that the machine's load falls on all alike), copies the store
to a new file and times ``hotmem.open_store(path).close()`` in a fresh process whose
``hotmem`` is imported from that ``src`` directory. Prints each time and a table of the
median and best. Figures are local diagnostics for this machine.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from synthetic import synthetic_memories  # noqa: E402

import hotmem  # noqa: E402
from tests.hotmem import v1_store  # noqa: E402

CHILD = """
import sys, time
sys.path.insert(0, sys.argv[2])
import hotmem
assert hotmem.__file__.startswith(sys.argv[2]), hotmem.__file__
start = time.perf_counter()
hotmem.open_store(sys.argv[1]).close()
print(time.perf_counter() - start)
"""


def as_version_4(source: Path, target: Path) -> None:
    """A copy of a store of version 5 without what the migration from 4 adds."""
    shutil.copy(source, target)
    connection = sqlite3.connect(target, isolation_level=None)
    connection.execute("BEGIN")
    for trigger in ("memories_changes_delete", "memories_changes_update", "hotmem_changes_prune"):
        connection.execute(f"DROP TRIGGER {trigger}")
    for table in ("hotmem_changes", "hotmem_index", "hotmem_index_postings"):
        connection.execute(f"DROP TABLE {table}")
    connection.execute("DELETE FROM hotmem_meta WHERE key = 'default_profile_spaces'")
    connection.execute("UPDATE hotmem_meta SET value = '4' WHERE key = 'schema_version'")
    connection.execute("COMMIT")
    connection.execute("VACUUM")
    connection.close()


def as_version_1(size: int, target: Path) -> None:
    """A store written by version 1's SQL, its memories added as version 1 added them."""
    v1_store.build(target)
    connection = sqlite3.connect(target, isolation_level=None)
    connection.execute("BEGIN")
    for memory in synthetic_memories(size):
        v1_store.insert(connection, memory["memory_id"], memory["fact"])
    connection.execute("COMMIT")
    connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--src", action="append", required=True, help="a checkout's src")
    args = parser.parse_args()
    sources = [str(Path(src).resolve()) for src in args.src]
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        current = directory / "v5.db"
        with hotmem.open_store(current) as store:
            store.add_many(synthetic_memories(args.size))
        stores = {4: directory / "v4.db", 1: directory / "v1.db"}
        as_version_4(current, stores[4])
        as_version_1(args.size, stores[1])
        times: dict[tuple[int, str], list[float]] = {}
        for round_ in range(args.rounds):
            for version, source in stores.items():
                for src in sources:
                    copy = directory / "migrating.db"
                    for side in ("", "-wal", "-shm"):
                        Path(f"{copy}{side}").unlink(missing_ok=True)
                    shutil.copy(source, copy)
                    out = subprocess.run(
                        [sys.executable, "-c", CHILD, str(copy), src],
                        capture_output=True,
                        text=True,
                        check=True,
                    ).stdout
                    seconds = float(out)
                    times.setdefault((version, src), []).append(seconds)
                    print(f"round {round_ + 1}: schema {version}, {src}: {seconds:.2f} s")
    print("\n| from schema | src | median (s) | best (s) | runs |\n|---|---|---:|---:|---:|")
    for (version, src), found in times.items():
        print(
            f"| {version} | `{src}` | {statistics.median(found):.2f} | {min(found):.2f} "
            f"| {len(found)} |"
        )


if __name__ == "__main__":
    main()
