"""Profiles a store keeps: imported from Python or a TOML file, named by a search, made the
default, listed by ``hotmem profiles``; a damaged one is named; built-in names are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hotmem
from tests.hotmem.test_cli_explain import db, hotmem_cli
from tests.hotmem.test_search import QUERY

__all__ = ["db"]  # the fixture, shared

WORDS = hotmem.Profile(
    "words", vector=None, lexical=hotmem.LexicalChannel(weight=1.0), importance=0.0
)
TOML = "[words]\nvector = false\nlexical = { weight = 1.0 }\nimportance = 0.0\n"


def test_an_imported_profile_is_searched_by_name_and_becomes_the_default(db: str) -> None:
    with hotmem.open_store(db) as store:
        before = hotmem.search_memories(store, QUERY)
        hotmem.import_profile(store, WORDS)
        named = hotmem.search_memories(store, QUERY, profile="words")
        assert named == hotmem.search_memories(store, QUERY, profile=WORDS)
        assert named != before
        hotmem.set_default_profile(store, "words")
        assert store.default_profile == "words"
        assert hotmem.search_memories(store, QUERY) == named
    with hotmem.open_store(db) as again:  # kept in the file
        assert hotmem.search_memories(again, QUERY) == named


def test_a_kept_profile_reads_back_equal_and_is_replaced_by_name(db: str) -> None:
    from hotmem.retrieval.kept_profiles import kept_profiles

    with hotmem.open_store(db) as store:
        hotmem.import_profile(store, WORDS)
        assert kept_profiles(store) == {"words": WORDS}
        heavier = hotmem.Profile("words", vector=None, lexical=hotmem.LexicalChannel(weight=2.0))
        hotmem.import_profile(store, heavier)
        assert kept_profiles(store) == {"words": heavier}


def test_a_built_in_name_or_a_non_profile_is_refused(db: str) -> None:
    with hotmem.open_store(db) as store:
        with pytest.raises(hotmem.ValidationError, match="profile 'default' is a built-in"):
            hotmem.import_profile(store, hotmem.Profile("default", importance=0.0))
        with pytest.raises(hotmem.ValidationError, match=r"expected a hotmem\.Profile"):
            hotmem.import_profile(store, {"name": "x"})  # type: ignore[arg-type]


def test_a_kept_profile_needing_a_missing_space_cannot_be_the_default(db: str) -> None:
    semantic = hotmem.Profile(
        "mine", vector=hotmem.VectorChannel(space="all-minilm-l6-v2", weight=1.0, floor=0.3)
    )
    with hotmem.open_store(db) as store:
        hotmem.import_profile(store, semantic)
        with pytest.raises(hotmem.ValidationError, match="hotmem reindex --space all-minilm"):
            hotmem.set_default_profile(store, "mine")
        assert store.default_profile == "default"


def test_a_damaged_kept_profile_is_a_store_error_naming_it(db: str) -> None:
    with hotmem.open_store(db) as store:
        store.record_profile("broken", json.dumps({"importance": -1}))
        with pytest.raises(hotmem.StoreError, match="keeps a damaged profile 'broken'"):
            hotmem.search_memories(store, QUERY, profile="broken")


def test_profiles_import_and_set_default_change_what_search_returns(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """End to end: what the evaluator's adoption command does."""
    profiles = tmp_path / "mine.toml"
    profiles.write_text(TOML)
    code, before, _ = hotmem_cli(capsys, "--db", db, "search", QUERY)
    assert code == 0
    code, out, err = hotmem_cli(
        capsys, "--db", db, "profiles", "--import", str(profiles), "--set-default", "words"
    )
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "imported 1 profile: words"
    assert lines[-2] == "* words          bm25 x1; weighted sum  (kept in the store)"
    code, after, _ = hotmem_cli(capsys, "--db", db, "search", QUERY)
    assert code == 0
    assert after != before
    with hotmem.open_store(db) as store:
        expected = hotmem.search_memories(store, QUERY, profile=WORDS)
    assert [line.split()[2] for line in after.splitlines()] == [r.memory_id for r in expected]
    code, listed, _ = hotmem_cli(capsys, "--db", db, "profiles", "--json")
    document = json.loads(listed)
    assert (document["default"], [p["name"] for p in document["kept"]]) == ("words", ["words"])


def test_a_bad_profiles_file_is_refused_with_its_line(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[mine]\nimportance = 2e7\n")
    code, out, err = hotmem_cli(capsys, "--db", db, "profiles", "--import", str(bad))
    assert (code, out) == (2, "")
    assert err.startswith(f"hotmem: {bad}:1: profile 'mine': ")
    with hotmem.open_store(db) as store:
        assert store.kept_profiles() == {}
