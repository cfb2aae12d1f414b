"""A snapshot of a damaged store is refused with one line naming the memory and the field,
before anything is renamed into place: damage is reported, never packaged (issue 35)."""

from __future__ import annotations

import math
import sqlite3
import struct
from pathlib import Path

import pytest

import hotmem
from hotmem.cli import main
from hotmem.embedding.hash_v1 import embed_bytes

FACT = "Invoices above EUR 5,000 need two approvals."
NAN = struct.pack("<64f", *[math.nan] * 64)
BIG = struct.pack("<64f", *(v * 1e30 for v in struct.unpack("<64f", embed_bytes(FACT))))


def damaged_store(path: Path, column: str, value: object) -> Path:
    with hotmem.open_store(path) as store:
        store.add("Backups run nightly.", identifier="acme", memory_id="m0")
        store.add(FACT, identifier="acme", memory_id="m1", tags=["finance"])
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA ignore_check_constraints = ON")  # as another program could
    with connection:
        connection.execute(f"UPDATE memories SET {column} = ? WHERE memory_id = 'm1'", (value,))
    connection.close()
    return path


# (column, stored value, what the message says after "memory_id='m1': ")
CASES = [
    ("importance", 2.0, "expected importance in [0, 1], found importance=2.0"),
    ("importance", "abc", "expected importance in [0, 1], found 'abc'"),
    ("tags", "[", "expected tags as a JSON array of strings, found tags='['"),
    ("tags", '{"a": 1}', "expected tags as a JSON array of strings, found tags='{\"a\": 1}'"),
    ("tags", "5", "expected tags as a JSON array of strings, found tags='5'"),
    ("tags", "[1, 2]", "expected tags as a JSON array of strings, found tags='[1, 2]'"),
    ("fact", "   ", "expected fact not blank, found fact='   '"),
    ("identifier", "", "expected identifier not blank, found identifier=''"),
    (
        "created_at",
        "yesterday",
        "expected created_at as canonical UTC text such as '2025-01-31T09:00:00Z', found "
        "created_at='yesterday'",
    ),
    ("embedding", b"\x00", "expected its hotmem-hash-v1 vector of 256 bytes, found 1 bytes"),
    ("embedding", "abc", "expected its hotmem-hash-v1 vector of 256 bytes, found 'abc'"),
    (
        "embedding",
        NAN,
        "expected its hotmem-hash-v1 vector finite and of unit length, found nan among its values",
    ),
    (
        "embedding",
        BIG,
        "expected its hotmem-hash-v1 vector finite and of unit length, found a norm of 1e+30",
    ),
]


@pytest.mark.parametrize(("column", "value", "breach"), CASES)
def test_a_snapshot_of_a_damaged_store_is_refused(
    tmp_path: Path, column: str, value: object, breach: str
) -> None:
    path = damaged_store(tmp_path / "s.db", column, value)
    with hotmem.open_store(path) as store, pytest.raises(hotmem.SnapshotError) as raised:
        store.snapshot(tmp_path / "p.zip")
    assert str(raised.value) == (
        f"cannot snapshot: store {str(path)!r} holds a damaged memory, memory_id='m1': "
        f"{breach}; nothing was written"
    )
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith("s.db")] == []


@pytest.mark.parametrize(("column", "value", "breach"), CASES[:3])
def test_the_cli_says_it_in_one_line_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str, value: object, breach: str
) -> None:
    path = damaged_store(tmp_path / "s.db", column, value)
    assert main(["--db", str(path), "snapshot", str(tmp_path / "p.zip")]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"hotmem: cannot snapshot: store {str(path)!r} holds a damaged memory, "
        f"memory_id='m1': {breach}; nothing was written\n"
    )
    assert not (tmp_path / "p.zip").exists()
    assert [p.name for p in tmp_path.iterdir() if "p.zip" in p.name] == []


def test_a_sound_store_snapshots_as_before(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with hotmem.open_store(path) as store:
        store.add("Backups run nightly.", identifier="acme", memory_id="m0")
        store.add("%%%", identifier="acme", memory_id="m2")  # a zero hash vector: sound
        report = store.snapshot(tmp_path / "p.zip")
    assert report.record_count == 2
    assert hotmem.verify_snapshot(tmp_path / "p.zip").ok
