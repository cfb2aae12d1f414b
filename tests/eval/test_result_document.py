"""The one result shape: a document of any number of profiles, its views, the digests of the
files read, and the clear refusal of an older document."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from hotmem_eval.cli import main
from hotmem_eval.errors import EvalError
from hotmem_eval.file_digests import recording
from hotmem_eval.fixtures import load_fixture
from hotmem_eval.result_document import SCHEMA_VERSION, checked_result, profile_view

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "benchmarks" / "retrieval"


def test_the_digests_are_those_of_the_bytes_read(tmp_path: Path) -> None:
    corpus, queries = tmp_path / "corpus.jsonl", tmp_path / "queries.jsonl"
    shutil.copy(FIXTURE / "corpus.jsonl", corpus)
    shutil.copy(FIXTURE / "queries.jsonl", queries)
    fixture = load_fixture(corpus, queries)
    read = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (corpus, queries)]
    assert list(fixture.digests) == read
    corpus.write_text(corpus.read_text() + "\n")  # changed after the read: not what was read
    assert fixture.digests[0] == read[0] != hashlib.sha256(corpus.read_bytes()).hexdigest()


def test_a_file_read_only_in_part_has_no_digest(tmp_path: Path) -> None:
    from hotmem_eval.file_digests import digest_of, open_hashed

    path = tmp_path / "f.txt"
    path.write_bytes(b"a\nb\n")
    with recording() as digests:
        with open_hashed(path) as stream:
            stream.readline()
        with pytest.raises(EvalError, match="not read to its end"):
            digest_of(digests, path)
        with open_hashed(path) as stream:
            assert stream.read() == b"a\nb\n"
        assert digest_of(digests, path) == hashlib.sha256(b"a\nb\n").hexdigest()


def test_nested_recordings_share_the_outer_one() -> None:
    with recording() as outer, recording() as inner:
        assert inner is outer


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "expected a result document (a JSON object)"),
        (
            {"schema_version": 2, "metrics": {}},
            "a result of schema version 2; this hotmem-eval reads version 3 (one shape for any "
            "number of profiles): run the evaluation again",
        ),
        ({"schema_version": "3"}, "expected a result document of schema version 3, found "),
        ({"schema_version": 3}, "expected a result document of schema version 3, found "),
    ],
)
def test_another_document_is_refused_with_what_to_do(document: object, message: str) -> None:
    with pytest.raises(EvalError, match=r"^r\.json: ") as caught:
        checked_result(document, "r.json")
    assert message in str(caught.value)


@pytest.mark.slow
def test_a_run_is_one_shape_and_its_view_is_the_baseline(tmp_path: Path) -> None:
    output = tmp_path / "r.json"
    argv = ["--profile", "default", "--profile", "bm25-only", "--output", str(output)]
    assert main(argv) == 0
    result = json.loads(output.read_text())
    assert checked_result(result, "r.json") is result
    assert result["schema_version"] == SCHEMA_VERSION
    assert [p["name"] for p in result["profiles"]] == ["default", "bm25-only"]
    second = profile_view(result, 1)
    assert second["name"] == "bm25-only"
    assert second["configuration"]["profile"]["name"] == "bm25-only"
    assert second["configuration"]["min_similarity"] is None  # no vector channel
    assert second["metrics"] == result["profiles"][1]["metrics"]
    assert second["timings"]["query_latency_ms"] == result["profiles"][1]["query_latency_ms"]
    overall = result["profiles"][0]["intervals"][0]
    assert overall["scope"] == "overall"
    assert overall["value"] == result["profiles"][0]["metrics"]["overall"]["ndcg_at_k"]["value"]
    assert overall["ci_low"] <= overall["value"] <= overall["ci_high"]


def test_the_failures_of_a_query_read_the_top_k_and_every_leak() -> None:
    """``false_positive`` from the top k, ``scope_leak`` from a result at any depth (rank 7 of
    a top 5 here), ``missed_relevant`` from the misses; the entry's results are the top k."""
    from types import SimpleNamespace

    import polars as pl
    import pyarrow as pa

    from hotmem_eval.result import queries_block
    from hotmem_eval.runner import RESULTS_SCHEMA

    def row(query_id: str, rank: int, identifier: str) -> dict[str, object]:
        return {
            "query_id": query_id,
            "rank": rank,
            "memory_id": f"m-{query_id}-{rank}",
            "identifier": identifier,
            "score": 1.0 / rank,
            "cosine": 0.5,
            "bm25_raw": None,
            "bm25_normalised": 0.0,
            "importance": 0.5,
        }

    results = [row("q1", 1, "a"), row("q1", 7, "b"), row("q2", 1, "a"), row("q2", 6, "a")]
    results += [row("q3", 1, "b"), row("q4", 2, "a")]
    queries = pa.Table.from_pylist(
        [
            {"query_id": q, "category": None, "query": f"text {q}", "identifier": scope}
            for q, scope in [("q1", "a"), ("q2", "a"), ("q3", None), ("q4", None)]
        ]
    )
    qrels = pa.Table.from_pylist(
        [{"query_id": q, "memory_id": f"m-{q}-1", "grade": 2} for q in ("q1", "q2", "q3")]
    )
    fixture = SimpleNamespace(queries=queries, qrels=qrels)
    per_query = pl.DataFrame(
        {"query_id": ["q1"], "metric": ["ndcg_at_k"], "value": [1.0], "applicable": [True]}
    )
    run = SimpleNamespace(
        fixture=fixture,
        results=pl.DataFrame(pa.Table.from_pylist(results, schema=RESULTS_SCHEMA)),
        misses=(SimpleNamespace(query_id="q3", to_dict=lambda: {"memory_id": "m-x"}),),
        per_query=per_query,
        top_k=5,
    )
    entries = queries_block(run)  # type: ignore[arg-type]
    assert [(e["query_id"], e["failures"]) for e in entries] == [
        ("q1", ["scope_leak"]),
        ("q2", []),
        ("q3", ["missed_relevant"]),
        ("q4", ["false_positive"]),
    ]
    assert [[r["rank"] for r in e["results"]] for e in entries] == [[1], [1], [1], [2]]
    assert entries[0]["metrics"] == {"ndcg_at_k": 1.0}
    assert entries[2]["missed"] == [{"memory_id": "m-x"}]
