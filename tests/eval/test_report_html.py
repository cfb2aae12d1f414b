"""The HTML report as a person sees it: rendered by a real headless browser (Debian's
Chromium), self-contained, deterministic, with its plots' data exported as Parquet."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from hotmem_eval.cli import main
from hotmem_eval.plot_frames import SCHEMAS as PLOT_SCHEMAS
from hotmem_eval.report_html import PLOT_CAPTIONS
from tests.browser import Browser

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run of two profiles with every output."""
    out = tmp_path_factory.mktemp("html")
    argv = ["--profile", "default", "--profile", "bm25-only", "--html", str(out / "report.html")]
    argv += ["--output", str(out / "result.json"), "--export-dir", str(out / "export")]
    assert main(argv) == 0
    return out


def test_the_report_loads_in_a_browser_with_every_plot_and_the_decision_in_view(
    run: Path, browser: Browser
) -> None:
    page = browser.open(run / "report.html")
    assert page.console_errors == []
    images = page.images
    assert len(images) == len(PLOT_CAPTIONS)  # two profiles: every plot, the forest included
    for image in images:
        assert image.complete
        assert min(image.natural_width, image.natural_height) > 0
        assert min(image.width, image.height) > 0
    assert page.visible("#decision", in_viewport=True)
    decision = page.evaluate("document.querySelector('#decision').textContent")
    result = json.loads((run / "result.json").read_text())
    assert decision == result["adoption"]["text"]
    assert page.screenshot().startswith(b"\x89PNG\r\n\x1a\n")


def test_the_report_needs_nothing_but_itself(run: Path) -> None:
    html = (run / "report.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    assert "<script" not in html
    assert html.count('src="data:image/svg+xml;base64,') == len(PLOT_CAPTIONS)


def test_the_same_result_gives_the_same_bytes(run: Path, tmp_path: Path) -> None:
    again = tmp_path / "again.html"
    assert main(["report", str(run / "result.json"), "--html", str(again)]) == 0
    assert again.read_bytes() == (run / "report.html").read_bytes()


def test_the_plot_data_is_exported_as_parquet(run: Path) -> None:
    manifest = json.loads((run / "export" / "manifest.json").read_text())
    assert manifest["plots"] == {name: f"plots/{name}.parquet" for name in PLOT_SCHEMAS}
    result = json.loads((run / "result.json").read_text())
    for name, schema in PLOT_SCHEMAS.items():
        frame = pl.read_parquet(run / "export" / "plots" / f"{name}.parquet")
        assert frame.schema == pl.Schema(schema), name
    latency = pl.read_parquet(run / "export" / "plots" / "latency.parquet")
    assert latency.height == sum(len(p["latencies_ms"]) for p in result["profiles"])
    ranks = pl.read_parquet(run / "export" / "plots" / "first_relevant_rank.parquet")
    assert ranks.filter(pl.col("profile") == "default").height == 87  # the positive queries


def test_report_renders_a_saved_result_again(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hotmem_eval.report import render_markdown

    assert main(["report", str(run / "result.json")]) == 0
    result = json.loads((run / "result.json").read_text())
    assert capsys.readouterr().out == render_markdown(result)


def test_report_refuses_an_older_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    older = tmp_path / "old.json"
    older.write_text('{"schema_version": 2, "metrics": {}}')
    html = tmp_path / "r.html"
    assert main(["report", str(older), "--html", str(html)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"hotmem-eval: {older}: a result of schema version 2; this hotmem-eval reads version 3 "
        "(one shape for any number of profiles): run the evaluation again to write it "
        "(docs/retrieval-quality.md#result-schema)\n"
    )
    assert not html.exists()
    broken = tmp_path / "broken.json"
    broken.write_text("{\n  nope")
    assert main(["report", str(broken)]) == 2
    assert capsys.readouterr().err.startswith(f"hotmem-eval: {broken}:2: not JSON: ")


def test_the_plot_data_is_queryable_with_sql(run: Path) -> None:
    from hotmem_eval.query import run_query

    sql = "SELECT profile, count(*) AS n FROM plot_latency GROUP BY profile ORDER BY profile"
    assert run_query([run / "export"], sql, fmt="csv") == "profile,n\nbm25-only,98\ndefault,98\n"
    # two profiles, each overall and in the 7 categories with a positive query
    sql = "SELECT count(*) AS n FROM plot_category_metric"
    assert run_query([run / "export"], sql, fmt="csv") == "n\n16\n"
