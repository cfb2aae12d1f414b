"""The evaluator's output writer: atomic, and never renamed over what is not a regular file."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from hotmem_eval.cli import main
from hotmem_eval.errors import UsageError
from hotmem_eval.outputs import atomic_write, write_text

pytestmark = pytest.mark.skipif(os.name == "nt", reason="FIFOs, sockets and devices are POSIX")


def fifo(path: Path) -> None:
    os.mkfifo(path)


def link_to_a_file(path: Path) -> None:
    (path.parent / "real.md").write_text("the link's target")
    path.symlink_to(path.parent / "real.md")


def dangling_link(path: Path) -> None:
    path.symlink_to(path.parent / "nowhere.md")


def unix_socket(path: Path) -> None:
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.close()


def device(path: Path) -> None:
    # A device node of its own, never a real device path (as /dev/null is: 1, 3).
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")


KINDS: dict[str, tuple[Callable[[Path], None], str]] = {
    "FIFO": (fifo, "a FIFO (named pipe)"),
    "symbolic link to a file": (link_to_a_file, "a symbolic link"),
    "dangling symbolic link": (dangling_link, "a symbolic link"),
    "directory": (Path.mkdir, "a directory"),
    "socket": (unix_socket, "a socket"),
    "character device": (device, "a character device"),
}


def state(directory: Path) -> list[tuple[str, int]]:
    return sorted((p.name, p.lstat().st_mode) for p in directory.iterdir())


@pytest.mark.parametrize("kind", KINDS)
def test_atomic_write_refuses_a_path_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    make, what = KINDS[kind]
    path = tmp_path / "report.md"
    make(path)
    before = state(tmp_path)
    with pytest.raises(UsageError) as raised:
        write_text(path, "# report\n")
    assert str(raised.value) == f"cannot write {str(path)!r}: it is {what}, not a regular file"
    assert state(tmp_path) == before


def test_a_path_that_turns_into_a_fifo_while_writing_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "report.md"

    def write_then_swap(temporary: Path) -> None:
        temporary.write_text("# report\n")
        os.mkfifo(path)

    with pytest.raises(UsageError, match="it is a FIFO"):
        atomic_write(path, write_then_swap)
    assert state(tmp_path) == [("report.md", os.lstat(path).st_mode)]
    assert path.is_fifo()


@pytest.mark.parametrize("option", ["--output", "--report"])
@pytest.mark.parametrize("kind", ["FIFO", "dangling symbolic link", "character device"])
def test_the_cli_refuses_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, kind: str
) -> None:
    make, what = KINDS[kind]
    path = tmp_path / "out"
    make(path)
    before = state(tmp_path)
    assert main([option, str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        captured.err
        == f"hotmem-eval: cannot write {str(path)!r}: it is {what}, not a regular file\n"
    )
    assert state(tmp_path) == before


def test_the_cli_refuses_an_export_file_that_is_not_regular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = tmp_path / "run"
    export.mkdir()
    os.mkfifo(export / "results.parquet")
    assert main(["--export-dir", str(export), "--output", str(tmp_path / "r.json")]) == 2
    assert capsys.readouterr().err == (
        f"hotmem-eval: cannot write {str(export / 'results.parquet')!r}: "
        "it is a FIFO (named pipe), not a regular file\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert [p.name for p in export.iterdir()] == ["results.parquet"]


def test_the_cli_refuses_an_export_dir_that_is_not_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.mkfifo(tmp_path / "run")
    assert main(["--export-dir", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == (
        f"hotmem-eval: cannot write into {str(tmp_path / 'run')!r}: it is not a directory\n"
    )


def _files(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_an_export_interrupted_by_a_full_disk_leaves_the_previous_one_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 35: a full disk mid-export left a mixed set of old and new tables.
    import errno

    from hotmem_eval import outputs

    export = tmp_path / "run"
    assert main(["--export-dir", str(export), "--profile", "default"]) == 0
    before = _files(export)
    written = []
    original = outputs._write_parquet

    def full_disk_at_the_third_table(table: object, target: Path) -> None:
        written.append(target)
        if len(written) == 3:
            raise OSError(errno.ENOSPC, "No space left on device", str(target))
        original(table, target)  # type: ignore[arg-type]

    monkeypatch.setattr(outputs, "_write_parquet", full_disk_at_the_third_table)
    assert main(["--export-dir", str(export), "--profile", "rrf"]) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert _files(export) == before  # every file the previous run's, no temporary left


def test_an_export_commits_the_manifest_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hotmem_eval import outputs

    export = tmp_path / "run"
    renamed: list[str] = []
    original = os.replace

    def recording(source: object, target: object) -> None:
        renamed.append(Path(str(target)).name)
        original(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(outputs.os, "replace", recording)
    assert main(["--export-dir", str(export), "--profile", "default"]) == 0
    assert renamed[-1] == "manifest.json"
    assert "results.parquet" in renamed
