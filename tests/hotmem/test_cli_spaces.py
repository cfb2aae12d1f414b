"""``hotmem reindex`` and the spaces of ``hotmem stats``, with the real semantic model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hotmem
from hotmem.cli import main

SEMANTIC = "all-minilm-l6-v2"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "s.db"
    with hotmem.open_store(path) as store:
        store.add("The Oslo office closes on Saturdays.", identifier="a", memory_id="m-oslo")
        store.add("Backups are kept for 35 days.", identifier="a", memory_id="m-backup")
    return str(path)


def test_reindex_creates_completes_rebuilds_and_drops_a_space(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    query = "When is the Norwegian branch shut?"
    code, out, err = run(capsys, "--db", db, "search", query)
    assert (code, out) == (0, "no results\n")
    assert err.startswith("hotmem: no memory passed the relevance floor of profile 'default'")
    code, _, err = run(capsys, "--db", db, "search", query, "--profile", "semantic")
    assert (code, err) == (
        2,
        f"hotmem: profile 'semantic' needs the vector space '{SEMANTIC}', which store {db!r} "
        "does not have (it has hotmem-hash-v1); build it with "
        f"`hotmem reindex --space {SEMANTIC}` or store.add_space('{SEMANTIC}')\n",
    )
    assert run(capsys, "--db", db, "reindex", "--space", SEMANTIC) == (
        0,
        f"created the vector space {SEMANTIC}: 2 vectors written\n",
        "",
    )
    code, out, _ = run(capsys, "--db", db, "search", query, "--profile", "semantic", "--explain")
    assert code == 0
    assert out.startswith("1. [")
    assert "m-oslo (a): The Oslo office closes on Saturdays.\n   candidate by cosine " in out
    assert ">= 0.45; score " in out
    assert run(capsys, "--db", db, "reindex", "--space", SEMANTIC)[1] == (
        f"completed the vector space {SEMANTIC}: 0 vectors written\n"
    )
    code, out, _ = run(capsys, "--db", db, "reindex", "--space", SEMANTIC, "--rebuild", "--json")
    assert json.loads(out) == {
        "action": "rebuilt",
        "space": SEMANTIC,
        "vectors": {"hotmem-hash-v1": 2, SEMANTIC: 2},
        "written": 2,
    }
    code, out, _ = run(capsys, "--db", db, "stats")
    assert out.endswith(
        "vector spaces:\n"
        "  hotmem-hash-v1: 2 vectors of 64 float32-le\n"
        f"  {SEMANTIC}: 2 vectors of 384 float32-le\n"
    )
    code, out, _ = run(capsys, "--db", db, "stats", "--json")
    spaces = json.loads(out)["spaces"]
    assert [(s["name"], s["vectors"], s["dimension"]) for s in spaces] == [
        ("hotmem-hash-v1", 2, 64),
        (SEMANTIC, 2, 384),
    ]
    assert spaces[1]["digest"] == hotmem.get_embedder(SEMANTIC).digest
    assert run(capsys, "--db", db, "reindex", "--space", SEMANTIC, "--drop") == (
        0,
        f"dropped the vector space {SEMANTIC}\n",
        "",
    )
    with hotmem.open_store(db) as store:
        assert [s.name for s in store.spaces] == ["hotmem-hash-v1"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--space", "hotmem-hash-v1"],
            "the vectors of 'hotmem-hash-v1' are written with their memories; "
            "there is nothing to reindex",
        ),
        (
            ["--space", "hotmem-hash-v1", "--drop"],
            "the vector space 'hotmem-hash-v1' cannot be dropped",
        ),
        (
            ["--space", "nope"],
            "expected a model id among ['all-minilm-l6-v2', 'hotmem-hash-v1'], found "
            "model_id='nope'",
        ),
    ],
)
def test_reindex_refuses_with_one_line(
    db: str, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert run(capsys, "--db", db, "reindex", *argv) == (2, "", f"hotmem: {message}\n")
