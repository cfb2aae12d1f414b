"""Choosing the profiles of a run: --profile and --profiles FILE.toml, and their errors
(each refused before any work, exit 2, one line naming the file, line and reason)."""

from __future__ import annotations

from pathlib import Path

import pytest

import hotmem
from hotmem_eval.ablation import ablation_variants, search_plan
from hotmem_eval.cli import main
from hotmem_eval.errors import UsageError
from hotmem_eval.fixtures import load_fixture
from hotmem_eval.profile_choice import choose_profiles, load_profiles_file

FIXTURE = Path(__file__).resolve().parents[2] / "benchmarks" / "retrieval"

KNOWN = "default, cosine-only, bm25-only, rrf, default+mmr, semantic, semantic-only, semantic+mmr"


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "profiles.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_no_choice_is_the_default_profile() -> None:
    assert choose_profiles([], None) == (hotmem.PROFILES["default"],)


def test_names_are_built_ins_in_the_order_given() -> None:
    chosen = choose_profiles(["rrf", "default"], None)
    assert chosen == (hotmem.PROFILES["rrf"], hotmem.PROFILES["default"])


def test_a_file_alone_runs_its_profiles_in_file_order(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        "[zeta]\nvector = { floor = 0.5 }\n\n[alpha]\nvector = false\nimportance = 0.0\n",
    )
    chosen = choose_profiles([], path)
    assert [p.name for p in chosen] == ["zeta", "alpha"]
    assert chosen[0] == hotmem.Profile.from_mapping("zeta", {"vector": {"floor": 0.5}})
    assert chosen[1].vector is None
    assert chosen[1].importance == 0.0


def test_names_pick_from_built_ins_and_the_file(tmp_path: Path) -> None:
    path = _file(tmp_path, "[strict]\nvector = { floor = 0.5 }\n[unused]\nimportance = 0.1\n")
    chosen = choose_profiles(["default", "strict"], path)
    assert [p.name for p in chosen] == ["default", "strict"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[a]\nvector = { floor = 0.5\n",
            "{path}:2: invalid TOML: Unclosed inline table (column 23)",
        ),
        (
            "[a]\nvector = { floor = 2.0 }\n",
            "{path}:1: profile 'a': vector.floor must be in [-1, 1]; found vector.floor=2.0",
        ),
        (
            "[ok]\n\n[b]\nfusion = 'max'\n",
            "{path}:3: profile 'b': fusion must be one of weighted, rrf; found 'max'",
        ),
        (
            "[c]\ncolour = 1\n",
            "{path}:1: profile 'c': unknown field(s) 'colour'; expected some of vector, "
            "lexical, importance, fusion, rrf_k, depth, reranker",
        ),
        (
            "[c]\nvector = false\nlexical = false\n",
            "{path}:1: profile 'c' has neither a vector nor a lexical channel",
        ),
        (
            "[rrf]\nrrf_k = 10\n",
            f"{{path}}:1: profile 'rrf' is a built-in; give a profile of your own another name "
            f"(built-ins: {KNOWN})",
        ),
        (
            "top = 1\n",
            "{path}: expected a [name] table of profile fields at top level, found top = 1",
        ),
        ("", "{path}: expected at least one [name] table of profile fields, found none"),
    ],
)
def test_a_bad_file_is_refused_with_its_line(tmp_path: Path, text: str, message: str) -> None:
    path = _file(tmp_path, text)
    with pytest.raises(UsageError) as raised:
        load_profiles_file(path)
    assert str(raised.value) == message.format(path=path)


def test_a_missing_or_binary_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such profiles file"):
        load_profiles_file(tmp_path / "absent.toml")
    path = tmp_path / "binary.toml"
    path.write_bytes(b"\xff\xfe[a]\n")
    with pytest.raises(UsageError, match=r"binary\.toml: expected UTF-8 TOML, found invalid"):
        load_profiles_file(path)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--profile", "semantik"],
            f"hotmem-eval: unknown profile 'semantik'; expected a built-in: {KNOWN}\n",
        ),
        (
            ["--profile", "rrf", "--profile", "rrf"],
            "hotmem-eval: profile 'rrf' is given twice; give each profile once\n",
        ),
    ],
)
def test_the_cli_refuses_a_bad_choice_with_exit_2(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(arguments) == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", message)


def test_the_cli_refuses_a_bad_file_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _file(tmp_path, "[a]\nvector = { floor = 2.0 }\n")
    report = tmp_path / "report.md"
    assert main(["--profiles", str(path), "--report", str(report)]) == 2
    assert capsys.readouterr().err == (
        f"hotmem-eval: {path}:1: profile 'a': vector.floor must be in [-1, 1]; "
        "found vector.floor=2.0\n"
    )
    assert not report.exists()
    unknown = _file(tmp_path, "[mine]\nimportance = 0.1\n")
    assert main(["--profiles", str(unknown), "--profile", "theirs"]) == 2
    assert capsys.readouterr().err == (
        f"hotmem-eval: unknown profile 'theirs'; expected a built-in or in {unknown}: "
        f"{KNOWN}, mine\n"
    )


@pytest.mark.parametrize(
    ("name", "channels"),
    [
        ("default", ["vector", "lexical", "importance"]),
        ("rrf", ["vector", "lexical"]),  # importance plays no part: no variant
        ("cosine-only", []),  # no lexical channel to remove; the vector is the last one
        ("bm25-only", []),
    ],
)
def test_ablation_removes_each_channel_that_changes_the_baseline(
    name: str, channels: list[str]
) -> None:
    baseline = hotmem.PROFILES[name]
    variants = ablation_variants(baseline)
    assert [channel for channel, _ in variants] == channels
    for channel, variant in variants:
        assert variant == baseline.without(channel)  # type: ignore[arg-type]
        assert variant.name == f"{name}-no-{channel}"


def test_the_search_plan_says_what_a_run_searches() -> None:
    fixture = load_fixture(FIXTURE / "corpus.jsonl", FIXTURE / "queries.jsonl")
    default, bm25 = hotmem.PROFILES["default"], hotmem.PROFILES["bm25-only"]
    assert search_plan(fixture, [default], ablation=False) == "98 queries × 1 profile"
    assert search_plan(fixture, [default, bm25], ablation=True) == (
        "98 queries × 5 runs (2 profiles, 3 ablation variants of default)"
    )
    # bm25-only has one channel: nothing can be removed alone
    assert search_plan(fixture, [bm25, default], ablation=True) == (
        "98 queries × 2 runs (2 profiles)"
    )
    rrf = hotmem.PROFILES["rrf"]  # vector and lexical, importance unweighted
    assert search_plan(fixture, [rrf], ablation=True) == (
        "98 queries × 3 runs (1 profile, 2 ablation variants of rrf)"
    )
    assert search_plan(fixture, [default, bm25], ablation=False) == (
        "98 queries × 2 runs (2 profiles)"
    )
