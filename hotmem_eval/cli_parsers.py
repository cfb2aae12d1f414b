"""The argument parsers of ``hotmem-eval``: ``run`` (the default), ``query`` and ``compare``
(``tune``'s is in ``tune_cli``)."""

from __future__ import annotations

import argparse
from pathlib import Path

import hotmem
from hotmem.cli import int_range
from hotmem_eval.paths import FIXTURE_DIR, IN_CHECKOUT

__all__ = ["compare_parser", "query_parser", "run_parser"]

COMMANDS_HELP = """commands:
  run     evaluate retrieval on a fixture (the default: 'hotmem-eval' alone runs it)
  query   run SQL over exported runs: 'hotmem-eval query DIR [DIR ...] SQL' (query --help)
  compare compare two exported runs: 'hotmem-eval compare RUN_A RUN_B' (compare --help)
  report  render a saved result again: 'hotmem-eval report RESULT.json [--html P]'
  tune    choose a profile for a collection by cross-validation (tune --help)
"""


def _version() -> str:
    return f"hotmem-eval {hotmem.__version__}"


def run_parser() -> argparse.ArgumentParser:
    committed = (
        "the committed fixture, benchmarks/retrieval/"
        if IN_CHECKOUT
        else f"the fixture installed with hotmem_eval, {FIXTURE_DIR}/"
    )
    parser = argparse.ArgumentParser(
        prog="hotmem-eval",
        usage="%(prog)s [run] [options]\n       %(prog)s query DIR [DIR ...] SQL [options]"
        "\n       %(prog)s compare RUN_A RUN_B"
        "\n       %(prog)s report RESULT.json [--report P] [--html P]"
        "\n       %(prog)s tune --collection DIR [options]",
        description="Evaluate HotMem retrieval on a fixture: metrics, failure reasons,\n"
        "transfer invariance, timings and a recommendation.\n\n" + COMMANDS_HELP,
        epilog="docs/retrieval-quality.md explains the report, the outputs and the exit codes.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=_version())
    parser.add_argument(
        "--collection",
        type=Path,
        metavar="DIR",
        help="a collection directory: the native fixture, BEIR or TREC (docs/collections.md); "
        "instead of --corpus/--queries (default: none)",
    )
    parser.add_argument(
        "--format",
        choices=["auto", "native", "beir", "trec"],
        default="auto",
        help="the --collection's format (default: auto, detected from its files)",
    )
    parser.add_argument(
        "--split",
        default="test",
        metavar="NAME",
        help="the BEIR qrels split to evaluate, qrels/NAME.tsv (default: test)",
    )
    parser.add_argument(
        "--relevant-grade",
        type=int_range(1, 2**31 - 1),
        metavar="N",
        help="the smallest grade that counts as relevant (default: the collection's own "
        "rule: 2 for the native fixture, 1 for BEIR and TREC)",
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        metavar="PATH",
        help=f"the memories, JSON Lines, with --queries (default: {committed}corpus.jsonl)",
    )
    parser.add_argument(
        "--queries",
        type=Path,
        metavar="PATH",
        help="the evaluated queries, JSON Lines, with --corpus (default: queries.jsonl beside "
        "the corpus default)",
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
        "--html",
        type=Path,
        metavar="PATH",
        help="write the HTML report here: one self-contained file with plots (default: none)",
    )
    parser.add_argument(
        "--k",
        dest="cutoffs",
        action="append",
        type=int_range(1, hotmem.MAX_LIMIT),
        default=[],
        metavar="N",
        help=f"a cutoff of the @k metrics, 1..{hotmem.MAX_LIMIT}; repeat it for several (the "
        "searches return the largest; the smallest is the k of the misses and the "
        "recommendation; default: 5)",
    )
    parser.add_argument(
        "--top-k",
        type=int_range(1, hotmem.MAX_LIMIT),
        metavar="N",
        help="the same as one --k N (default: 5)",
    )
    parser.add_argument(
        "--store",
        type=Path,
        metavar="PATH",
        help="keep the ingested store (with its vector spaces) here, and reuse it on the next "
        "run of the same collection (default: a temporary store)",
    )
    parser.add_argument(
        "--transfer-sample",
        type=int_range(1, 10**9),
        metavar="N",
        help="re-run only N queries in the transfer check, chosen by their ids (default: all)",
    )
    parser.add_argument(
        "--repeat",
        type=int_range(1, 1000),
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
        "--export-channels",
        action="store_true",
        help="with --export-dir: write the channel table too (channels.parquet: each query's "
        "candidates and their channel values, complete for the profiles run) (default: off)",
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


def query_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hotmem-eval query",
        usage="%(prog)s [-h] [--format {table,csv,json}] [--safe] [--timeout SECONDS] "
        "DIR [DIR ...] SQL",
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
    parser.add_argument(
        "--timeout",
        type=_timeout_value,
        default=None,
        metavar="SECONDS",
        help="stop the query after this many seconds, exit 1 (default: no limit)",
    )
    return parser


def _timeout_value(text: str) -> float:
    """``--timeout``: a number of seconds in (0, 86400]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, found {text!r}") from None
    if not 0 < value <= 86_400:  # NaN fails too
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds in (0, 86400], found {text!r}"
        )
    return value


def compare_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hotmem-eval compare",
        usage="%(prog)s RUN_A RUN_B\n       %(prog)s --qrels QRELS RUN_A.trec RUN_B.trec "
        "[--k N ...] [--relevant-grade N]",
        description="Compare two runs query by query, RUN_B against RUN_A (paired sign-flip "
        "test, Holm-adjusted): two exported runs of one fixture (the baseline profile of "
        "each), or, with --qrels, two TREC run files judged by one TREC qrels file.",
    )
    parser.add_argument(
        "run_a", metavar="RUN_A", help="the baseline: an --export-dir, or a TREC run file"
    )
    parser.add_argument(
        "run_b", metavar="RUN_B", help="the candidate: an --export-dir, or a TREC run file"
    )
    parser.add_argument(
        "--qrels",
        type=Path,
        metavar="QRELS",
        help="a TREC qrels file: RUN_A and RUN_B are TREC run files (default: none)",
    )
    parser.add_argument(
        "--k",
        dest="cutoffs",
        action="append",
        type=int_range(1, hotmem.MAX_LIMIT),
        default=[],
        metavar="N",
        help="with --qrels: a cutoff; repeat it for several (default: 10)",
    )
    parser.add_argument(
        "--relevant-grade",
        type=int_range(1, 2**31 - 1),
        default=1,
        metavar="N",
        help="with --qrels: the smallest grade that counts as relevant (default: 1, the "
        "field's rule; 2 for runs of HotMem's native fixture)",
    )
    return parser
