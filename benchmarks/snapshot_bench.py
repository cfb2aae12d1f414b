"""Snapshot v2 speed benchmark: snapshot, verify and hydrate at 10k and 100k memories.

Run: ``uv run python benchmarks/snapshot_bench.py [--sizes 10000 100000] [--repeats 3]
[--semantic]``

For each size a source store is filled with ``synthetic_memories``, each given a distinct
``created_at`` as in a real store (not timed). Then, each the
best of ``--repeats`` runs (the machine has 2 cores and other work may run beside it):

- snapshot: ``store.snapshot(path)``, in records/s and package MB/s (10^6 bytes);
- verify: ``hotmem.verify_snapshot(path)``, records/s (every record parsed and validated);
- hydrate: ``hotmem.hydrate(path, target)`` into a new file, records/s (vectors reused);
- raw load: for context, a bare SQLite bulk insert of the same rows plus one FTS5 rebuild;
- peak memory: each operation once more in a fresh child process, which reports its peak
  resident set (``VmHWM``) minus its resident set before the operation, and its time (for
  hydrate: ``hydrate, fresh process``, which includes hashing the model files of a carried
  space to compare its identity; the model itself is never loaded to carry vectors);
- cold start: from just before spawning ``python -c "import hotmem; open; search"`` to the
  first result read back, against the hydrated store; Python's bare startup (``-c pass``)
  and ``import hotmem`` alone are given for context.

``--semantic`` gives the source store the semantic space (``all-minilm-l6-v2``, 384 float32
a vector, the ``semantic`` extra) as well. Its vectors are synthesised cheaply: the real model
embeds the first 2,000 facts and memory ``n`` gets vector ``n mod 2000`` (embedding 100,000
facts would take some 15 minutes here and change nothing measured: the package stores vectors
as they are). Hydration then carries them (the target has the same model), and the raw load
inserts them too.

``--compression`` prints instead the bytes and deflate speeds of the records and vectors at
each deflate level (the measurement behind the format's choice of levels).

``--public-python`` (the public HotMem 0.2.3's interpreter, in a virtualenv outside this
repository, as ``cold_start.py`` says) prints instead hydrate and verify against it, in CPU
time: at each size, our package of the memories and the public HotMem's v2 package of the
same memories (its ``hotmem.snapshot.snapshot``) are made once; then each run is a fresh
child process timed with ``time.process_time`` around the operation alone, the runs
interleaved ``--repeats`` times, and the medians reported with the peak resident memory the
operation added (``VmHWM`` minus ``VmRSS`` before). Ours: ``hotmem.hydrate`` into a new file,
``hotmem.verify_snapshot`` and ``verify_snapshot(digests_only=True)``; the public HotMem:
``hotmem.snapshot.hydrate`` into a new ``MemoryDB`` and ``hotmem.snapshot.reader.
verify_manifest`` (its verify: sizes and SHA-256s of the members); raw SQLite: ``raw_load``
of our rows (read from the store before the clock starts); the raw read, a verify's floor:
``raw_read`` of our package (every member inflated, CRC-checked and hashed, one JSON parse of
each records member, no value checked). ``--before-src`` adds our code at
another commit (a ``src`` directory), run with it first on ``PYTHONPATH``.

Figures are local diagnostics for this machine, not guarantees.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import synthetic_memories, synthetic_queries

import hotmem
from hotmem.embedding.hash_v1 import embed_bytes
from hotmem.models import format_timestamp
from hotmem.snapshot import format as fmt
from hotmem.store import schema, spaces
from hotmem.store import setup as storage

COLD_START = """
import sys, time
import hotmem
with hotmem.open_store(sys.argv[1]) as store:
    results = hotmem.search_memories(store, sys.argv[2])
print(len(results), flush=True)
"""


def best(
    repeats: int, run: Callable[[], None], prepare: Callable[[], None] = lambda: None
) -> float:
    """Fastest wall time of ``repeats`` runs, each after ``prepare`` (not timed)."""
    times = []
    for _ in range(repeats):
        if prepare is not None:
            prepare()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def remove(*paths: Path) -> Callable[[], None]:
    def prepare() -> None:
        for path in paths:
            path.unlink(missing_ok=True)

    return prepare


SEMANTIC_MODEL = "all-minilm-l6-v2"
REAL_VECTORS = 2_000


def add_synthesised_space(path: Path) -> list[bytes]:
    """Give the store at ``path`` the semantic space, with ``REAL_VECTORS`` real embeddings
    reused in turn (see the module docstring); return the vectors in rowid order."""
    embedder = hotmem.get_embedder(SEMANTIC_MODEL)
    connection = storage.connect(path)
    try:
        facts = [
            row[0]
            for row in connection.execute(
                "SELECT fact FROM memories ORDER BY rowid LIMIT ?", (REAL_VECTORS,)
            )
        ]
        real = embedder.embed_many(facts)
        count = connection.execute("SELECT count(*) FROM memories").fetchone()[0]
        vectors = [real[i % len(real)] for i in range(count)]
        connection.execute("BEGIN")
        spaces.write_space(connection, spaces.space_of(embedder))
        rowids = [row[0] for row in connection.execute("SELECT rowid FROM memories ORDER BY rowid")]
        spaces.insert_vectors(connection, SEMANTIC_MODEL, zip(rowids, vectors, strict=True))
        connection.execute("COMMIT")
    finally:
        connection.close()
    return vectors


def raw_load(rows: list[tuple], path: Path, space_rows: list[tuple] | None = None) -> None:
    """A bare bulk load: the same rows (and space vectors), one transaction, one FTS5 rebuild,
    no checks."""
    connection = storage.connect(path)
    connection.execute("PRAGMA journal_mode = OFF")
    connection.execute("PRAGMA synchronous = OFF")
    storage.initialise(connection, with_triggers=False)
    connection.execute("BEGIN")
    connection.executemany(
        "INSERT INTO memories (memory_id, identifier, fact, importance, tags, created_at, "
        "embedding) VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    if space_rows:
        connection.executemany(
            "INSERT INTO space_vectors (space, memory_rowid, vector) VALUES (?, ?, ?)", space_rows
        )
    connection.execute("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')")
    connection.execute("COMMIT")
    connection.executescript(schema.CREATE_FTS_TRIGGERS)
    connection.close()


def raw_read(package: Path) -> None:
    """The floor of a verify that checks every record: every member read whole by
    ``zipfile`` (which inflates it and checks its CRC-32), its SHA-256, and one
    ``json.loads`` of each records member's lines as one array; no check of any value."""
    with zipfile.ZipFile(package) as archive:
        for name in archive.namelist():
            data = archive.read(name)
            hashlib.sha256(data).hexdigest()
            if name.endswith(".jsonl"):
                json.loads(b"[" + data.rstrip(b"\n").replace(b"\n", b",") + b"]")


def child_peak(
    operation: str, *paths: Path, env: dict[str, str] | None = None
) -> tuple[float, float, float]:
    """Peak resident MiB an operation adds, its seconds and its CPU seconds, measured in a
    fresh process (which loads any embedder the operation needs: hydrate with a carried space
    does); ``env``: the child's environment."""
    completed = subprocess.run(
        [sys.executable, __file__, "--child", operation, *map(str, paths)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    kib, seconds, cpu = completed.stdout.split()
    return float(kib) / 1024, float(seconds), float(cpu)


def _status_kib(field: str) -> int:
    # Linux's per-process high-water mark. ru_maxrss would not do: Linux carries it over
    # execve, so a child spawned by a large parent starts with the parent's peak.
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def run_child(operation: str, paths: list[str]) -> None:
    """In a child process: run one operation, print the peak RSS it added (KiB) and its
    seconds."""
    rows: list[tuple] = []
    if operation == "raw":  # the rows, read before the clock starts
        with hotmem.open_store(paths[0]) as store:
            rows = store.connection.execute(
                "SELECT memory_id, identifier, fact, importance, tags, created_at, embedding "
                "FROM memories ORDER BY memory_id"
            ).fetchall()
    # The functions are looked up (their modules imported) before the clock starts, as the
    # public HotMem's child imports its own: the modules they import as they run are timed.
    verify_snapshot, hydrate = hotmem.verify_snapshot, hotmem.hydrate
    before = _status_kib("VmRSS")
    start, cpu = time.perf_counter(), time.process_time()
    if operation == "snapshot":
        with hotmem.open_store(paths[0]) as store:
            store.snapshot(paths[1], overwrite=True)
    elif operation.startswith("verify"):
        options = {"digests_only": True} if operation == "verify-digests" else {}
        if not verify_snapshot(paths[0], **options).ok:
            raise RuntimeError(f"{paths[0]} did not verify")
    elif operation == "raw":
        raw_load(rows, Path(paths[1]))
    elif operation == "raw-read":
        raw_read(Path(paths[0]))
    else:
        Path(paths[1]).unlink(missing_ok=True)
        hydrate(paths[0], paths[1])
    cpu = time.process_time() - cpu
    print(_status_kib("VmHWM") - before, time.perf_counter() - start, cpu)


# Run by the public HotMem's interpreter: argv = operation, package directory, target.
PUBLIC_CHILD = """
import sys, time
from hotmem.db import MemoryDB
from hotmem.snapshot import hydrate
from hotmem.snapshot.reader import verify_manifest
def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
operation, package, target = sys.argv[1:4]
before = status("VmRSS")
start, cpu = time.perf_counter(), time.process_time()
if operation == "hydrate":
    db = MemoryDB(target)
    loaded = hydrate(db, package).loaded
    db.close()
else:
    verify_manifest(package)
cpu = time.process_time() - cpu
print(status("VmHWM") - before, time.perf_counter() - start, cpu)
"""

# Run by the public HotMem's interpreter: load the facts (JSONL), write its v2 package.
PUBLIC_PACKAGE = """
import sys
from hotmem.db import MemoryDB
from hotmem.snapshot import snapshot
from hotmem.swap import hydrate
facts, store, package = sys.argv[1:4]
db = MemoryDB(store)
hydrate(db, facts)
snapshot(db, package)
db.close()
"""


def _compiled_env(tree: Path, pycache: Path) -> dict[str, str]:
    """The environment of a child that imports ``tree`` (a ``src`` directory), its modules
    compiled beforehand into ``pycache``: a tree without compiled modules (``git archive``'s)
    would compile them in the child, before the clock but raising the resident memory its
    peak is measured from (1.2-1.9 MiB on hydrate's)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": str(pycache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = [sys.executable, "-m", "compileall", "-q", str(tree)]
    subprocess.run(argv, check=True, capture_output=True, env=env)
    return env


def versus_public(args: argparse.Namespace) -> None:
    """The ``--public-python`` table: hydrate and verify, ours against the public HotMem."""
    with tempfile.TemporaryDirectory() as pycache:
        _versus_public(args, Path(pycache))


def _versus_public(args: argparse.Namespace, pycache: Path) -> None:
    here = Path(__file__).resolve().parents[1]
    ours = _compiled_env(here / "src", pycache / "ours")
    before = ours
    if args.before_src:
        before = _compiled_env(Path(args.before_src).resolve(), pycache / "before")
    public_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # its own hotmem
    print(
        "| memories | operation | implementation | CPU median (s) | wall median (s) "
        "| peak added (MiB) | runs, CPU (s) |"
    )
    print("|---:|---|---|---:|---:|---:|---|")
    for size in args.sizes:
        memories = memories_with_distinct_times(size)
        with tempfile.TemporaryDirectory() as tmp:
            directory = Path(tmp)
            source, package = directory / "s.db", directory / "p.zip"
            with hotmem.open_store(source) as store:
                store.add_many(memories)
                store.snapshot(package)
            facts, public = directory / "public.jsonl", directory / "public-package"
            with facts.open("w") as out:
                for m in memories:
                    record = {"id": m["memory_id"], "identifier": m["identifier"]}
                    record |= {"fact_text": m["fact"], "importance": m["importance"]}
                    out.write(json.dumps({**record, "created_at": m["created_at"]}) + "\n")
            argv = [args.public_python, "-c", PUBLIC_PACKAGE, str(facts)]
            subprocess.run([*argv, str(directory / "public.db"), str(public)], check=True,
                           capture_output=True, cwd=directory, env=public_env)  # fmt: skip
            target = directory / "t.db"
            runs: list[tuple[str, str, list[str], dict[str, str] | None]] = [
                ("hydrate", "ours", ["hydrate", str(package), str(target)], ours),
                ("hydrate", "raw SQLite load", ["raw", str(source), str(target)], ours),
                ("verify", "ours, every record", ["verify", str(package)], ours),
                ("verify", "ours, --digests-only", ["verify-digests", str(package)], ours),
                ("verify", "raw: every byte, one JSON parse", ["raw-read", str(package)], ours),
            ]
            if args.before_src:
                runs.insert(1, ("hydrate", "ours, before", ["hydrate", *runs[0][2][1:]], before))
                digests = ["verify-digests", str(package)]
                runs.append(
                    ("verify", "ours, before, every record", ["verify", str(package)], before)
                )
                runs.append(("verify", "ours, before, --digests-only", digests, before))
            runs += [
                (
                    "hydrate",
                    "public HotMem 0.2.3",
                    ["public", "hydrate", str(public), str(target)],
                    None,
                ),
                ("verify", "public HotMem 0.2.3", ["public", "verify", str(public), "-"], None),
            ]
            found: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
            for _ in range(args.repeats):
                for operation, name, child, env in runs:
                    for leftover in (target, Path(f"{target}-wal"), Path(f"{target}-shm")):
                        leftover.unlink(missing_ok=True)
                    if child[0] == "public":
                        done = subprocess.run(
                            [args.public_python, "-c", PUBLIC_CHILD, *child[1:]],
                            capture_output=True, text=True, check=True, cwd=directory,
                            env=public_env,
                        )  # fmt: skip
                        kib, wall, cpu = map(float, done.stdout.split())
                        measured = (kib / 1024, wall, cpu)
                    else:
                        measured = child_peak(child[0], *map(Path, child[1:]), env=env)
                    found.setdefault((operation, name), []).append(measured)
            for (operation, name), results in found.items():
                cpus = [cpu for _, _, cpu in results]
                walls = [wall for _, wall, _ in results]
                peak = statistics.median(mib for mib, _, _ in results)
                shown = ", ".join(f"{cpu:.3f}" for cpu in cpus)
                print(
                    f"| {size:,} | {operation} | {name} | {statistics.median(cpus):.3f} "
                    f"| {statistics.median(walls):.3f} | {peak:.1f} | {shown} |",
                    flush=True,
                )


def cold_start(argv: list[str], repeats: int, pycache: Path) -> float:
    """Fastest time from spawning ``argv`` to reading its first output line.

    The child may cache compiled bytecode (in a private directory), as an installed package
    has it: ``PYTHONDONTWRITEBYTECODE`` would make every run compile HotMem from source.
    """
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(pycache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    times = []
    for _ in range(repeats + 1):  # the first run fills the bytecode cache
        start = time.perf_counter()
        with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env) as process:
            assert process.stdout is not None
            process.stdout.readline()
            times.append(time.perf_counter() - start)
    return min(times[1:])


def memories_with_distinct_times(size: int) -> list[dict]:
    """``synthetic_memories`` with a distinct ``created_at`` each, as a real store has."""
    memories = synthetic_memories(size)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for i, memory in enumerate(memories):
        memory["created_at"] = format_timestamp(start + timedelta(seconds=37 * i, microseconds=i))
    return memories


def bench(size: int, repeats: int, *, semantic: bool = False) -> dict[str, float]:
    memories = memories_with_distinct_times(size)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        source, package, target = directory / "s.db", directory / "p.zip", directory / "t.db"
        with hotmem.open_store(source) as store:
            store.add_many(memories)
        vectors = add_synthesised_space(source) if semantic else []
        with hotmem.open_store(source) as store:
            snapshot_s = best(repeats, lambda: store.snapshot(package, overwrite=True))
        verify_s = best(repeats, lambda: hotmem.verify_snapshot(package))
        hydrate_s = best(repeats, lambda: hotmem.hydrate(package, target), remove(target))
        rows = [
            (
                m["memory_id"],
                m["identifier"],
                m["fact"],
                m["importance"],
                json.dumps(m["tags"], ensure_ascii=False),
                m["created_at"],
                embed_bytes(m["fact"]),
            )
            for m in sorted(memories, key=lambda m: m["memory_id"])
        ]
        # The raw load inserts in memory_id order: rowid n + 1 is the n-th memory by id.
        with hotmem.open_store(source) as store:
            by_id = [
                row[0]
                for row in store.connection.execute("SELECT rowid FROM memories ORDER BY memory_id")
            ]
        space_rows = (
            [(SEMANTIC_MODEL, n + 1, vectors[rowid - 1]) for n, rowid in enumerate(by_id)]
            if semantic
            else None
        )
        raw = directory / "raw.db"
        raw_s = best(repeats, lambda: raw_load(rows, raw, space_rows), remove(raw))
        peaks = {
            "snapshot": child_peak("snapshot", source, directory / "child.zip"),
            "verify": child_peak("verify", package),
            "hydrate": child_peak("hydrate", package, directory / "child.db"),
        }
        query = synthetic_queries(1)[0]
        python = [sys.executable, "-c"]
        argv = [*python, COLD_START, str(target), query]
        cold_s = cold_start(argv, repeats + 2, directory / "pycache")
        size_bytes = package.stat().st_size
    return {
        "size": size,
        "package_bytes": size_bytes,
        "bytes_per_record": size_bytes / size,
        "snapshot_rps": size / snapshot_s,
        "snapshot_mbps": size_bytes / snapshot_s / 1e6,
        "verify_rps": size / verify_s,
        "hydrate_rps": size / hydrate_s,
        "raw_rps": size / raw_s,
        "peak_snapshot_mib": peaks["snapshot"][0],
        "peak_verify_mib": peaks["verify"][0],
        "peak_hydrate_mib": peaks["hydrate"][0],
        "fresh_hydrate_rps": size / peaks["hydrate"][1],
        "cold_start_s": cold_s,
    }


def compression_table(size: int, repeats: int) -> None:
    """Member bytes and deflate speeds per level, for the records and the vectors of a store."""
    memories = memories_with_distinct_times(size)
    with tempfile.TemporaryDirectory() as tmp, hotmem.open_store(Path(tmp) / "s.db") as store:
        store.add_many(memories)
        store.snapshot(Path(tmp) / "p.zip")
        with zipfile.ZipFile(Path(tmp) / "p.zip") as archive:
            kinds = {"records": b"", "vectors": b""}
            for name in archive.namelist()[1:]:
                kinds[name.split("/")[0]] += archive.read(name)
    print(f"| {size:,} memories | level | bytes | ratio | deflate (MB/s) | inflate (MB/s) |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind, data in kinds.items():
        print(f"| {kind} | stored | {len(data):,} | 1.000 | | |")
        for level in (1, 6, 9):
            packed = fmt.compress(data, level)
            pack_s = best(repeats, lambda: fmt.compress(data, level))  # noqa: B023
            inflate_s = best(repeats, lambda: zlib.decompress(packed, -15))  # noqa: B023
            print(
                f"| {kind} | {level} | {len(packed):,} | {len(packed) / len(data):.3f} "
                f"| {len(data) / pack_s / 1e6:.0f} | {len(data) / inflate_s / 1e6:.0f} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--compression", action="store_true", help="print the deflate level table instead"
    )
    parser.add_argument(
        "--semantic",
        action="store_true",
        help="give the store the semantic space too (synthesised vectors; the semantic extra)",
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--public-python", help="hydrate and verify against the public HotMem")
    parser.add_argument("--before-src", help="with --public-python: our src at another commit")
    args = parser.parse_args()
    if args.child:
        run_child(args.child[0], args.child[1:])
        return
    if args.public_python:
        versus_public(args)
        return
    if args.compression:
        compression_table(args.sizes[-1], args.repeats)
        return
    with tempfile.TemporaryDirectory() as pycache:
        bare = cold_start([sys.executable, "-c", "print(flush=True)"], 7, Path(pycache))
        argv = [sys.executable, "-c", "import hotmem; print(flush=True)"]
        imported = cold_start(argv, 7, Path(pycache))
    print(
        "| memories | package (bytes) | bytes/record | snapshot (rec/s) | snapshot (MB/s) "
        "| verify (rec/s) "
        "| hydrate (rec/s) | hydrate, fresh process (rec/s) | raw SQLite load (rec/s) "
        "| peak RSS snapshot / verify / hydrate (MiB) "
        "| cold start to first result (s) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in args.sizes:
        r = bench(size, args.repeats, semantic=args.semantic)
        print(
            f"| {r['size']:,} | {r['package_bytes']:,} | {r['bytes_per_record']:,.0f} "
            f"| {r['snapshot_rps']:,.0f} "
            f"| {r['snapshot_mbps']:.1f} | {r['verify_rps']:,.0f} | {r['hydrate_rps']:,.0f} "
            f"| {r['fresh_hydrate_rps']:,.0f} "
            f"| {r['raw_rps']:,.0f} | {r['peak_snapshot_mib']:.1f} / {r['peak_verify_mib']:.1f} "
            f"/ {r['peak_hydrate_mib']:.1f} | {r['cold_start_s']:.3f} |",
            flush=True,
        )
    print(
        f"\nBest of {args.repeats} runs each (cold start: best of {args.repeats + 2}). "
        f"Python bare startup {bare:.3f} s; startup plus `import hotmem` {imported:.3f} s."
    )


if __name__ == "__main__":
    main()
