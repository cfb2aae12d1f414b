"""hotmem-eval's command line: version, help, the baseline refusal, progress, Ctrl-C."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

import hotmem
from hotmem_eval import cli_parsers, paths
from hotmem_eval.baseline import update_refusal
from hotmem_eval.cli import main
from tests.processes import default_sigint, entry_point, run, run_on_terminal

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "benchmarks" / "retrieval"
KGH = FIXTURE / "external" / "kgh-retrieval"
HOTMEM_EVAL = entry_point("hotmem_eval.cli")


def test_version() -> None:
    completed = run([*HOTMEM_EVAL, "--version"])
    assert (completed.code, completed.out, completed.err) == (
        0,
        f"hotmem-eval {hotmem.__version__}\n",
        "",
    )


def test_help_lists_every_command() -> None:
    completed = run([*HOTMEM_EVAL, "--help"])
    assert completed.code == 0
    lines = completed.out.splitlines()
    commands = lines[lines.index("commands:") + 1 :][:3]
    assert [line.split()[0] for line in commands] == ["run", "query", "compare"]
    assert completed.out.startswith(
        "usage: hotmem-eval [run] [options]\n       hotmem-eval query DIR [DIR ...] SQL"
    )


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    exempt = (argparse._HelpAction, argparse._VersionAction)
    return [a for a in parser._actions if a.option_strings and not isinstance(a, exempt)]


@pytest.mark.parametrize("parser", [cli_parsers.run_parser(), cli_parsers.query_parser()])
def test_every_option_has_help_that_gives_its_default(parser: argparse.ArgumentParser) -> None:
    options = _options(parser)
    assert options
    for action in options:
        assert action.help, action.option_strings
        assert "default" in action.help, action.option_strings
        if isinstance(action.default, int) and not isinstance(action.default, bool):
            assert f"default: {action.default})" in action.help, action.option_strings


def test_force_goes_with_update_baseline_only(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["--force"])
    assert raised.value.code == 2
    assert "--force goes with --update-baseline only" in capsys.readouterr().err


# -- the baseline refusal ---------------------------------------------------------------------


@pytest.fixture
def fixture_dir(tmp_path: Path) -> Path:
    """A copy of the committed fixture with its baseline, as a user's own would be."""
    directory = tmp_path / "fixture"
    directory.mkdir()
    for name in ("corpus.jsonl", "queries.jsonl", "baseline.json"):
        shutil.copy(FIXTURE / name, directory / name)
    return directory


def test_the_committed_baseline_refuses_another_fixture() -> None:
    reason = update_refusal(FIXTURE / "baseline.json", KGH / "corpus.jsonl", KGH / "queries.jsonl")
    assert reason is not None
    assert reason.startswith(
        f"refusing to overwrite {FIXTURE / 'baseline.json'}: it is the baseline of the fixture "
        f"beside it, and this run used another ({KGH / 'corpus.jsonl'} (sha256 "
    )
    assert f"is not {FIXTURE / 'queries.jsonl'} (sha256 " in reason
    assert reason.endswith(
        "pass --baseline PATH for a baseline of this fixture, or --force to overwrite it anyway"
    )


def test_the_same_fixture_elsewhere_is_the_same_fixture(fixture_dir: Path) -> None:
    assert (
        update_refusal(
            FIXTURE / "baseline.json", fixture_dir / "corpus.jsonl", fixture_dir / "queries.jsonl"
        )
        is None
    )


def test_one_changed_file_is_another_fixture(fixture_dir: Path) -> None:
    with (fixture_dir / "queries.jsonl").open("a") as queries:
        queries.write("\n")
    reason = update_refusal(
        fixture_dir / "baseline.json", FIXTURE / "corpus.jsonl", FIXTURE / "queries.jsonl"
    )
    assert reason is not None
    assert "corpus.jsonl (sha256" not in reason  # only the file that differs is named
    assert f"{FIXTURE / 'queries.jsonl'} (sha256 " in reason


def test_a_baseline_without_a_fixture_beside_it_is_anyone_s(tmp_path: Path) -> None:
    assert update_refusal(tmp_path / "b.json", KGH / "corpus.jsonl", KGH / "queries.jsonl") is None


def test_update_baseline_on_another_fixture_exits_2_and_keeps_the_baseline(
    fixture_dir: Path,
) -> None:
    baseline = fixture_dir / "baseline.json"
    before = baseline.read_bytes()
    argv = [*HOTMEM_EVAL, "--corpus", str(KGH / "corpus.jsonl")]
    argv += ["--queries", str(KGH / "queries.jsonl"), "--baseline", str(baseline)]
    completed = run([*argv, "--update-baseline"])
    assert completed.code == 2
    assert completed.err.startswith(f"hotmem-eval: refusing to overwrite {baseline}: ")
    assert len(completed.err.splitlines()) == 1
    assert baseline.read_bytes() == before


@pytest.mark.slow
def test_check_baseline_against_another_fixture_s_baseline_names_the_mismatch(
    fixture_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = fixture_dir / "baseline.json"
    argv = ["--corpus", str(KGH / "corpus.jsonl"), "--queries", str(KGH / "queries.jsonl")]
    argv += ["--baseline", str(baseline), "--check-baseline"]
    assert main([*argv, "--report", str(fixture_dir / "report.md")]) == 3
    err = capsys.readouterr().err
    assert err.startswith(
        f"baseline: not comparable: {baseline} is the baseline of the fixture beside it, and "
        f"this run used another ({KGH / 'corpus.jsonl'} (sha256 "
    )
    assert err.endswith(
        "pass --baseline PATH for the baseline of this fixture (or --update-baseline "
        "--baseline PATH to create one)\n"
    )
    assert "row(s) changed" not in err


def test_the_installed_default_baseline_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    installed = paths.PACKAGE / "fixture" / "baseline.json"
    assert main(["--update-baseline", "--force", "--baseline", str(installed)]) == 2
    assert capsys.readouterr().err == (
        f"hotmem-eval: refusing to overwrite {installed}: the default baseline is part of the "
        "installed hotmem_eval package; pass --baseline PATH for a baseline of your own\n"
    )
    assert not installed.exists()


@pytest.mark.slow
def test_update_baseline_force_overwrites_it(fixture_dir: Path) -> None:
    baseline = fixture_dir / "baseline.json"
    argv = ["--corpus", str(KGH / "corpus.jsonl"), "--queries", str(KGH / "queries.jsonl")]
    argv += ["--baseline", str(baseline), "--update-baseline", "--force"]
    argv += ["--report", str(fixture_dir / "report.md")]
    assert main(argv) == 0
    assert '"memory_count": 60' in baseline.read_text()


# -- progress and Ctrl-C ----------------------------------------------------------------------


@pytest.mark.slow
def test_the_evaluator_shows_progress_on_a_terminal_only(tmp_path: Path) -> None:
    argv = [*HOTMEM_EVAL, "--repeat", "2", "--output", "r.json"]
    shown = run_on_terminal(argv, cwd=tmp_path, home=tmp_path / "home")
    assert shown.code == 0
    drawn = [line for line in shown.err.split("\r") if line.startswith("hotmem-eval: ")]
    assert drawn[-1].rstrip() == "hotmem-eval: searching 98 queries × 1 profile: 98 of 98 (100%)"
    assert shown.err.endswith("\r" + " " * len(drawn[-1].rstrip()) + "\r")
    quiet = run(argv, cwd=tmp_path, home=tmp_path / "home")
    assert (quiet.code, quiet.err) == (0, "")


@pytest.mark.slow
def test_ctrl_c_during_a_run_prints_interrupted_and_exits_130(tmp_path: Path) -> None:
    master, slave = os.openpty()
    process = subprocess.Popen(
        [*HOTMEM_EVAL, "--repeat", "1000", "--output", "r.json"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=slave,
        preexec_fn=default_sigint,
    )
    os.close(slave)
    seen = b""
    while b"searching" not in seen:  # the run is under way: its progress is on the terminal
        seen += os.read(master, 4096)
    process.send_signal(signal.SIGINT)
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        seen += data
    out, _ = process.communicate(timeout=60)
    os.close(master)
    assert (process.returncode, out) == (130, b"")
    assert seen.endswith(b"hotmem-eval: interrupted\r\n")
    assert b"Traceback" not in seen
    assert not (tmp_path / "r.json").exists()
