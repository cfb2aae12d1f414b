"""The evaluator over several profiles end to end, on the committed fixture: JSON, report,
ablation, exports, ``hotmem-eval compare``; and the one-profile run of a non-default profile.

Two evaluator runs in all (module-scoped), each in a subprocess with an isolated home.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import polars as pl
import pytest

import hotmem
from hotmem_eval.baseline import compare, load_baseline, normalise
from hotmem_eval.cli import main
from hotmem_eval.comparison import COMPARED_METRICS, compare_profiles
from hotmem_eval.fixture_schema import CATEGORIES
from hotmem_eval.report import render_markdown
from hotmem_eval.result_document import profile_view
from tests.eval.test_retrieval_eval import FIXTURE, SCHEMA, SCRIPT, isolated_env

pytestmark = pytest.mark.slow

PROFILES = ["default", "bm25-only", "rrf"]
SCOPES = ["overall", *sorted(CATEGORIES)]


def _evaluate(tmp: Path, *arguments: str) -> None:
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), *arguments],
        cwd=tmp,
        env=isolated_env(tmp),
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr


@pytest.fixture(scope="module")
def multi_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The done-when command, with every output requested."""
    tmp = tmp_path_factory.mktemp("profiles")
    profiles = [argument for name in PROFILES for argument in ("--profile", name)]
    _evaluate(
        tmp,
        *profiles,
        "--output",
        "out/result.json",
        "--report",
        "out/report.md",
        "--export-dir",
        "out/export",
    )
    return tmp / "out"


@pytest.fixture(scope="module")
def multi(multi_dir: Path) -> dict:
    return json.loads((multi_dir / "result.json").read_text())


@pytest.fixture(scope="module")
def rrf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run of one non-default profile."""
    tmp = tmp_path_factory.mktemp("rrf")
    _evaluate(tmp, "--profile", "rrf", "--output", "out/result.json", "--export-dir", "out/rrf")
    return tmp / "out"


def test_the_document_validates_and_names_every_profile(multi: dict) -> None:
    jsonschema.validate(multi, SCHEMA)
    assert multi["schema_version"] == 3
    assert [entry["name"] for entry in multi["profiles"]] == PROFILES
    for entry in multi["profiles"]:
        assert entry["configuration"] == hotmem.PROFILES[entry["name"]].to_dict()
        assert entry["transfer"]["equivalent_queries"] == entry["transfer"]["total_queries"] == 98
        assert [q["query_id"] for q in entry["queries"]] == [
            q["query_id"] for q in multi["profiles"][0]["queries"]
        ]
    # The baseline gate reads the first profile's view, and the adoption decision, which a
    # baseline of one profile does not have.
    view = profile_view(multi)
    assert view["configuration"]["profile"] == hotmem.PROFILES["default"].to_dict()
    assert view["metrics"] == multi["profiles"][0]["metrics"]
    diff = compare(load_baseline(FIXTURE / "baseline.json"), normalise(multi))
    assert sorted((where, field, old) for where, field, old, _ in diff.changed) == [
        ("adoption", "command", "(absent)"),
        ("adoption", "profile", "(absent)"),
        ("adoption", "text", "(absent)"),
    ]
    assert normalise(multi)["adoption"]["profile"] is None  # no candidate is eligible here


def test_comparison_rows_have_the_exact_pairs(multi: dict) -> None:
    rows = multi["comparisons"]
    assert len(rows) == 2 * len(SCOPES) * len(COMPARED_METRICS)
    assert [(r["candidate"], r["scope"], r["metric"]) for r in rows] == [
        (candidate, scope, metric)
        for candidate in PROFILES[1:]
        for scope in SCOPES
        for metric in COMPARED_METRICS
    ]
    assert {r["baseline"] for r in rows} == {"default"}
    n = {(r["candidate"], r["scope"], r["metric"]): r["n"] for r in rows}
    for candidate in PROFILES[1:]:
        assert n[candidate, "overall", "recall_at_k"] == 87
        assert n[candidate, "semantic_paraphrase", "recall_at_k"] == 10
        assert n[candidate, "exact_lexical", "recall_at_k"] == 16
        assert n[candidate, "overall", "negative_fpr_at_k"] == 11
        assert n[candidate, "near_duplicate_diversity", "duplicate_slot_rate_at_k"] == 21
        assert n[candidate, "cross_project_isolation", "scope_leak_rate_at_k"] == 10
        assert n[candidate, "exact_lexical", "scope_leak_rate_at_k"] == 0
    for row in rows:
        assert row["wins"] + row["losses"] + row["ties"] == row["n"]


def test_comparisons_are_those_of_the_exported_per_query_rows(multi_dir: Path, multi: dict) -> None:
    per_query = pl.read_parquet(multi_dir / "export" / "per_query_metrics.parquet")
    assert per_query.columns[0] == "profile"
    assert per_query["profile"].unique(maintain_order=True).to_list() == PROFILES
    again = compare_profiles(per_query, profiles=PROFILES).to_dicts()
    assert again == multi["comparisons"]


def test_ablation_removes_each_channel_of_the_baseline(multi: dict) -> None:
    ablation = multi["ablation"]
    assert ablation["baseline"] == "default"
    assert [(v["removed"], v["name"]) for v in ablation["variants"]] == [
        ("vector", "default-no-vector"),
        ("lexical", "default-no-lexical"),
        ("importance", "default-no-importance"),
    ]
    for variant in ablation["variants"]:
        channel = variant["removed"]
        assert variant["configuration"] == hotmem.PROFILES["default"].without(channel).to_dict()
    rows = ablation["comparisons"]
    assert len(rows) == 3 * len(SCOPES) * len(COMPARED_METRICS)
    recall = {
        r["candidate"]: r for r in rows if (r["scope"], r["metric"]) == ("overall", "recall_at_k")
    }
    # Without its lexical channel the default stack loses most of its recall, significantly.
    lexical = recall["default-no-lexical"]
    assert (lexical["n"], lexical["baseline_mean"]) == (87, pytest.approx(0.8649, abs=1e-4))
    assert lexical["delta"] < -0.3
    assert lexical["p_adjusted"] < 0.05


def test_the_report_shows_the_comparison_ablation_and_rules(multi_dir: Path, multi: dict) -> None:
    report = (multi_dir / "report.md").read_text()
    assert report == render_markdown(multi)
    for text in [
        "## Decision",
        "<summary>Profiles compared: paired tables, ablation, diversity, rules</summary>",
        "**bm25-only** against **default**",
        "**rrf** against **default**",
        "| metric | scope | n | default | rrf | Δ | W/L/T | p | p adj |",
        "### Ablation of default",
        "| removed (overall) | R@1 | R@5 | MRR@5 | nDCG@5 | P@5 | AP@5 | group R@5 | α-nDCG@5 "
        "| neg FPR@5 | dup slots@5 | scope leak@5 |",
        "| lexical (default-no-lexical) |",
        "### Diversity (near_duplicate_diversity)",
        "| candidate | group recall@5 Δ | α-nDCG@5 Δ | duplicate slots@5 Δ |",
        "### Decision rules per profile",
        "| bm25-only | no (1.000) | yes (0.800) |",
        "- **rrf**: rule 2 still applies;",
    ]:
        assert text in report, text
    # The R@5 row of rrf overall is the JSON's, rendered.
    row = next(
        r
        for r in multi["comparisons"]
        if (r["candidate"], r["scope"], r["metric"]) == ("rrf", "overall", "recall_at_k")
    )
    line = (
        f"| R@5 | overall | {row['n']} | {row['baseline_mean']:.3f} | {row['candidate_mean']:.3f} "
        f"| {row['delta']:+.3f} | {row['wins']}/{row['losses']}/{row['ties']} |"
    )
    assert line in report


def test_misses_are_explained_under_each_profile(multi: dict) -> None:
    for entry in multi["profiles"]:
        for query in entry["queries"]:
            returned = {r["memory_id"] for r in query["results"]}
            for miss in query["missed"]:
                assert miss["memory_id"] not in returned
                assert miss["reason"] in {
                    "outside_scope",
                    "no_channel_match",
                    "below_floor",
                    "outranked",
                }
    bm25 = multi["profiles"][1]
    # No vector channel: a memory no query term matches is never a candidate.
    reasons = {m["reason"] for q in bm25["queries"] for m in q["missed"]}
    assert "below_floor" not in reasons


def test_exports_carry_a_profile_column(multi_dir: Path, rrf_dir: Path) -> None:
    export = multi_dir / "export"
    manifest = json.loads((export / "manifest.json").read_text())
    assert manifest["profiles"] == PROFILES
    assert set(manifest["fixture"]) == {"format", "corpus_sha256", "queries_sha256", "sources"}
    assert manifest["fixture"]["format"] == "native"
    assert [Path(s["path"]).name for s in manifest["fixture"]["sources"]] == [
        "corpus.jsonl",
        "queries.jsonl",
    ]
    assert manifest["trec"]["runs"] == {name: f"runs/{name}.trec" for name in PROFILES}
    for table in ("results", "per_query_metrics", "category_metrics", "misses", "transfer"):
        frame = pl.read_parquet(export / f"{table}.parquet")
        assert frame.columns[0] == "profile", table
        assert set(frame["profile"].unique().to_list()) <= set(PROFILES), table
    assert "profile" not in pl.read_parquet(export / "queries.parquet").columns
    single = pl.read_parquet(rrf_dir / "rrf" / "results.parquet")
    assert single["profile"].unique().to_list() == ["rrf"]


def test_one_profile_is_a_list_of_one(rrf_dir: Path) -> None:
    result = json.loads((rrf_dir / "result.json").read_text())
    jsonschema.validate(result, SCHEMA)
    assert (result["comparisons"], result["adoption"], result["ablation"]) == ([], None, None)
    [entry] = result["profiles"]
    assert entry["configuration"] == hotmem.PROFILES["rrf"].to_dict()
    assert entry["weights"] == {"cosine": 1.0, "bm25": 1.0, "importance": 0.0}
    assert entry["min_similarity"] == 0.4
    assert profile_view(result)["configuration"]["weights"] == entry["weights"]


def test_compare_two_stored_runs(
    multi_dir: Path, rrf_dir: Path, multi: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(multi_dir / "export"), str(rrf_dir / "rrf")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# rrf against default\n")
    # The same pairs as the three-profile run's rrf rows.
    for row in multi["comparisons"]:
        if row["candidate"] == "rrf" and row["n"] and row["metric"] == "recall_at_k":
            assert (
                f"| R@5 | {row['scope']} | {row['n']} | {row['baseline_mean']:.3f} | "
                f"{row['candidate_mean']:.3f} | "
            ) in out


def test_compare_a_run_with_itself_ties_everywhere(
    multi_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = str(multi_dir / "export")
    assert main(["compare", export, export]) == 0
    out = capsys.readouterr().out
    assert "**default@RUN_B** against **default@RUN_A**" in out
    assert "| R@5 | overall | 87 | 0.865 | 0.865 | 0.000 | 0/0/87 | 1.000 | 1.000 |" in out


def _copy(export: Path, tmp_path: Path, name: str, **changes: object) -> Path:
    copy = tmp_path / name
    shutil.copytree(export, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    for key, value in changes.items():
        if value is None:
            manifest.pop(key)
        else:
            manifest[key] = value
    (copy / "manifest.json").write_text(json.dumps(manifest))
    return copy


def test_compare_refuses_runs_that_do_not_pair(
    multi_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = multi_dir / "export"
    manifest = json.loads((export / "manifest.json").read_text())
    other = dict(manifest["fixture"], corpus_sha256="0" * 64)
    cases = {
        _copy(export, tmp_path, "other-fixture", fixture=other): (
            "hotmem-eval: cannot compare runs of different fixtures (expected the same corpus "
            f"and queries): corpus_sha256 {manifest['fixture']['corpus_sha256'][:12]}... in "
            f"{export} but 000000000000... in {tmp_path / 'other-fixture'}\n"
        ),
        _copy(export, tmp_path, "other-k", top_k=3): (
            f"hotmem-eval: cannot compare runs of different top-k: top_k=5 in {export}, "
            f"top_k=3 in {tmp_path / 'other-k'}\n"
        ),
        _copy(export, tmp_path, "old", fixture=None, schema_version=1): (
            f"hotmem-eval: {tmp_path / 'old'}: the manifest has no fixture digests (an export "
            "of schema version 1, expected 2 or later); export the run again with --export-dir\n"
        ),
        tmp_path / "missing": (
            f"hotmem-eval: {tmp_path / 'missing'}: not a run export (no manifest.json); "
            "create one with --export-dir\n"
        ),
    }
    for directory, message in cases.items():
        assert main(["compare", str(export), str(directory)]) == 2
        captured = capsys.readouterr()
        assert (captured.out, captured.err) == ("", message)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda frame: frame.drop("value"),
            "{table}: expected the columns profile, query_id, category, metric, value, "
            "applicable, found no value column; export the run again",
        ),
        (
            lambda frame: frame.with_columns(value=pl.lit(1e308)),
            "cannot pair the runs {export} and {copy}: expected per_query values in [0, 10000], "
            "found value=1e+308 for profile='default@edited', query_id='{first}', "
            "metric='{metric}'",
        ),
    ],
    ids=["no-value", "overflow"],
)
def test_compare_refuses_a_damaged_per_query_table(
    multi_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], edit, message: str
) -> None:
    # Issue 35: a table without value compared nothing and exited 0; 1e308 overflowed.
    export = multi_dir / "export"
    copy = tmp_path / "edited"
    shutil.copytree(export, copy)
    table = copy / "per_query_metrics.parquet"
    frame = pl.read_parquet(table)
    edit(frame).write_parquet(table)
    first = frame.filter(pl.col("profile") == frame["profile"][0]).sort("query_id", "metric")
    assert main(["compare", str(export), str(copy)]) == 2
    captured = capsys.readouterr()
    expected = message.format(
        table=table, export=export, copy=copy, first=first["query_id"][0], metric=first["metric"][0]
    )
    assert (captured.out, captured.err) == ("", f"hotmem-eval: {expected}\n")


def test_a_run_of_several_profiles_has_the_paired_deltas_view_only(
    multi_dir: Path, multi: dict
) -> None:
    from hotmem_eval.query import open_runs

    con = open_runs([multi_dir / "export"])
    try:
        views = {row[0] for row in con.sql("select view_name from duckdb_views()").fetchall()}
        assert {v for v in views if v.startswith("sql_")} == {"sql_paired_deltas"}
        con.execute("SET VARIABLE baseline = 'default'")
        con.execute("SET VARIABLE candidate = 'rrf'")
        pairs = con.sql(
            "select count(*) from sql_paired_deltas where metric = 'recall_at_k'"
        ).fetchall()
    finally:
        con.close()
    row = next(
        r
        for r in multi["comparisons"]
        if (r["candidate"], r["scope"], r["metric"]) == ("rrf", "overall", "recall_at_k")
    )
    assert pairs == [(row["n"],)]


def test_a_missing_table_in_a_run_of_several_profiles_says_why(
    multi_dir: Path, multi: dict
) -> None:
    from hotmem_eval.errors import UsageError
    from hotmem_eval.query import run_query

    export = multi_dir / "export"
    with pytest.raises(UsageError) as missing:
        run_query([export], "select * from sql_category_metrics")
    message = str(missing.value)
    assert message.startswith(
        "query failed: Catalog Error: Table with name sql_category_metrics does not exist!; "
        "sql_category_metrics is not a view of a run of several profiles "
        f"({', '.join(p['name'] for p in multi['profiles'])}): the file 002_category_metrics.sql "
        "has no profile "
        "column, so it would mix their rows (the tables have one: add WHERE profile = '...' "
        "to a query of your own, or export each profile's run alone); the tables and views "
        "here: "
    )
    assert "results" in message.rsplit("here: ", 1)[1].split(", ")
    assert "sql_paired_deltas" in message.rsplit("here: ", 1)[1].split(", ")
    with pytest.raises(UsageError, match=r"does not exist!; the tables and views here: .*qrels"):
        run_query([export], "select * from nope")
