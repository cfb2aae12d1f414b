"""Peak memory and time of verify and hydrate on hostile (and maximal valid) packages.

Run: ``uv run python benchmarks/hostile_packages.py [--cases NAME ...] [--cap-mib 4096]``

Each package is built by ``tests/hotmem/packages.py`` with every digest recomputed, so it is
inside every size limit and only the reader's own bounds decide what it costs. Each operation
runs in a fresh child process whose address space is capped (``--cap-mib``, so a runaway case
fails with ``MemoryError`` instead of taking the machine) and which reports its own peak
resident set (``VmHWM``: the whole process, interpreter included), its run time and the
outcome. The target is a peak under 100 MB for every package.

Figures are local diagnostics for this machine, not guarantees.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hotmem.snapshot import format as fmt  # noqa: E402
from tests.hotmem.packages import (  # noqa: E402
    MANIFEST,
    Member,
    Space,
    build_package,
    honest_space_manifest,
    manifest_text,
    record_line,
    write_zip,
)

MIB = 2**20
VECTOR = bytes(256)  # a finite (zero) float32 vector of the 64-dimension embedder

CHILD = r"""
import json, sys, time
from pathlib import Path
import hotmem

def status(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])

def first(report):
    problem = report.problems[0]
    return f"{len(report.problems)} problem(s), first {problem.location} {problem.check}"

operation, package, target, drop = sys.argv[1:5]
start = time.perf_counter()
try:
    if operation == "verify":
        report = hotmem.verify_snapshot(package)
        outcome = "ok" if report.ok else first(report)
    else:
        hotmem.hydrate(package, target, drop_spaces=json.loads(drop))
        outcome = "hydrated"
except hotmem.VerificationError as exc:
    outcome = f"VerificationError: {first(exc.report)}"
except BaseException as exc:
    outcome = f"{type(exc).__name__}: {str(exc)[:60]}"
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "peak_kib": status("VmHWM"), "outcome": outcome}))
"""


def _one_line(start: bytes, item: bytes, end: bytes, size: int = fmt.MAX_MEMBER_BYTES) -> bytes:
    count = (size - len(start) - len(end) - 1) // len(item)
    return start + item * count + end + b"\n"


def braces_lines(path: Path) -> None:
    """64 MiB of ``{}`` lines (the package of the issue: 66 KB on disk)."""
    build_package(path, [(b"{}\n" * (fmt.MAX_MEMBER_BYTES // 3), VECTOR)])


def one_line_objects(path: Path) -> None:
    """One 64 MiB line whose tags are 22 million empty objects."""
    build_package(path, [(_one_line(b'{"tags":[', b"{},", b"{}]}"), VECTOR)])


def one_line_arrays(path: Path) -> None:
    """One 64 MiB line whose tags are 22 million empty arrays."""
    build_package(path, [(_one_line(b'{"tags":[', b"[],", b"[]]}"), VECTOR)])


def one_line_numbers(path: Path) -> None:
    """One 64 MiB line whose tags are 33 million zeros."""
    build_package(path, [(_one_line(b'{"tags":[', b"0,", b"0]}"), VECTOR)])


def one_line_tags(path: Path) -> None:
    """One 64 MiB line whose tags are 13 million two-letter strings."""
    build_package(path, [(_one_line(b'{"tags":[', b'"ab",', b'"ab"]}'), VECTOR)])


def deep_record(path: Path) -> None:
    """A record whose tags nest a million arrays deep."""
    depth = 10**6
    build_package(path, [(b'{"tags":' + b"[" * depth + b"]" * depth + b"}\n", VECTOR)])


def deep_manifest(path: Path) -> None:
    """A manifest of a million nested arrays."""
    depth = 10**6
    build_package(path, [(record_line("m-1"), VECTOR)], manifest=b"[" * depth + b"]" * depth)


def manifest_objects(path: Path) -> None:
    """A 4 MiB manifest whose member list is 1.4 million empty objects."""
    start = b'{"format":"hotmem-snapshot","format_version":2,"members":['
    manifest = _one_line(start, b"{},", b"{}]}", fmt.MAX_MANIFEST_BYTES)
    build_package(path, [(record_line("m-1"), VECTOR)], manifest=manifest)


def vectors_bomb(path: Path) -> None:
    """A vectors member of 64 MiB of zeros, deflated to 64 KB (the manifest agrees)."""
    from tests.hotmem.packages import MANIFEST, Member, honest_manifest, write_zip

    chunks = [(record_line("m-1"), bytes(fmt.MAX_MEMBER_BYTES))]
    members = [Member(MANIFEST, manifest_text(honest_manifest(chunks)))]
    members += [
        Member("records/000000.jsonl", chunks[0][0]),
        Member("vectors/000000.f32", chunks[0][1], method=fmt.DEFLATED),
    ]
    write_zip(path, members)


def many_bad_lines(path: Path) -> None:
    """200 chunks of 10,000 lines each, every line a record that breaks a rule (no vectors)."""
    lines = b"".join(record_line(f"m-{i:05d}", importance=2) for i in range(fmt.CHUNK_RECORDS))
    build_package(path, [(lines, b"")] * 200)


def valid_max_lines(path: Path) -> None:
    """A valid package: 10,000 records of 6.7 KB facts in one 64 MiB member."""
    size = fmt.MAX_MEMBER_BYTES // fmt.CHUNK_RECORDS - 200
    fact = ("A long fact about invoices and approvals " * (size // 41 + 1))[:size]
    lines = b"".join(record_line(f"m-{i:05d}", fact) for i in range(fmt.CHUNK_RECORDS))
    build_package(path, [(lines, VECTOR * fmt.CHUNK_RECORDS)])


def valid_huge_fact(path: Path) -> None:
    """A valid package: one memory whose fact is 63 MiB of text."""
    fact = ("A long fact about invoices and approvals " * (63 * MIB // 41))[: 63 * MIB]
    build_package(path, [(record_line("m-1", fact), VECTOR)])


def valid_small(path: Path) -> None:
    """A valid package of 10,000 ordinary memories (for reference)."""
    lines = b"".join(record_line(f"m-{i:05d}", f"Fact {i}.") for i in range(fmt.CHUNK_RECORDS))
    build_package(path, [(lines, VECTOR * fmt.CHUNK_RECORDS)])


def _space_package(path: Path, records: int, spaces: list[Space]) -> None:
    """One chunk of ``records`` records and these spaces, every space member deflated."""
    lines = b"".join(record_line(f"m-{i:05d}", f"Fact {i}.") for i in range(records))
    chunks = [(lines, VECTOR * records)]
    members = [Member(MANIFEST, manifest_text(honest_space_manifest(chunks, spaces)))]
    members += [Member("records/000000.jsonl", lines), Member("vectors/000000.f32", chunks[0][1])]
    members += [
        Member(fmt.space_member_name(space.name, 0), space.vectors[0], method=fmt.DEFLATED)
        for space in spaces
    ]
    write_zip(path, members)


def space_bomb(path: Path) -> None:
    """A further space's member of 64 MiB of zeros for one 4-value vector, deflated to 64 KB."""
    _space_package(path, 1, [Space("bomb-v1", "ab" * 32, 4, [bytes(fmt.MAX_MEMBER_BYTES)])])


def valid_wide_spaces(path: Path) -> None:
    """A valid package: 256 records and 16 spaces of 65,536 dimensions, 64 MiB a member (1 GiB
    of vectors, deflated to 1 MB); hydrated with every space dropped (nobody has the model)."""
    width = fmt.MAX_DIMENSION * 4
    records = fmt.MAX_MEMBER_BYTES // width
    spaces = [
        Space(f"wide-{i:02d}", "ab" * 32, fmt.MAX_DIMENSION, [bytes(records * width)])
        for i in range(fmt.MAX_SPACES)
    ]
    _space_package(path, records, spaces)


#: Further spaces hydration is told to drop, per case.
DROPS = {
    "space-bomb": ["bomb-v1"],
    "valid-wide-spaces": [f"wide-{i:02d}" for i in range(fmt.MAX_SPACES)],
}

CASES: dict[str, Callable[[Path], None]] = {
    "braces-lines": braces_lines,
    "one-line-objects": one_line_objects,
    "one-line-arrays": one_line_arrays,
    "one-line-numbers": one_line_numbers,
    "one-line-tags": one_line_tags,
    "deep-record": deep_record,
    "deep-manifest": deep_manifest,
    "manifest-objects": manifest_objects,
    "vectors-bomb": vectors_bomb,
    "many-bad-lines": many_bad_lines,
    "valid-max-lines": valid_max_lines,
    "valid-huge-fact": valid_huge_fact,
    "valid-small": valid_small,
    "space-bomb": space_bomb,
    "valid-wide-spaces": valid_wide_spaces,
}


def run_child(
    operation: str, package: Path, target: Path, cap_mib: int, timeout: float, drop: list[str]
) -> dict:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap_mib * MIB, cap_mib * MIB))

    target.unlink(missing_ok=True)
    try:
        completed = subprocess.run(
            [sys.executable, "-c", CHILD, operation, str(package), str(target), json.dumps(drop)],
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=limit,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"seconds": timeout, "peak_kib": None, "outcome": f"killed after {timeout:.0f} s"}
    if completed.returncode != 0 or not completed.stdout.strip():
        tail = completed.stderr.strip().splitlines()[-1:] or [f"exit {completed.returncode}"]
        return {"seconds": None, "peak_kib": None, "outcome": f"crashed: {tail[0][:60]}"}
    return json.loads(completed.stdout.splitlines()[-1])


def _cell(result: dict) -> str:
    peak = "-" if result["peak_kib"] is None else f"{result['peak_kib'] / 1024:.1f}"
    seconds = "-" if result["seconds"] is None else f"{result['seconds']:.2f}"
    return f"{peak} | {seconds} | {result['outcome']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--cap-mib", type=int, default=4096, help="address-space cap per child")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per operation")
    args = parser.parse_args()
    print(
        "| case | package (bytes) | verify peak RSS (MiB) | verify (s) | verify outcome "
        "| hydrate peak RSS (MiB) | hydrate (s) | hydrate outcome |"
    )
    print("|---|---:|---:|---:|---|---:|---:|---|")
    with tempfile.TemporaryDirectory(prefix="hotmem-hostile-") as work:
        for name in args.cases:
            package = Path(work) / f"{name}.zip"
            CASES[name](package)
            size = package.stat().st_size
            target, drop = Path(work) / "t.db", DROPS.get(name, [])
            verify = run_child("verify", package, target, args.cap_mib, args.timeout, drop)
            hydrate = run_child("hydrate", package, target, args.cap_mib, args.timeout, drop)
            print(f"| {name} | {size:,} | {_cell(verify)} | {_cell(hydrate)} |", flush=True)
            package.unlink()
    print(f"\nEach operation in a fresh process capped at {args.cap_mib} MiB of address space.")


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"Total {time.perf_counter() - start:.0f} s.")
