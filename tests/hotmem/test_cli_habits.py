"""CLI habits: --db anywhere, no store created by a read, stdin facts, progress on a terminal
only, Ctrl-C and closed pipes. Real processes, so every case also proves there is no traceback.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import hotmem
from hotmem import cli
from hotmem.cli import app
from tests.processes import default_sigint, run, run_on_terminal

HOTMEM = [sys.executable, "-m", "hotmem"]
DATA = Path(__file__).parent / "data"

#: Each command's arguments besides the store (a table, so a new command must be added).
ARGUMENTS = {
    "add": ["A fact.", "--identifier", "acme"],
    "import": ["memories.jsonl", "--skip-existing"],
    "search": ["invoice"],
    "explain": ["invoice", "m-1"],
    "stats": [],
    "profiles": [],
    "reindex": ["--space", "hotmem-hash-v1"],
    "delete": ["m-1"],
    "snapshot": ["out.hotmem"],
    "verify": ["p.hotmem", "--digests-only"],
    "hydrate": ["p.hotmem"],
    "mcp": ["--files", "files"],
    "list": [],
    "get": ["m-1"],
    "export": ["out.jsonl"],
    "update": ["m-1", "--fact", "A fact.", "--importance", "0.2", "--tags", "a", "b"],
}


def test_every_command_is_in_the_table() -> None:
    assert set(ARGUMENTS) == set(cli.COMMANDS)


@pytest.mark.parametrize("command", sorted(ARGUMENTS))
def test_db_and_busy_timeout_before_or_after_the_command(command: str) -> None:
    parse = cli.build_parser().parse_args
    rest = ARGUMENTS[command]
    before = parse(["--db", "a.db", "--busy-timeout", "3", command, *rest])
    after = parse([command, *rest, "--db", "b.db", "--busy-timeout", "4"])
    both = parse(["--db", "a.db", command, *rest, "--db", "b.db"])
    neither = parse([command, *rest])
    assert (before.db, before.busy_timeout) == ("a.db", 3.0)
    assert (after.db, after.busy_timeout) == ("b.db", 4.0)
    assert (both.db, both.busy_timeout) == ("b.db", hotmem.BUSY_TIMEOUT)  # the later one wins
    assert (neither.db, neither.busy_timeout) == (None, hotmem.BUSY_TIMEOUT)


@pytest.mark.parametrize("command", sorted(ARGUMENTS))
def test_the_parser_of_one_command_reads_its_lines_as_the_whole_parser_does(
    command: str,
) -> None:
    # main() builds the parser of the command a line names alone (app._parsed)
    rest = ARGUMENTS[command]
    for line in (
        ["--db", "a.db", "--busy-timeout", "3", command, *rest],
        ["--db=a.db", command, *rest, "--busy-timeout", "4"],
        [command, *rest],
    ):
        assert app._command_named(line) == command
        assert cli.build_parser(command).parse_args(line) == cli.build_parser().parse_args(line)
    whole = cli.build_parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    alone = cli.build_parser(command)._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    assert alone.format_help() == whole.format_help()


@pytest.mark.parametrize(
    "line",
    [
        [],
        ["--help"],
        ["--version"],
        ["serch", "x"],
        ["--busy", "3", "add"],
        ["--db"],
        ["-h", "add"],
    ],
)
def test_a_line_naming_no_command_plainly_is_read_by_the_whole_parser(line: list[str]) -> None:
    assert app._command_named(line) is None


def test_an_error_on_a_line_of_one_command_is_the_whole_parsers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["search", "invoice", "--limt", "3"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.endswith(
        "hotmem: error: unrecognized arguments: --limt 3; did you mean '--limit'?\n"
    )


@pytest.mark.parametrize(
    ("columns", "expected"), [("120", 120), ("0", None), ("x", None), (None, None)]
)
def test_help_is_as_wide_as_shutil_says_the_terminal_is(
    monkeypatch: pytest.MonkeyPatch, columns: str | None, expected: int | None
) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setenv("LINES", "40")  # shutil asks the terminal only for what is missing
    found = app._terminal_columns()
    assert found == shutil.get_terminal_size().columns
    if expected is not None:
        assert found == expected


def test_db_after_the_command_acts_on_that_store(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    added = run([*HOTMEM, "add", "Invoices need two approvals.", "--identifier", "a", "--db", db])
    assert added.code == 0
    found = run([*HOTMEM, "search", "invoice approvals", "--db", db])
    assert (found.code, found.out) == (0, f"1. [{_score(db)}] {added.out.strip()} (a): "
                                          "Invoices need two approvals.\n")  # fmt: skip


def _score(db: str) -> str:
    with hotmem.open_store(db) as store:
        [result] = hotmem.search_memories(store, "invoice approvals")
    return f"{result.score:.4f}"


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "invoice"],
        ["search", "invoice", "--explain"],
        ["explain", "invoice", "m-1"],
        ["stats"],
        ["stats", "--json"],
        ["reindex", "--space", "all-minilm-l6-v2"],
        ["delete", "m-1"],
        ["snapshot", "out.hotmem"],
        ["profiles", "--set-default", "rrf"],
    ],
)
@pytest.mark.parametrize("where", ["--db", "HOTMEM_HOME"])
def test_a_read_of_a_missing_store_exits_2_and_creates_nothing(
    tmp_path: Path, argv: list[str], where: str
) -> None:
    home = tmp_path / "home"  # HOME and HOTMEM_HOME point in here; neither exists yet
    work = tmp_path / "work"
    work.mkdir()
    db = ["--db", "missing.db"] if where == "--db" else []
    completed = run([*HOTMEM, *db, *argv], cwd=work, home=home)
    path = "missing.db" if where == "--db" else str(home / ".hotmem" / "hotmem.db")
    assert (completed.code, completed.out, completed.err) == (
        2,
        "",
        f"hotmem: no store at {path!r} (add, import or hydrate creates one)\n",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]
    assert list(work.iterdir()) == []


def test_only_add_import_and_hydrate_create_a_store(tmp_path: Path) -> None:
    (tmp_path / "m.jsonl").write_text('{"fact": "Backups run nightly.", "identifier": "a"}\n')
    assert run([*HOTMEM, "add", "x", "--identifier", "a", "--db", "a.db"], cwd=tmp_path).code == 0
    assert run([*HOTMEM, "import", "m.jsonl", "--db", "i.db"], cwd=tmp_path).code == 0
    assert run([*HOTMEM, "snapshot", "p.hotmem", "--db", "i.db"], cwd=tmp_path).code == 0
    assert run([*HOTMEM, "hydrate", "p.hotmem", "--db", "h.db"], cwd=tmp_path).code == 0
    for name in ("a.db", "i.db", "h.db"):
        with hotmem.open_store(tmp_path / name) as store:
            assert len(store) == 1


def test_add_dash_reads_the_fact_from_stdin(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    fact = "Deploys happen on Tuesdays.\nNever on Fridays."
    completed = run(
        [*HOTMEM, "--db", db, "add", "-", "--identifier", "acme", "--id", "m-1"],
        stdin=(fact + "\n").encode(),
    )
    assert (completed.code, completed.out, completed.err) == (0, "m-1\n", "")
    with hotmem.open_store(db) as store:
        assert store.get("m-1").fact == fact  # the trailing line break is dropped


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        (b"\n", "hotmem: expected fact not blank, found fact=''\n"),
        (
            b"caf\xe9\n",
            "hotmem: expected the fact on stdin as UTF-8 text, found byte 0xe9 at offset 3\n",
        ),
    ],
)
def test_add_dash_refuses_bad_stdin_with_exit_2(tmp_path: Path, stdin: bytes, message: str) -> None:
    db = tmp_path / "s.db"
    completed = run([*HOTMEM, "--db", str(db), "add", "-", "--identifier", "a"], stdin=stdin)
    assert (completed.code, completed.err) == (2, message)


# -- progress ---------------------------------------------------------------------------------


@pytest.fixture
def package_dir(tmp_path: Path) -> Path:
    lines = [
        f'{{"fact": "Invoice {i} needs approval.", "identifier": "acme", "memory_id": "m-{i:05}", '
        '"created_at": "2026-01-01T00:00:00Z"}'
        for i in range(12_000)  # two snapshot chunks
    ]
    (tmp_path / "m.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


COMMANDS_WITH_PROGRESS = [
    (["--db", "s.db", "import", "m.jsonl"], "hotmem: importing: ", " MB (100%)"),
    (["--db", "s.db", "snapshot", "p.hotmem"], "hotmem: snapshot: ", "12,000 of 12,000 memories"),
    (["verify", "p.hotmem"], "hotmem: verifying: ", "12,000 of 12,000 memories (100%)"),
    (["hydrate", "p.hotmem", "--db", "h.db"], "hotmem: hydrating: ", "of 12,000 memories"),
]


@pytest.mark.slow
def test_long_work_shows_progress_on_a_terminal_and_nothing_on_a_pipe(package_dir: Path) -> None:
    piped = package_dir / "piped"
    piped.mkdir()
    shutil.copy(package_dir / "m.jsonl", piped)
    for argv, label, tail in COMMANDS_WITH_PROGRESS:
        shown = run_on_terminal([*HOTMEM, *argv], cwd=package_dir)
        assert shown.code == 0, shown.err
        lines = shown.err.split("\r")
        drawn = [line for line in lines if line.startswith(label)]
        assert drawn, shown.err
        assert tail in drawn[-1]
        # The line is erased at the end: spaces over it, the cursor back at its start.
        assert shown.err.endswith("\r" + " " * len(drawn[-1].rstrip()) + "\r")
        quiet = run([*HOTMEM, *argv], cwd=piped)
        assert (quiet.code, quiet.err) == (0, "")
        assert quiet.out == shown.out.replace(str(package_dir), str(piped))


@pytest.mark.slow
def test_a_migration_says_so_on_a_terminal_only(tmp_path: Path) -> None:
    for name in ("shown.db", "quiet.db"):
        shutil.copy(DATA / "store-v1.db", tmp_path / name)
    # The announcement is for stores of 10,000 memories or more: lowered for this small one.
    probe = (
        "import sys, hotmem.store.migrations as m; m._ANNOUNCE_ROWS = 1; "
        "from hotmem.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    shown = run_on_terminal(
        [sys.executable, "-c", probe, "--db", "shown.db", "stats"], cwd=tmp_path
    )
    assert shown.code == 0
    assert shown.err.startswith(
        "\rhotmem: migrating the store from schema 1 to 5 (rebuilding its full-text indexes)..."
    )
    assert shown.err.endswith("\rhotmem: store migrated to schema 5\r\n")  # the terminal's CRLF
    quiet = run([sys.executable, "-c", probe, "--db", "quiet.db", "stats"], cwd=tmp_path)
    assert (quiet.code, quiet.err) == (0, "")


# -- Ctrl-C and closed pipes ------------------------------------------------------------------


@pytest.mark.slow
def test_ctrl_c_prints_interrupted_and_exits_130(tmp_path: Path) -> None:
    fifo = tmp_path / "in.jsonl"
    os.mkfifo(fifo)
    process = subprocess.Popen(
        [*HOTMEM, "--db", str(tmp_path / "s.db"), "import", str(fifo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    )
    # Opening the FIFO returns once the import has opened it: the command is running.
    with open(fifo, "w") as writer:
        writer.write('{"fact": "Backups run nightly.", "identifier": "acme"}\n')
        writer.flush()
        time.sleep(0.2)  # the line is read; the import waits for the next one
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    assert (process.returncode, out, err) == (130, b"", b"hotmem: interrupted\n")
    with hotmem.open_store(tmp_path / "s.db") as store:
        assert len(store) == 0  # the import is one transaction: nothing of it was kept


@pytest.fixture
def big_store(tmp_path: Path) -> Path:
    path = tmp_path / "big.db"
    with hotmem.open_store(path) as store:
        store.add_many(
            {"fact": f"Invoice {i} needs approval.", "identifier": "acme"} for i in range(2_000)
        )
    return path


@pytest.mark.slow
def test_a_closed_pipe_ends_the_command_quietly(big_store: Path) -> None:
    process = subprocess.Popen(
        [*HOTMEM, "--db", str(big_store), "search", "invoice approval", "--limit", "2000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    first = process.stdout.readline()  # the output (about 120 kB) fills the pipe; then close it
    process.stdout.close()
    assert process.stderr is not None
    with process.stderr:
        err = process.stderr.read()
    process.wait(timeout=60)
    assert first.startswith(b"1. [")
    assert (process.returncode, err) == (0, b"")


@pytest.mark.slow
def test_hotmem_search_piped_into_head(big_store: Path) -> None:
    command = (
        f"set -o pipefail; {sys.executable} -m hotmem --db {big_store} "
        "search 'invoice approval' --limit 2000 | head -n 2"
    )
    completed = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False)
    assert (completed.returncode, completed.stderr) == (0, "")
    assert len(completed.stdout.splitlines()) == 2
