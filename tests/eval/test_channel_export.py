"""The channel table exported with a run (``--export-channels``): the same table as a tune
export's for the same spaces and floor, written in the export set and listed by its manifest,
readable by ``hotmem-eval query``, which reads a tune export too."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import hotmem
from hotmem_eval.channel_frame import complete_for
from hotmem_eval.cli import main

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "benchmarks" / "retrieval"
#: One candidate with default's floor: the tune table's min_cosine is then default's, 0.4.
SPACE = "vector_floor = [0.4]\nvector_weight = [0.6]\nlexical_weight = [0.2]\n"


def query(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["query", *argv, "--format", "json"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    directory = tmp_path_factory.mktemp("channels")
    run, tuned = directory / "run", directory / "tune"
    report = str(directory / "r.md")
    assert main(["--export-dir", str(run), "--export-channels", "--report", report]) == 0
    (directory / "space.toml").write_text(SPACE, encoding="utf-8")
    arguments = ["tune", "--collection", str(FIXTURE), "--objective", "ndcg@5"]
    arguments += ["--search-space", str(directory / "space.toml"), "--export-dir", str(tuned)]
    assert main([*arguments, "--report", str(directory / "t.md")]) == 0
    return run, tuned


def test_a_run_exports_the_tune_exports_channel_table(exports: tuple[Path, Path]) -> None:
    run, tuned = exports
    table = pq.read_table(run / "channels.parquet")
    assert table.equals(pq.read_table(tuned / "channels.parquet"), check_metadata=True)
    assert table.schema.metadata == {b"min_cosine": b"0.4", b"spaces": b'["hotmem-hash-v1"]'}
    assert table.column_names == [
        "query_id",
        "memory_id",
        "importance",
        "bm25_raw",
        "bm25_best",
        "cosine:hotmem-hash-v1",
    ]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["tables"]["channels"] == "channels.parquet"
    assert manifest["table_rows"]["channels"].startswith("one candidate of a query: query_id")
    tune_manifest = json.loads((tuned / "manifest.json").read_text())
    assert tune_manifest["kind"] == "tune"
    assert tune_manifest["tables"] == {
        "channels": "channels.parquet",
        "per_query_metrics": "per_query_metrics.parquet",
    }
    assert tune_manifest["top_k"] == 5


def test_query_reads_the_channel_table_of_a_run_and_of_a_tune_export(
    exports: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run, tuned = exports
    sql = (
        "select run, count(*) as n, count(distinct query_id) as queries, "
        'bool_and(bm25_raw is not null or "cosine:hotmem-hash-v1" >= 0.4) as candidates '
        "from channels group by run order by run"
    )
    code, out, _ = query(capsys, str(run), str(tuned), sql)
    assert code == 0
    assert json.loads(out) == [
        {"run": "run", "n": 1067, "queries": 96, "candidates": True},
        {"run": "tune", "n": 1067, "queries": 96, "candidates": True},
    ]
    sql = "select table_name from information_schema.tables order by 1"
    code, out, _ = query(capsys, str(tuned), sql)
    assert [row["table_name"] for row in json.loads(out)] == [
        "channels",
        "metrics",
        "per_query_metrics",
        "sql_paired_deltas",
    ]
    code, out, _ = query(capsys, str(run), sql)
    assert "channels" in [row["table_name"] for row in json.loads(out)]


def test_an_export_without_the_flag_drops_a_previous_channel_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    assert main(["--export-dir", str(run), "--export-channels", "--profile", "bm25-only"]) == 0
    assert (run / "channels.parquet").is_file()
    assert main(["--export-dir", str(run), "--profile", "bm25-only"]) == 0
    assert not (run / "channels.parquet").exists()
    assert "channels" not in json.loads((run / "manifest.json").read_text())["tables"]
    capsys.readouterr()
    code, _, err = query(capsys, str(run), "select count(*) from channels")
    assert code == 2
    assert err.startswith("hotmem-eval: query failed: Catalog Error: Table with name channels")


def test_export_channels_needs_an_export_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--export-channels", "--report", str(tmp_path / "r.md")]) == 2
    assert capsys.readouterr().err == (
        "hotmem-eval: --export-channels goes with --export-dir (it writes a table there)\n"
    )
    assert not (tmp_path / "r.md").exists()


def test_compare_refuses_a_tune_export(
    exports: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run, tuned = exports
    assert main(["compare", str(run), str(tuned)]) == 2
    assert capsys.readouterr().err == (
        f"hotmem-eval: {tuned}: a tune export, not a run's: compare takes two runs exported "
        "with hotmem-eval --export-dir\n"
    )


@pytest.mark.parametrize(
    ("names", "spaces", "floor"),
    [
        (["default"], ["hotmem-hash-v1"], 0.4),
        (["semantic", "cosine-only"], ["all-minilm-l6-v2", "hotmem-hash-v1"], 0.4),
        (["default", "semantic", "semantic-only"], ["hotmem-hash-v1", "all-minilm-l6-v2"], 0.4),
        (["semantic-only"], ["all-minilm-l6-v2"], 0.45),
        (["bm25-only"], ["hotmem-hash-v1"], 1.0),  # no vector channel: the lexical matches
    ],
)
def test_a_run_table_is_complete_for_its_profiles(
    names: list[str], spaces: list[str], floor: float
) -> None:
    assert complete_for([hotmem.PROFILES[n] for n in names]) == (spaces, floor)
