"""The public HotMem fixture's figures in docs/retrieval-quality.md are those of a fresh run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import public_fixture  # noqa: E402

pytestmark = pytest.mark.slow


def test_the_docs_figures_of_the_public_fixture_are_a_fresh_runs() -> None:
    page = public_fixture.PAGE.read_text(encoding="utf-8")
    # Regenerate with: uv run python benchmarks/public_fixture.py --write
    assert public_fixture.section(page) == public_fixture.tables(public_fixture.run())


def test_the_semantic_page_quotes_both_fixtures_paraphrase_recall() -> None:
    committed = public_fixture.run(ROOT / "benchmarks" / "retrieval")
    sentence = public_fixture.paraphrase_sentence(committed, public_fixture.run())
    assert sentence in (ROOT / "docs" / "semantic.md").read_text(encoding="utf-8")


def test_the_tables_read_the_first_profile() -> None:
    half = {"value": 0.5, "numerator": 1, "denominator": 2}
    scopes = {scope for _, (scope, _) in public_fixture.PUBLISHED.values() if scope}
    by_category: dict[str, dict[str, object]] = {scope: {} for scope in scopes}
    by_category["exact_lexical"] = {"recall_at_k": half}
    entry = {
        "metrics": {"overall": {}, "by_category": by_category},
        "transfer": {"equivalent_queries": 3, "total_queries": 4},
        "queries": [{"category": "exact_lexical", "missed": [{"reason": "outranked"}]}],
        "recommendation": {"rule": 4, "code": "c", "text": "t"},
    }
    text = public_fixture.tables({"profiles": [entry, {}]})
    assert "| exact_lexical Recall@5 | 1.000 | 0.500 (1/2) |" in text
    assert "| overall Recall@5 | 0.690 |  |" in text
    assert "| snapshot/hydrate equivalence | 48/48 | 3/4 |" in text
    assert "| exact_lexical |  | 0.500 (1/2) |  | 1 outranked |  |" in text
    assert text.endswith("The recommendation on that fixture: rule 4 (`c`): t")
