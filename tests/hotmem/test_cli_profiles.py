"""hotmem profiles, and --profile on search and explain."""

from __future__ import annotations

import json

import pytest

from tests.hotmem.test_cli_explain import INVOICE, QUERY, db, hotmem_cli

__all__ = ["db"]  # the fixture, shared

LISTING = [
    "  default        cosine hotmem-hash-v1 x0.6 (floor 0.4) + bm25 x0.2 + importance x0.2; "
    "weighted sum",
    "  cosine-only    cosine hotmem-hash-v1 x1 (floor 0.4); weighted sum",
    "  bm25-only      bm25 x1; weighted sum",
    "  rrf            cosine hotmem-hash-v1 x1 (floor 0.4) + bm25 x1; rrf k=60",
    "  default+mmr    cosine hotmem-hash-v1 x0.6 (floor 0.4) + bm25 x0.2 + importance x0.2; "
    "weighted sum; then mmr lambda 0.9, pool 20 (hotmem-hash-v1)",
    "  semantic       cosine all-minilm-l6-v2 x0.6 (floor 0.45) + bm25 x0.2 (gate 0.25) + "
    "importance x0.2; weighted sum",
    "  semantic-only  cosine all-minilm-l6-v2 x1 (floor 0.45); weighted sum",
    "  semantic+mmr   cosine all-minilm-l6-v2 x0.6 (floor 0.45) + bm25 x0.2 (gate 0.25) + "
    "importance x0.2; weighted sum; then mmr lambda 0.9, pool 20 (all-minilm-l6-v2)",
]


def _marked(name: str) -> list[str]:
    lines = [f"*{line[1:]}" if line.split()[0] == name else line for line in LISTING]
    return [*lines, "(* the store's default profile)"]


def test_profiles_lists_the_builtins_without_a_store(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = hotmem_cli(capsys, "--db", f"{tmp_path}/none.db", "profiles")
    assert (code, err, out.splitlines()) == (0, "", LISTING)


def test_the_stores_default_is_shown_and_set(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert hotmem_cli(capsys, "--db", db, "profiles")[1].splitlines() == _marked("default")
    code, out, _ = hotmem_cli(capsys, "--db", db, "profiles", "--set-default", "bm25-only")
    assert (code, out.splitlines()) == (0, _marked("bm25-only"))
    code, out, _ = hotmem_cli(capsys, "--db", db, "profiles", "--json")
    listed = json.loads(out)
    assert (listed["default"], [p["name"] for p in listed["profiles"]]) == (
        "bm25-only",
        [
            "default",
            "cosine-only",
            "bm25-only",
            "rrf",
            "default+mmr",
            "semantic",
            "semantic-only",
            "semantic+mmr",
        ],
    )
    # a search naming no profile now runs bm25-only: the best lexical match scores 1
    code, out, _ = hotmem_cli(capsys, "--db", db, "search", QUERY, "--limit", "1", "--explain")
    assert out.splitlines() == [
        f"1. [1.0000] m-invoice (acme): {INVOICE}",
        "   candidate by a lexical match; score 1.0000 = 1 * bm25 1.0000 "
        "(lexical match, bm25 4.1497)",
    ]


def test_search_and_explain_take_a_profile(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("--db", db, "search", QUERY, "--limit", "1", "--profile", "rrf", "--explain")
    assert hotmem_cli(capsys, *argv)[1].splitlines() == [
        f"1. [0.0328] m-invoice (acme): {INVOICE}",
        "   candidate by a lexical match; score 0.0328 = reciprocal-rank fusion; "
        "cosine 0.7395, bm25 1.0000 (lexical match, bm25 4.1497)",
    ]
    code, out, _ = hotmem_cli(capsys, "--db", db, "explain", QUERY, "m-invoice", "--profile", "rrf")
    assert code == 0
    assert out.splitlines()[1:] == [
        f"query: {QUERY!r} in all identifiers, top 5, min_similarity 0.4, profile rrf",
        "returned: score 0.0328 at rank 1 of the top 5",
        "score 0.0328 = 1 / (60 + vector rank 1) + 1 / (60 + lexical rank 1); cosine 0.7395, "
        "bm25 1.0000 (lexical match, bm25 4.1497)",
    ]


def test_an_unknown_profile_is_a_usage_error(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = hotmem_cli(capsys, "--db", db, "search", QUERY, "--profile", "semantik")
    assert (code, out) == (2, "")
    assert err == (
        "hotmem: unknown profile 'semantik'; expected one of default, cosine-only, bm25-only, "
        "rrf, default+mmr, semantic, semantic-only, semantic+mmr (built-in or kept in the "
        "store: hotmem profiles --import FILE) or a hotmem.Profile\n"
    )
