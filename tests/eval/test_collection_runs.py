"""The evaluator on a collection of the field's formats, end to end through ``hotmem-eval``:
BEIR and TREC in, several cutoffs, TREC runs out that ir_measures scores as the report does,
a kept store reused or refused, a sampled transfer check, and two TREC runs compared."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import jsonschema
import polars as pl
import pytest

from hotmem_eval.cli import main

ROOT = Path(__file__).resolve().parents[2]
SLICE = ROOT / "benchmarks" / "collections" / "scifact-slice"
SCHEMA = json.loads((ROOT / "benchmarks" / "retrieval" / "result.schema.json").read_text())

sys.path.insert(0, str(ROOT / "benchmarks" / "collections"))

import agreement  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def beir_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("beir")
    code = main(
        [
            "--collection",
            str(SLICE),
            "--profile",
            "default",
            "--profile",
            "bm25-only",
            "--k",
            "100",
            "--k",
            "10",
            "--export-dir",
            str(out / "export"),
            "--output",
            str(out / "result.json"),
            "--report",
            str(out / "report.md"),
        ]
    )
    assert code == 0
    return out


def test_a_beir_collection_runs_at_every_cutoff(beir_run: Path) -> None:
    result = json.loads((beir_run / "result.json").read_text())
    jsonschema.validate(result, SCHEMA)
    assert result["fixture"]["format"] == "beir"
    assert (result["fixture"]["memory_count"], result["fixture"]["query_count"]) == (283, 50)
    assert [Path(s["path"]).name for s in result["fixture"]["sources"]] == [
        "corpus.jsonl",
        "queries.jsonl",
        "test.tsv",
    ]
    config = result["configuration"]
    assert (config["top_k"], config["cutoffs"], config["relevant_grade"]) == (10, [10, 100], 1)
    baseline = result["profiles"][0]
    assert list(baseline["metrics_by_k"]) == ["10", "100"]
    assert baseline["metrics_by_k"]["10"] == baseline["metrics"]
    assert baseline["metrics"]["by_category"] == {}  # no categories: overall only
    assert [i["scope"] for i in baseline["intervals"]] == ["overall"]
    # no near-duplicate groups: the comparisons leave the group metrics out
    assert {c["metric"] for c in result["comparisons"]} == {
        "recall_at_1",
        "recall_at_k",
        "mrr_at_k",
        "ndcg_at_k",
        "precision_at_k",
        "ap_at_k",
        "negative_fpr_at_k",
        "duplicate_slot_rate_at_k",
        "scope_leak_rate_at_k",
    }
    # the document holds each query's top 10; the depth of 100 is in the export
    assert max(len(q["results"]) for q in baseline["queries"]) == 10
    depth = pl.read_parquet(beir_run / "export" / "results.parquet")
    assert depth.group_by("profile", "query_id").len()["len"].max() == 100
    at_100 = baseline["metrics_by_k"]["100"]["overall"]
    assert at_100["precision_at_k"]["denominator"] == 50 * 100
    # rules 2 and 3 read the built-in suite's categories: not applicable here
    assert [item["rule"] for item in baseline["recommendation"]["not_applicable"]] == [2, 3]
    report = (beir_run / "report.md").read_text()
    assert "| cutoffs (k) | 10, 100; the tables are at k = 10 |" in report
    assert "**Every cutoff** (overall)" in report
    assert "**Highest nDCG@10 overall: bm25-only**" in report
    # 50 queries: bm25-only's gain is not significant, so the first line keeps the baseline
    assert result["adoption"]["profile"] is None
    assert report.splitlines()[2] == (
        "**No profile beats default on nDCG@10 with a Holm-adjusted p below 0.05 without "
        "losing Recall@10 significantly in a category: keep default.**"
    )


def test_the_trec_runs_score_in_ir_measures_as_in_the_report(beir_run: Path) -> None:
    export = beir_run / "export"
    runs = sorted(p.name for p in (export / "runs").iterdir())
    assert runs == ["bm25-only.trec", "default.trec"]
    first = (export / "runs" / "default.trec").read_text().splitlines()[0].split()
    assert first[1:4:2] == ["Q0", "1"]
    assert first[5] == "default"
    assert agreement.main([str(export), "--relevant-grade", "1"]) == 0
    per_query = pl.read_parquet(export / "per_query_metrics.parquet")
    assert sorted(per_query["k"].unique().to_list()) == [10, 100]


def test_a_trec_collection_gives_what_the_beir_one_gives(beir_run: Path, tmp_path: Path) -> None:
    trec = tmp_path / "trec"
    trec.mkdir()
    shutil.copy(SLICE / "corpus.jsonl", trec / "corpus.jsonl")
    shutil.copy(SLICE / "queries.jsonl", trec / "topics.jsonl")
    shutil.copy(beir_run / "export" / "qrels.trec", trec / "judged.qrels")
    output = tmp_path / "result.json"
    arguments = ["--collection", str(trec), "--profile", "default", "--profile", "bm25-only"]
    assert main([*arguments, "--k", "10", "--k", "100", "--output", str(output)]) == 0
    result = json.loads(output.read_text())
    beir = json.loads((beir_run / "result.json").read_text())
    assert result["fixture"]["format"] == "trec"
    assert [p["metrics_by_k"] for p in result["profiles"]] == [
        p["metrics_by_k"] for p in beir["profiles"]
    ]


def test_two_trec_runs_are_compared_with_one_qrels(
    beir_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = beir_run / "export"
    arguments = [
        "compare",
        "--qrels",
        str(export / "qrels.trec"),
        str(export / "runs" / "default.trec"),
        str(export / "runs" / "bm25-only.trec"),
        "--k",
        "10",
    ]
    capsys.readouterr()
    assert main(arguments) == 0
    out = capsys.readouterr().out
    assert "default" in out
    assert "bm25-only" in out
    assert "nDCG@10" in out


def test_a_kept_store_is_reused_and_refused_for_other_memories(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "kept.db"
    base = ["--collection", str(SLICE), "--profile", "bm25-only", "--store", str(store)]
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    assert main([*base, "--output", str(first)]) == 0
    assert store.is_file()
    record = json.loads((tmp_path / "kept.db.hotmem-eval.json").read_text())
    assert len(record["corpus_digest"]) == 64
    assert main([*base, "--output", str(second)]) == 0
    one, two = (json.loads(p.read_text()) for p in (first, second))
    assert one["profiles"][0]["metrics"] == two["profiles"][0]["metrics"]
    assert one["profiles"][0]["queries"] == two["profiles"][0]["queries"]
    capsys.readouterr()
    other = ["--profile", "bm25-only", "--store", str(store), "--output", str(tmp_path / "x")]
    assert main(other) == 2  # the committed fixture: other memories
    err = capsys.readouterr().err
    assert f"refusing to reuse {store}: it was built from other memories" in err
    assert not (tmp_path / "x").exists()


def test_the_transfer_check_can_be_sampled(tmp_path: Path) -> None:
    output = tmp_path / "result.json"
    arguments = ["--collection", str(SLICE), "--profile", "bm25-only", "--transfer-sample", "7"]
    assert main([*arguments, "--output", str(output)]) == 0
    transfer = json.loads(output.read_text())["profiles"][0]["transfer"]
    assert (transfer["total_queries"], transfer["equivalent_queries"]) == (7, 7)
    assert transfer["sampled"] is True


def test_collection_and_corpus_together_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = str(SLICE / "corpus.jsonl")
    assert main(["--collection", str(SLICE), "--corpus", corpus]) == 2
    assert (
        "--collection reads its own files: drop --corpus and --queries" in capsys.readouterr().err
    )
