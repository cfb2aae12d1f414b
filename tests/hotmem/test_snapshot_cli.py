"""The snapshot, verify and hydrate commands: output, exit codes and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import hotmem
from hotmem.cli import main


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("HOTMEM_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def source(tmp_path: Path) -> Path:
    with hotmem.open_store(tmp_path / "source.db") as store:
        store.add("Invoices need two approvals.", identifier="acme", memory_id="m-1")
        store.add("Backups run nightly.", identifier="acme", memory_id="m-2")
    return tmp_path / "source.db"


def test_snapshot_verify_hydrate(
    home: Path, source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "--db", str(source), "snapshot", "p.zip")
    assert (code, err) == (0, "")
    digest = hotmem.verify_snapshot(tmp_path / "p.zip").content_digest
    size = (tmp_path / "p.zip").stat().st_size
    assert out == f"wrote 2 memories to p.zip ({size} bytes, content digest {digest})\n"
    assert run(capsys, "verify", "p.zip") == (0, f"ok: 2 memories, content digest {digest}\n", "")
    weaker = "ok (digests only: records not parsed): 2 memories"
    assert run(capsys, "verify", "p.zip", "--digests-only") == (
        0,
        f"{weaker}, content digest {digest}\n",
        "",
    )
    code, out, err = run(capsys, "hydrate", "p.zip", "--db", "target.db")
    assert (code, out, err) == (
        0,
        f"hydrated 2 memories into target.db (content digest {digest})\n",
        "",
    )
    code, out, _ = run(capsys, "--db", "target.db", "search", "invoice approvals", "--json")
    assert json.loads(out)[0]["memory_id"] == "m-1"
    assert not home.exists()


def test_db_after_the_command(home: Path, source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "snapshot", "p.zip", "--db", str(source), "--json")[0] == 0
    assert run(capsys, "hydrate", "p.zip", "--db", "t.db")[0] == 0
    assert run(capsys, "--db", "t.db", "stats", "--json")[1].count('"acme": 2') == 1


def test_default_store_is_hotmem_home(
    home: Path, source: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "--db", str(source), "snapshot", "p.zip")[0] == 0
    assert run(capsys, "hydrate", "p.zip")[0] == 0
    with hotmem.open_store(home / "hotmem.db") as store:
        assert len(store) == 2
    code, out, _ = run(capsys, "snapshot", "again.zip", "--json")
    assert code == 0
    assert json.loads(out)["record_count"] == 2


def test_verify_reports_every_problem_and_exits_1(
    home: Path, source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "--db", str(source), "snapshot", "p.zip")
    data = bytearray((tmp_path / "p.zip").read_bytes())
    data[-30] ^= 0xFF
    (tmp_path / "bad.zip").write_bytes(data)
    code, out, err = run(capsys, "verify", "bad.zip")
    report = hotmem.verify_snapshot("bad.zip")
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        f"FAILED: {len(report.problems)} problem(s) in bad.zip",
        *(f"  {problem}" for problem in report.problems),
    ]
    code, out, _ = run(capsys, "verify", "bad.zip", "--json")
    assert code == 1
    assert json.loads(out) == report.to_dict()
    code, out, _ = run(capsys, "verify", "bad.zip", "--digests-only", "--json")
    assert code == 1
    assert json.loads(out) == hotmem.verify_snapshot("bad.zip", digests_only=True).to_dict()


def test_digests_only_and_recompute_vectors_exclude_each_other(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["verify", "p.zip", "--digests-only", "--recompute-vectors"])
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["verify", "missing.zip"], 2, "hotmem: cannot read package 'missing.zip': no such file"),
        (["hydrate", "missing.zip", "--db", "t.db"], 2, "cannot read package 'missing.zip'"),
        (["snapshot", "p.zip"], 2, "hotmem: 'p.zip' already exists; pass --force to replace it"),
        (["snapshot", "nowhere/p.zip"], 2, "its directory does not exist"),
        (["hydrate", "p.zip", "--db", "full.db"], 1, "holds 1 memory"),
        (["hydrate", "bad.zip", "--db", "t.db"], 1, "failed verification with"),
    ],
)
def test_user_mistakes_are_one_line(
    home: Path,
    source: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    code: int,
    message: str,
) -> None:
    run(capsys, "--db", str(source), "snapshot", "p.zip")
    (tmp_path / "bad.zip").write_bytes((tmp_path / "p.zip").read_bytes()[:-1])
    with hotmem.open_store(tmp_path / "full.db") as store:
        store.add("Already here.", identifier="acme")
    before = sorted(p.name for p in tmp_path.iterdir())
    found, out, err = run(capsys, "--db", str(source), *argv)
    assert (found, out) == (code, "")
    assert message in err
    assert len(err.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_force_replaces_the_package(
    home: Path, source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "p.zip").write_text("old")
    assert run(capsys, "--db", str(source), "snapshot", "p.zip", "--force")[0] == 0
    assert hotmem.verify_snapshot(tmp_path / "p.zip").ok


@pytest.mark.slow
def test_the_installed_command(home: Path, source: Path, tmp_path: Path) -> None:
    def hotmem_cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "hotmem", *argv], capture_output=True, text=True, cwd=tmp_path
        )

    assert hotmem_cli("--db", str(source), "snapshot", "p.zip").returncode == 0
    truncated = tmp_path / "cut.zip"
    truncated.write_bytes((tmp_path / "p.zip").read_bytes()[:100])
    completed = hotmem_cli("hydrate", "cut.zip", "--db", "t.db")
    assert completed.returncode == 1
    assert "Traceback" not in completed.stderr
    assert completed.stderr.startswith("hotmem: package 'cut.zip' failed verification")


def test_a_package_given_as_the_store_says_to_hydrate_it(
    home: Path, source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    package = tmp_path / "p.hotmem"
    assert run(capsys, "--db", str(source), "snapshot", str(package))[0] == 0
    before = package.read_bytes()
    code, out, err = run(capsys, "--db", str(package), "search", "anything")
    assert (code, out) == (1, "")
    assert err == (
        f"hotmem: cannot open store {str(package)!r}: expected a SQLite database, found 'file "
        "is not a database'; it is a ZIP file, as a HotMem package is: check it with `hotmem "
        f"verify {package}` and make a store of it with `hotmem --db NEW.db hydrate {package}`\n"
    )
    assert package.read_bytes() == before  # the package is left as it was
