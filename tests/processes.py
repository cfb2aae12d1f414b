"""Running a command-line entry point as a real process: plainly, or with stderr on a terminal.

Both helpers assert that no traceback reached stderr, whatever the exit code.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Completed", "default_sigint", "entry_point", "run", "run_on_terminal"]


@dataclass(frozen=True, slots=True)
class Completed:
    """A finished process: its exit code, stdout and stderr (text)."""

    code: int
    out: str
    err: str


def entry_point(module: str) -> list[str]:
    """The argv prefix that runs ``module``'s ``main`` in this interpreter."""
    return [sys.executable, "-c", f"import sys; from {module} import main; sys.exit(main())"]


def default_sigint() -> None:
    """``preexec_fn`` giving the child SIGINT's default action, as in a foreground terminal: a
    test run in the background (``pytest &``) inherits SIGINT ignored, and Python keeps it so."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _environment(home: Path | None, extra: dict[str, str] | None) -> dict[str, str]:
    env = {**os.environ, **(extra or {})}
    if home is not None:
        env["HOME"] = str(home)
        env["HOTMEM_HOME"] = str(home / ".hotmem")
    return env


def run(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    home: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
    timeout: float = 120,
) -> Completed:
    """Run ``argv`` with stdout and stderr on pipes."""
    completed = subprocess.run(
        list(argv),
        cwd=cwd,
        env=_environment(home, env),
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    err = completed.stderr.decode("utf-8", "backslashreplace")
    assert "Traceback" not in err, err
    return Completed(completed.returncode, completed.stdout.decode("utf-8", "replace"), err)


def run_on_terminal(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    home: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> Completed:
    """Run ``argv`` with stderr on a pseudo-terminal (so ``isatty()`` is true) and stdout on a
    pipe; ``err`` is what the terminal received, byte for byte (its ``\n`` shown as ``\r\n``).
    stdout is read at the end: keep it under a pipe's buffer (64 KiB)."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=_environment(home, env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    received = bytearray()
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        received += data
    out, _ = process.communicate(timeout=timeout)
    os.close(master)
    err = received.decode("utf-8", "backslashreplace")
    assert "Traceback" not in err, err
    return Completed(process.returncode, out.decode("utf-8", "replace"), err)
