"""The headless-browser harness itself (tests/browser.py), on tiny hand-written pages.

These tests need Debian's Chromium (/usr/bin/chromium); without it they fail and say how to
install it (.ci/run installs it), they are never skipped.
"""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest

from tests.browser import MISSING, Browser, BrowserError, chromium_path, living

pytestmark = pytest.mark.slow

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="40" height="30"><rect width="40" height="30" fill="teal"/></svg>'  # noqa: E501
SVG_URI = "data:image/svg+xml;base64," + base64.b64encode(SVG).decode()


def _page(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text(
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{name}</title>'
        f"</head><body>{body}</body></html>",
        encoding="utf-8",
    )
    return path


def test_a_page_with_an_svg_image_loads_cleanly(browser: Browser, tmp_path: Path) -> None:
    path = _page(
        tmp_path, "clean.html", f'<h1 id="title">Report</h1><img alt="plot" src="{SVG_URI}">'
    )
    page = browser.open(path)
    assert page.console_errors == []
    [image] = page.images
    assert image.complete
    assert (image.natural_width, image.natural_height) == (40, 30)
    assert (image.width, image.height) == (40, 30)
    assert page.visible("#title", in_viewport=True)


def test_console_error_is_reported(browser: Browser, tmp_path: Path) -> None:
    path = _page(tmp_path, "console.html", '<script>console.error("broken", 42)</script>')
    assert browser.open(path).console_errors == ["broken 42"]


def test_an_uncaught_exception_is_reported(browser: Browser, tmp_path: Path) -> None:
    path = _page(tmp_path, "throws.html", "<script>null.field</script>")
    [error] = browser.open(path).console_errors
    assert "TypeError" in error


def test_a_missing_image_is_reported_and_has_no_natural_size(
    browser: Browser, tmp_path: Path
) -> None:
    path = _page(tmp_path, "missing.html", '<img alt="gone" src="missing.png">')
    page = browser.open(path)
    [error] = page.console_errors
    assert "Failed to load resource" in error
    assert "missing.png" in error
    [image] = page.images
    assert image.natural_width == 0
    assert image.natural_height == 0


def test_the_network_is_out_of_reach(browser: Browser, tmp_path: Path) -> None:
    # A page that needs a CDN fails loudly, and nothing leaves the machine (no name resolves).
    path = _page(tmp_path, "cdn.html", '<img alt="remote" src="https://cdn.example.com/x.png">')
    [error] = browser.open(path).console_errors
    assert "ERR_NAME_NOT_RESOLVED" in error


def test_hidden_elements_are_not_visible(browser: Browser, tmp_path: Path) -> None:
    body = (
        '<div style="display:none"><p id="inside">in a hidden block</p></div>'
        '<p id="invisible" style="visibility:hidden">invisible</p>'
        '<p id="empty"></p>'
        '<div style="height:3000px"></div><p id="below">far below</p>'
    )
    page = browser.open(_page(tmp_path, "hidden.html", body))
    assert not page.visible("#inside")
    assert not page.visible("#invisible")
    assert not page.visible("#empty")
    assert not page.visible("#nowhere")
    assert page.visible("#below")
    assert not page.visible("#below", in_viewport=True)


def test_the_screenshot_is_a_png_of_the_whole_page(browser: Browser, tmp_path: Path) -> None:
    body = '<div style="height:2000px;background:linear-gradient(white,teal)"></div>'
    shot = browser.open(_page(tmp_path, "tall.html", body)).screenshot()
    assert shot.startswith(PNG_SIGNATURE)
    width, height = int.from_bytes(shot[16:20], "big"), int.from_bytes(shot[20:24], "big")
    assert width == 1280
    assert height >= 2000  # beyond the 900-pixel viewport


def test_a_file_that_is_not_there_is_refused(browser: Browser, tmp_path: Path) -> None:
    with pytest.raises(BrowserError, match="could not load"):
        browser.open(tmp_path / "nothing.html")


def test_the_browser_and_its_directory_are_gone_after_the_block(tmp_path: Path) -> None:
    if chromium_path() is None:
        pytest.fail(MISSING, pytrace=False)
    with Browser(workdir=tmp_path) as running:
        running.open(_page(tmp_path, "a.html", "<p>a</p>"))
        pid = running._pid
        assert pid is not None
        assert list(tmp_path.glob("chromium-*"))
        temporary = running._temporary  # set when tmp_path is too long for Chromium's socket
    assert not list(tmp_path.glob("chromium-*"))
    assert temporary is None or not temporary.exists()
    assert living(pid) == []


def _fake(tmp_path: Path, script: str) -> str:
    path = tmp_path / "fake-chromium"
    path.write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def test_a_browser_that_never_answers_times_out(tmp_path: Path) -> None:
    fake = _fake(tmp_path, f"exec {shutil.which('sleep') or '/bin/sleep'} 600")
    with (
        Browser(workdir=tmp_path, executable=fake, timeout=0.5) as silent,
        pytest.raises(BrowserError, match=r"sent no the answer to Target\.createTarget"),
    ):
        silent.open(_page(tmp_path, "a.html", "<p>a</p>"))
    assert not list(tmp_path.glob("chromium-*"))


def test_a_browser_that_exits_is_an_error(tmp_path: Path) -> None:
    fake = _fake(tmp_path, "echo 'no display, giving up' >&2; exit 3")
    with (
        Browser(workdir=tmp_path, executable=fake) as gone,
        pytest.raises(BrowserError, match="closed its DevTools pipe") as raised,
    ):
        gone.open(_page(tmp_path, "a.html", "<p>a</p>"))
    assert "no display, giving up" in str(raised.value)


def test_without_chromium_the_error_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tests.chromium.chromium_path", lambda: None)
    with (
        pytest.raises(BrowserError, match="install Debian's chromium package"),
        Browser(workdir=tmp_path),
    ):
        pass
