"""Baseline normalisation and the row-by-row diff, on constructed documents."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from hotmem_eval.baseline import compare, dumps, flatten, load_baseline, render_diff
from hotmem_eval.errors import EvalError


def block(recall: float, mrr: float) -> dict:
    return {
        "recall_at_k": {"value": recall, "numerator": 1, "denominator": 1, "query_count": 1},
        "mrr_at_k": {"value": mrr, "numerator": None, "denominator": None, "query_count": 1},
    }


BASE = {
    "metrics": {
        "overall": block(0.8, 0.7),
        "by_category": {"exact_lexical": block(1.0, 1.0), "semantic_paraphrase": block(0.2, 0.2)},
    },
    "queries": [
        {
            "query_id": "q-1",
            "results": [
                {"rank": 1, "memory_id": "m-a", "grade": 3, "score": 0.7},
                {"rank": 2, "memory_id": "m-b", "grade": 0, "score": 0.5},
            ],
            "failures": [],
        }
    ],
}


def test_flatten_keys_list_items_by_id() -> None:
    leaves = flatten(BASE)
    assert leaves[("queries", "query_id=q-1", "results", "rank=2", "memory_id")] == "m-b"
    assert leaves[("queries", "query_id=q-1", "failures")] == "[]"
    assert leaves[("metrics", "overall", "recall_at_k", "value")] == 0.8


def test_identical_documents() -> None:
    diff = compare(BASE, copy.deepcopy(BASE))
    assert diff.identical
    assert render_diff(diff) == "baseline: identical"


def test_changed_rows_and_direction() -> None:
    now = copy.deepcopy(BASE)
    now["queries"][0]["results"][0]["memory_id"] = "m-b"
    now["queries"][0]["results"][1]["memory_id"] = "m-a"
    now["metrics"]["by_category"]["exact_lexical"]["recall_at_k"]["value"] = 0.9
    now["metrics"]["by_category"]["semantic_paraphrase"]["mrr_at_k"]["value"] = 0.3
    diff = compare(BASE, now)
    assert diff.changed == (
        ("metrics/by_category", "exact_lexical/recall_at_k/value", 1.0, 0.9),
        ("metrics/by_category", "semantic_paraphrase/mrr_at_k/value", 0.2, 0.3),
        ("queries/query_id=q-1", "results/rank=1/memory_id", "m-a", "m-b"),
        ("queries/query_id=q-1", "results/rank=2/memory_id", "m-b", "m-a"),
    )
    assert diff.regressions == ("exact_lexical: recall_at_k fell from 1.0000 to 0.9",)
    assert diff.improvements == ("semantic_paraphrase: mrr_at_k rose from 0.2000 to 0.3000",)
    text = render_diff(diff)
    assert "| queries/query_id=q-1 | results/rank=1/memory_id | m-a | m-b |" in text
    assert "WORSE  exact_lexical: recall_at_k fell from 1.0000 to 0.9" in text
    assert "better semantic_paraphrase" in text


def test_missing_category_and_extra_rows() -> None:
    now = copy.deepcopy(BASE)
    del now["metrics"]["by_category"]["semantic_paraphrase"]
    now["queries"][0]["results"].append({"rank": 3, "memory_id": "m-c", "grade": 0, "score": 0.1})
    diff = compare(BASE, now)
    assert "semantic_paraphrase: the category disappeared" in diff.regressions
    assert ("queries/query_id=q-1", "results/rank=3/memory_id", "(absent)", "m-c") in diff.changed


def test_dumps_is_stable_and_sorted() -> None:
    text = dumps({"b": 1, "a": {"d": [1, 2], "c": "é"}})
    assert (
        text
        == '{\n  "a": {\n    "c": "é",\n    "d": [\n      1,\n      2\n    ]\n  },\n  "b": 1\n}\n'
    )


def test_load_baseline_errors(tmp_path: Path) -> None:
    with pytest.raises(EvalError, match="no baseline"):
        load_baseline(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(EvalError, match="expected a JSON object, found list"):
        load_baseline(bad)
    bad.write_text("{")
    with pytest.raises(EvalError, match="cannot read the baseline"):
        load_baseline(bad)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(BASE))
    assert load_baseline(good) == BASE
