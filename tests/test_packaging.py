"""The package as a user installs it: a wheel built offline with ``uv build``, installed into a
fresh virtual environment and, as ``uv tool install`` does it, into a tool directory; run from
a directory outside the checkout with HOME pointed into the test's temporary directory.

The eval extra's dependencies come from the lock (``uv sync --frozen --offline`` into the new
environment, from uv's cache, filled by ``uv sync``); the wheel itself is installed with
``uv pip install --offline --no-deps``, so what runs is exactly what the wheel holds.
"""

from __future__ import annotations

import email
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import hotmem
from tests.processes import run

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def uv() -> str:
    found = os.environ.get("UV") or shutil.which("uv")
    assert found, "uv is needed to build and install the wheel (see .ci/run)"
    return found


def quiet(*argv: str | Path, env: dict[str, str] | None = None) -> None:
    subprocess.run([str(a) for a in argv], check=True, cwd=ROOT, env=env, capture_output=True)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    quiet(uv(), "build", "--wheel", "--offline", "--quiet", "--out-dir", out, ROOT)
    [built] = out.glob("hotmem-*.whl")
    return built


def test_the_wheel_holds_the_fixture_the_sql_the_licence_and_py_typed(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = email.message_from_bytes(
            archive.read(f"hotmem-{hotmem.__version__}.dist-info/METADATA")
        )
        entry_points = archive.read(f"hotmem-{hotmem.__version__}.dist-info/entry_points.txt")
        baseline = archive.read("hotmem_eval/fixture/baseline.json")
    for name in [
        "hotmem/py.typed",
        "hotmem_eval/fixture/corpus.jsonl",
        "hotmem_eval/fixture/queries.jsonl",
        "hotmem_eval/sql/001_per_query_metrics.sql",
        f"hotmem-{hotmem.__version__}.dist-info/licenses/LICENSE",
    ]:
        assert name in names, name
    assert baseline == (ROOT / "benchmarks" / "retrieval" / "baseline.json").read_bytes()
    assert not any(name.startswith(("tests/", "benchmarks/", "docs/")) for name in names)
    assert metadata["License-Expression"] == "MIT"
    requires = metadata.get_all("Requires-Dist") or []
    for dependency in ("polars>=2.1", "pyarrow>=26", "duckdb>=2.0", "numpy>=2.4"):
        assert f"{dependency}; extra == 'eval'" in requires
    assert b"hotmem = hotmem.cli:main" in entry_points
    assert b"hotmem-eval = hotmem_eval.cli:main" in entry_points


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment with the wheel and the eval extra's locked dependencies."""
    venv = tmp_path_factory.mktemp("installed") / "venv"
    quiet(uv(), "venv", "--quiet", "--python", sys.executable, venv)
    env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(venv)}
    env.pop("VIRTUAL_ENV", None)
    quiet(uv(), "sync", "--quiet", "--offline", "--frozen", "--no-default-groups",
          "--extra", "eval", "--no-install-project", env=env)  # fmt: skip
    quiet(uv(), "pip", "install", "--quiet", "--offline", "--no-deps",
          "--python", venv / "bin" / "python", wheel)  # fmt: skip
    return venv / "bin"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


def test_pip_install_gives_a_working_hotmem(installed: Path, outside: Path) -> None:
    home = outside.parent / "home"
    hotmem_cli = str(installed / "hotmem")
    added = run([hotmem_cli, "--db", "t.db", "add", "Deploys happen on Tuesdays.",
                 "--identifier", "acme", "--id", "m-1"], cwd=outside, home=home)  # fmt: skip
    assert (added.code, added.out) == (0, "m-1\n")
    found = run([hotmem_cli, "--db", "t.db", "search", "deploy day", "--json"], cwd=outside)
    assert [r["memory_id"] for r in json.loads(found.out)] == ["m-1"]
    where = run([str(installed / "python"), "-c", "import hotmem; print(hotmem.__file__)"])
    assert where.out.startswith(str(installed.parent))  # the wheel's copy, not the checkout
    assert not home.exists()


def test_the_installed_hotmem_eval_runs_on_its_own_fixture(installed: Path, outside: Path) -> None:
    home = outside.parent / "home"
    completed = run([str(installed / "hotmem-eval"), "--check-baseline", "--output", "r.json"],
                    cwd=outside, home=home)  # fmt: skip
    assert (completed.code, completed.err) == (0, "baseline: identical\n")
    document = json.loads((outside / "r.json").read_text())
    assert document["fixture"]["corpus"].endswith("hotmem_eval/fixture/corpus.jsonl")
    assert document["hotmem"]["git_commit"] is None  # not a checkout
    assert sorted(p.name for p in outside.iterdir()) == ["r.json"]
    assert not home.exists()
    refused = run([str(installed / "hotmem-eval"), "--update-baseline"], cwd=outside, home=home)
    assert refused.code == 2
    assert "the default baseline is part of the installed hotmem_eval package" in refused.err


def test_uv_tool_install_gives_hotmem_and_a_clear_word_about_the_extra(
    wheel: Path, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "UV_TOOL_DIR": str(tmp_path / "tools"),
        "UV_TOOL_BIN_DIR": str(tmp_path / "bin"),
    }
    quiet(
        uv(), "tool", "install", "--quiet", "--offline", "--python", sys.executable, wheel, env=env
    )
    work = tmp_path / "work"
    work.mkdir()
    version = run([str(tmp_path / "bin" / "hotmem"), "--version"], cwd=work)
    assert (version.code, version.out) == (0, f"hotmem {hotmem.__version__}\n")
    added = run([str(tmp_path / "bin" / "hotmem"), "--db", "t.db", "add", "x",
                 "--identifier", "a"], cwd=work, home=tmp_path / "home")  # fmt: skip
    assert added.code == 0
    evaluator = run([str(tmp_path / "bin" / "hotmem-eval"), "--output", "r.json"], cwd=work)
    assert evaluator.code == 1
    assert evaluator.err.startswith(
        "hotmem-eval: the 'eval' extra is not installed (missing "
        "modules: duckdb, matplotlib, numpy, polars, pyarrow); install it with pip install "
        "'.[eval]'"
    )
    assert not (work / "r.json").exists()


def test_the_quick_start_installs_only_the_evaluator_s_extra() -> None:
    """The README's first command syncs the ``eval`` extra alone (no dev group: no test, lint,
    type or docs tools, no model); ``test_the_installed_hotmem_eval_runs_on_its_own_fixture``
    shows that extra is all the evaluator needs."""
    import tomllib

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = readme.split("```bash\n", 1)[1].split("\n", 1)[0]
    assert first.startswith("uv run --no-dev --extra eval python scripts/retrieval_eval.py ")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extra = [
        name.split(">")[0].split("=")[0]
        for name in project["project"]["optional-dependencies"]["eval"]
    ]
    assert extra == ["polars", "pyarrow", "duckdb", "numpy", "matplotlib"]
