"""``hotmem-eval report RESULT.json``: render a saved result document again, as Markdown and
HTML, without running anything.

::

    hotmem-eval report RESULT.json [--report PATH] [--html PATH]

Without ``--report`` or ``--html`` the Markdown goes to stdout. The document must be of this
version's result schema (``result_document.checked_result`` says what to do with an older one).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from hotmem.cli import write_stdout
from hotmem_eval.errors import UsageError

__all__ = ["html_report", "read_result", "report_parser", "run_report"]


def report_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hotmem-eval report",
        description="Render a saved result document (--output of a run) again: the Markdown "
        "report, and with --html the HTML report with its plots.",
    )
    parser.add_argument("result", type=Path, metavar="RESULT.json", help="a run's --output")
    parser.add_argument("--report", type=Path, metavar="PATH", help="write the Markdown here")
    parser.add_argument("--html", type=Path, metavar="PATH", help="write the HTML report here")
    return parser


def html_report(result: dict[str, Any]) -> str:
    """The HTML report of a result document, with its plots."""
    from hotmem_eval.plot_data import frames_of
    from hotmem_eval.plots import render_plots
    from hotmem_eval.report_html import render_html

    return render_html(result, render_plots(frames_of(result)))


def read_result(path: Path) -> dict[str, Any]:
    """The result document in ``path``.

    Raises:
        UsageError: the file cannot be read, is not JSON, or is not a result document of this
            schema version (the message names the file and says why).
    """
    from hotmem_eval.errors import EvalError
    from hotmem_eval.result_document import checked_result

    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot be read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    try:
        return checked_result(document, str(path))
    except EvalError as exc:
        raise UsageError(str(exc)) from None


def run_report(args: argparse.Namespace) -> int:
    """Render ``args.result`` as asked; return the exit code (0)."""
    from hotmem_eval.outputs import check_outputs, write_text
    from hotmem_eval.report import render_markdown

    check_outputs([path for path in (args.report, args.html) if path])
    result = read_result(args.result)
    try:
        markdown = render_markdown(result)
        html = html_report(result) if args.html else None
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise UsageError(
            f"{args.result}: not a complete result document ({type(exc).__name__}: {exc})"
        ) from None
    if args.report:
        write_text(args.report, markdown)
    if html is not None:
        write_text(args.html, html)
    if not (args.report or args.html):
        write_stdout(markdown)
    return 0
