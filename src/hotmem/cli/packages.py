"""The ``hotmem`` commands on snapshot packages: snapshot, verify, hydrate."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hotmem.cli.support import UserInputError, db_path, existing_store, print_json
from hotmem.models import count_of
from hotmem.progress import Progress
from hotmem.store.settings import DEFAULT_PROFILE

__all__ = [
    "cmd_hydrate",
    "cmd_snapshot",
    "cmd_verify",
    "configure_hydrate",
    "configure_snapshot",
    "configure_verify",
]

EXIT_OK, EXIT_FAILURE = 0, 1


def _package(path: str) -> str:
    if not Path(path).exists():
        raise UserInputError(f"hotmem: cannot read package {path!r}: no such file")
    if not Path(path).is_file():
        raise UserInputError(f"hotmem: cannot read package {path!r}: not a regular file")
    return path


def cmd_snapshot(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if not out.absolute().parent.is_dir():
        raise UserInputError(f"hotmem: cannot write {args.out!r}: its directory does not exist")
    from hotmem.snapshot._files import output_refusal, store_file_names  # a snapshot's only

    refusal = output_refusal(out, store_file_names(db_path(args)))  # not a file, the store
    if refusal is not None:
        raise UserInputError(f"hotmem: {refusal}")
    if out.exists() and not args.force:
        raise UserInputError(f"hotmem: {args.out!r} already exists; pass --force to replace it")
    with existing_store(args) as store, Progress("hotmem: snapshot", unit="memories") as progress:
        report = store.snapshot(out, overwrite=args.force, progress=progress)
    if args.json:
        print_json(
            {
                "path": report.path,
                "record_count": report.record_count,
                "size": report.size,
                "content_digest": report.content_digest,
            }
        )
    else:
        print(
            f"wrote {count_of(report.record_count, 'memory', 'memories')} to {report.path} "
            f"({report.size} bytes, content digest {report.content_digest})"
        )
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    from hotmem.snapshot import verify_snapshot  # a verify's only

    package = _package(args.package)
    with Progress("hotmem: verifying", unit="memories") as progress:
        report = verify_snapshot(
            package,
            recompute_vectors=args.recompute_vectors,
            digests_only=args.digests_only,
            model_dir=args.model_dir,
            progress=progress,
        )
    if args.json:
        print_json(report.to_dict())
    elif report.ok:
        weaker = " (digests only: records not parsed)" if report.digests_only else ""
        print(
            f"ok{weaker}: {count_of(report.record_count, 'memory', 'memories')}, "
            f"content digest {report.content_digest}"
        )
        for space, reason in report.not_recomputed:
            print(f"  vectors of space {space!r} not recomputed: {reason}")
    else:
        print(f"FAILED: {len(report.problems)} problem(s) in {report.path}")
        for problem in report.problems:
            print(f"  {problem}")
    return EXIT_OK if report.ok else EXIT_FAILURE


def cmd_hydrate(args: argparse.Namespace) -> int:
    from hotmem.snapshot import hydrate  # a hydrate's only

    package = _package(args.package)
    target = db_path(args)
    if args.db is None:
        target.parent.mkdir(parents=True, exist_ok=True)
    with Progress("hotmem: hydrating", unit="memories") as progress:
        report = hydrate(
            package,
            target,
            recompute_vectors=args.recompute_vectors,
            reindex=args.reindex,
            drop_spaces=args.drop_space,
            model_dir=args.model_dir,
            progress=progress,
        )
    print(
        f"hydrated {count_of(report.record_count, 'memory', 'memories')} into {report.target} "
        f"(content digest {report.content_digest})"
    )
    for space, action in report.spaces:
        print(f"  space {space!r}: {_ACTIONS[action]}")
    if report.default_profile != DEFAULT_PROFILE or report.kept_profiles:
        kept = ", ".join(report.kept_profiles) or "none"
        print(
            f"hotmem: default profile set to {report.default_profile!r}; profiles kept from the "
            f"package: {kept}",
            file=sys.stderr,
        )
    return EXIT_OK


_ACTIONS = {
    "carry": "vectors carried as they are",
    "reindex": "rebuilt with this HotMem's embedder",
    "drop": "dropped",
}


def _model_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model-dir",
        metavar="DIR",
        help="a directory holding model.onnx and tokenizer.json for a vector space's model "
        "(default: the pinned model package, or $HOTMEM_MODEL_DIR)",
    )


def configure_snapshot(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", help="the package file to write (docs/snapshot-v2.md)")
    p.add_argument(
        "--force", action="store_true", help="replace OUT if it exists (a regular file only)"
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def configure_verify(p: argparse.ArgumentParser) -> None:
    p.add_argument("package", help="the package file; exit 0 when it verifies, 1 when not")
    depth = p.add_mutually_exclusive_group()
    depth.add_argument(
        "--recompute-vectors",
        action="store_true",
        help="re-embed every fact into each space this HotMem has the model of, and compare",
    )
    depth.add_argument(
        "--digests-only",
        action="store_true",
        help="check only sizes, CRCs and digests against the manifest, parsing no record "
        "(weaker: an intact package of invalid records passes; hydrate checks everything)",
    )
    _model_dir(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def configure_hydrate(p: argparse.ArgumentParser) -> None:
    p.add_argument("package", help="the package file (verified while hydrating)")
    p.add_argument(
        "--recompute-vectors",
        action="store_true",
        help="re-embed every fact into every carried space too, and refuse the package if "
        "any vector differs (hotmem-hash-v1's are always recomputed, and 1 in 64 of a "
        "carried space's)",
    )
    p.add_argument(
        "--reindex",
        action="append",
        default=[],
        metavar="SPACE",
        help="rebuild the package's vector space SPACE with this HotMem's embedder (repeatable)",
    )
    p.add_argument(
        "--drop-space",
        action="append",
        default=[],
        metavar="SPACE",
        help="hydrate without the package's vector space SPACE (repeatable)",
    )
    _model_dir(p)
