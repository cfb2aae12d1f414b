"""Where snapshot and hydrate write: leftovers of killed runs, and paths they must not replace.

A run killed outright (SIGKILL, power loss) cannot delete its hidden temporary file; the next
run for the same target removes every such file that no live process holds locked, and only
files of that exact name. ``OUT`` (and a hydration target) must be a regular file or nothing:
never a directory, link, FIFO, socket or device, and never the store being snapshotted under
any name.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import hotmem
from hotmem.cli import main
from hotmem.snapshot import format as fmt

pytestmark = pytest.mark.skipif(os.name == "nt", reason="advisory locks and FIFOs are POSIX")

MEMORIES = [
    {"memory_id": f"m-{i:04d}", "identifier": "acme", "fact": f"Fact number {i} about invoices."}
    for i in range(30)
]

# Runs one snapshot or hydration in a child process that stops, forever, on the Nth call of
# a function of the code under test, once it has said so on stdout: the parent kills it there.
CHILD = """
import importlib, sys, time
import hotmem
from hotmem.snapshot import format as fmt
module_name, function, calls_before, operation, *paths = sys.argv[1:]
module = importlib.import_module(module_name)
original, calls = getattr(module, function), []
def paused(*args, **kwargs):
    calls.append(None)
    if len(calls) == int(calls_before):
        print("paused", flush=True)
        while True:
            time.sleep(60)
    return original(*args, **kwargs)
setattr(module, function, paused)
fmt.CHUNK_RECORDS = 10
if operation == "snapshot":
    with hotmem.open_store(paths[0]) as store:
        store.snapshot(paths[1], overwrite=True)
else:
    hotmem.hydrate(paths[0], paths[1])
"""


def temporaries(directory: Path, target: str, suffix: str) -> list[str]:
    pattern = re.compile(re.escape(f".{target}.") + "[0-9a-f]{12}" + re.escape(suffix))
    return sorted(p.name for p in directory.iterdir() if pattern.fullmatch(p.name))


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    with hotmem.open_store(tmp_path / "s.db") as store:
        store.add_many(MEMORIES)
    return tmp_path / "s.db"


@pytest.fixture
def package(store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(fmt, "CHUNK_RECORDS", 10)
    with hotmem.open_store(store_path) as store:
        store.snapshot(tmp_path / "p.zip")
    return tmp_path / "p.zip"


@pytest.fixture
def paused_child() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    children: list[subprocess.Popen[str]] = []

    def start(*argv: str) -> subprocess.Popen[str]:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, *argv], stdout=subprocess.PIPE, text=True
        )
        children.append(child)
        assert child.stdout is not None
        assert child.stdout.readline() == "paused\n"
        return child

    yield start
    for child in children:
        if child.poll() is None:
            child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()


def kill(child: subprocess.Popen[str]) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL


@pytest.mark.slow
def test_a_killed_snapshot_is_cleaned_up_by_the_next(
    store_path: Path, tmp_path: Path, paused_child: Callable[..., subprocess.Popen[str]]
) -> None:
    out = tmp_path / "p.zip"
    # Killed while assembling the package: its .partial file holds the spooled members.
    child = paused_child(
        "hotmem.snapshot.writer", "_assemble", "1", "snapshot", str(store_path), str(out)
    )
    [left] = temporaries(tmp_path, "p.zip", ".partial")
    # While its writer lives, another snapshot to the same OUT leaves its file alone.
    with hotmem.open_store(store_path) as store:
        store.snapshot(out, overwrite=True)
    assert temporaries(tmp_path, "p.zip", ".partial") == [left]
    kill(child)
    assert temporaries(tmp_path, "p.zip", ".partial") == [left]
    with hotmem.open_store(store_path) as store:
        report = store.snapshot(out, overwrite=True)
    assert temporaries(tmp_path, "p.zip", ".partial") == []
    assert report.record_count == len(MEMORIES)
    assert hotmem.verify_snapshot(out).ok


@pytest.mark.slow
def test_a_killed_hydration_is_cleaned_up_by_the_next(
    package: Path, tmp_path: Path, paused_child: Callable[..., subprocess.Popen[str]]
) -> None:
    target = tmp_path / "t.db"
    # Killed after loading two of three chunks into its .hydrating store.
    child = paused_child(
        "hotmem.snapshot.hydrate", "_rows", "3", "hydrate", str(package), str(target)
    )
    [left] = temporaries(tmp_path, "t.db", ".hydrating")
    assert (tmp_path / left).stat().st_size > 0
    kill(child)
    assert not target.exists()
    report = hotmem.hydrate(package, target)
    assert temporaries(tmp_path, "t.db", ".hydrating") == []
    assert report.record_count == len(MEMORIES)
    with hotmem.open_store(target) as store:
        assert len(store) == len(MEMORIES)


@pytest.mark.slow
def test_the_cli_cleans_up_after_a_killed_snapshot(
    store_path: Path, tmp_path: Path, paused_child: Callable[..., subprocess.Popen[str]]
) -> None:
    out = tmp_path / "p.zip"
    child = paused_child(
        "hotmem.snapshot.writer", "_assemble", "1", "snapshot", str(store_path), str(out)
    )
    kill(child)
    assert len(temporaries(tmp_path, "p.zip", ".partial")) == 1
    completed = subprocess.run(
        [sys.executable, "-m", "hotmem", "--db", str(store_path), "snapshot", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (completed.returncode, completed.stderr) == (0, "")
    assert temporaries(tmp_path, "p.zip", ".partial") == []


def test_only_unlocked_regular_files_of_the_exact_name_are_removed(
    store_path: Path, tmp_path: Path
) -> None:
    leftover = tmp_path / ".p.zip.0123456789ab.partial"
    leftover.write_bytes(b"a package a killed run left")
    kept = {
        ".p.zip.0123456789ab.partial.bak": "suffix after",
        ".p.zip.0123456789abc.partial": "13 hex digits",
        ".p.zip.0123456789AB.partial": "upper-case hex",
        ".q.zip.0123456789ab.partial": "another target",
        "p.zip.0123456789ab.partial": "not hidden",
        ".p.zip.0123456789ab.hydrating": "another operation's suffix",
    }
    for name in kept:
        (tmp_path / name).write_bytes(b"someone else's")
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_bytes(b"linked to")
    (tmp_path / ".p.zip.aaaaaaaaaaaa.partial").symlink_to(elsewhere)
    os.mkfifo(tmp_path / ".p.zip.bbbbbbbbbbbb.partial")
    (tmp_path / ".p.zip.cccccccccccc.partial").mkdir()
    with hotmem.open_store(store_path) as store:
        store.snapshot(tmp_path / "p.zip")
    assert not leftover.exists()
    for name in kept:
        assert (tmp_path / name).read_bytes() == b"someone else's"
    assert (tmp_path / ".p.zip.aaaaaaaaaaaa.partial").is_symlink()
    assert elsewhere.read_bytes() == b"linked to"
    assert (tmp_path / ".p.zip.bbbbbbbbbbbb.partial").is_fifo()
    assert (tmp_path / ".p.zip.cccccccccccc.partial").is_dir()


# -- paths snapshot and hydrate must not replace ------------------------------------------------
def fifo(path: Path) -> None:
    os.mkfifo(path)


def link_to_a_file(path: Path) -> None:
    (path.parent / "real.zip").write_bytes(b"the link's target")
    path.symlink_to(path.parent / "real.zip")


def dangling_link(path: Path) -> None:
    path.symlink_to(path.parent / "nowhere.zip")


def unix_socket(path: Path) -> None:
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.close()


NOT_REGULAR: dict[str, tuple[Callable[[Path], None], str]] = {
    "FIFO": (fifo, "it is a FIFO (named pipe), not a regular file"),
    "symbolic link to a regular file": (link_to_a_file, "it is a symbolic link"),
    "dangling symbolic link": (dangling_link, "it is a symbolic link"),
    "directory": (Path.mkdir, "it is a directory"),
    "socket": (unix_socket, "it is a socket"),
}


def state(directory: Path) -> list[tuple[str, int, bool]]:
    return sorted((p.name, p.lstat().st_mode, p.is_symlink()) for p in directory.iterdir())


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_snapshot_refuses_an_out_that_is_not_a_regular_file(
    store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    make, message = NOT_REGULAR[kind]
    out = tmp_path / "p.zip"
    make(out)
    before = state(tmp_path)
    with (
        hotmem.open_store(store_path) as store,
        pytest.raises(hotmem.SnapshotError, match=re.escape(message)),
    ):
        store.snapshot(out, overwrite=True)
    assert state(tmp_path) == before
    code = main(["--db", str(store_path), "snapshot", str(out), "--force"])
    captured = capsys.readouterr()
    assert (code, captured.out) == (2, "")
    assert (
        captured.err
        == f"hotmem: cannot write {str(out)!r}: {message}"
        + ("" if message.endswith("regular file") else ", not a regular file")
        + "\n"
    )
    assert state(tmp_path) == before


def test_snapshot_refuses_a_device(
    store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A device node of its own (what /dev/null is), never a real device path: should the
    # refusal fail, only this node would be replaced.
    out = tmp_path / "null"
    try:
        os.mknod(out, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")
    with (
        hotmem.open_store(store_path) as store,
        pytest.raises(hotmem.SnapshotError, match="it is a character device"),
    ):
        store.snapshot(out, overwrite=True)
    assert main(["--db", str(store_path), "snapshot", str(out), "--force"]) == 2
    assert capsys.readouterr().err == (
        f"hotmem: cannot write {str(out)!r}: it is a character device, not a regular file\n"
    )
    assert out.is_char_device()


def hard_link(store_path: Path) -> Path:
    os.link(store_path, store_path.parent / "same.db")
    return store_path.parent / "same.db"


def via_another_path(store_path: Path) -> Path:
    (store_path.parent / "sub").mkdir()
    return store_path.parent / "sub" / ".." / store_path.name


@pytest.mark.parametrize(
    ("name", "out"),
    [
        ("the store", lambda path: path),
        ("a hard link to it", hard_link),
        ("another path to it", via_another_path),
        ("its -wal file, before it exists", lambda path: Path(f"{path}-wal")),
        ("its -journal file", lambda path: Path(f"{path}-journal")),
    ],
)
def test_snapshot_refuses_to_write_over_the_store(
    store_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    out: Callable[[Path], Path],
) -> None:
    target = out(store_path)
    content = store_path.read_bytes()
    with hotmem.open_store(store_path) as store:
        with pytest.raises(hotmem.SnapshotError, match="a file of the store"):
            store.snapshot(target, overwrite=True)
        assert len(store) == len(MEMORIES)
    code = main(["--db", str(store_path), "snapshot", str(target), "--force"])
    captured = capsys.readouterr()
    assert (code, captured.out) == (2, "")
    assert captured.err.startswith(f"hotmem: cannot write {str(target)!r}: it is ")
    assert captured.err.endswith(", a file of the store\n")
    assert store_path.read_bytes() == content
    with hotmem.open_store(store_path) as store:
        assert len(store) == len(MEMORIES)


@pytest.mark.parametrize(
    "kind", ["FIFO", "symbolic link to a regular file", "dangling symbolic link"]
)
def test_hydrate_refuses_a_target_that_is_not_a_regular_file(
    package: Path, tmp_path: Path, kind: str
) -> None:
    make, message = NOT_REGULAR[kind]
    target = tmp_path / "t.db"
    if kind == "symbolic link to a regular file":
        hotmem.open_store(tmp_path / "empty.db").close()  # an empty store, behind a link
        target.symlink_to(tmp_path / "empty.db")
    else:
        make(target)
    before = state(tmp_path)
    with pytest.raises(hotmem.HydrationError, match=re.escape(message)):
        hotmem.hydrate(package, target)
    assert state(tmp_path) == before


@pytest.mark.parametrize("kind", ["FIFO", "directory", "socket"])
def test_a_package_that_is_not_a_regular_file_is_refused_without_waiting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    make, _ = NOT_REGULAR[kind]
    package = tmp_path / "p.zip"
    make(package)
    message = f"cannot read package {str(package)!r}: not a regular file"
    for read in (hotmem.verify_snapshot, lambda p: hotmem.hydrate(p, tmp_path / "t.db")):
        with pytest.raises(hotmem.SnapshotError) as raised:
            read(package)
        assert str(raised.value) == message
    for argv in (
        ["verify", str(package)],
        ["hydrate", str(package), "--db", str(tmp_path / "t.db")],
    ):
        assert main(argv) == 2
        assert capsys.readouterr().err == f"hotmem: {message}\n"
    assert not (tmp_path / "t.db").exists()
