"""Hostile packages: built to exhaust memory, time or the stack, every digest recomputed.

Each package is a well-formed container that agrees with its manifest byte for byte
(``packages.build_package``), so only the reader's own bounds stand in the way. Verification
must report exactly the problems below; hydration must refuse with the same report and leave
nothing behind; neither may raise anything but a ``SnapshotError`` (no ``RecursionError``, no
``MemoryError``), and the CLI prints no traceback. Peak memory is measured by
``benchmarks/hostile_packages.py``, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import hotmem
from hotmem.cli import main
from hotmem.embedding.hash_v1 import embed_bytes
from tests.hotmem.packages import (
    MANIFEST,
    R0,
    V0,
    Member,
    build_package,
    honest_manifest,
    manifest_text,
    record_line,
    write_zip,
)

VECTOR = bytes(256)  # a finite float32 vector of the 64-dimension embedder
MIB = 2**20
# Above the decoder's group (1 MiB), so the line is followed as it streams in.
LONG = 2 * MIB


def one_line(item: bytes, count: int) -> bytes:
    return b'{"tags":[' + item * count + item.rstrip(b",") + b"]}\n"


def vectors_bomb(path: Path) -> Path:
    chunks = [(record_line("m-1"), bytes(64 * MIB))]
    return write_zip(
        path,
        [
            Member(MANIFEST, manifest_text(honest_manifest(chunks))),
            Member(R0, chunks[0][0]),
            Member(V0, chunks[0][1], method=8),
        ],
    )


def manifest_of_objects(path: Path) -> Path:
    manifest = b'{"format":"hotmem-snapshot","format_version":2,"members":['
    manifest += b"{}," * 1_000_000 + b"{}]}"
    return build_package(path, [(record_line("m-1"), VECTOR)], manifest=manifest)


# name -> (build the package, [(location, check, part of found)] expected, in order)
CASES: dict[str, tuple[Callable[[Path], Path], list[tuple[str, str, str]]]] = {
    "20,000 lines of {} (twice a chunk's limit)": (
        lambda p: build_package(p, [(b"{}\n" * 20_000, VECTOR)]),
        [
            (R0, "record-count", "20000"),
            (V0, "size", "256 bytes"),
            (R0, "limit", "20000 lines (not decoded)"),
            (V0, "vector", "256 bytes"),
        ],
    ),
    "a record nested 5,000 arrays deep": (
        lambda p: build_package(p, [(b'{"tags":' + b"[" * 5000 + b"]" * 5000 + b"}\n", VECTOR)]),
        [(f"{R0}:1", "json", "nested too deeply to parse")],
    ),
    "a record nested 300,000 arrays deep": (
        lambda p: build_package(
            p, [(b'{"tags":' + b"[" * 300_000 + b"]" * 300_000 + b"}\n", VECTOR)]
        ),
        [(f"{R0}:1", "record", "a nested array at byte 9")],
    ),
    "a record nested 2 million arrays deep (a long line)": (
        lambda p: build_package(
            p, [(b'{"tags":' + b"[" * 2_000_000 + b"]" * 2_000_000 + b"}\n", VECTOR)]
        ),
        [(f"{R0}:1", "record", "a nested array at byte 9")],
    ),
    "one line of 300,000 empty objects": (
        lambda p: build_package(p, [(one_line(b"{},", 300_000), VECTOR)]),
        [(f"{R0}:1", "record", "a nested object at byte 9")],
    ),
    "one line of a million empty objects (a long line)": (
        lambda p: build_package(p, [(one_line(b"{},", 1_000_000), VECTOR)]),
        [(f"{R0}:1", "record", "a nested object at byte 9")],
    ),
    "one line of a million zeros (a long line)": (
        lambda p: build_package(p, [(one_line(b"0,", 1_000_000), VECTOR)]),
        [(f"{R0}:1", "record", "more than 65552 commas outside strings")],
    ),
    "one line of 300,000 two-letter tags": (
        lambda p: build_package(p, [(one_line(b'"ab",', 300_000), VECTOR)]),
        [(f"{R0}:1", "record", "more than 65552 commas outside strings")],
    ),
    "a record with one tag more than a record may hold": (
        lambda p: build_package(p, [(record_line("m-1", tags=["t"] * (2**16 + 1)), VECTOR)]),
        [(f"{R0}:1", "record", "65537 tags")],
    ),
    "a manifest nested 100,000 arrays deep": (
        lambda p: build_package(
            p, [(record_line("m-1"), VECTOR)], manifest=b"[" * 100_000 + b"]" * 100_000
        ),
        [(MANIFEST, "manifest", "nested too deeply to parse")],
    ),
    "a manifest of a million empty objects": (
        manifest_of_objects,
        [(MANIFEST, "limit", "2000005")],
    ),
    "a vectors member that inflates to 64 MiB": (
        vectors_bomb,
        [(V0, "size", f"{64 * MIB} bytes"), (V0, "limit", f"{64 * MIB} declared")],
    ),
}


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("hostile")
    return {
        name: build(directory / f"{index}.zip")
        for index, (name, (build, _)) in enumerate(CASES.items())
    }


@pytest.mark.parametrize("case", CASES)
def test_verification_reports_a_hostile_package(packages: dict[str, Path], case: str) -> None:
    report = hotmem.verify_snapshot(packages[case])
    expected = CASES[case][1]
    assert [(p.location, p.check) for p in report.problems] == [(w, c) for w, c, _ in expected]
    for problem, (_, _, found) in zip(report.problems, expected, strict=True):
        assert found in problem.found


@pytest.mark.parametrize("case", CASES)
def test_hydration_refuses_a_hostile_package(
    packages: dict[str, Path], tmp_path: Path, case: str
) -> None:
    with pytest.raises(hotmem.VerificationError) as raised:
        hotmem.hydrate(packages[case], tmp_path / "target.db")
    assert raised.value.report == hotmem.verify_snapshot(packages[case])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "case",
    [
        "a record nested 5,000 arrays deep",
        "a manifest nested 100,000 arrays deep",
        "one line of a million empty objects (a long line)",
    ],
)
def test_verify_recomputing_vectors_reports_it_too(packages: dict[str, Path], case: str) -> None:
    report = hotmem.verify_snapshot(packages[case], recompute_vectors=True)
    assert [(p.location, p.check) for p in report.problems] == [
        (location, check) for location, check, _ in CASES[case][1]
    ]


@pytest.mark.parametrize("case", CASES)
def test_the_cli_reports_a_hostile_package_without_a_traceback(
    packages: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    case: str,
) -> None:
    assert main(["verify", str(packages[case]), "--json"]) == 1
    captured = capsys.readouterr()
    assert captured.err == ""
    assert json.loads(captured.out)["ok"] is False
    assert main(["hydrate", str(packages[case]), "--db", str(tmp_path / "t.db")]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"hotmem: package {str(packages[case])!r} failed verification")
    assert len(captured.err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    ["a record nested 5,000 arrays deep", "a manifest nested 100,000 arrays deep"],
)
def test_the_installed_command_prints_no_traceback(
    packages: dict[str, Path], tmp_path: Path, case: str
) -> None:
    for argv, out_start in (
        (["verify", str(packages[case])], "FAILED: 1 problem(s)"),
        (["hydrate", str(packages[case]), "--db", str(tmp_path / "t.db")], ""),
    ):
        completed = subprocess.run(
            [sys.executable, "-m", "hotmem", *argv], capture_output=True, text=True, check=False
        )
        assert completed.returncode == 1
        assert "Traceback" not in completed.stderr
        assert completed.stdout.startswith(out_start)


def test_a_long_valid_record_hydrates_exactly(tmp_path: Path) -> None:
    fact = 'A fact of 3 MiB, with "quotes", back\\slashes, {braces}, [brackets] and commas. ' * (
        3 * MIB // 80
    )
    line = record_line("m-1", fact, tags=["a", "b"])
    assert len(line) > LONG
    package = build_package(tmp_path / "long.zip", [(line, embed_bytes(fact))])
    assert hotmem.verify_snapshot(package).ok
    hotmem.hydrate(package, tmp_path / "t.db")
    with hotmem.open_store(tmp_path / "t.db") as store:
        memory = store.get("m-1")
    assert (memory.fact, memory.tags) == (fact, ("a", "b"))
