"""A real headless browser for tests: Debian's Chromium driven over the DevTools Protocol.

Standard library only. ::

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

The browser itself (process, pipe, timeouts, clean-up) is ``tests/chromium.py``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.chromium import MISSING, BrowserError, Chromium, chromium_path, living

__all__ = ["MISSING", "Browser", "BrowserError", "Image", "Page", "chromium_path", "living"]

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
_NEXT_FRAME_JS = "new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)))"


@dataclass(frozen=True, slots=True)
class Image:
    """An ``<img>`` of the page: its intrinsic size, whether it loaded, its size on the page."""

    src: str
    natural_width: int
    natural_height: int
    complete: bool
    width: float
    height: float


class Browser(Chromium):
    """A headless Chromium (a context manager); ``open`` a file in a new tab."""

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
        if not in_viewport:
            return True
        across = seen["left"] < seen["viewportWidth"] and seen["right"] > 0
        down = seen["top"] < seen["viewportHeight"] and seen["bottom"] > 0
        return bool(across and down)

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
