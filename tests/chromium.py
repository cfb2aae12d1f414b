"""Debian's headless Chromium as a child process, spoken to over the DevTools Protocol.

Standard library only. Chromium runs with ``--remote-debugging-pipe``: it reads commands on fd 3
and writes answers and events on fd 4, each a JSON message ended by a NUL byte. ``Chromium``
sends a command and waits for its answer (``send``), waits for an event (``wait_for_event``),
and keeps every other event for whoever asks (``events``); ``tests/browser.py`` builds pages on
it.

Chromium runs in its own process group with its profile, home, caches and TMPDIR in a
temporary directory under ``workdir`` (TMPDIR moves to a short directory of the system's when
that path is too long for the Unix socket Chromium makes there); leaving the ``with`` block
closes it (``Browser.close``, then SIGKILL to its group) and removes those directories.
Every wait has a timeout, and a timeout or a browser that exits raises ``BrowserError`` with
the end of Chromium's log. Chromium has no network: every host name resolves to nothing.

Why ``os.posix_spawn`` and not ``subprocess.Popen(pass_fds=...)``: ``pass_fds`` keeps a
descriptor's number, and Chromium needs exactly 3 and 4; moving them there in the child takes a
``preexec_fn`` (unsafe with threads) before ``Popen`` closes every descriptor not passed, 3 and
4 included. ``posix_spawn``'s file actions put the pipe ends at 3 and 4 before ``exec``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

__all__ = ["MISSING", "BrowserError", "Chromium", "chromium_path", "living"]

#: Where Debian's ``chromium`` package installs the browser.
DEBIAN_CHROMIUM = "/usr/bin/chromium"
MISSING = (
    "Chromium is not installed: install Debian's chromium package (apt-get install -y "
    "chromium); .ci/run installs it when /usr/bin/chromium is missing"
)
FLAGS = (
    "--headless=new",
    "--no-sandbox",  # root in a container has no user namespace for the sandbox
    "--disable-gpu",
    "--disable-dev-shm-usage",  # a container's /dev/shm is small
    "--remote-debugging-pipe",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-sync",
    "--disable-breakpad",
    "--no-pings",
    "--mute-audio",
    "--hide-scrollbars",
    "--password-store=basic",
    "--force-color-profile=srgb",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no network: every host name fails to resolve
)
#: The length of "/org.chromium.Chromium.XXXXXX/SingletonSocket", which Chromium adds to TMPDIR.
_SOCKET_SUFFIX = 45


class BrowserError(RuntimeError):
    """Chromium is missing, did not answer in time, exited, or refused a command."""


def chromium_path() -> str | None:
    """Debian's Chromium, or a ``chromium`` on PATH, or None."""
    if os.access(DEBIAN_CHROMIUM, os.X_OK):
        return DEBIAN_CHROMIUM
    return shutil.which("chromium")


def _high(fd: int) -> int:
    """``fd`` moved to a number of at least 10 (close-on-exec), so that the spawn's file
    actions, which write 0 to 4, never overwrite a source before it is copied."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class Chromium:
    """A headless Chromium and its DevTools pipe (a context manager)."""

    def __init__(
        self,
        *,
        workdir: Path | None = None,
        viewport: tuple[int, int] = (1280, 900),
        timeout: float = 30.0,
        executable: str | None = None,
    ) -> None:
        self.executable = executable
        self.viewport = viewport
        self.timeout = timeout
        self._workdir = workdir
        self._home: Path | None = None
        self._temporary: Path | None = None
        self._pid: int | None = None
        self._commands = -1
        self._answers = -1
        self._buffer = b""
        self._next_id = 0
        self._responses: dict[int, dict[str, Any]] = {}
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> Self:
        try:
            self._launch()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _launch(self) -> None:
        executable = self.executable or chromium_path()
        if executable is None:
            raise BrowserError(MISSING)
        self._home = Path(tempfile.mkdtemp(prefix="chromium-", dir=self._workdir))
        command_read, self._commands = (_high(fd) for fd in os.pipe())
        self._answers, answer_write = (_high(fd) for fd in os.pipe())
        log = _high(os.open(self._home / "chromium.log", os.O_WRONLY | os.O_CREAT, 0o600))
        home = str(self._home)
        env = {
            **os.environ,
            "HOME": home,
            "XDG_CONFIG_HOME": home,
            "XDG_CACHE_HOME": home,
            "TMPDIR": str(self._temporary_directory()),
        }
        argv = [executable, *FLAGS, f"--user-data-dir={self._home / 'profile'}", "about:blank"]
        try:
            self._pid = os.posix_spawn(
                executable,
                argv,
                env,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, log, 1),
                    (os.POSIX_SPAWN_DUP2, log, 2),
                    (os.POSIX_SPAWN_DUP2, command_read, 3),
                    (os.POSIX_SPAWN_DUP2, answer_write, 4),
                ],
                setpgroup=0,
            )
        finally:
            for fd in (command_read, answer_write, log):
                os.close(fd)

    def close(self) -> None:
        """Close Chromium (politely, then SIGKILL to its process group) and remove its
        directory. Safe to call twice."""
        if self._pid is not None:
            with contextlib.suppress(BrowserError, OSError):
                self._write({"id": -1, "method": "Browser.close"})
            deadline = time.monotonic() + 5.0
            while not self._exited() and time.monotonic() < deadline:
                time.sleep(0.05)
            # The leader is not reaped yet, so its group id still names Chromium's processes.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._pid, signal.SIGKILL)
            os.waitpid(self._pid, 0)
            deadline = time.monotonic() + 5.0
            while living(self._pid) and time.monotonic() < deadline:
                time.sleep(0.02)
            self._pid = None
        for fd in (self._commands, self._answers):
            if fd >= 0:
                os.close(fd)
        self._commands = self._answers = -1
        for directory in (self._home, self._temporary):
            if directory is not None:
                _remove(directory)
        self._home = self._temporary = None

    def _temporary_directory(self) -> Path:
        """Chromium's TMPDIR: its home when short enough, else a new short directory in the
        system's (its ``SingletonSocket`` is a Unix socket there, and a socket's path is at
        most 107 bytes)."""
        assert self._home is not None
        if len(os.fsencode(self._home)) + _SOCKET_SUFFIX <= 107:
            return self._home
        self._temporary = Path(tempfile.mkdtemp(prefix="chromium-"))
        return self._temporary

    def _exited(self) -> bool:
        assert self._pid is not None
        found = os.waitid(os.P_PID, self._pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        return found is not None

    def log(self) -> str:
        """The end of Chromium's stdout and stderr."""
        if self._home is None or not (self._home / "chromium.log").exists():
            return ""
        text = (self._home / "chromium.log").read_text(errors="replace")
        return text[-2000:]

    # -- the protocol -----------------------------------------------------------------------

    def _write(self, message: dict[str, Any]) -> None:
        if self._commands < 0:
            raise BrowserError("the browser is not running")
        try:
            os.write(self._commands, json.dumps(message).encode() + b"\0")
        except BrokenPipeError:
            raise BrowserError(
                f"Chromium closed its DevTools pipe (it exited); its log:\n{self.log()}"
            ) from None

    def send(
        self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None
    ) -> dict[str, Any]:
        """Send a command and wait for its answer: the result, or ``BrowserError``."""
        self._next_id += 1
        message_id = self._next_id
        message: dict[str, Any] = {"id": message_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self._write(message)
        self._read_until(lambda: message_id in self._responses, f"the answer to {method}")
        answer = self._responses.pop(message_id)
        if "error" in answer:
            raise BrowserError(f"{method} failed: {answer['error']}")
        result: dict[str, Any] = answer.get("result", {})
        return result

    def wait_for_event(self, method: str, session: str | None) -> dict[str, Any]:
        """The first event ``method`` of the session not waited for yet."""

        def find() -> dict[str, Any] | None:
            for event in self._events:
                if event["method"] == method and event.get("sessionId") == session:
                    return event
            return None

        self._read_until(lambda: find() is not None, f"the event {method}")
        event = find()
        assert event is not None
        self._events.remove(event)
        return event

    def events(self, session: str | None) -> list[dict[str, Any]]:
        """Every event of the session received so far (reading what is already waiting)."""
        self._read(0.0)
        return [event for event in self._events if event.get("sessionId") == session]

    def _read_until(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BrowserError(
                    f"Chromium sent no {what} within {self.timeout:g}s; its log:\n{self.log()}"
                )
            self._read(remaining)

    def _read(self, timeout: float) -> None:
        """Read what Chromium has sent, waiting at most ``timeout`` seconds for something."""
        if self._answers < 0:
            raise BrowserError("the browser is not running")
        ready, _, _ = select.select([self._answers], [], [], timeout)
        if not ready:
            return
        chunk = os.read(self._answers, 1 << 16)
        if not chunk:
            raise BrowserError(
                f"Chromium closed its DevTools pipe (it exited); its log:\n{self.log()}"
            )
        self._buffer += chunk
        *messages, self._buffer = self._buffer.split(b"\0")
        for raw in messages:
            message = json.loads(raw)
            if "id" in message:
                self._responses[message["id"]] = message
            else:
                self._events.append(message)


def living(group: int) -> list[int]:
    """The processes of a process group that are still running (not zombies), from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses
            fields = stat.read_text().rpartition(")")[2].split()
            if int(fields[2]) == group and fields[0] != "Z":
                found.append(int(stat.parent.name))
    return sorted(found)


def _remove(directory: Path) -> None:
    """Remove ``directory``, trying again while Chromium's last processes finish writing."""
    for _ in range(20):
        try:
            shutil.rmtree(directory)
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)
        else:
            return
    shutil.rmtree(directory, ignore_errors=True)
