"""hotmem list, get and export: the memories as kept; export round-trips through import,
byte for byte."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import hotmem
from hotmem.cli import main

MEMORIES = [
    ("m-1", "acme", "Invoices above EUR 5,000 need two approvals.", 0.5, ["finance"]),
    ("m-2", "acme", "Line one\nline two, with «quotes» and 東京.", 0.9, ["a", "b"]),
    ("m-3", "beta", "Deploys happen on Tuesdays.", 0.0, []),
]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    clock = hotmem.fixed_clock("2026-01-02T03:04:05.678901Z")
    with hotmem.open_store(path, clock=clock) as store:
        for memory_id, identifier, fact, importance, tags in MEMORIES:
            store.add(
                fact, identifier=identifier, importance=importance, tags=tags, memory_id=memory_id
            )
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_list_prints_one_line_a_memory(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "--db", str(db), "list") == (
        0,
        "m-1 (acme): Invoices above EUR 5,000 need two approvals.\n"
        "m-2 (acme): Line one\\nline two, with «quotes» and 東京.\n"
        "m-3 (beta): Deploys happen on Tuesdays.\n",
        "",
    )
    code, out, _ = run(capsys, "--db", str(db), "list", "--identifier", "beta", "--json")
    assert (code, [m["memory_id"] for m in json.loads(out)]) == (0, ["m-3"])
    assert run(capsys, "--db", str(db), "list", "--identifier", "nobody") == (
        0,
        "",
        "no memories with identifier 'nobody'\n",
    )


def test_get_prints_every_field(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "--db", str(db), "get", "m-2") == (
        0,
        "memory_id   m-2\nidentifier  acme\nfact        Line one\\nline two, with «quotes» and "
        "東京.\nimportance  0.9\ntags        a, b\ncreated_at  2026-01-02T03:04:05.678901Z\n",
        "",
    )
    code, out, _ = run(capsys, "--db", str(db), "get", "m-1", "--json")
    assert json.loads(out) == {
        "memory_id": "m-1",
        "identifier": "acme",
        "fact": "Invoices above EUR 5,000 need two approvals.",
        "importance": 0.5,
        "tags": ["finance"],
        "created_at": "2026-01-02T03:04:05.678901Z",
    }
    code, out, err = run(capsys, "--db", str(db), "get", "nope")
    assert (code, out, err) == (1, "", "hotmem: no memory with memory_id='nope'\n")


def test_export_round_trips_through_import_byte_for_byte(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exported = tmp_path / "out.jsonl"
    code, out, err = run(capsys, "--db", str(db), "export", str(exported))
    assert (code, out, err) == (0, "", f"exported 3 memories to {exported}\n")
    first = exported.read_bytes()
    umask = os.umask(0)
    os.umask(umask)
    assert exported.stat().st_mode & 0o777 == 0o666 & ~umask  # not a temporary file's 0600
    assert first.decode().splitlines()[0] == (
        '{"memory_id": "m-1", "identifier": "acme", "fact": "Invoices above EUR 5,000 need two '
        'approvals.", "importance": 0.5, "tags": ["finance"], "created_at": '
        '"2026-01-02T03:04:05.678901Z"}'
    )
    copy = tmp_path / "copy.db"
    assert run(capsys, "--db", str(copy), "import", str(exported))[0] == 0
    code, again, _ = run(capsys, "--db", str(copy), "export")
    assert (code, again.encode()) == (0, first)
    code, beta, _ = run(capsys, "--db", str(db), "export", "-", "--identifier", "beta")
    assert [json.loads(line)["memory_id"] for line in beta.splitlines()] == ["m-3"]


def test_export_refuses_a_directory_and_leaves_nothing(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "dir"
    target.mkdir()
    code, out, err = run(capsys, "--db", str(db), "export", str(target))
    assert (code, out) == (2, "")
    assert err == f"hotmem: cannot write {str(target)!r}: it is a directory, not a regular file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "s.db"]


@pytest.mark.parametrize(
    ("argv", "ending"),
    [
        (["serach", "x"], "; did you mean 'search'?"),
        (["expotr"], "; did you mean 'export'?"),
        (
            ["search", "x", "--identifer", "a"],
            "unrecognized arguments: --identifer a; did you mean '--identifier'?",
        ),
        (["search", "x", "--limt=3"], "; did you mean '--limit'?"),
    ],
)
def test_a_misspelt_command_or_option_gets_the_closest(
    argv: list[str], ending: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    err = capsys.readouterr().err
    assert stopped.value.code == 2
    assert err.splitlines()[-1].endswith(ending)


def test_nothing_close_suggests_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["zzzz"])
    assert "did you mean" not in capsys.readouterr().err


def test_an_empty_search_says_why_on_stderr(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "--db", str(db), "search", "invoices", "--identifier", "acm") == (
        0,
        "no results\n",
        "hotmem: no memory has identifier 'acm'; did you mean 'acme'?\n",
    )
    with hotmem.open_store(db) as store:
        [closest] = hotmem.search_memories(store, "xylophone quartet", limit=1, min_similarity=-1.0)
    code, out, err = run(capsys, "--db", str(db), "search", "xylophone quartet")
    assert (code, out) == (0, "no results\n")
    assert err == (
        "hotmem: no memory passed the relevance floor of profile 'default' (0.4); the closest "
        f"is {closest.memory_id} (cosine {closest.components.cosine:.4f}): `hotmem explain` "
        "says why, --min-similarity lowers the floor\n"
    )
    # JSON keeps stdout parseable and says why on stderr too
    code, out, err = run(capsys, "--db", str(db), "search", "x", "--identifier", "nobody", "--json")
    assert (code, json.loads(out)) == (0, [])
    assert err == "hotmem: no memory has identifier 'nobody'\n"
