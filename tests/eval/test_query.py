"""``hotmem-eval query``: --safe reads the run tables and nothing else; Ctrl-C stops a query.

Without ``--safe`` the SQL has the user's full file and network access, as in ``duckdb``
(documented; ``test_retrieval_eval`` saves the registry with ``COPY``). With it, every way out
of the run tables is refused with one line and exit 2.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hotmem_eval.cli import main

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("query")
    assert main(["--export-dir", str(directory / "run"), "--report", str(directory / "r.md")]) == 0
    return directory / "run"


def query(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["query", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    "sql",
    [
        "select category, metric, value from category_metrics order by all",
        "select run, count(*) as n from results group by run",
        "select count(*) as n from sql_per_query_metrics",
        "select metric, count(*) as n from metrics group by metric order by metric limit 3",
    ],
)
def test_safe_mode_reads_the_run_tables_as_the_default_does(
    export: Path, capsys: pytest.CaptureFixture[str], sql: str
) -> None:
    default = query(capsys, str(export), sql, "--format", "json")
    assert default[0] == 0
    assert query(capsys, str(export), sql, "--format", "json", "--safe") == default


def attacks(tmp: Path, export: Path) -> dict[str, str]:
    return {
        "COPY ... TO a file": f"COPY (SELECT 1) TO '{tmp / 'out.csv'}'",
        "read_csv of /etc/passwd": "SELECT * FROM read_csv('/etc/passwd', sep = ':')",
        "read_text": "SELECT * FROM read_text('/etc/hostname')",
        "read_blob": "SELECT * FROM read_blob('/etc/hostname')",
        "glob": "SELECT * FROM glob('/*')",
        "a run file read directly": f"SELECT * FROM read_parquet('{export / 'results.parquet'}')",
        "ATTACH a database file": f"ATTACH '{tmp / 'x.db'}' AS x",
        "INSTALL an extension": "INSTALL httpfs",
        "LOAD an extension": "LOAD httpfs",
        "an https URL": "SELECT * FROM read_parquet('https://example.com/x.parquet')",
        "EXPORT DATABASE": f"EXPORT DATABASE '{tmp / 'exported'}'",
        "turning external access back on": "SET enable_external_access = true",
        "unlocking the configuration": "RESET lock_configuration",
        "profiling to a file": f"SET profiling_output = '{tmp / 'profile.json'}'",
        "PRAGMA enable_profiling": "PRAGMA enable_profiling",
        "a file after a harmless statement": f"SELECT 1; COPY (SELECT 2) TO '{tmp / 'y.csv'}'",
    }


ATTACKS = list(attacks(Path("/tmp"), Path("/tmp")))


@pytest.mark.parametrize("attack", ATTACKS)
def test_safe_mode_refuses_every_way_out(
    export: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], attack: str
) -> None:
    sql = attacks(tmp_path, export)[attack]
    code, out, err = query(capsys, str(export), "--safe", sql)  # options anywhere
    assert (code, out) == (2, "")
    assert err.startswith("hotmem-eval: query failed: ")
    assert len(err.splitlines()) == 1
    assert "Traceback" not in err
    assert any(
        reason in err
        for reason in ("refused by --safe", "the configuration has been locked", "disabled")
    )
    assert list(tmp_path.iterdir()) == []


def test_without_safe_mode_the_sql_can_write_files(
    export: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The documented default: the user's own access, as in duckdb.
    sql = attacks(tmp_path, export)["COPY ... TO a file"]
    assert query(capsys, str(export), sql)[0] == 0
    assert (tmp_path / "out.csv").read_text() == "1\n1\n"  # the header, then the row


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads CPU time from /proc")
@pytest.mark.parametrize("mode", [[], ["--safe"]])
def test_ctrl_c_stops_a_running_query(export: Path, mode: list[str]) -> None:
    # Minutes of work: one long task, during which DuckDB itself does not look at signals.
    sql = "select sum(hash(a.range * b.range)) from range(1000000) a, range(1000000) b"
    child = subprocess.Popen(
        [sys.executable, "-m", "hotmem_eval.cli", "query", str(export), sql, *mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        while cpu_seconds(child.pid) < 3.0:  # past start-up (about 1 s of CPU): the query runs
            assert child.poll() is None
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)  # the query alone would run for minutes
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert (child.returncode, out, err) == (130, "", "hotmem-eval: interrupted\n")


@pytest.mark.parametrize("mode", [[], ["--safe"]])
def test_timeout_stops_a_running_query(
    export: Path, capsys: pytest.CaptureFixture[str], mode: list[str]
) -> None:
    # Minutes of work, stopped by the timer (issue 35: query had no time limit).
    sql = "select sum(hash(a.range * b.range)) from range(1000000) a, range(1000000) b"
    assert query(capsys, str(export), sql, *mode, "--timeout", "0.5") == (
        1,
        "",
        "hotmem-eval: query stopped after its --timeout of 0.5 s; nothing was printed\n",
    )
    # A query within its time is answered as without one.
    quick = "select count(*) as n from results"
    assert query(capsys, str(export), quick, "--timeout", "60") == query(capsys, str(export), quick)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "x", "86401"])
def test_a_bad_timeout_is_a_usage_error(
    export: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["query", str(export), "select 1", "--timeout", value])
    assert raised.value.code == 2
    assert "argument --timeout: expected a number of seconds" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("manifest", "reason"),
    [
        (b"{}", "expected a run manifest with top_k an integer >= 1, found top_k=None; export "
         "the run again"),
        (b"[1]", "expected a run manifest with a JSON object, found list; export the run again"),
        (b'{"top_k": 5, "relevant_grade": "2"}', "expected a run manifest with relevant_grade "
         "an integer >= 1, found relevant_grade='2'; export the run again"),
        (b"[" * 100_000 + b"]" * 100_000, "cannot read the manifest: nested too deeply"),
    ],
    ids=["empty", "not-an-object", "grade", "deep"],
)  # fmt: skip
def test_a_damaged_manifest_is_a_usage_error_for_query_and_compare(
    export: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], manifest: bytes, reason: str
) -> None:
    # Issue 35: these were "evaluator failure" exit 1 (KeyError, RecursionError).
    import shutil

    copy = tmp_path / "damaged"
    shutil.copytree(export, copy)
    (copy / "manifest.json").write_bytes(manifest)
    expected = f"hotmem-eval: {copy / 'manifest.json'}: {reason}\n"
    assert query(capsys, str(copy), "select 1") == (2, "", expected)
    assert main(["compare", str(export), str(copy)]) == 2
    assert capsys.readouterr().err == expected
