"""Packages carry the store's default profile and the profiles it keeps (the manifest's
``profiles`` field): snapshot, verify, hydrate; packages without the field still hydrate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hotmem
from hotmem.cli import main
from hotmem.embedding.registry import SEMANTIC_MODEL
from tests.hotmem.packages import MANIFEST, manifest_of, read_members, with_manifest, write_members

FACTS = [
    ("m-1", "Invoices above EUR 5,000 need two approvals.", 0.9),
    ("m-2", "Approvals of invoices are logged in the ledger.", 0.1),
    ("m-3", "The Oslo office closes on Saturdays.", 0.5),
]
WORDS = hotmem.Profile.from_mapping(
    "words", {"vector": False, "lexical": {"weight": 1.0}, "importance": 0.0}
)


def _store(path: Path) -> Path:
    with hotmem.open_store(path, clock=hotmem.fixed_clock("2026-01-01T00:00:00Z")) as store:
        for memory_id, fact, importance in FACTS:
            store.add(fact, identifier="acme", memory_id=memory_id, importance=importance)
    return path


def _answer(path: Path, query: str) -> list[tuple[str, float]]:
    with hotmem.open_store(path) as store:
        return [(r.memory_id, r.score) for r in hotmem.search_memories(store, query)]


@pytest.mark.parametrize("default", ["words", "semantic"])
def test_the_default_profile_moves_with_the_package(
    tmp_path: Path, default: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _store(tmp_path / "s.db")
    with hotmem.open_store(source) as store:
        hotmem.import_profile(store, WORDS)
        if default == "semantic":
            store.add_space(SEMANTIC_MODEL)
        hotmem.set_default_profile(store, default)
    query = "invoice approvals"
    expected = _answer(source, query)
    with hotmem.open_store(source) as store:
        assert expected != [
            (r.memory_id, r.score) for r in hotmem.search_memories(store, query, profile="default")
        ]  # the default profile answers otherwise: the test can tell them apart
    package = tmp_path / "p.hotmem"
    assert main(["--db", str(source), "snapshot", str(package)]) == 0
    assert main(["verify", str(package)]) == 0
    spaces = [SEMANTIC_MODEL] if default == "semantic" else []
    assert manifest_of(read_members(package))["profiles"] == {
        "default": default,
        "default_spaces": spaces,
        "kept": {"words": WORDS.to_dict()},
    }
    capsys.readouterr()
    copy = tmp_path / "copy.db"
    assert main(["hydrate", str(package), "--db", str(copy)]) == 0
    assert capsys.readouterr().err == (
        f"hotmem: default profile set to {default!r}; profiles kept from the package: words\n"
    )
    with hotmem.open_store(copy) as store:
        assert (store.default_profile, store.kept_profiles().keys()) == (default, {"words"})
    assert _answer(copy, query) == expected


def test_a_store_with_the_builtin_default_alone_writes_no_field(tmp_path: Path) -> None:
    source = _store(tmp_path / "s.db")
    package = tmp_path / "p.hotmem"
    with hotmem.open_store(source) as store:
        store.snapshot(package)
    assert "profiles" not in manifest_of(read_members(package))
    report = hotmem.hydrate(package, tmp_path / "copy.db")
    assert (report.default_profile, report.kept_profiles) == ("default", ())


def test_a_default_searching_a_dropped_space_gives_way_to_default(tmp_path: Path) -> None:
    source = _store(tmp_path / "s.db")
    with hotmem.open_store(source) as store:
        store.add_space(SEMANTIC_MODEL)
        hotmem.set_default_profile(store, "semantic")
        store.snapshot(tmp_path / "p.hotmem")
    report = hotmem.hydrate(tmp_path / "p.hotmem", tmp_path / "c.db", drop_spaces=[SEMANTIC_MODEL])
    assert report.default_profile == "default"
    with hotmem.open_store(tmp_path / "c.db") as store:
        assert store.default_profile == "default"


@pytest.mark.parametrize(
    ("profiles", "expected"),
    [
        ("semantic", "profiles as {default, default_spaces, kept}"),
        (
            {"default": "", "default_spaces": [], "kept": {}},
            "profiles.default as a profile name",
        ),
        (
            {"default": "semantic", "default_spaces": [SEMANTIC_MODEL], "kept": {}},
            "profiles.default_spaces as a list of the package's spaces (['hotmem-hash-v1'])",
        ),
        (
            {"default": "words", "default_spaces": [], "kept": {"words": 3}},
            "profiles.kept: a profile name -> an object of its fields",
        ),
    ],
)
def test_verify_checks_the_field(tmp_path: Path, profiles: object, expected: str) -> None:
    source = _store(tmp_path / "s.db")
    with hotmem.open_store(source) as store:
        store.snapshot(tmp_path / "p.hotmem")
    members = read_members(tmp_path / "p.hotmem")
    manifest = {**manifest_of(members), "profiles": profiles}
    bad = write_members(tmp_path / "bad.hotmem", with_manifest(members, manifest))
    report = hotmem.verify_snapshot(bad)
    assert [(p.location, p.check, p.expected) for p in report.problems] == [
        (MANIFEST, "profiles", expected)
    ]
    with pytest.raises(hotmem.VerificationError):
        hotmem.hydrate(bad, tmp_path / "c.db")
    assert not (tmp_path / "c.db").exists()


def test_the_field_is_documented_in_the_format_page() -> None:
    page = (Path(__file__).parents[2] / "docs" / "snapshot-v2.md").read_text(encoding="utf-8")
    assert "`profiles`" in page
    assert json.dumps({"default": "words"})[1:-1] in page
