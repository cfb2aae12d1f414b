"""The evaluator end to end: outputs, schema, exit codes, baseline gate, exports, isolation."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import hotmem
from hotmem_eval.baseline import compare, dumps, load_baseline, normalise
from hotmem_eval.cli import main
from hotmem_eval.errors import EvalError, UsageError
from hotmem_eval.metric_registry import metrics_frame
from hotmem_eval.report import render_markdown
from hotmem_eval.sqlfiles import sql_metrics

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "benchmarks" / "retrieval"
SCHEMA = json.loads((FIXTURE / "result.schema.json").read_text())
SCRIPT = ROOT / "scripts" / "retrieval_eval.py"

pytestmark = pytest.mark.slow


def isolated_env(tmp: Path) -> dict[str, str]:
    """An environment whose HOME, HOTMEM_HOME and TMPDIR all point inside ``tmp``."""
    for name in ("home", "hotmem-home", "tmp"):
        (tmp / name).mkdir(exist_ok=True)
    return {
        **os.environ,
        "HOME": str(tmp / "home"),
        "HOTMEM_HOME": str(tmp / "hotmem-home"),
        "TMPDIR": str(tmp / "tmp"),
    }


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real run of the README command, in a subprocess, with every output requested."""
    tmp = tmp_path_factory.mktemp("run")
    env = isolated_env(tmp)
    completed = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--output",
            "out/result.json",
            "--report",
            "out/report.md",
            "--export-dir",
            "out/export",
        ],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return tmp


@pytest.fixture(scope="module")
def result(run_dir: Path) -> dict:
    return json.loads((run_dir / "out" / "result.json").read_text())


def test_the_result_file_is_the_text_of_json_dumps(run_dir: Path, result: dict) -> None:
    """The result is written by ``json_text.dumps_indented``: the bytes ``json.dumps`` gives."""
    text = (run_dir / "out" / "result.json").read_text(encoding="utf-8")
    assert text == json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_output_validates_against_the_committed_schema(result: dict) -> None:
    jsonschema.validate(result, SCHEMA)
    assert result["schema_version"] == 3
    # One profile: the one shape, a list of one, nothing compared.
    [entry] = result["profiles"]
    assert (result["comparisons"], result["adoption"], result["ablation"]) == ([], None, None)
    assert entry["configuration"] == hotmem.PROFILES["default"].to_dict()
    assert result["configuration"]["embedding"] == {"model": "hotmem-hash-v1", "dimension": 64}
    assert entry["weights"] == {"cosine": 0.6, "bm25": 0.2, "importance": 0.2}
    assert (result["fixture"]["memory_count"], result["fixture"]["query_count"]) == (155, 98)
    assert entry["transfer"]["equivalent_queries"] == entry["transfer"]["total_queries"] == 98
    assert entry["transfer"]["fts_integrity"] == {"source": "ok", "hydrated": "ok"}
    assert entry["transfer"]["verify"] == {"ok": True, "problems": []}
    # The fixture's digests are those of the files read.
    for source in result["fixture"]["sources"]:
        assert source["sha256"] == hashlib.sha256(Path(source["path"]).read_bytes()).hexdigest()


def test_nothing_is_written_outside_the_run_directory_and_outputs(run_dir: Path) -> None:
    written = sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file())
    outputs = [w for w in written if w.startswith("out/")]
    assert written == outputs  # HOME, HOTMEM_HOME and TMPDIR are left empty
    assert sorted(p.name for p in (run_dir / "out").iterdir()) == [
        "export",
        "report.md",
        "result.json",
    ]
    assert not any((run_dir / "tmp").iterdir())
    assert not (run_dir / "home" / ".hotmem").exists()


def test_report_has_every_section(run_dir: Path, result: dict) -> None:
    report = (run_dir / "out" / "report.md").read_text()
    for heading in [
        "## Decision",
        "## By category",
        "## Appendix",
        "<summary>Configuration</summary>",
        "<summary>Decision rules on default</summary>",
        "<summary>Every metric of default, by category</summary>",
        "<summary>Five worst queries of default (by nDCG@5)</summary>",
        "<summary>Why relevant memories were missed (default)</summary>",
        "Observations:",
        "<summary>Transfer: snapshot → verify → hydrate</summary>",
        "<summary>Timings</summary>",
        "<summary>What this benchmark does not prove</summary>",
    ]:
        assert heading in report
    assert "Local diagnostics" in report
    assert report == render_markdown(result)


def test_report_shows_the_group_metrics(run_dir: Path, result: dict) -> None:
    report = (run_dir / "out" / "report.md").read_text()
    assert "| scope | group R@5 | α-nDCG@5 | neg FPR@5 |" in report
    block = result["profiles"][0]["metrics"]["by_category"]["near_duplicate_diversity"]
    groups, alpha = block["group_recall_at_k"], block["alpha_ndcg_at_k"]
    (line,) = [s for s in report.splitlines() if s.startswith("- **near_duplicate_diversity**")]
    assert (
        f"group recall@5 {groups['value']:.3f} ({groups['numerator']}/{groups['denominator']}), "
        f"α-nDCG@5 {alpha['value']:.3f}"
    ) in line


def test_matches_the_committed_baseline(result: dict) -> None:
    diff = compare(load_baseline(FIXTURE / "baseline.json"), normalise(result))
    assert diff.identical, diff.changed[:20]


def test_committed_baseline_is_normalised() -> None:
    text = (FIXTURE / "baseline.json").read_text()
    document = json.loads(text)
    assert dumps(document) == text
    for volatile in ("generated_at", "timings", "hotmem"):
        assert volatile not in document
    assert "corpus" not in document["fixture"]
    assert "package_bytes" not in json.dumps(document)


def test_exports_read_back_through_the_sql_files(run_dir: Path) -> None:
    export = run_dir / "out" / "export"
    manifest = json.loads((export / "manifest.json").read_text())
    k = manifest["top_k"]
    per_query, per_category = sql_metrics(
        export / "results.parquet",
        export / "qrels.parquet",
        export / "queries.parquet",
        export / "groups.parquet",
        k=k,
        relevant_grade=manifest["relevant_grade"],
    )
    # Every per-profile table starts with the profile column: here one profile, default.
    exported = {
        name: pl.read_parquet(export / f"{name}.parquet")
        for name in ("per_query_metrics", "category_metrics")
    }
    for frame in exported.values():
        assert frame.columns[0] == "profile"
        assert frame["profile"].unique().to_list() == ["default"]
    assert_frame_equal(per_query, exported["per_query_metrics"].drop("profile"), abs_tol=1e-12)
    assert_frame_equal(per_category, exported["category_metrics"].drop("profile"), abs_tol=1e-12)
    assert manifest["profiles"] == ["default"]
    csv = pl.read_csv(export / "category_metrics.csv")
    assert csv.columns == [
        "profile",
        "k",
        "category",
        "metric",
        "value",
        "numerator",
        "denominator",
        "query_count",
    ]
    assert csv.height == per_category.height


def test_repeated_runs_are_logically_identical(result: dict, tmp_path: Path) -> None:
    again = tmp_path / "again.json"
    assert main(["--output", str(again), "--repeat", "2"]) == 0
    second = json.loads(again.read_text())
    assert dumps(normalise(second)) == dumps(normalise(result))
    assert second["profiles"][0]["query_latency_ms"]["samples"] == 2 * 98
    assert len(second["profiles"][0]["latencies_ms"]) == 2 * 98


def test_invalid_fixture_exits_2_with_every_problem(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        '{"memory_id": "m-1", "identifier": "a", "fact": "x", "importance": 2, "tags": []}\n'
        "not json\n"
    )
    env = isolated_env(tmp_path)
    completed = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--corpus",
            str(corpus),
            "--queries",
            str(FIXTURE / "queries.jsonl"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 2
    assert f"{corpus}:1: " in completed.stderr
    assert f"{corpus}:2: " in completed.stderr
    assert "Traceback" not in completed.stderr
    assert completed.stdout == ""


def test_a_memory_the_store_would_refuse_is_a_fixture_error_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    lines = (FIXTURE / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    too_long = {"memory_id": "x" * 600, "identifier": "a", "fact": "f", "importance": 0.5}
    lines.append(json.dumps(too_long | {"tags": []}))
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    queries = str(FIXTURE / "queries.jsonl")
    argv = ["--corpus", str(corpus), "--queries", queries, "--output", str(tmp_path / "r.json")]
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{corpus}:{len(lines)}: expected memory_id of at most 512 characters, "
        "found 600 characters",
        "hotmem-eval: invalid fixture: 1 error(s)",
    ]
    assert not (tmp_path / "r.json").exists()


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = str(FIXTURE / "corpus.jsonl")
    assert main(["--corpus", corpus, "--queries", str(tmp_path / "nope.jsonl")]) == 2
    assert "nope.jsonl" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("--corpus", "hotmem-eval: --corpus needs --queries too: a fixture is a corpus and its "),
        ("--queries", "hotmem-eval: --queries needs --corpus too: a fixture is a corpus and its "),
    ],
)
def test_a_corpus_or_queries_alone_is_refused(
    given: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "r.json"
    code = main([given, str(FIXTURE / "corpus.jsonl"), "--output", str(output)])
    assert (code, capsys.readouterr().err) == (2, message + "queries\n")
    assert list(tmp_path.iterdir()) == []


def test_evaluator_failure_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "--check-baseline",
            "--baseline",
            str(tmp_path / "none.json"),
            "--output",
            str(tmp_path / "r.json"),
        ]
    )
    assert code == 1
    assert "no baseline (create one with --update-baseline)" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()  # nothing partial is written


def test_usage_errors_exit_2() -> None:
    with pytest.raises(SystemExit) as raised:
        main(["--top-k", "0"])
    assert raised.value.code == 2


def test_baseline_gate_prints_the_rows_that_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = load_baseline(FIXTURE / "baseline.json")
    edited = copy.deepcopy(baseline)
    first = edited["queries"][0]
    first["results"][0]["memory_id"] = "mem-not-returned"
    edited["metrics"]["by_category"]["exact_lexical"]["recall_at_k"]["value"] = 0.5
    path = tmp_path / "baseline.json"
    path.write_text(dumps(edited))
    assert (
        main(["--check-baseline", "--baseline", str(path), "--report", str(tmp_path / "r.md")]) == 3
    )
    err = capsys.readouterr().err
    assert "baseline: 2 row(s) changed" in err
    assert (
        f"| queries/query_id={first['query_id']} | results/rank=1/memory_id | mem-not-returned |"
        in err
    )
    assert "better exact_lexical: recall_at_k rose from 0.5000 to 1.0000" in err
    assert (
        main(["--update-baseline", "--baseline", str(path), "--report", str(tmp_path / "r.md")])
        == 0
    )
    assert json.loads(path.read_text()) == baseline


def test_query_cli_over_one_and_two_runs(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = run_dir / "out" / "export"
    sql = (
        "select metric, round(value, 4) as value from category_metrics "
        "where category = 'overall' and metric = 'recall_at_k'"
    )
    assert main(["query", str(export), sql, "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "metric,value"
    assert out.splitlines()[1].startswith("recall_at_k,")
    assert (
        main(
            [
                "query",
                str(export),
                "select count(*) as n from sql_category_metrics",
                "--format",
                "json",
            ]
        )
        == 0
    )
    # One row per (category, metric): overall and eight categories, twelve metrics.
    assert json.loads(capsys.readouterr().out) == [{"n": 9 * 14}]  # 9 scopes x 14 metrics
    # The registry is the table the SQL files read as metrics, and can be saved beside a run.
    saved = tmp_path / "metrics.parquet"
    assert main(["query", str(export), f"copy metrics to '{saved}'"]) == 0
    capsys.readouterr()
    assert_frame_equal(pl.read_parquet(saved), metrics_frame())
    # The per-query SQL view gives the exported per-query rows and values.
    differing = (
        "select count(*) as n from sql_per_query_metrics s full join per_query_metrics p "
        "using (query_id, metric) where s.applicable is distinct from p.applicable "
        "or s.value is distinct from p.value and not abs(s.value - p.value) <= 1e-12"
    )
    assert main(["query", str(export), differing, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"n": 0}]
    second = tmp_path / "second"
    shutil.copytree(export, second)
    assert (
        main(
            [
                "query",
                str(export),
                str(second),
                "select run, count(*) as rows from results group by run order by run",
            ]
        )
        == 0
    )
    table = capsys.readouterr().out
    assert "export" in table
    assert "second" in table
    assert "(2 rows)" in table
    assert main(["query", str(export), "select * from no_such_table"]) == 2
    assert capsys.readouterr().err.startswith("hotmem-eval: query failed: ")
    assert main(["query", str(tmp_path), "select 1"]) == 2
    assert "not a run export" in capsys.readouterr().err


def test_public_fixture_runs_unchanged(tmp_path: Path) -> None:
    copy_dir = tmp_path / "kgh"
    shutil.copytree(FIXTURE / "external" / "kgh-retrieval", copy_dir)
    output = tmp_path / "kgh.json"
    code = main(
        [
            "--corpus",
            str(copy_dir / "corpus.jsonl"),
            "--queries",
            str(copy_dir / "queries.jsonl"),
            "--output",
            str(output),
        ]
    )
    assert code == 0
    document = json.loads(output.read_text())
    jsonschema.validate(document, SCHEMA)
    assert (document["fixture"]["memory_count"], document["fixture"]["query_count"]) == (60, 48)
    assert document["profiles"][0]["transfer"]["equivalent_queries"] == 48


def deterministic_sections(markdown: str) -> str:
    """The report from the decision to the transfer table, without the commit: no timings."""
    part = markdown[markdown.index("## Decision") : markdown.index("<summary>Timings</summary>")]
    return "\n".join(line for line in part.splitlines() if not line.startswith("| HotMem |"))


def test_docs_report_is_current(run_dir: Path) -> None:
    fresh = (run_dir / "out" / "report.md").read_text()
    published = (ROOT / "docs" / "retrieval-report.md").read_text()
    # Regenerate with: uv run python scripts/retrieval_eval.py --report docs/retrieval-report.md
    assert deterministic_sections(published) == deterministic_sections(fresh)


def test_outputs_get_ordinary_permissions(run_dir: Path) -> None:
    mask = os.umask(0)
    os.umask(mask)
    for name in ["result.json", "report.md", "export/results.parquet", "export/manifest.json"]:
        mode = (run_dir / "out" / name).stat().st_mode & 0o777
        assert mode == 0o666 & ~mask, name


def test_an_evaluator_bug_is_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import hotmem_eval.evaluate

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(hotmem_eval.evaluate, "evaluate_profiles", broken)
    monkeypatch.delenv("HOTMEM_EVAL_TRACEBACK", raising=False)
    assert main(["--output", str(tmp_path / "r.json")]) == 1
    err = capsys.readouterr().err
    assert err.strip().endswith(
        "hotmem-eval: evaluator failure: RuntimeError: boom "
        "(set HOTMEM_EVAL_TRACEBACK=1 for the traceback)"
    )
    assert not (tmp_path / "r.json").exists()
    monkeypatch.setenv("HOTMEM_EVAL_TRACEBACK", "1")
    with pytest.raises(RuntimeError, match="boom"):
        main(["--output", str(tmp_path / "r.json")])


@pytest.mark.parametrize(
    ("error", "code", "last_line"),
    [
        (UsageError("run/: not a run export"), 2, "hotmem-eval: run/: not a run export"),
        (EvalError("query_id='q' changed"), 1, "hotmem-eval: query_id='q' changed"),
        (hotmem.StoreError("locked"), 1, "hotmem-eval: evaluator failure: locked"),
        (
            FileNotFoundError(2, "No such file or directory", "x.json"),
            1,
            "hotmem-eval: x.json: No such file or directory",
        ),
        (KeyboardInterrupt(), 130, "hotmem-eval: interrupted"),
    ],
)
def test_every_error_class_has_one_exit_code(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    error: BaseException,
    code: int,
    last_line: str,
) -> None:
    import hotmem_eval.cli as cli

    def fail(*args: object) -> int:
        raise error

    monkeypatch.setattr(cli, "_run", fail)
    monkeypatch.setattr(cli, "_query", fail)
    assert main([]) == code
    assert capsys.readouterr().err.splitlines()[-1] == last_line
    assert main(["query", "run/", "select 1"]) == code


def test_query_output_into_a_closed_pipe_ends_quietly(run_dir: Path) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            str(SCRIPT),
            "query",
            str(run_dir / "out" / "export"),
            "select * from range(300000)",
            "--format",
            "csv",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    first = process.stdout.readline()  # about 2 MB of rows: the pipe fills; then close it
    process.stdout.close()
    with process.stderr:
        err = process.stderr.read()
    process.wait(timeout=120)
    assert first == b"range\n"
    assert (process.returncode, err) == (0, b"")
