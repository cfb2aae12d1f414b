"""Every example of README.md and docs/*.md runs as written and prints what the page shows.

One test per page, its blocks in page order in a fresh directory (``runner.py``); a failure
names the page and line. The conventions are in ``blocks.py`` and ``tests/docs/README.md``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.docs.blocks import Block, blocks_of, commands_of, matches, problems_of
from tests.docs.runner import ROOT, PageRun, run_page

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Runs of the pages in this session, for the test that compares what they created.
RUNS: dict[Path, PageRun] = {}


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_the_page_follows_the_conventions(page: Path) -> None:
    assert problems_of(page) == []


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_the_page_runs_as_written(page: Path, tmp_path: Path) -> None:
    RUNS[page] = run_page(page, tmp_path)


@pytest.mark.slow
def test_pages_followed_in_one_checkout_do_not_collide(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    for page in PAGES:
        if page not in RUNS:
            RUNS[page] = run_page(page, tmp_path_factory.mktemp(page.stem))
    owners: dict[str, list[str]] = {}
    for page, run in RUNS.items():
        for name in run.created:
            owners.setdefault(name, []).append(_name(page))
    assert {name: pages for name, pages in owners.items() if len(pages) > 1} == {}
    # A reader following the pages in a checkout leaves nothing git would pick up.
    check = ["git", "-C", str(ROOT), "check-ignore", "-q"]
    # name/file: ignored whether the page made the name a file or a directory.
    unignored = [
        name
        for name in sorted(owners)
        if subprocess.run([*check, f"{name}/file"], check=False).returncode != 0
    ]
    assert unignored == [], "add them to .gitignore"


def test_the_readme_s_first_example_prints_a_result() -> None:
    [first, *_] = [b for b in blocks_of(ROOT / "README.md") if b.runs and "hotmem" in b.code]
    assert first.language == "console"
    outputs = [command.output for command in commands_of(first) if "search" in command.text]
    assert outputs
    assert all(output.startswith("1. [") for output in outputs)


# -- the conventions themselves ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "actual", "same"),
    [
        ("a\nb\n", "a\nb", True),
        ("a  \n\n", "a\n\n\n", True),
        ("a\nb", "a\nc", False),
        ("ok: ... memories", "ok: 12 memories", True),
        ("ok: ... memories", "ok: 12 memories\nmore", False),
        ("first\n...\nlast", "first\nlast", True),
        ("first\n...\nlast", "first\n1\n2\nlast", True),
        ("first\n...\nlast", "first\n1\n2\nlast!", False),
        ("", "", True),
        ("", "something", False),
        ("a (b) [c] *d*", "a (b) [c] *d*", True),
    ],
)
def test_matches(expected: str, actual: str, same: bool) -> None:
    assert matches(expected, actual) is same


def test_blocks_outputs_markers_and_problems(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Intro\n"
        "\n"
        "```bash\n"
        "echo hi\n"
        "```\n"
        "\n"
        "```text\n"
        "hi\n"
        "```\n"
        "\n"
        "<!-- doc-test: skip installs software -->\n"
        "\n"
        "```bash\n"
        "pip install uv\n"
        "```\n"
        "\n"
        "- a list item:\n"
        "\n"
        "    ```python\n"
        "    print(1)\n"
        "    ```\n"
        "\n"
        "Text between.\n"
        "\n"
        "```text\n"
        "not an output: a paragraph is between\n"
        "```\n"
        "\n"
        "```\n"
        "$ untagged\n"
        "```\n"
        "\n"
        "<!-- doc-test: skip -->\n"
        "```console\n"
        "$ x\n"
        "```\n",
        encoding="utf-8",
    )
    blocks = blocks_of(page)
    assert [(b.line, b.language, b.runs) for b in blocks] == [
        (3, "bash", True),
        (7, "text", False),
        (13, "bash", False),
        (19, "python", True),
        (25, "text", False),
        (29, "", False),
        (34, "console", False),
    ]
    assert (blocks[0].output, blocks[0].output_line) == ("hi\n", 7)
    assert blocks[2].skip == "installs software"
    assert (blocks[3].code, blocks[3].output) == ("print(1)\n", None)
    assert problems_of(page) == [
        "page.md:29: a fence without a language (bash, console, python, text, ...)",
        "page.md:34: a doc-test: skip marker without its reason",
    ]


def test_console_commands() -> None:
    block = Block(
        Path("p.md"), 10, "console", "$ a \\\n  --b\nout 1\nout 2\n$ echo $?\n0\n$ quiet\n"
    )
    assert [(c.line, c.text, c.output) for c in commands_of(block)] == [
        (11, "a \\\n  --b", "out 1\nout 2"),
        (15, "echo $?", "0"),
        (17, "quiet", ""),
    ]
