"""Baseline normalisation and the row-by-row diff, on constructed documents."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from hotmem_eval.baseline import (
    check,
    compare,
    dumps,
    fixture_mismatch,
    flatten,
    load_baseline,
    render_diff,
)
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


def _result(corpus: Path, queries: Path, memories: int = 140) -> dict:
    return {
        "fixture": {
            "corpus": str(corpus),
            "queries": str(queries),
            "memory_count": memories,
            "query_count": 98,
            "negative_query_count": 10,
        }
    }


def test_a_baseline_of_other_fixture_counts_is_named_not_diffed(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"  # no fixture beside it: the counts decide
    kept = {"fixture": {"memory_count": 60, "query_count": 98, "negative_query_count": 10}}
    path.write_text(dumps(kept))
    result = _result(tmp_path / "c.jsonl", tmp_path / "q.jsonl")
    assert fixture_mismatch(path, kept, result) == (
        f"{path} is the baseline of another fixture: memory_count 60 (this run: 140), "
        "query_count 98 (this run: 98), negative_query_count 10 (this run: 10)"
    )
    text, same = check(path, result, {"fixture": result["fixture"]})
    assert not same
    assert text.startswith(f"baseline: not comparable: {path} is the baseline of another ")
    assert "row(s) changed" not in text
    assert fixture_mismatch(path, {"fixture": dict(result["fixture"])}, result) is None


def test_a_baseline_beside_another_fixture_names_the_digests(tmp_path: Path) -> None:
    (tmp_path / "corpus.jsonl").write_text("a\n")
    (tmp_path / "queries.jsonl").write_text("b\n")
    ran = tmp_path / "run"
    ran.mkdir()
    (ran / "corpus.jsonl").write_text("a\n")
    (ran / "queries.jsonl").write_text("other\n")
    result = _result(ran / "corpus.jsonl", ran / "queries.jsonl")
    mismatch = fixture_mismatch(tmp_path / "baseline.json", {}, result)
    assert mismatch is not None
    assert mismatch.startswith(
        f"{tmp_path / 'baseline.json'} is the baseline of the fixture beside it, and this run "
        f"used another ({ran / 'queries.jsonl'} (sha256 "
    )
    assert "corpus.jsonl (sha256" not in mismatch  # the same corpus is not named
