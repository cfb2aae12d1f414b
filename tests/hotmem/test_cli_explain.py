"""hotmem explain, search --explain and search --min-similarity, on the worked example of
docs/ranking.md."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import hotmem
from hotmem.cli import main
from tests.hotmem.test_search import EXAMPLE, QUERY
from tests.processes import run


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "example.db"
    with hotmem.open_store(path) as store:
        for memory_id, identifier, fact, importance in EXAMPLE:
            store.add(fact, identifier=identifier, importance=importance, memory_id=memory_id)
    return str(path)


def hotmem_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


INVOICE = "Acme invoices above EUR 5,000 need two approvals."
BETA = "Beta routes invoices above EUR 10,000 to the CFO."
PAID = "Supplier bills are paid on the last Friday of the month."


def test_search_explain_shows_how_each_score_adds_up(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = hotmem_cli(capsys, "search", QUERY, "--explain", "--db", db)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"1. [0.7437] m-invoice (acme): {INVOICE}",
        "   candidate by a lexical match; score 0.7437 = 0.6 * cosine 0.7395 + 0.2 * bm25 "
        "1.0000 + 0.2 * importance 0.5000 (lexical match, bm25 4.1497)",
        f"2. [0.5295] m-beta-invoice (beta): {BETA}",
        "   candidate by a lexical match; score 0.5295 = 0.6 * cosine 0.5874 + 0.2 * bm25 "
        "0.3855 + 0.2 * importance 0.5000 (lexical match, bm25 1.5997)",
    ]


def test_search_min_similarity_lowers_the_floor(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = hotmem_cli(
        capsys, "--db", db, "search", QUERY, "--min-similarity", "0.1", "--explain"
    )
    assert code == 0
    assert out.splitlines()[4:] == [
        f"3. [0.2618] m-paid (acme): {PAID}",
        "   candidate by cosine 0.1363 >= 0.1; score 0.2618 = 0.6 * cosine 0.1363 + 0.2 * bm25 "
        "0.0000 + 0.2 * importance 0.9000 (no lexical match)",
    ]
    code, out, _ = hotmem_cli(capsys, "--db", db, "search", QUERY, "--min-similarity", "-1")
    assert len(out.splitlines()) == 5  # every memory is a candidate at -1: the top 5


@pytest.mark.parametrize(
    ("argv", "lines"),
    [
        (
            ["m-paid"],
            [
                f"m-paid (acme): {PAID}",
                f"query: {QUERY!r} in all identifiers, top 5, min_similarity 0.4, profile default",
                "below_floor: no lexical match; cosine 0.1363 < min_similarity 0.4",
                "score 0.2618 = 0.6 * cosine 0.1363 + 0.2 * bm25 0.0000 + 0.2 * importance "
                "0.9000 (no lexical match)",
            ],
        ),
        (
            ["m-beta-invoice", "--limit", "1"],
            [
                f"m-beta-invoice (beta): {BETA}",
                f"query: {QUERY!r} in all identifiers, top 1, min_similarity 0.4, profile default",
                "outranked: score 0.5295 at rank 2; m-invoice leads by 0.2142",
                "score 0.5295 = 0.6 * cosine 0.5874 + 0.2 * bm25 0.3855 + 0.2 * importance "
                "0.5000 (lexical match, bm25 1.5997)",
                "outranked by:",
                f"  1. [0.7437] m-invoice (acme), +0.2142: {INVOICE}",
            ],
        ),
        (
            ["m-beta-invoice"],
            [
                f"m-beta-invoice (beta): {BETA}",
                f"query: {QUERY!r} in all identifiers, top 5, min_similarity 0.4, profile default",
                "returned: score 0.5295 at rank 2 of the top 5",
                "score 0.5295 = 0.6 * cosine 0.5874 + 0.2 * bm25 0.3855 + 0.2 * importance "
                "0.5000 (lexical match, bm25 1.5997)",
                "ranked above it:",
                f"  1. [0.7437] m-invoice (acme), +0.2142: {INVOICE}",
            ],
        ),
        (
            ["m-invoice", "--identifier", "beta"],
            [
                f"m-invoice (acme): {INVOICE}",
                f"query: {QUERY!r} in identifier 'beta', top 5, min_similarity 0.4, "
                "profile default",
                "outside_scope: memory is in 'acme'; the query searched 'beta'",
                "score 0.5437 = 0.6 * cosine 0.7395 + 0.2 * bm25 0.0000 + 0.2 * importance "
                "0.5000 (no lexical match)",
            ],
        ),
        (
            ["m-deploy"],
            [
                "m-deploy (beta): Production deploys happen on Tuesdays.",
                f"query: {QUERY!r} in all identifiers, top 5, min_similarity 0.4, profile default",
                "no_channel_match: no lexical match; cosine 0.0000 <= 0",
                "score 0.1000 = 0.6 * cosine 0.0000 + 0.2 * bm25 0.0000 + 0.2 * importance "
                "0.5000 (no lexical match)",
            ],
        ),
    ],
)
def test_explain_says_why(
    db: str, capsys: pytest.CaptureFixture[str], argv: list[str], lines: list[str]
) -> None:
    code, out, err = hotmem_cli(capsys, "--db", db, "explain", QUERY, *argv)
    assert (code, err) == (0, "")
    assert out.splitlines() == lines


def test_explain_json_is_the_diagnosis_and_the_fact(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = hotmem_cli(capsys, "explain", QUERY, "m-paid", "--json", "--db", db)
    with hotmem.open_store(db) as store:
        expected = hotmem.diagnose(store, QUERY, "m-paid").to_dict()
    assert code == 0
    assert json.loads(out) == {**expected, "fact": PAID}


@pytest.mark.parametrize(
    ("argv", "code", "err"),
    [
        (["explain", QUERY, "nope"], 1, "hotmem: no memory with memory_id='nope'\n"),
        (
            ["explain", QUERY, "m-paid", "--min-similarity", "2"],
            2,
            "argument --min-similarity: expected a cosine in -1..1, found '2'",
        ),
        (
            ["search", QUERY, "--min-similarity", "nan"],
            2,
            "argument --min-similarity: expected a cosine in -1..1, found 'nan'",
        ),
    ],
)
def test_explain_mistakes_are_one_line(db: str, argv: list[str], code: int, err: str) -> None:
    completed = run([sys.executable, "-m", "hotmem", "--db", db, *argv])
    assert completed.code == code
    assert err in completed.err
    assert completed.out == ""
