"""The ``hotmem profiles`` command: the built-in retrieval profiles and the store's default."""

from __future__ import annotations

import argparse

from hotmem.cli.support import db_path, existing_store, print_json
from hotmem.retrieval.profiles import PROFILES, Profile, set_default_profile

__all__ = ["cmd_profiles", "configure_profiles", "profile_summary"]

EXIT_OK = 0


def profile_summary(profile: Profile) -> str:
    """One line: the channels, their weights, floor and gate, the fusion method, the
    reranker."""
    parts = []
    if profile.vector is not None:
        v = profile.vector
        parts.append(f"cosine {v.space} x{v.weight:g} (floor {v.floor:g})")
    if profile.lexical is not None:
        gate = "" if profile.lexical.gate is None else f" (gate {profile.lexical.gate:g})"
        parts.append(f"bm25 x{profile.lexical.weight:g}{gate}")
    if profile.fusion == "weighted" and profile.importance:
        parts.append(f"importance x{profile.importance:g}")
    fusion = "weighted sum" if profile.fusion == "weighted" else f"rrf k={profile.rrf_k}"
    line = f"{' + '.join(parts)}; {fusion}"
    if profile.reranker is not None:
        mmr = profile.reranker
        line += f"; then mmr lambda {mmr.lambda_:g}, pool {mmr.pool} ({mmr.space})"
    return line


def cmd_profiles(args: argparse.Namespace) -> int:
    default: str | None = None
    if args.set_default is not None:
        with existing_store(args) as store:
            set_default_profile(store, args.set_default)
            default = store.default_profile
    elif db_path(args).exists():  # the store's default, when there is a store
        with existing_store(args) as store:
            default = store.default_profile
    if args.json:
        print_json(
            {
                "default": default,
                "profiles": [profile.to_dict() for profile in PROFILES.values()],
            }
        )
        return EXIT_OK
    width = max(map(len, PROFILES))
    for name, profile in PROFILES.items():
        mark = "*" if name == default else " "
        print(f"{mark} {name:<{width}}  {profile_summary(profile)}")
    if default is not None:
        print("(* the store's default profile)")
    return EXIT_OK


def configure_profiles(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--set-default",
        choices=tuple(PROFILES),
        metavar="NAME",
        help="make NAME the store's default profile (the store must exist)",
    )
    p.add_argument("--json", action="store_true", help="print the profiles as JSON")
