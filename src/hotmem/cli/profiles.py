"""The ``hotmem profiles`` command: the retrieval profiles (built-in, and those the store
keeps), the store's default, and importing profiles of one's own from a TOML file."""

from __future__ import annotations

import argparse

from hotmem.cli.support import db_path, existing_store, print_json
from hotmem.retrieval.kept_profiles import import_profile, kept_profiles, set_default_profile
from hotmem.retrieval.profiles import PROFILES, Profile

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
    kept: dict[str, Profile] = {}
    from hotmem.retrieval.profile_files import read_profiles  # TOML: a profiles command's

    imported = read_profiles(args.import_file) if args.import_file is not None else ()
    if imported or args.set_default is not None:
        with existing_store(args, check_default_profile=False) as store:
            for profile in imported:
                import_profile(store, profile)
            if args.set_default is not None:
                set_default_profile(store, args.set_default)
            default, kept = store.default_profile, kept_profiles(store)
    elif db_path(args).exists():  # the store's default and kept profiles, when there is one
        with existing_store(args, check_default_profile=False) as store:
            default, kept = store.default_profile, kept_profiles(store)
    _print_profiles(args, default, kept, imported)
    return EXIT_OK


def _print_profiles(
    args: argparse.Namespace,
    default: str | None,
    kept: dict[str, Profile],
    imported: tuple[Profile, ...],
) -> None:
    every = {**PROFILES, **kept}
    if args.json:
        print_json(
            {
                "default": default,
                "profiles": [profile.to_dict() for profile in PROFILES.values()],
                "kept": [profile.to_dict() for profile in kept.values()],
            }
        )
        return
    if imported:
        names = ", ".join(profile.name for profile in imported)
        print(f"imported {len(imported)} profile{'s' * (len(imported) != 1)}: {names}")
    width = max(map(len, every))
    for name, profile in every.items():
        mark = "*" if name == default else " "
        where = "  (kept in the store)" if name in kept else ""
        print(f"{mark} {name:<{width}}  {profile_summary(profile)}{where}")
    if default is not None:
        print("(* the store's default profile)")


def configure_profiles(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--import",
        dest="import_file",
        metavar="FILE",
        help="keep the profiles of a TOML file in the store, one [name] table each "
        "(docs/profiles.md); the store must exist",
    )
    p.add_argument(
        "--set-default",
        metavar="NAME",
        help="make NAME, a built-in profile or one the store keeps, the store's default "
        "(after --import, when both are given; the store must exist)",
    )
    p.add_argument("--json", action="store_true", help="print the profiles as JSON")
