"""``hotmem-eval tune``: choose a profile for a collection by cross-validation, and write it.

The collection is read as ``hotmem-eval --collection`` reads it and ingested once (or its
store reused, ``--store``); the channel table (``channel_frame``) is computed once for the
spaces given; every candidate of the search space (``search_space``) is fused from it and
scored; ``tuning.tune`` chooses by k-fold cross-validation and compares the out-of-fold
rankings with ``default`` and the single channels. The outputs: a Markdown report (stdout
unless ``--report``), a JSON document (``--output``), and the chosen profile as a TOML table
(``--write-profile``) that ``--profiles`` and ``hotmem profiles --import`` read.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

import hotmem
from hotmem.cli import write_stdout
from hotmem_eval.adoption import Adoption, decide_adoption
from hotmem_eval.channel_frame import channel_table
from hotmem_eval.collection import load_collection
from hotmem_eval.comparison_report import render_comparison_table
from hotmem_eval.errors import UsageError
from hotmem_eval.fixtures import Fixture
from hotmem_eval.ingest import kept_store, open_fixture_store
from hotmem_eval.metric_registry import METRICS
from hotmem_eval.outputs import (
    CHANNELS,
    CHANNELS_ROW,
    MANIFEST,
    Staged,
    atomic_write,
    commit_staged,
    discard_staged,
    write_text,
)
from hotmem_eval.search_space import DEFAULT_SPACE, candidates, read_search_space
from hotmem_eval.tables import markdown_table, text_frame
from hotmem_eval.tuning import OUT_OF_FOLD, Tuned, tune

__all__ = ["OBJECTIVES", "profile_toml", "run_tune", "tune_parser"]

#: ``--objective`` names -> the registry's metric.
OBJECTIVES: Final = {
    "ndcg": "ndcg_at_k",
    "recall": "recall_at_k",
    "mrr": "mrr_at_k",
    "p": "precision_at_k",
    "precision": "precision_at_k",
    "ap": "ap_at_k",
    "map": "ap_at_k",
}


def _objective(text: str) -> tuple[str, int]:
    name, _, cutoff = text.lower().partition("@")
    if name not in OBJECTIVES or not cutoff.isdigit() or not 1 <= int(cutoff) <= 10_000:
        raise argparse.ArgumentTypeError(
            f"expected METRIC@K with METRIC one of {', '.join(OBJECTIVES)} and K in 1..10000, "
            f"found {text!r}"
        )
    return OBJECTIVES[name], int(cutoff)


def tune_parser() -> argparse.ArgumentParser:
    """The parser of ``hotmem-eval tune``."""
    p = argparse.ArgumentParser(
        prog="hotmem-eval tune",
        description="Choose a retrieval profile for a collection by k-fold cross-validation "
        "over a search space, report its out-of-fold figures, and write it as a TOML table "
        "(docs/collections.md#tuning-a-profile).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--collection", type=Path, required=True, metavar="DIR", help="the collection")
    p.add_argument("--format", default="auto", choices=("auto", "native", "beir", "trec"))
    p.add_argument("--split", default="test", metavar="NAME", help="the BEIR qrels split")
    p.add_argument("--relevant-grade", type=int, metavar="N", help="the collection's rule if unset")
    p.add_argument(
        "--spaces",
        default=hotmem.MODEL_NAME,
        metavar="LIST",
        help="comma-separated vector spaces the candidates may search",
    )
    p.add_argument(
        "--objective",
        type=_objective,
        default="ndcg@10",
        metavar="METRIC@K",
        help=f"what to maximise ({', '.join(OBJECTIVES)} at a cutoff)",
    )
    p.add_argument(
        "--search-space",
        type=Path,
        metavar="FILE",
        help="a TOML search space (default: 96 weighted profiles over each space given)",
    )
    p.add_argument("--folds", type=int, default=5, metavar="N", help="cross-validation folds")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="the folds' seed")
    p.add_argument("--store", type=Path, metavar="PATH", help="keep the ingested store here")
    p.add_argument("--name", default="tuned", help="the written profile's name")
    p.add_argument("--write-profile", type=Path, metavar="FILE", help="write the profile here")
    p.add_argument("--report", type=Path, metavar="FILE", help="write the report here")
    p.add_argument("--output", type=Path, metavar="FILE", help="write the JSON result here")
    p.add_argument(
        "--export-dir",
        type=Path,
        metavar="DIR",
        help="write the channel table (channels.parquet) and every per-query metric of the "
        "out-of-fold rankings and the baselines (per_query_metrics.parquet) here, with a "
        "manifest.json (hotmem-eval query reads them)",
    )
    return p


def _value(value: object) -> str:
    if isinstance(value, dict):
        return (
            "{ " + ", ".join(f"{k} = {_value(v)}" for k, v in value.items() if v is not None) + " }"
        )
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def profile_toml(profile: hotmem.Profile, name: str) -> str:
    """``profile`` as one TOML table named ``name`` (a missing channel ``false``)."""
    lines = [f"[{json.dumps(name)}]"]
    for key, value in profile.to_dict().items():
        if key == "name" or (key == "reranker" and value is None):
            continue
        lines.append(f"{key} = {'false' if value is None else _value(value)}")
    return "\n".join(lines) + "\n"


def _baselines(spaces: list[str]) -> list[hotmem.Profile]:
    names = ["default", "bm25-only", "cosine-only"]
    if hotmem.SEMANTIC_MODEL in spaces:
        names += ["semantic", "semantic-only"]
    return [
        hotmem.PROFILES[name] for name in names if set(hotmem.PROFILES[name].spaces) <= set(spaces)
    ]


def _adoption(tuned: Tuned, args: argparse.Namespace) -> Adoption:
    """Whether to adopt the tuned profile: its out-of-fold rankings against ``default``, by
    the adoption rule of a run (``adoption.py``) on the objective."""
    metric, k = args.objective
    against = tuned.comparisons.filter(pl.col("baseline") == "default").with_columns(
        candidate=pl.lit(args.name)
    )
    fields = {key: value for key, value in tuned.chosen.to_dict().items() if key != "name"}
    return decide_adoption(
        against,
        [hotmem.PROFILES["default"], hotmem.Profile.from_mapping(args.name, fields)],
        k=k,
        objective=metric,
        profiles_file=str(args.write_profile or "FILE.toml"),
    )


def _report(
    tuned: Tuned, args: argparse.Namespace, fixture: Fixture, toml: str, adoption: Adoption
) -> str:
    metric, k = args.objective
    label = METRICS[metric].label.format(k=k)
    low, high = tuned.out_of_fold_ci
    out = [
        "# HotMem profile tuning",
        "",
        f"**{adoption.text}**",
        "",
        f"**{args.name}: {label} {tuned.out_of_fold_mean:.3f} out of fold (95% CI {low:.3f} to "
        f"{high:.3f}), {tuned.chosen_mean:.3f} in sample**, chosen among {tuned.candidates} "
        f"candidates by {args.folds}-fold cross-validation (seed {args.seed}) over "
        f"{fixture.queries.num_rows} queries of {args.collection}.",
        "",
        "```toml",
        toml.rstrip(),
        "```",
        "",
        "## Folds",
        "",
        "Each fold's choice, made on the other folds (training), scored on its own queries "
        "(out of fold): the gap is how much a choice flatters itself.",
        "",
        *markdown_table(
            text_frame(
                ["fold", "queries", "chosen", f"training {label}", f"out-of-fold {label}"],
                [
                    (f.fold + 1, f.queries, f.chosen, f"{f.training:.3f}", f"{f.out_of_fold:.3f}")
                    for f in tuned.folds
                ],
            ),
            right=["fold", "queries", f"training {label}", f"out-of-fold {label}"],
        ),
        "",
        "## Out-of-fold rankings against the built-in profiles",
        "",
        f"`{OUT_OF_FOLD}` is each query ranked by the profile its fold chose without it.",
        "",
        render_comparison_table(tuned.comparisons, k=k),
    ]
    return "\n".join(out)


def _document(tuned: Tuned, args: argparse.Namespace, adoption: Adoption) -> dict[str, Any]:
    metric, k = args.objective
    return {
        "objective": {"metric": metric, "k": k},
        "folds": args.folds,
        "seed": args.seed,
        "candidates": tuned.candidates,
        "chosen": {**tuned.chosen.to_dict(), "name": args.name},
        "in_sample": tuned.chosen_mean,
        "out_of_fold": {"mean": tuned.out_of_fold_mean, "ci": list(tuned.out_of_fold_ci)},
        "by_fold": [
            {
                "fold": f.fold + 1,
                "queries": f.queries,
                "chosen": f.chosen,
                "training": f.training,
                "out_of_fold": f.out_of_fold,
            }
            for f in tuned.folds
        ],
        "comparisons": tuned.comparisons.to_dicts(),
        "adoption": {
            "profile": adoption.profile,
            "text": adoption.text,
            "command": adoption.command,
        },
    }


def _spaces(text: str) -> list[str]:
    spaces = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in spaces if s not in hotmem.EMBEDDERS]
    if not spaces or unknown or len(set(spaces)) != len(spaces):
        raise UsageError(
            f"--spaces: expected distinct spaces of {', '.join(hotmem.EMBEDDERS)}, found {text!r}"
        )
    return spaces


def _pool(args: argparse.Namespace, spaces: list[str]) -> list[hotmem.Profile]:
    if args.folds < 2:
        raise UsageError(f"--folds: expected 2 or more, found {args.folds}")
    grid: dict[str, list[object]] = (
        read_search_space(args.search_space)
        if args.search_space
        else {**DEFAULT_SPACE, "vector_space": list(spaces)}
    )
    pool = candidates(grid, source=str(args.search_space or "the default search space"))
    outside = sorted({s for p in pool for s in p.spaces} - set(spaces))
    if outside:
        raise UsageError(f"the search space searches {', '.join(outside)}, not in --spaces")
    return pool


def _table(
    args: argparse.Namespace, fixture: Fixture, spaces: list[str], min_cosine: float
) -> pa.Table:
    """The collection's channel table, from a temporary store or the one kept at --store."""
    models = [s for s in spaces if s != hotmem.MODEL_NAME]
    with tempfile.TemporaryDirectory(prefix="hotmem-eval-tune-") as workdir:
        with hotmem.Progress("hotmem-eval tune: ingesting", unit="memories") as shown:
            if args.store is None:
                path = Path(workdir) / "tune.db"
                store = open_fixture_store(path, fixture.corpus, spaces=models, progress=shown)
            else:
                store, _ = kept_store(args.store, fixture.corpus, spaces=models, progress=shown)
        with store, hotmem.Progress("hotmem-eval tune: channel values", unit="queries") as shown:
            return channel_table(
                store, fixture.queries, spaces=spaces, min_cosine=min_cosine, progress=shown
            )


def _write_utf8(text: str, target: Path) -> None:
    target.write_text(text, encoding="utf-8")


def _export(args: argparse.Namespace, fixture: Fixture, table: pa.Table, tuned: Tuned) -> None:
    """The channel table and the per-query metrics, written as a set with a manifest last
    (``outputs.commit_staged``): what ``hotmem-eval query`` reads."""
    metric, k = args.objective
    tables = {CHANNELS: table, "per_query_metrics": tuned.per_query.to_arrow()}
    manifest = {
        "kind": "tune",
        "top_k": k,
        "relevant_grade": fixture.relevant_grade,
        "objective": {"metric": metric, "k": k},
        "folds": args.folds,
        "seed": args.seed,
        "profiles": list(dict.fromkeys(tuned.per_query["profile"].to_list())),
        "tables": {name: f"{name}.parquet" for name in tables},
        "table_rows": {
            CHANNELS: CHANNELS_ROW,
            "per_query_metrics": "one (profile, query_id, metric) at the objective's k: the "
            "out-of-fold rankings' and each baseline's",
        },
    }
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    staged: Staged = []
    try:
        for name, found in tables.items():
            path = args.export_dir / f"{name}.parquet"
            atomic_write(path, functools.partial(pq.write_table, found), staged=staged)
        path = args.export_dir / MANIFEST
        atomic_write(path, functools.partial(_write_utf8, text), staged=staged)
        commit_staged(staged, path)
    except BaseException:
        discard_staged(staged)
        raise


def run_tune(args: argparse.Namespace) -> int:
    """Run ``hotmem-eval tune``; the exit code.

    Raises:
        UsageError, FixtureError, EvalError: as the run's (exit 2 for the first two).
    """
    spaces = _spaces(args.spaces)
    pool = _pool(args, spaces)
    fixture = load_collection(
        args.collection, format=args.format, split=args.split, relevant_grade=args.relevant_grade
    )
    baselines = _baselines(spaces)
    floors = [p.vector.floor for p in (*pool, *baselines) if p.vector is not None]
    table = _table(args, fixture, spaces, min(floors, default=1.0))
    metric, k = args.objective
    with hotmem.Progress("hotmem-eval tune: scoring", unit="candidates") as shown:
        tuned = tune(
            table,
            fixture,
            pool,
            objective=metric,
            k=k,
            folds=args.folds,
            seed=args.seed,
            baselines=baselines,
            progress=shown,
        )
    toml = profile_toml(tuned.chosen, args.name)
    adoption = _adoption(tuned, args)
    report = _report(tuned, args, fixture, toml, adoption)
    if args.export_dir:
        _export(args, fixture, table, tuned)
    if args.write_profile:
        write_text(args.write_profile, toml)
    if args.output:
        text = json.dumps(
            _document(tuned, args, adoption), indent=2, sort_keys=True, allow_nan=False
        )
        write_text(args.output, text + "\n")
    if args.report:
        write_text(args.report, report)
    if not args.report:
        write_stdout(report)
    if not (args.write_profile or args.output):
        print("hotmem-eval tune: --write-profile FILE keeps the profile", file=sys.stderr)
    return 0
