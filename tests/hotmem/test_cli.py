"""The hotmem CLI: commands, exit codes and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import hotmem
from hotmem import cli
from hotmem.cli import main
from hotmem.cli.support import UserInputError, default_db_path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("HOTMEM_HOME", str(home))
    return home


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_default_db_path() -> None:
    assert default_db_path({"HOTMEM_HOME": "/x/y"}) == Path("/x/y/hotmem.db")
    assert default_db_path({}) == Path("~/.hotmem/hotmem.db").expanduser()


def test_add_search_stats_delete(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "add", "Invoices need two approvals.", "--identifier", "acme", "--id", "m-1"
    )
    assert (code, out) == (0, "m-1\n")
    assert (home / "hotmem.db").is_file()
    code, out, _ = run(capsys, "search", "invoice approvals", "--json")
    assert code == 0
    [hit] = json.loads(out)
    assert hit["memory_id"] == "m-1"
    assert set(hit["components"]) == {"cosine", "bm25_raw", "bm25_normalised", "importance"}
    code, out, _ = run(capsys, "search", "two approvals")
    assert out.startswith("1. [")
    assert "m-1 (acme): Invoices need two approvals." in out
    code, out, _ = run(capsys, "search", "tungsten boiling point")
    assert (code, out) == (0, "no results\n")
    code, out, _ = run(capsys, "stats", "--json")
    assert json.loads(out)["identifiers"] == {"acme": 1}
    assert run(capsys, "delete", "m-1")[:2] == (0, "deleted m-1\n")


def test_import_is_all_or_nothing_with_line_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "s.db"
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(
        b'{"fact": "ok", "identifier": "a"}\n'
        b"\n"
        b'{"fact": "", "identifier": "a"}\n'
        b"not json\n"
        b'{"fact": "x", "identifier": "a", "importance": 2}\n'
        b'{"fact": "\xff", "identifier": "a"}\n'
    )
    code, _out, err = run(capsys, "--db", str(db), "import", str(bad))
    assert code == 2
    assert err.splitlines() == [
        f"{bad}:3: expected fact not blank, found fact=''",
        f"{bad}:4: invalid JSON: Expecting value at column 1",
        f"{bad}:5: expected importance in [0, 1], found importance=2",
        f"{bad}:6: expected UTF-8 text, found byte 0xff at column 11 (invalid start byte)",
    ]
    with hotmem.open_store(db) as store:
        assert store.count() == 0  # the valid first line was rolled back
    good = tmp_path / "good.jsonl"
    good.write_text(
        '{"fact": "one", "identifier": "a", "memory_id": "m-1"}\n'
        '{"fact": "two", "identifier": "b", "tags": ["t"], "importance": 0.9}\n'
    )
    assert run(capsys, "--db", str(db), "import", str(good))[:2] == (0, "imported 2 memories\n")
    code, _, err = run(capsys, "--db", str(db), "import", str(good))
    assert code == 2
    assert err == (
        f"{good}:1: memory_id='m-1' already exists in the store (--skip-existing leaves it, "
        "--upsert updates it)\n"
    )
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    assert run(capsys, "--db", str(db), "import", str(empty))[0::2] == (
        2,
        f"{empty}: expected at least one JSON object, found no records\n",
    )
    many = tmp_path / "many.jsonl"
    many.write_text(json.dumps({"fact": "x", "identifier": "a", "tags": ["t"] * 70_000}) + "\n")
    assert run(capsys, "--db", str(db), "import", str(many))[0::2] == (
        2,
        f"{many}:1: expected at most 65536 tags, found 70000 tags\n",
    )
    missing, new = tmp_path / "missing.jsonl", tmp_path / "new.db"
    assert run(capsys, "--db", str(new), "import", str(missing))[0::2] == (
        2,
        f"{missing}: expected a JSON Lines file, found no such file\n",
    )
    assert not new.exists()  # a file that fails from its first line creates no store


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["add", "", "--identifier", "a"], 2, "hotmem: expected fact not blank, found fact=''\n"),
        (
            ["add", "x", "--identifier", "a", "--importance", "3"],
            2,
            "hotmem: expected importance in [0, 1], found importance=3.0\n",
        ),
        (["--db", "{store}", "delete", "nope"], 1, "hotmem: no memory with memory_id='nope'\n"),
        (
            ["--db", "/nonexistent-dir/x.db", "add", "x", "--identifier", "a"],
            1,
            "hotmem: cannot open store '/nonexistent-dir/x.db': "
            "directory '/nonexistent-dir' does not exist\n",
        ),
        (
            ["--db", "/nonexistent-dir/x.db", "stats"],
            2,
            "hotmem: no store at '/nonexistent-dir/x.db' (add, import or hydrate creates one)\n",
        ),
    ],
)
def test_user_mistakes_are_one_line(
    home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    code: int,
    message: str,
) -> None:
    store = tmp_path / "s.db"
    with hotmem.open_store(store) as opened:
        opened.add("Invoices need two approvals.", identifier="acme")
    argv = [arg.format(store=store) for arg in argv]
    assert run(capsys, *argv)[0::2] == (code, message)


def test_usage_errors_exit_2(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["search", "x", "--limit", "0"])
    assert raised.value.code == 2
    assert "expected 1..10000, found 0" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["add", "x", "--identifier", "a"], ["stats"], ["search", "x"]])
def test_an_empty_db_is_refused_not_the_default_store(
    home: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    for where in (["--db", "", *argv], [*argv, "--db", ""]):
        with pytest.raises(SystemExit) as raised:
            main(where)
        assert raised.value.code == 2
        err = capsys.readouterr().err
        assert err.endswith(
            "error: argument --db: expected a store file path, found an empty string\n"
        )
    assert not default_db_path({"HOTMEM_HOME": str(home)}).exists()


@pytest.mark.parametrize("argv", [["stats"], ["search", "x"], ["list"], ["delete", "m"]])
def test_a_zero_byte_file_is_no_store_and_is_left_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    assert run(capsys, "--db", str(empty), *argv)[0::2] == (
        2,
        f"hotmem: an empty file at {str(empty)!r} (add, import or hydrate creates one)\n",
    )
    assert empty.read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]


def test_python_dash_m_runs_the_cli(tmp_path: Path) -> None:
    hotmem.open_store(tmp_path / "s.db").close()
    completed = subprocess.run(
        [sys.executable, "-m", "hotmem", "--db", str(tmp_path / "s.db"), "stats"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0
    assert "memories: 0" in completed.stdout
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"\x00" * 4096)
    completed = subprocess.run(
        [sys.executable, "-m", "hotmem", "--db", str(broken), "stats"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 1
    assert "Traceback" not in completed.stderr
    assert completed.stderr.startswith("hotmem: ")


@pytest.mark.parametrize(
    ("error", "code", "line"),
    [
        (UserInputError("f.jsonl:3: bad"), 2, "f.jsonl:3: bad"),
        (hotmem.ValidationError("expected x, found y"), 2, "hotmem: expected x, found y"),
        (hotmem.DuplicateMemoryError("dup"), 2, "hotmem: dup"),
        (hotmem.MemoryNotFoundError("no memory"), 1, "hotmem: no memory"),
        (hotmem.StoreError("locked"), 1, "hotmem: locked"),
        (hotmem.VerificationError("bad package", None), 1, "hotmem: bad package"),
        (hotmem.HydrationError("not empty"), 1, "hotmem: not empty"),
        (KeyboardInterrupt(), 130, "hotmem: interrupted"),
    ],
)
def test_every_error_class_has_one_exit_code_and_one_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    error: BaseException,
    code: int,
    line: str,
) -> None:
    def fail(_args: object) -> int:
        raise error

    monkeypatch.setitem(cli.COMMANDS, "stats", (*cli.COMMANDS["stats"][:2], fail))
    assert cli.main(["--db", str(tmp_path / "s.db"), "stats"]) == code
    assert capsys.readouterr().err == line + "\n"


def test_an_error_outside_the_table_is_a_bug_and_propagates() -> None:
    with pytest.raises(KeyError, match="RuntimeError"):
        cli.exit_code(RuntimeError("bug"))


def test_import_validates_each_line_once_and_stores_what_it_validated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import hotmem.cli.importing
    import hotmem.models

    calls: list[object] = []
    one_by_one, by_columns = hotmem.models.memory_from_mapping, hotmem.models.memories_from_mappings

    def counted(record: object, **kwargs: object) -> hotmem.Memory:
        calls.append(record)
        return one_by_one(record, **kwargs)  # type: ignore[arg-type]

    def counted_batch(records: list[object], **kwargs: object) -> list[hotmem.Memory] | None:
        found = by_columns(records, **kwargs)  # type: ignore[arg-type]
        calls.extend(records if found is not None else ())  # else checked one by one
        return found

    # the import command's own check (a batch by columns, or one by one), and the store's
    # (which an import no longer runs)
    for module in (hotmem.cli.importing, hotmem.models):
        monkeypatch.setattr(module, "memory_from_mapping", counted)
        monkeypatch.setattr(module, "memories_from_mappings", counted_batch)
    source = tmp_path / "m.jsonl"
    source.write_text(
        '{"fact": "one", "identifier": "a", "memory_id": "m-1", '
        '"created_at": "2026-01-02T03:04:05Z"}\n'
        '{"fact": "two", "identifier": "b", "tags": ["t"], "importance": 0.9}\n'
    )
    db = tmp_path / "s.db"
    assert run(capsys, "--db", str(db), "import", str(source))[:2] == (0, "imported 2 memories\n")
    assert [record["fact"] for record in calls] == ["one", "two"]  # type: ignore[index]
    with hotmem.open_store(db) as store:
        one, [two] = store.get("m-1"), list(store.iter_memories(identifier="b"))
    assert (one.fact, one.identifier) == ("one", "a")
    assert one.created_at.isoformat() == "2026-01-02T03:04:05+00:00"
    assert (two.fact, two.tags, two.importance) == ("two", ("t",), 0.9)
    assert (
        two.memory_id
        == hotmem.models.make_memory("two", identifier="b", created_at=two.created_at).memory_id
    )
