"""Fixtures shared by the evaluator's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.browser import MISSING, Browser, chromium_path


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """Debian's Chromium, headless, for one test module; a test that needs it fails (never
    skips) without it, saying how to install it."""
    if chromium_path() is None:
        pytest.fail(MISSING, pytrace=False)
    with Browser(workdir=tmp_path_factory.mktemp("chromium")) as running:
        yield running
