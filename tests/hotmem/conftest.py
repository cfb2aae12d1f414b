"""Fixtures for the store tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import hotmem

FIXED = "2026-01-01T00:00:00Z"


@pytest.fixture
def store() -> Iterator[hotmem.MemoryStore]:
    with hotmem.open_store(":memory:", clock=hotmem.fixed_clock(FIXED)) as opened:
        yield opened
