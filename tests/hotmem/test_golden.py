"""Every search result of the golden suites is what the engine before the columnar rebuild
returned, bit for bit (``tests/hotmem/data/README.md``)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "data" / "golden_rankings.jsonl.gz"

sys.path.insert(0, str(ROOT / "benchmarks"))

import golden_rankings  # noqa: E402


@pytest.mark.slow
def test_the_golden_suites_return_the_recorded_results() -> None:
    expected = [
        json.loads(line) for line in gzip.decompress(GOLDEN.read_bytes()).decode().splitlines()
    ]
    found = [row for suite in ("edges", "fixtures") for row in golden_rankings.rows(suite)]
    assert len(found) == len(expected) == 6152
    assert golden_rankings.differences(expected, found) == []
