"""The numpy engine's cosine products: up to ``SPLIT_VALUES`` values, ``PRODUCT_VALUES`` values
a product on the caller's thread, each within ``MARGIN`` of the exact cosine, the search's answer
unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import hotmem
from hotmem.retrieval import cosines
from hotmem.retrieval.rows import Rows

np = pytest.importorskip("numpy")

from tests.hotmem.retrieval.test_engines import both  # noqa: E402


class _Recorded:
    """A query vector that records the row count of each product taken with it."""

    __array_ufunc__ = None  # numpy hands ``block @ self`` to ``__rmatmul__``

    def __init__(self, values: Any) -> None:
        self.values = values
        self.blocks: list[int] = []

    def __rmatmul__(self, block: Any) -> Any:
        self.blocks.append(len(block))
        return block @ self.values


def _unit_rows(count: int, dimension: int) -> tuple[Rows, Any]:
    generator = np.random.default_rng(29)
    matrix = generator.standard_normal((count, dimension)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    rows = Rows(dimension * 4)
    rows.add(matrix.astype("<f4").tobytes())
    return rows, matrix


def test_the_rows_of_a_product() -> None:
    assert (cosines.PRODUCT_VALUES, cosines.SPLIT_VALUES) == (262_144, 2_097_152)
    assert [cosines.product_rows(d, 400) for d in (64, 384, 1024, 5000, 0)] == [
        4096,
        672,
        256,
        48,
        262_144,
    ]
    # up to SPLIT_VALUES values in chunks; above, one product of every row
    assert cosines.product_rows(384, 5461) == 672  # 2,097,024 values
    assert cosines.product_rows(384, 5462) == 5462  # 2,097,408 values
    assert cosines.product_rows(64, 100_000) == 100_000


def test_a_product_takes_at_most_product_values() -> None:
    rows, matrix = _unit_rows(2000, 384)
    query = matrix[7].copy()
    recorded = _Recorded(query)
    found = cosines.products(rows, recorded)
    assert recorded.blocks == [672, 672, 656]
    assert found.dtype == np.float64
    assert found.shape == (2000,)
    exact = (matrix.astype(np.float64) * query.astype(np.float64)).sum(axis=1)
    assert float(np.abs(found - exact).max()) <= 384 * 2.0**-24 < cosines.MARGIN
    # a scope of a quarter of the rows or fewer is gathered first, then split the same way
    scope = np.arange(0, 2000, 5, dtype=np.intp)  # 400 rows
    recorded = _Recorded(query)
    gathered = cosines.products(rows, recorded, scope)
    assert recorded.blocks == [400]
    assert gathered.tolist() == (matrix[scope] @ query).astype(np.float64).tolist()


def test_a_product_above_split_values_is_one_product() -> None:
    rows, matrix = _unit_rows(5462, 384)
    query = matrix[0].copy()
    recorded = _Recorded(query)
    found = cosines.products(rows, recorded)
    assert recorded.blocks == [5462]
    assert found.tolist() == (matrix @ query).astype(np.float64).tolist()


@pytest.mark.parametrize("profile", ["default", "cosine-only", "rrf"])
def test_split_products_give_the_reference_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, profile: str
) -> None:
    """With products of 16 rows, a store of 90 memories takes six: the numpy engine still
    returns the reference engine's results, bit for bit."""
    monkeypatch.setattr(cosines, "PRODUCT_VALUES", 16 * 64)
    words = ["invoice", "deploy", "badge", "coffee", "approve", "tuesday", "eur", "night"]
    path = tmp_path / "s.db"
    with hotmem.open_store(path, clock=hotmem.fixed_clock("2026-01-01T00:00:00Z")) as store:
        store.add_many(
            {
                "memory_id": f"m-{n:03d}",
                "fact": " ".join(words[(n * k) % len(words)] for k in range(1, 2 + n % 4)),
                "identifier": "acme",
                "importance": (n % 5) / 4,
            }
            for n in range(90)
        )
    reference, numpy = both(
        path, "invoice deploy night", identifier=None, limit=12, profile=profile
    )
    assert len(reference) == 12
    assert numpy == reference
