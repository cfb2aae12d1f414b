"""Import memory benchmark: peak memory of add_many, add_stream and ``hotmem import``.

Run: ``uv run python benchmarks/import_bench.py [--sizes 100000 1000000]``

Each measurement runs in a fresh child process, which reports its peak resident set (Linux's
``VmHWM``) and its resident set just before the operation (``VmRSS``); the difference is what
the operation itself held at its peak. (``ru_maxrss`` would not do: Linux carries it over
``execve`` from the parent.) The memories are generated lazily (the synthetic
generator of ``benchmarks/synthetic.py``, one dict at a time), so the input itself holds no
memory: ``add_many`` keeps the list it returns, ``add_stream`` nothing, and ``hotmem import``
reads a JSONL file written beforehand. Figures are local diagnostics for this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import synthetic_memories

STATUS = """
def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
"""

CHILD = (
    STATUS
    + """
import sys, time
sys.path.insert(0, sys.argv[4])
from synthetic import synthetic_memories
import hotmem

def lazily(count):
    for start in range(0, count, 10_000):
        yield from synthetic_memories(min(10_000, count - start), seed=start)

mode, count, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
memories = ({**m, "memory_id": f"m-{i}"} for i, m in enumerate(lazily(count)))
before = status("VmRSS")
began = time.perf_counter()
with hotmem.open_store(path) as store:
    if mode == "add_many":
        added = len(store.add_many(memories))
    else:
        added = store.add_stream(memories)
elapsed = time.perf_counter() - began
print(added, before, status("VmHWM"), elapsed)
"""
)

CLI = (
    STATUS
    + """
import runpy, sys
before = status("VmRSS")
sys.argv = ["hotmem", *sys.argv[1:]]
try:
    runpy.run_module("hotmem", run_name="__main__")
except SystemExit as exit:
    code = exit.code
print(code, before, status("VmHWM"), file=sys.stderr)
"""
)


def measure_api(mode: str, count: int, tmp: Path) -> dict[str, float]:
    path = tmp / f"{mode}.db"
    output = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(count), str(path), str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    path.unlink()
    added, before, peak, elapsed = int(output[0]), int(output[1]), int(output[2]), float(output[3])
    if added != count:
        raise ValueError(f"added {added} of {count} memories")
    return {"rise_mib": (peak - before) / 1024, "peak_mib": peak / 1024, "per_s": count / elapsed}


def measure_cli(count: int, tmp: Path) -> dict[str, float]:
    source, path = tmp / "in.jsonl", tmp / "cli.db"
    with source.open("w", encoding="utf-8") as out:
        for start in range(0, count, 10_000):
            for i, memory in enumerate(synthetic_memories(min(10_000, count - start), seed=start)):
                out.write(json.dumps({**memory, "memory_id": f"m-{start + i}"}) + "\n")
    began = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-c", CLI, "--db", str(path), "import", str(source)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HOTMEM_HOME": str(tmp)},
    )
    elapsed = time.perf_counter() - began
    code, before, peak = completed.stderr.split()[-3:]
    if code != "0" or completed.stdout != f"imported {count} memories\n":
        raise ValueError(f"hotmem import failed: {completed.stderr}")
    source.unlink()
    path.unlink()
    return {
        "rise_mib": (int(peak) - int(before)) / 1024,
        "peak_mib": int(peak) / 1024,
        "per_s": count / elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    args = parser.parse_args()
    print(
        "| memories | operation | peak RSS (MiB) | rise during the operation (MiB) | memories/s |"
    )
    print("|---:|---|---:|---:|---:|")
    for count in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            for name, mode in (
                ("add_many (returns the list)", "add_many"),
                ("add_stream", "add_stream"),
                ("hotmem import", "cli"),
            ):
                try:
                    r = (
                        measure_cli(count, Path(tmp))
                        if mode == "cli"
                        else measure_api(mode, count, Path(tmp))
                    )
                except (subprocess.CalledProcessError, ValueError) as exc:
                    print(f"| {count:,} | {name} | failed: {type(exc).__name__} | | |", flush=True)
                    continue
                print(
                    f"| {count:,} | {name} | {r['peak_mib']:.0f} | {r['rise_mib']:.0f} "
                    f"| {r['per_s']:,.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
