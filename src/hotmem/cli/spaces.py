"""The ``hotmem reindex`` command: build, complete, rebuild or drop a vector space."""

from __future__ import annotations

import argparse

from hotmem.cli.support import existing_store, print_json
from hotmem.progress import Progress

__all__ = ["cmd_reindex", "configure_reindex", "space_lines"]

EXIT_OK = 0


def configure_reindex(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--space",
        required=True,
        metavar="NAME",
        help="the vector space, named by its model id (all-minilm-l6-v2); created when absent",
    )
    what = p.add_mutually_exclusive_group()
    what.add_argument(
        "--rebuild", action="store_true", help="embed every memory again, not only the missing"
    )
    what.add_argument("--drop", action="store_true", help="remove the space and its vectors")
    p.add_argument(
        "--model-dir",
        metavar="DIR",
        help="a directory holding model.onnx and tokenizer.json (default: the pinned model "
        "package, or $HOTMEM_MODEL_DIR)",
    )
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")


def cmd_reindex(args: argparse.Namespace) -> int:
    name = args.space
    with existing_store(args) as store:
        if args.drop:
            store.drop_space(name)
            outcome = {"space": name, "action": "dropped", "written": 0}
        else:
            known = {space.name for space in store.spaces}
            action = "rebuilt" if args.rebuild else "completed" if name in known else "created"
            with Progress(f"hotmem: embedding into {name}", unit="memories") as progress:
                if name in known:
                    written = store.reindex(
                        name, rebuild=args.rebuild, model_dir=args.model_dir, progress=progress
                    )
                else:
                    store.add_space(name, model_dir=args.model_dir, progress=progress)
                    written = store.vector_counts()[name]
            outcome = {"space": name, "action": action, "written": written}
        vectors = store.vector_counts()
    if args.json:
        print_json({**outcome, "vectors": vectors})
    elif args.drop:
        print(f"dropped the vector space {name}")
    else:
        print(f"{outcome['action']} the vector space {name}: {outcome['written']} vectors written")
    return EXIT_OK


def space_lines(spaces: list[dict[str, object]]) -> list[str]:
    """What ``hotmem stats`` prints about the vector spaces."""
    lines = ["vector spaces:"]
    for space in spaces:
        lines.append(
            f"  {space['name']}: {space['vectors']} vectors of {space['dimension']} "
            f"{space['dtype']}"
        )
    return lines
