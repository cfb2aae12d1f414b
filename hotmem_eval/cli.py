"""``hotmem-eval`` (and ``scripts/retrieval_eval.py``): run the evaluation, or query runs.

::

    hotmem-eval [run] [--corpus P] [--queries P] [--output P] [--report P] [--top-k N]
                [--repeat N] [--export-dir D] [--baseline P] [--profile NAME ...]
                [--profiles FILE.toml] [--check-baseline | --update-baseline [--force]]
    hotmem-eval query DIR [DIR ...] SQL [--format table|csv|json] [--safe]
    hotmem-eval compare RUN_A RUN_B

Exit codes come from one table, ``EXIT_CODES``: 0 success; 1 evaluator failure; 2 invalid
input (every fixture problem as ``path:line: reason``, a run directory or SQL that cannot be
used, an unknown profile or a bad profiles file, two runs of different fixtures to compare, a
baseline update refused) or usage; 3 the run differs from the baseline
(``--check-baseline``); 130 interrupted. A closed stdout (``| head``) ends quietly.

The default fixture and baseline are the checkout's ``benchmarks/retrieval/`` when
``hotmem_eval`` runs from a checkout, else the copies installed with it (``fixture/``).
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path

import hotmem
from hotmem_eval.errors import EvalError, FixtureError, UsageError

__all__ = [
    "EXIT_BASELINE",
    "EXIT_CODES",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_OK",
    "exit_code",
    "main",
]

EXIT_OK, EXIT_FAILURE, EXIT_INVALID, EXIT_BASELINE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
PACKAGE = Path(__file__).resolve().parent
ROOT = PACKAGE.parent
#: Run from a checkout (the repository's pyproject.toml and fixture beside the package)?
IN_CHECKOUT = (ROOT / "pyproject.toml").is_file() and (ROOT / "benchmarks" / "retrieval").is_dir()
#: The committed fixture and baseline: the checkout's, else the copies in the installed wheel.
FIXTURE_DIR = ROOT / "benchmarks" / "retrieval" if IN_CHECKOUT else PACKAGE / "fixture"


def _bounded(low: int, high: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, found {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected {low}..{high}, found {value}")
        return value

    return parse


COMMANDS_HELP = """commands:
  run     evaluate retrieval on a fixture (the default: 'hotmem-eval' alone runs it)
  query   run SQL over exported runs: 'hotmem-eval query DIR [DIR ...] SQL' (query --help)
  compare compare two exported runs: 'hotmem-eval compare RUN_A RUN_B' (compare --help)
"""


#: What the commands import beyond the standard library: the ``eval`` extra.
EXTRA_MODULES = ("duckdb", "numpy", "polars", "pyarrow")


def _require_the_extra() -> None:
    """Refuse to start without the ``eval`` extra (``hotmem`` alone installs this command too).

    Raises:
        EvalError: a module of the extra is missing, named in the message.
    """
    missing = [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise EvalError(
            f"the 'eval' extra is not installed (missing modules: "
            f"{', '.join(missing)}); install it with pip install '.[eval]' in a HotMem checkout "
            "(with uv: uv sync), or pip install 'hotmem[eval] @ file:///PATH/TO/THE/CHECKOUT'"
        )


def _run_parser() -> argparse.ArgumentParser:
    committed = (
        "the committed fixture, benchmarks/retrieval/"
        if IN_CHECKOUT
        else f"the fixture installed with hotmem_eval, {FIXTURE_DIR}/"
    )
    parser = argparse.ArgumentParser(
        prog="hotmem-eval",
        usage="%(prog)s [run] [options]\n       %(prog)s query DIR [DIR ...] SQL [options]"
        "\n       %(prog)s compare RUN_A RUN_B",
        description="Evaluate HotMem retrieval on a fixture: metrics, failure reasons,\n"
        "transfer invariance, timings and a recommendation.\n\n" + COMMANDS_HELP,
        epilog="docs/retrieval-quality.md explains the report, the outputs and the exit codes.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=_version())
    parser.add_argument(
        "--corpus",
        type=Path,
        default=FIXTURE_DIR / "corpus.jsonl",
        metavar="PATH",
        help=f"the memories, JSON Lines (default: {committed}corpus.jsonl)",
    )
    parser.add_argument(
        "--queries",
        type=Path,
        default=FIXTURE_DIR / "queries.jsonl",
        metavar="PATH",
        help="the evaluated queries, JSON Lines (default: queries.jsonl beside the corpus default)",
    )
    parser.add_argument(
        "--output", type=Path, metavar="PATH", help="write the JSON result here (default: none)"
    )
    parser.add_argument(
        "--report",
        type=Path,
        metavar="PATH",
        help="write the Markdown report here (default: on stdout, when no output is asked for)",
    )
    parser.add_argument(
        "--top-k",
        type=_bounded(1, hotmem.MAX_LIMIT),
        default=5,
        metavar="N",
        help=f"k of every @k metric, 1..{hotmem.MAX_LIMIT} (default: 5)",
    )
    parser.add_argument(
        "--repeat",
        type=_bounded(1, 1000),
        default=1,
        metavar="N",
        help="searches per query, for latency samples only, 1..1000 (default: 1)",
    )
    parser.add_argument(
        "--export-dir",
        type=Path,
        metavar="DIR",
        help="write Parquet and CSV tables here, for SQL (default: none)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        default=FIXTURE_DIR / "baseline.json",
        metavar="PATH",
        help="the baseline to check or update (default: baseline.json beside the corpus default)",
    )
    parser.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="NAME",
        help="evaluate this retrieval profile; repeat it to compare several, the first being "
        f"the baseline (built-ins: {', '.join(hotmem.PROFILES)}, or a table of --profiles; "
        "default: default, or every profile of --profiles)",
    )
    parser.add_argument(
        "--profiles",
        type=Path,
        metavar="FILE",
        help="a TOML file of profiles of your own, one [name] table each (default: none)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--check-baseline",
        action="store_true",
        help="diff the run against the baseline; exit 3 when it differs (default: off)",
    )
    mode.add_argument(
        "--update-baseline",
        action="store_true",
        help="rewrite the baseline from this run (default: off)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="with --update-baseline: overwrite a baseline that belongs to another fixture "
        "(default: off)",
    )
    return parser


def _query_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hotmem-eval query",
        usage="%(prog)s [-h] [--format {table,csv,json}] [--safe] DIR [DIR ...] SQL",
        description="Run SQL over exported runs: every table is a view with a 'run' column; "
        "with one run, each SQL file is a view sql_<name>.",
    )
    parser.add_argument(
        "arguments",
        nargs="+",
        metavar="DIR... SQL",
        help="run directories (written by hotmem-eval --export-dir), then the SQL",
    )
    parser.add_argument(
        "--format",
        choices=["table", "csv", "json"],
        default="table",
        help="how to print the result (default: table)",
    )
    parser.add_argument(
        "--safe",
        action="store_true",
        help="read only the run tables: no other file, no network, no extensions "
        "(without it the SQL has your full file and network access, as in duckdb; "
        "default: off)",
    )
    return parser


def _compare_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hotmem-eval compare",
        description="Compare two exported runs of one fixture query by query: the baseline "
        "profile of RUN_B against that of RUN_A (paired sign-flip test, Holm-adjusted).",
    )
    parser.add_argument("run_a", metavar="RUN_A", help="the baseline run (an --export-dir)")
    parser.add_argument("run_b", metavar="RUN_B", help="the candidate run (an --export-dir)")
    return parser


def _version() -> str:
    return f"hotmem-eval {hotmem.__version__}"


def git_commit() -> str | None:
    """The checkout's commit, or None outside a git checkout (an installed package has none,
    even in a virtual environment inside some other repository)."""
    if not IN_CHECKOUT:
        return None
    try:
        completed = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = completed.stdout.strip()
    return commit if completed.returncode == 0 and commit else None


def _run(args: argparse.Namespace) -> int:
    from hotmem_eval import baseline as baseline_module
    from hotmem_eval.evaluate import evaluate_profiles
    from hotmem_eval.fixtures import load_fixture
    from hotmem_eval.outputs import check_outputs, export_paths, write_exports, write_text
    from hotmem_eval.profile_choice import choose_profiles
    from hotmem_eval.report import render_markdown
    from hotmem_eval.result import build_result
    from hotmem_eval.result_profiles import build_profiles_result

    profiles = choose_profiles(args.profile, args.profiles)

    # Refused before the run, not after it: an output that is a link, FIFO, device, ...
    outputs = [path for path in (args.output, args.report) if path]
    if args.update_baseline:
        outputs.append(args.baseline)
    directories = [args.export_dir] if args.export_dir else []
    check_outputs(outputs + [p for d in directories for p in export_paths(d)], directories)
    fixture = load_fixture(args.corpus, args.queries)
    if args.update_baseline:
        if args.baseline.resolve().is_relative_to(PACKAGE):
            raise UsageError(
                f"refusing to overwrite {args.baseline}: the default baseline is part of the "
                "installed hotmem_eval package; pass --baseline PATH for a baseline of your own"
            )
        refusal = baseline_module.update_refusal(args.baseline, args.corpus, args.queries)
        if refusal is not None and not args.force:
            raise UsageError(refusal)
    for warning in fixture.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    searching = hotmem.Progress("hotmem-eval: searching", unit="queries")
    with tempfile.TemporaryDirectory(prefix="hotmem-eval-") as workdir, searching:
        runs, ablation = evaluate_profiles(
            fixture,
            Path(workdir),
            profiles,
            top_k=args.top_k,
            repeat=args.repeat,
            progress=searching,
            ablation=len(profiles) > 1,
        )
    generated_at, commit = datetime.now(UTC), git_commit()
    if len(runs) == 1:
        result = build_result(runs[0], generated_at=generated_at, git_commit=commit)
    else:
        result = build_profiles_result(runs, ablation, generated_at=generated_at, git_commit=commit)
    markdown = render_markdown(result)
    normalised = baseline_module.normalise(result)

    code = EXIT_OK
    if args.check_baseline:
        diff = baseline_module.compare(baseline_module.load_baseline(args.baseline), normalised)
        print(baseline_module.render_diff(diff), file=sys.stderr)
        code = EXIT_OK if diff.identical else EXIT_BASELINE
    if args.update_baseline:
        write_text(args.baseline, baseline_module.dumps(normalised))
        print(f"baseline written: {args.baseline}", file=sys.stderr)
    if args.output:
        write_text(
            args.output, json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        )
    if args.report:
        write_text(args.report, markdown)
    if args.export_dir:
        write_exports(runs, args.export_dir, result=result)
    if not (args.output or args.report or args.export_dir):
        _write_stdout(markdown)
    return code


def _query(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from hotmem_eval.query import run_query

    if len(args.arguments) < 2:
        parser.error("expected at least one run directory and then the SQL")
    *directories, sql = args.arguments
    output = run_query([Path(d) for d in directories], sql, fmt=args.format, safe=args.safe)
    _write_stdout(output)
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    from hotmem_eval.compare_runs import compare_runs

    _write_stdout(compare_runs(Path(args.run_a), Path(args.run_b)))
    return EXIT_OK


def _write_stdout(text: str) -> None:
    """Write ``text`` to stdout; a reader that went away (``| head``) is not an error."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()


def _quiet_stdout() -> None:
    """After a closed pipe: send what is left of stdout to the null device, so that Python's
    final flush does not complain."""
    with suppress(OSError, ValueError, AttributeError, io.UnsupportedOperation):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


#: error class -> (exit code, how its one line starts). The most specific class of an error's
#: MRO found here decides (documented in docs/retrieval-quality.md#exit-codes).
EXIT_CODES: dict[type[BaseException], tuple[int, str]] = {
    FixtureError: (EXIT_INVALID, "hotmem-eval: invalid fixture: "),
    UsageError: (EXIT_INVALID, "hotmem-eval: "),
    EvalError: (EXIT_FAILURE, "hotmem-eval: "),
    hotmem.HotmemError: (EXIT_FAILURE, "hotmem-eval: evaluator failure: "),
    OSError: (EXIT_FAILURE, "hotmem-eval: "),
    KeyboardInterrupt: (EXIT_INTERRUPTED, "hotmem-eval: "),
}


def exit_code(error: BaseException) -> tuple[int, str]:
    """``(code, prefix)`` of the most specific class of ``error`` in ``EXIT_CODES``.

    Raises:
        KeyError: no class of the error is in the table (an evaluator bug).
    """
    for cls in type(error).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    raise KeyError(type(error).__name__)


def _message(error: BaseException) -> str:
    if isinstance(error, FixtureError):
        for problem in error.problems:
            print(
                problem if problem.severity == "error" else f"warning: {problem}", file=sys.stderr
            )
        return f"{len(error.errors)} error(s)"
    if isinstance(error, KeyboardInterrupt):
        return "interrupted"
    if isinstance(error, OSError):
        return f"{error.filename or ''}: {error.strerror}"
    return str(error)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hotmem-eval``; return the exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        if arguments[:1] == ["query"]:
            parser = _query_parser()
            query_args = parser.parse_intermixed_args(arguments[1:])
            _require_the_extra()
            return _query(query_args, parser)
        if arguments[:1] == ["compare"]:
            compare_args = _compare_parser().parse_args(arguments[1:])
            _require_the_extra()
            return _compare(compare_args)
        if arguments[:1] == ["run"]:
            arguments = arguments[1:]
        parser = _run_parser()
        args = parser.parse_args(arguments)
        if args.force and not args.update_baseline:
            parser.error("--force goes with --update-baseline only")
        _require_the_extra()
        return _run(args)
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_OK
    except tuple(EXIT_CODES) as exc:
        code, prefix = exit_code(exc)
        with suppress(OSError, ValueError):
            print(f"{prefix}{_message(exc)}", file=sys.stderr)
        return code
    except Exception as exc:  # an evaluator bug: one line, or the traceback when asked for
        if os.environ.get("HOTMEM_EVAL_TRACEBACK"):
            raise
        print(
            f"hotmem-eval: evaluator failure: {type(exc).__name__}: {exc} "
            "(set HOTMEM_EVAL_TRACEBACK=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
