"""``hotmem-eval`` (and ``scripts/retrieval_eval.py``): run the evaluation, or query runs.

::

    hotmem-eval [run] [--collection DIR [--format F] [--split S] | --corpus P --queries P]
                [--relevant-grade N] [--k N ...] [--top-k N] [--store P]
                [--transfer-sample N] [--output P] [--report P] [--html P] [--repeat N]
                [--export-dir D [--export-channels]] [--baseline P] [--profile NAME ...]
                [--profiles FILE.toml] [--check-baseline | --update-baseline [--force]]
    hotmem-eval query DIR [DIR ...] SQL [--format table|csv|json] [--safe]
    hotmem-eval report RESULT.json [--report P] [--html P]
    hotmem-eval compare RUN_A RUN_B
    hotmem-eval compare --qrels QRELS RUN_A.trec RUN_B.trec [--k N ...] [--relevant-grade N]

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
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import hotmem
from hotmem.cli import exit_code_of, quiet_stdout, write_stdout
from hotmem_eval.cli_parsers import compare_parser, query_parser, run_parser
from hotmem_eval.errors import EvalError, FixtureError, UsageError
from hotmem_eval.paths import FIXTURE_DIR, IN_CHECKOUT, PACKAGE, ROOT

if TYPE_CHECKING:  # the eval extra's modules: imported once it is known to be installed
    import pyarrow as pa

    from hotmem_eval.evaluate import EvalRun
    from hotmem_eval.fixtures import Fixture
    from hotmem_eval.stages import Stages

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


#: What the commands import beyond the standard library: the ``eval`` extra.
EXTRA_MODULES = ("duckdb", "matplotlib", "numpy", "polars", "pyarrow")


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


def _checked_outputs(
    args: argparse.Namespace, fixture: Fixture, profiles: Sequence[str] = ()
) -> None:
    """Refuse, before the run rather than after it, an output that cannot be written (a link,
    a FIFO, a device, ...) and a baseline update that would overwrite what it must not.

    Raises:
        UsageError: the update is refused (the message says why).
        OutputError: an output path is refused.
    """
    from hotmem_eval import baseline as baseline_module
    from hotmem_eval.outputs import check_outputs, export_paths

    outputs = [path for path in (args.output, args.report, args.html) if path]
    if args.update_baseline:
        outputs.append(args.baseline)
    if args.export_channels and not args.export_dir:
        raise UsageError("--export-channels goes with --export-dir (it writes a table there)")
    directories = [args.export_dir] if args.export_dir else []
    exported = [p for d in directories for p in export_paths(d, profiles, args.export_channels)]
    check_outputs(outputs + exported, directories)

    if not args.update_baseline:
        return
    if args.baseline.resolve().is_relative_to(PACKAGE):
        raise UsageError(
            f"refusing to overwrite {args.baseline}: the default baseline is part of the "
            "installed hotmem_eval package; pass --baseline PATH for a baseline of your own"
        )
    refusal = baseline_module.update_refusal(
        args.baseline, fixture.corpus_path, fixture.queries_path
    )
    if refusal is not None and not args.force:
        raise UsageError(refusal)


def _cutoffs(args: argparse.Namespace) -> tuple[int, ...]:
    """The run's cutoffs: every --k, and --top-k (5 when neither is given)."""
    chosen = [*args.cutoffs, *([args.top_k] if args.top_k is not None else [])]
    return tuple(sorted(set(chosen or [5])))


def _fixture(args: argparse.Namespace) -> Fixture:
    """The collection or fixture the arguments name.

    Raises:
        UsageError: --collection together with --corpus or --queries.
        FixtureError: every problem of the files read.
    """
    from hotmem_eval.collection import load_collection
    from hotmem_eval.fixtures import load_fixture

    if (args.corpus is None) != (args.queries is None) and args.collection is None:
        given, other = (
            ("--corpus", "--queries") if args.queries is None else ("--queries", "--corpus")
        )
        raise UsageError(f"{given} needs {other} too: a fixture is a corpus and its queries")
    if args.collection is not None:
        if args.corpus is not None or args.queries is not None:
            raise UsageError("--collection reads its own files: drop --corpus and --queries")
        return load_collection(
            args.collection,
            format=args.format,
            split=args.split,
            relevant_grade=args.relevant_grade,
        )
    if args.format not in ("auto", "native"):
        raise UsageError(f"--format {args.format} goes with --collection")
    return load_fixture(
        args.corpus or FIXTURE_DIR / "corpus.jsonl",
        args.queries or FIXTURE_DIR / "queries.jsonl",
        relevant_grade=args.relevant_grade,
    )


class _StageLines:
    """One progress line at a time on stderr: a stage's line replaces the previous one when
    the stage reports first, and ``close`` erases the last."""

    def __init__(self) -> None:
        self.current: hotmem.Progress | None = None
        self.label = ""

    def stage(self, label: str, unit: str) -> hotmem.ProgressCallback:
        def report(done: int, total: int | None = None) -> None:
            if self.label != label:
                self.close()
                self.current, self.label = hotmem.Progress(label, unit=unit), label
            assert self.current is not None
            self.current(done, total)

        return report

    def close(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None


def _stages(lines: _StageLines, plan: str) -> Stages:
    """The run's stages, each drawing its progress line on stderr (on a terminal only); the
    search line says what is searched (``evaluate.search_plan``)."""
    from hotmem_eval.stages import Stages

    return Stages(
        ingest=lines.stage("hotmem-eval: ingesting", "memories"),
        spaces=lines.stage("hotmem-eval: embedding", "memories"),
        search=lines.stage(f"hotmem-eval: searching {plan}", ""),
        channels=lines.stage("hotmem-eval: channel values", "queries"),
    )


def _evaluated(
    args: argparse.Namespace,
) -> tuple[dict[str, Any], Sequence[EvalRun], pa.Table | None]:
    """The run's result, its per-profile runs, and the channel table when exported."""
    from hotmem_eval.ablation import search_plan
    from hotmem_eval.evaluate import evaluate_profiles
    from hotmem_eval.profile_choice import choose_profiles
    from hotmem_eval.result_document import build_result

    profiles = choose_profiles(args.profile, args.profiles)
    fixture = _fixture(args)
    _checked_outputs(args, fixture, [profile.name for profile in profiles])
    for warning in fixture.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    lines = _StageLines()
    with tempfile.TemporaryDirectory(prefix="hotmem-eval-") as workdir:
        try:
            runs, ablation, channels = evaluate_profiles(
                fixture,
                Path(workdir),
                profiles,
                cutoffs=_cutoffs(args),
                repeat=args.repeat,
                ablation=len(profiles) > 1,
                store_path=args.store,
                transfer_sample=args.transfer_sample,
                stages=_stages(lines, search_plan(fixture, profiles, ablation=len(profiles) > 1)),
                channels=args.export_channels,
            )
        finally:
            lines.close()
    result = build_result(
        runs,
        ablation,
        generated_at=datetime.now(UTC),
        git_commit=git_commit(),
        profiles_file=None if args.profiles is None else str(args.profiles),
    )
    return result, runs, channels


def _run(args: argparse.Namespace) -> int:
    from hotmem_eval import baseline as baseline_module
    from hotmem_eval.json_text import dumps_indented
    from hotmem_eval.outputs import write_exports, write_text
    from hotmem_eval.report import render_markdown
    from hotmem_eval.report_cli import html_report

    result, runs, channels = _evaluated(args)
    markdown = render_markdown(result)
    normalised = baseline_module.normalise(result)
    code = EXIT_OK
    if args.check_baseline:
        text, same = baseline_module.check(args.baseline, result, normalised)
        print(text, file=sys.stderr)
        code = EXIT_OK if same else EXIT_BASELINE
    if args.update_baseline:
        write_text(args.baseline, baseline_module.dumps(normalised))
        print(f"baseline written: {args.baseline}", file=sys.stderr)
    if args.output:
        text = dumps_indented(result) + "\n"  # json.dumps(indent=2, sort_keys=True, ...)
        write_text(args.output, text)
    if args.report:
        write_text(args.report, markdown)
    if args.html:
        write_text(args.html, html_report(result))
    if args.export_dir:
        write_exports(runs, args.export_dir, result=result, channels=channels)
    if not (args.output or args.report or args.html or args.export_dir):
        write_stdout(markdown)
    return code


def _query(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from hotmem_eval.query import run_query

    if len(args.arguments) < 2:
        parser.error("expected at least one run directory and then the SQL")
    *directories, sql = args.arguments
    output = run_query(
        [Path(d) for d in directories], sql, fmt=args.format, safe=args.safe, timeout=args.timeout
    )
    write_stdout(output)
    return EXIT_OK


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
    return exit_code_of(error, EXIT_CODES)


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
            parser = query_parser()
            query_args = parser.parse_intermixed_args(arguments[1:])
            _require_the_extra()
            return _query(query_args, parser)
        if arguments[:1] == ["tune"]:
            from hotmem_eval.tune_cli import run_tune, tune_parser

            tune_args = tune_parser().parse_args(arguments[1:])
            _require_the_extra()
            return run_tune(tune_args)
        if arguments[:1] == ["report"]:
            from hotmem_eval.report_cli import report_parser, run_report

            report_args = report_parser().parse_args(arguments[1:])
            _require_the_extra()
            return run_report(report_args)
        if arguments[:1] == ["compare"]:
            compare_args = compare_parser().parse_args(arguments[1:])
            _require_the_extra()
            from hotmem_eval.compare_runs import run_compare

            write_stdout(run_compare(compare_args))
            return EXIT_OK
        if arguments[:1] == ["run"]:
            arguments = arguments[1:]
        parser = run_parser()
        args = parser.parse_args(arguments)
        if args.force and not args.update_baseline:
            parser.error("--force goes with --update-baseline only")
        _require_the_extra()
        return _run(args)
    except BrokenPipeError:
        quiet_stdout()
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
