"""The CLI under hostile input: one line and a documented exit code, never a traceback.

Arguments are passed as raw bytes to a real ``python -m hotmem`` process, so a non-UTF-8
argument reaches the CLI the way a shell passes it (decoded with ``surrogateescape``).
"""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import hotmem
from tests.hotmem import workers

pytestmark = pytest.mark.slow


def hotmem_cli(*argv: str | bytes, db: str | bytes | Path | None = None) -> tuple[int, bytes, str]:
    """Run ``python -m hotmem`` with raw arguments; (exit code, stdout bytes, stderr)."""
    prefix: list[str | bytes] = ["--db", os.fsencode(db)] if db is not None else []
    completed = subprocess.run(
        [sys.executable, "-m", "hotmem", *prefix, *argv],
        capture_output=True,
        check=False,
        timeout=60,
        # Strict UTF-8 output, as under an en_US.UTF-8 locale (this machine's C locale would
        # pass unencodable text through).
        env={**os.environ, "HOTMEM_HOME": "/nonexistent", "PYTHONIOENCODING": "utf-8:strict"},
    )
    stderr = completed.stderr.decode("utf-8", "backslashreplace")
    assert "Traceback" not in stderr
    return completed.returncode, completed.stdout, stderr


def surrogate(field: str) -> str:
    return f"hotmem: expected {field} as valid Unicode text, found a lone surrogate U+DCFF"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([b"add", b"caf\xff", b"--identifier", b"acme"], surrogate("fact") + " at position 3\n"),
        ([b"add", b"x", b"--identifier", b"\xff"], surrogate("identifier") + " at position 0\n"),
        (
            [b"add", b"x", b"--identifier", b"a", b"--id", b"\xff"],
            surrogate("memory_id") + " at position 0\n",
        ),
        (
            [b"add", b"x", b"--identifier", b"a", b"--tag", b"\xff"],
            surrogate("every tag") + " at position 0\n",
        ),
        ([b"search", b"caf\xff"], surrogate("query") + " at position 3\n"),
        ([b"search", b"x", b"--identifier", b"\xff"], surrogate("identifier") + " at position 0\n"),
        ([b"delete", b"\xff"], surrogate("memory_id") + " at position 0\n"),
    ],
)
def test_a_non_utf8_argument_is_one_line_and_exit_2(
    tmp_path: Path, argv: list[bytes], message: str
) -> None:
    hotmem.open_store(tmp_path / "s.db").close()  # search and delete read an existing store
    assert hotmem_cli(*argv, db=tmp_path / "s.db")[0::2] == (2, message)


def test_a_non_utf8_store_path_works_and_is_printed_back_as_given(tmp_path: Path) -> None:
    db = os.fsencode(tmp_path) + b"/st\xff.db"
    code, out, err = hotmem_cli(
        "add", "Copper kettles.", "--identifier", "acme", "--id", "m-1", db=db
    )
    assert (code, out, err) == (0, b"m-1\n", "")
    code, out, err = hotmem_cli("stats", db=db)
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == b"store: " + db
    assert os.path.exists(db)


def _file(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    return path


MEMORY = b'{"fact": "ok", "identifier": "a"'


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (
            MEMORY + b', "importance": ' + b"1" * 5000 + b"}\n",
            "expected numbers of at most 100 characters, found one of 5000",
        ),
        (
            MEMORY + b', "tags": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
            "expected JSON nested at most 64 levels deep, found 100001",
        ),
        (
            MEMORY + b', "fact": "twice"}\n',
            "invalid JSON object: expected each key once, found 'fact' twice",
        ),
        (
            MEMORY + b"}\n\xef\xbb\xbf" + MEMORY + b"}\n",
            "expected a byte-order mark only at the start of the file, found one here",
        ),
        (
            MEMORY + b', "created_at": "9999-12-31T23:59:59-01:00"}\n',
            "expected created_at within years 1..9999 once converted to UTC",
        ),
        (
            b'{"fact": "\\ud800", "identifier": "a"}\n',
            "expected fact as valid Unicode text, found a lone surrogate U+D800 at position 0",
        ),
    ],
)
def test_a_hostile_import_file_is_refused_by_line_with_exit_2(
    tmp_path: Path, data: bytes, reason: str
) -> None:
    path = _file(tmp_path, data)
    code, out, err = hotmem_cli("import", str(path), db=tmp_path / "s.db")
    line = 2 if data.count(b"\n") == 2 else 1
    assert (code, out) == (2, b"")
    assert err.startswith(f"{path}:{line}: {reason}")
    assert err.count("\n") == 1


def test_a_bom_at_the_start_of_an_import_file_is_fine(tmp_path: Path) -> None:
    path = _file(tmp_path, b"\xef\xbb\xbf" + MEMORY + b"}\r\n")
    assert hotmem_cli("import", str(path), db=tmp_path / "s.db") == (
        0,
        b"imported 1 memory\n",
        "",
    )


def test_an_import_lists_the_first_20_problems_then_their_count(tmp_path: Path) -> None:
    path = _file(tmp_path, MEMORY + b"}\n" + b"[]\n" * 250)
    code, _, err = hotmem_cli("import", str(path), db=tmp_path / "s.db")
    lines = err.splitlines()
    assert (code, len(lines)) == (2, 21)
    assert lines[0] == f"{path}:2: expected a JSON object, found an array"
    assert lines[19] == f"{path}:21: expected a JSON object, found an array"
    assert lines[20] == "... and 230 more problems"
    with hotmem.open_store(tmp_path / "s.db") as store:
        assert store.count() == 0  # the first, valid line was rolled back


def test_import_from_stdin(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "hotmem", "--db", str(tmp_path / "s.db"), "import", "-"],
        input=MEMORY + b"}\n[]\n",
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert (completed.returncode, completed.stderr) == (
        2,
        b"<stdin>:2: expected a JSON object, found an array\n",
    )


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            "UPDATE memories SET tags = '[' WHERE memory_id = 'm-1'",
            "hotmem: store {db!r} holds a damaged memory, memory_id='m-1': "
            "expected tags as a JSON array of strings, found tags='['\n",
        ),
        (
            "UPDATE memories_fts_data SET block = x'00000000ffffffff' || substr(block, 9) "
            "WHERE id > 10",
            "hotmem: cannot read store {db!r}: the store is damaged: expected a sound SQLite "
            "file and full-text index, found 'database disk image is malformed'; "
            "check_integrity() lists the problems; restore the store from a snapshot\n",
        ),
    ],
)
def test_a_damaged_store_is_one_line_and_exit_1(tmp_path: Path, sql: str, message: str) -> None:
    db = tmp_path / "s.db"
    with hotmem.open_store(db) as store:
        store.add("Copper kettles boil fast.", identifier="acme", memory_id="m-1")
    connection = sqlite3.connect(db)
    connection.execute(sql)
    connection.commit()
    connection.close()
    assert hotmem_cli("search", "copper kettle", db=db) == (1, b"", message.format(db=str(db)))


def test_a_store_locked_past_the_busy_timeout_is_one_line_and_exit_1(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    hotmem.open_store(db).close()
    spawn = multiprocessing.get_context("spawn")
    holding, release = spawn.Event(), spawn.Event()
    holder = spawn.Process(
        target=workers.hold_write, args=(str(db), holding, release), kwargs={"wait": 20.0}
    )
    holder.start()
    try:
        assert holding.wait(30)
        code, out, err = hotmem_cli("--busy-timeout", "0.3", "add", "x", "--identifier", "a", db=db)
    finally:
        release.set()
        holder.join(30)
    assert (code, out) == (1, b"")
    assert err == (
        f"hotmem: cannot write to store {str(db)!r}: another connection held its write lock for "
        "longer than the busy timeout (0.3 s); expected the lock within the timeout, found "
        "'database is locked'. Retry when the other writer is done, or open the store with a "
        "longer busy_timeout\n"
    )


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("-1", "expected 0..86400 seconds, found '-1'"),
        ("soon", "expected a number of seconds, found 'soon'"),
    ],
)
def test_a_bad_busy_timeout_is_a_usage_error(tmp_path: Path, value: str, reason: str) -> None:
    code, _, err = hotmem_cli("--busy-timeout", value, "stats", db=tmp_path / "s.db")
    assert code == 2
    assert err.splitlines()[-1].endswith(f"argument --busy-timeout: {reason}")
