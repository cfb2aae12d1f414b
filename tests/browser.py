"""A real headless browser for tests: Debian's Chromium driven over the DevTools Protocol.

Standard library only. Chromium runs with ``--remote-debugging-pipe``: it reads commands on fd 3
and writes answers and events on fd 4, each a JSON message ended by a NUL byte. ::

    with Browser(workdir=tmp_path) as browser:
        page = browser.open(tmp_path / "report.html")
        assert page.console_errors == []
        assert all(image.natural_width > 0 for image in page.images)
        assert page.visible("#decision", in_viewport=True)
        png = page.screenshot()

``open`` navigates a new tab to the file's ``file://`` URL at a fixed viewport (1280 x 900),
waits for the load event and for the next frame to be drawn, and raises ``BrowserError`` if the
file cannot be loaded. ``console_errors`` holds what a person would see in the console:
``console.error`` calls, uncaught exceptions, and the browser's own error entries (a resource
that failed to load, a refused network request). Chromium has no network: every host name
resolves to nothing, so a page that needs one fails loudly instead of fetching it.

Chromium runs in its own process group with its profile, home, caches and TMPDIR in a
temporary directory under ``workdir`` (TMPDIR moves to a short directory of the system's when
that path is too long for the Unix socket Chromium makes there); leaving the ``with`` block
closes it (``Browser.close``, then SIGKILL to its group) and removes those directories.
Every wait has a timeout, and a timeout or a browser that exits raises ``BrowserError`` with
the end of Chromium's log.

Why ``os.posix_spawn`` and not ``subprocess.Popen(pass_fds=...)``: ``pass_fds`` keeps a
descriptor's number, and Chromium needs exactly 3 and 4; moving them there in the child takes a
``preexec_fn`` (unsafe with threads) before ``Popen`` closes every descriptor not passed, 3 and
4 included. ``posix_spawn``'s file actions put the pipe ends at 3 and 4 before ``exec``.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Browser", "BrowserError", "Image", "Page", "chromium_path", "living"]

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
#: The images of the page, and their rendered sizes.
_IMAGES_JS = """Array.from(document.images, (img) => {
  const box = img.getBoundingClientRect();
  return {src: img.currentSrc || img.src, naturalWidth: img.naturalWidth,
          naturalHeight: img.naturalHeight, complete: img.complete,
          width: box.width, height: box.height};
})"""
_VISIBILITY_JS = """((selector) => {
  const element = document.querySelector(selector);
  if (element === null) return {found: false};
  const box = element.getBoundingClientRect();
  const style = getComputedStyle(element);
  return {found: true, width: box.width, height: box.height,
          top: box.top + window.scrollY, left: box.left + window.scrollX,
          bottom: box.bottom + window.scrollY, right: box.right + window.scrollX,
          display: style.display, visibility: style.visibility,
          rendered: element.checkVisibility({checkOpacity: true, checkVisibilityCSS: true}),
          viewportWidth: window.innerWidth, viewportHeight: window.innerHeight};
})"""
#: The length of "/org.chromium.Chromium.XXXXXX/SingletonSocket", which Chromium adds to TMPDIR.
_SOCKET_SUFFIX = 45
_NEXT_FRAME_JS = "new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)))"


class BrowserError(RuntimeError):
    """Chromium is missing, did not answer in time, exited, or refused a command."""


def chromium_path() -> str | None:
    """Debian's Chromium, or a ``chromium`` on PATH, or None."""
    if os.access(DEBIAN_CHROMIUM, os.X_OK):
        return DEBIAN_CHROMIUM
    return shutil.which("chromium")


@dataclass(frozen=True, slots=True)
class Image:
    """An ``<img>`` of the page: its intrinsic size, whether it loaded, its size on the page."""

    src: str
    natural_width: int
    natural_height: int
    complete: bool
    width: float
    height: float


def _high(fd: int) -> int:
    """``fd`` moved to a number of at least 10 (close-on-exec), so that the spawn's file
    actions, which write 0 to 4, never overwrite a source before it is copied."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class Browser:
    """A headless Chromium (a context manager); ``open`` a file in a new tab."""

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

    def __enter__(self) -> Browser:
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

    def _read_until(self, done: Any, what: str) -> None:
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

    # -- pages ------------------------------------------------------------------------------

    def open(self, path: Path) -> Page:
        """A new tab showing the file ``path``, loaded and drawn."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        page = Page(self, attached["sessionId"])
        for domain in ("Runtime", "Log", "Page"):
            page.send(f"{domain}.enable")
        width, height = self.viewport
        page.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        navigated = page.send("Page.navigate", {"url": path.resolve().as_uri()})
        if navigated.get("errorText"):
            raise BrowserError(f"Chromium could not load {path}: {navigated['errorText']}")
        self.wait_for_event("Page.loadEventFired", page.session)
        page.evaluate(_NEXT_FRAME_JS, wait=True)
        return page


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


class Page:
    """A tab of the browser, attached in flat mode (its commands carry its ``sessionId``)."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.browser.send(method, params, session=self.session)

    def evaluate(self, expression: str, *, wait: bool = False) -> Any:
        """The value of a JavaScript expression (awaited when ``wait``), or ``BrowserError``."""
        params = {"expression": expression, "returnByValue": True, "awaitPromise": wait}
        answer = self.send("Runtime.evaluate", params)
        if "exceptionDetails" in answer:
            raise BrowserError(
                f"{expression!r} threw: {_exception_text(answer['exceptionDetails'])}"
            )
        return answer["result"].get("value")

    @property
    def console_errors(self) -> list[str]:
        """Errors in the console so far: console.error, uncaught exceptions, the browser's
        error entries (failed loads), in the order they came."""
        errors = []
        for event in self.browser.events(self.session):
            params = event.get("params", {})
            if event["method"] == "Runtime.consoleAPICalled" and params["type"] in {
                "error",
                "assert",
            }:
                errors.append(" ".join(_argument_text(arg) for arg in params.get("args", [])))
            elif event["method"] == "Runtime.exceptionThrown":
                errors.append(_exception_text(params["exceptionDetails"]))
            elif event["method"] == "Log.entryAdded" and params["entry"]["level"] == "error":
                entry = params["entry"]
                errors.append(
                    f"{entry['text']} ({entry['url']})" if entry.get("url") else entry["text"]
                )
        return errors

    @property
    def images(self) -> list[Image]:
        """Every ``<img>``: natural size, ``complete``, rendered size."""
        return [
            Image(
                src=item["src"],
                natural_width=item["naturalWidth"],
                natural_height=item["naturalHeight"],
                complete=item["complete"],
                width=item["width"],
                height=item["height"],
            )
            for item in self.evaluate(_IMAGES_JS)
        ]

    def visibility(self, selector: str) -> dict[str, Any]:
        """What the page says about the first element matching ``selector``."""
        found: dict[str, Any] = self.evaluate(f"{_VISIBILITY_JS}({json.dumps(selector)})")
        return found

    def visible(self, selector: str, *, in_viewport: bool = False) -> bool:
        """Whether the first element matching ``selector`` is drawn: it exists, has a size,
        is not hidden by CSS (its own or an ancestor's), and, ``in_viewport``, lies at least
        partly in the first screen of the page."""
        seen = self.visibility(selector)
        if not seen["found"] or not seen["rendered"]:
            return False
        if seen["width"] <= 0 or seen["height"] <= 0 or seen["visibility"] != "visible":
            return False
        if in_viewport:
            return (
                seen["top"] < seen["viewportHeight"]
                and seen["bottom"] > 0
                and (seen["left"] < seen["viewportWidth"] and seen["right"] > 0)
            )
        return True

    def screenshot(self) -> bytes:
        """A PNG of the whole page (beyond the viewport), at the browser's viewport width."""
        metrics = self.send("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": metrics["width"], "height": metrics["height"], "scale": 1}
        shot = self.send(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
        )
        return base64.b64decode(shot["data"])


def _argument_text(argument: dict[str, Any]) -> str:
    if "value" in argument:
        return str(argument["value"])
    return str(argument.get("description", argument.get("type", "")))


def _exception_text(details: dict[str, Any]) -> str:
    exception = details.get("exception", {})
    return str(exception.get("description") or details.get("text", "exception"))
