"""The HTML report's plots: valid SVG for every plot, the same bytes in every process, frames
checked against their schemas, empty frames drawn as "no data", matplotlib imported lazily."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from hotmem_eval.errors import EvalError
from hotmem_eval.plot_frames import NULLABLE
from hotmem_eval.plots import PLOT_NAMES, SCHEMAS, PlotFrames, render_plots
from tests.eval.plot_frames_sample import empty_frames, sample_frames

ROOT = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}svg"


@pytest.fixture(autouse=True, scope="module")
def _matplotlib_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """matplotlib's font cache goes to a temporary directory, not the user's home."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MPLCONFIGDIR", str(tmp_path_factory.mktemp("mplconfig")))
        yield


@pytest.fixture(scope="module")
def plots(_matplotlib_cache: None) -> dict[str, bytes]:
    return render_plots(sample_frames())


def _size(value: str | None) -> float:
    assert value, "the SVG has no size"
    assert value.endswith("pt"), value
    return float(value.removesuffix("pt"))


def test_every_plot_renders_as_svg_with_a_size(plots: dict[str, bytes]) -> None:
    assert tuple(plots) == PLOT_NAMES
    for name, svg in plots.items():
        root = ET.fromstring(svg)
        assert root.tag == SVG, name
        assert _size(root.get("width")) > 0, name
        assert _size(root.get("height")) > 0, name
        assert root.get("viewBox"), name


def test_the_svg_draws_glyphs_as_paths_and_carries_no_date_or_creator(
    plots: dict[str, bytes],
) -> None:
    for name, svg in plots.items():
        assert b"<text" not in svg, name
        assert b"<dc:date>" not in svg, name
        assert b"Matplotlib v" not in svg, name


def test_the_plots_say_what_they_show(plots: dict[str, bytes]) -> None:
    # With glyphs drawn as paths, matplotlib keeps every text as an SVG comment.
    assert b"<!-- overall (n=12) -->" in plots["category_metric"]
    assert b"<!-- nDCG@5 -->" in plots["category_metric"]
    assert b"<!-- semantic \xe2\x88\x92 default, nDCG@5 -->" in plots["paired_differences"]
    assert plots["channel_scores"].count(b"<!-- floor 0.25 -->") == 1  # semantic has no floor
    assert b"<!-- relevant (n=4) -->" in plots["channel_scores"]
    assert b"<!-- not in top 5 -->" in plots["first_relevant_rank"]
    assert b"<!-- rank 1 -->" in plots["first_relevant_rank"]
    assert b"p50 1.35 ms" in plots["latency"]


def test_the_same_frames_give_the_same_bytes(plots: dict[str, bytes]) -> None:
    assert render_plots(sample_frames()) == plots


def test_concurrent_renders_give_the_same_bytes(plots: dict[str, bytes]) -> None:
    results: list[dict[str, bytes]] = []
    threads = [
        threading.Thread(target=lambda: results.append(render_plots(sample_frames())))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [plots, plots]


_DIGESTS = """
import hashlib
from hotmem_eval.plots import render_plots
from tests.eval.plot_frames_sample import sample_frames
for name, svg in render_plots(sample_frames()).items():
    print(name, hashlib.sha256(svg).hexdigest())
"""


@pytest.mark.slow
def test_the_same_frames_give_the_same_bytes_in_fresh_processes(
    plots: dict[str, bytes], tmp_path: Path
) -> None:
    expected = "".join(f"{n} {hashlib.sha256(s).hexdigest()}\n" for n, s in plots.items())
    for seed in ("1", "2"):
        env = {
            **os.environ,
            "PYTHONHASHSEED": seed,
            "PYTHONPATH": str(ROOT),
            "MPLCONFIGDIR": str(tmp_path / f"mpl{seed}"),  # a cold font cache, each time
        }
        completed = subprocess.run(
            [sys.executable, "-c", _DIGESTS],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert completed.returncode == 0, completed.stderr
        assert completed.stdout == expected


def test_empty_frames_give_no_data_figures_and_no_forest() -> None:
    plots = render_plots(empty_frames())
    assert tuple(plots) == tuple(n for n in PLOT_NAMES if n != "paired_differences")
    for name, svg in plots.items():
        assert ET.fromstring(svg).tag == SVG
        assert b"<!-- no data -->" in svg, name


def test_an_empty_forest_alone_is_left_out(plots: dict[str, bytes]) -> None:
    frames = replace(sample_frames(), paired_differences=empty_frames().paired_differences)
    rendered = render_plots(frames)
    assert "paired_differences" not in rendered
    assert rendered["latency"] == plots["latency"]


def test_a_forest_panel_per_candidate_wrapping_after_three() -> None:
    frames = sample_frames()
    differences = frames.paired_differences
    more = pl.concat(
        [
            differences,
            *(differences.with_columns(candidate=pl.lit(c)) for c in ("rrf", "mmr", "hybrid")),
        ]
    )
    svg = render_plots(replace(frames, paired_differences=more))["paired_differences"]
    for candidate in ("semantic", "rrf", "mmr", "hybrid"):
        assert f"<!-- {candidate} − default, nDCG@5 -->".encode() in svg
    assert ET.fromstring(svg).tag == SVG


def test_a_column_of_nulls_only_is_taken_as_its_type() -> None:
    frames = sample_frames()
    nulls = frames.category_metric.with_columns(ci_low=pl.lit(None), ci_high=pl.lit(None))
    assert nulls.schema["ci_low"] == pl.Null
    extra = frames.latency.with_columns(note=pl.lit("ignored"))
    rendered = render_plots(replace(frames, category_metric=nulls, latency=extra))
    assert ET.fromstring(rendered["category_metric"]).tag == SVG


def test_a_profile_name_is_text_not_mathtext() -> None:
    frames = sample_frames()
    latency = frames.latency.with_columns(
        pl.col("profile").str.replace("semantic", "a$b^c$", literal=True)
    )
    svg = render_plots(replace(frames, latency=latency))["latency"]
    assert b"<!-- a$b^c$ -->" in svg
    assert b"mathdefault" not in svg  # the log axis' labels are plain numbers too


_EVERY_COLUMN = [(frame, column) for frame, schema in SCHEMAS.items() for column in schema]


@pytest.mark.parametrize(("frame", "column"), _EVERY_COLUMN)
def test_a_missing_column_is_named_with_its_frame(frame: str, column: str) -> None:
    frames = sample_frames()
    broken = replace(frames, **{frame: getattr(frames, frame).drop(column)})
    with pytest.raises(EvalError, match=f"plot frame '{frame}' has no column '{column}'"):
        render_plots(broken)


def test_a_column_of_another_type_is_named_with_its_frame() -> None:
    frames = sample_frames()
    broken = replace(frames, first_relevant_rank=frames.first_relevant_rank.cast({"k": pl.Int32}))
    with pytest.raises(
        EvalError, match="plot frame 'first_relevant_rank' column 'k' must be Int64, found Int32"
    ):
        render_plots(broken)


@pytest.mark.parametrize(
    ("frame", "column"), [(f, c) for f, c in _EVERY_COLUMN if c not in NULLABLE[f]]
)
def test_a_null_where_the_schema_has_none_is_named_with_its_frame(frame: str, column: str) -> None:
    frames = sample_frames()
    original = getattr(frames, frame)
    holed = original.with_columns(
        pl.when(pl.int_range(pl.len()) == 0).then(None).otherwise(pl.col(column)).alias(column)
    )
    with pytest.raises(EvalError, match=f"plot frame '{frame}' column '{column}' has 1 null"):
        render_plots(replace(frames, **{frame: holed}))


def test_a_frame_that_is_not_a_polars_frame_is_named() -> None:
    frames = replace(sample_frames(), latency={"profile": [], "ms": []})  # type: ignore[arg-type]
    with pytest.raises(EvalError, match="plot frame 'latency' must be a polars DataFrame"):
        render_plots(frames)


def test_plot_frames_is_frozen() -> None:
    frames = empty_frames()
    with pytest.raises(AttributeError):
        frames.latency = pl.DataFrame()  # type: ignore[misc]
    assert isinstance(frames, PlotFrames)


@pytest.mark.slow
def test_importing_the_plots_does_not_import_matplotlib() -> None:
    probe = (
        "import sys, hotmem_eval, hotmem_eval.plots; from hotmem_eval import render_plots, "
        "PlotFrames; print('matplotlib' in sys.modules)"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert completed.stdout.split() == ["False"]
