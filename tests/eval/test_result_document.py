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
