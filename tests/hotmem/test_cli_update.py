"""hotmem update, and hotmem import --skip-existing | --upsert: messages, exit codes, and
nothing left behind by a refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hotmem
from hotmem.cli import main

CLOCK = hotmem.fixed_clock("2026-01-02T03:04:05Z")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    with hotmem.open_store(path, clock=CLOCK) as store:
        store.add("Invoices need two approvals.", identifier="acme", memory_id="m-1", tags=["a"])
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _memory(db: Path, memory_id: str = "m-1") -> dict[str, object]:
    with hotmem.open_store(db) as store:
        return store.get(memory_id).to_dict()


def test_update_changes_what_is_given(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "--db", str(db), "update", "m-1", "--fact", "Invoices need three.") == (
        0,
        "updated m-1\n",
        "",
    )
    code, out, err = run(
        capsys,
        "--db",
        str(db),
        "update",
        "m-1",
        "--importance",
        "0.9",
        "--tags",
        "x",
        "y",
        "--json",
    )
    expected = {
        "memory_id": "m-1",
        "identifier": "acme",
        "fact": "Invoices need three.",
        "importance": 0.9,
        "tags": ["x", "y"],
        "created_at": "2026-01-02T03:04:05Z",
    }
    assert (code, json.loads(out), err) == (0, expected, "")
    assert run(capsys, "--db", str(db), "update", "m-1", "--tags")[0] == 0
    assert _memory(db) == {**expected, "tags": []}
    code, out, _ = run(capsys, "--db", str(db), "search", "three")
    assert (code, out.splitlines()[0].endswith("m-1 (acme): Invoices need three.")) == (0, True)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["update", "nope", "--importance", "0.1"],
            "hotmem: no memory with memory_id='nope' (hotmem list shows the ids)\n",
        ),
        (
            ["update", "m-1"],
            "hotmem: nothing to update: give --fact, --importance or --tags "
            "(see hotmem update -h)\n",
        ),
        (
            ["update", "m-1", "--importance", "3"],
            "hotmem: expected importance in [0, 1], found importance=3.0\n",
        ),
        (["update", "m-1", "--fact", ""], "hotmem: expected fact not blank, found fact=''\n"),
    ],
)
def test_update_refuses_with_exit_2_and_changes_nothing(
    db: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _memory(db)
    assert run(capsys, "--db", str(db), *argv) == (2, "", message)
    assert _memory(db) == before


def test_update_of_a_missing_store_creates_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.db"
    code, out, err = run(capsys, "--db", str(missing), "update", "m-1", "--importance", "0.1")
    assert (code, out) == (2, "")
    assert err.startswith(f"hotmem: no store at {str(missing)!r}")
    assert list(tmp_path.iterdir()) == []


LINES = (
    '{"memory_id": "m-2", "identifier": "acme", "fact": "Deploys on Tuesdays."}\n'
    '{"memory_id": "m-1", "identifier": "acme", "fact": "Invoices need three approvals."}\n'
)


def test_a_reimport_names_the_file_and_line_of_a_stored_id(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text("\n" + LINES)  # a blank line first: line numbers count it
    assert run(capsys, "--db", str(db), "import", str(path)) == (
        2,
        "",
        f"{path}:3: memory_id='m-1' already exists in the store (--skip-existing leaves it, "
        "--upsert updates it)\n",
    )
    with hotmem.open_store(db) as store:
        assert store.count() == 1  # m-2 was rolled back


def test_skip_existing_and_upsert(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(LINES)
    assert run(capsys, "--db", str(db), "import", str(path), "--skip-existing") == (
        0,
        "imported 1 memory, skipped 1 already stored\n",
        "",
    )
    assert _memory(db)["fact"] == "Invoices need two approvals."
    assert run(capsys, "--db", str(db), "import", str(path), "--upsert") == (
        0,
        "imported 0 memories, updated 2\n",
        "",
    )
    assert _memory(db)["fact"] == "Invoices need three approvals."
    assert _memory(db)["created_at"] == "2026-01-02T03:04:05Z"  # the line has none: kept
    with pytest.raises(SystemExit) as stopped:
        main(["--db", str(db), "import", str(path), "--skip-existing", "--upsert"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.endswith(
        "error: argument --upsert: not allowed with argument --skip-existing\n"
    )


def test_an_id_repeated_in_the_file_is_refused_by_line_whatever_the_flag(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(LINES + LINES.splitlines(keepends=True)[0])
    for flag in ("--skip-existing", "--upsert"):
        assert run(capsys, "--db", str(db), "import", str(path), flag) == (
            2,
            "",
            f"{path}:3: memory_id='m-2' appears more than once in the input\n",
        )
    assert _memory(db)["fact"] == "Invoices need two approvals."


def test_an_id_less_reimport_warns_with_a_count(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(
        '{"identifier": "acme", "fact": "Ship on Fridays."}\n'
        '{"identifier": "acme", "fact": "Freeze in December."}\n'
    )
    assert run(capsys, "--db", str(db), "import", str(path)) == (0, "imported 2 memories\n", "")
    assert run(capsys, "--db", str(db), "import", str(path)) == (
        0,
        "imported 2 memories\n",
        "hotmem: warning: 2 memories without a memory_id repeat a fact already stored under the "
        "same identifier (stored again under a new id; give memory_id to import a file once, "
        "and --skip-existing to import it again)\n",
    )


def test_a_failed_import_leaves_no_store_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(LINES + '{"identifier": "acme", "fact": ""}\n')  # fails on its last line
    new = tmp_path / "new.db"
    code, out, err = run(capsys, "--db", str(new), "import", str(path))
    assert (code, out, err) == (2, "", f"{path}:3: expected fact not blank, found fact=''\n")
    path.write_text(LINES + LINES)  # fails in the store: a repeated id
    code, out, err = run(capsys, "--db", str(new), "import", str(path))
    assert (code, out) == (2, "")
    assert err == f"{path}:3: memory_id='m-2' appears more than once in the input\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.jsonl"]
