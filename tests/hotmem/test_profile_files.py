"""Profiles files under hostile input (``hotmem/retrieval/profile_files.py``): bounded in
size, tables, nesting and names, a space checked to be a model id, each refusal one
``path[:line]: reason`` (issue 35)."""

from __future__ import annotations

from pathlib import Path

import pytest

import hotmem
from hotmem.retrieval.profile_files import MAX_FILE_BYTES, MAX_PROFILES


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "p.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[ok]\nimportance = 0.0\n" + "# padding\n" * (MAX_FILE_BYTES // 10),
            f"expected a profiles file of at most {MAX_FILE_BYTES} bytes, found more",
        ),
        (
            "".join(f"[p{i}]\nimportance = 0.0\n" for i in range(MAX_PROFILES + 1)),
            f"expected at most {MAX_PROFILES} profiles, found {MAX_PROFILES + 1} tables",
        ),
        (
            "[deep]\nimportance = " + "[" * 100_000 + "]" * 100_000 + "\n",
            "expected TOML nested a few levels deep, found nesting too deep to read",
        ),
        (
            '["a | b"]\nimportance = 0.0\n',
            "1: expected a profile name of letters, digits and ._+- (at most 64, from a letter "
            "or digit), found 'a | b'",
        ),
        (
            '["../x"]\nimportance = 0.0\n',
            "1: expected a profile name of letters, digits and ._+- (at most 64, from a letter "
            "or digit), found '../x'",
        ),
        (
            '[evil]\nvector = { space = "../../etc/passwd" }\n',
            "1: profile 'evil': vector.space must be a model id ([a-z0-9][a-z0-9._-]{0,63}); "
            "found '../../etc/passwd'",
        ),
        (
            '[evil]\nreranker = { kind = "mmr", space = "../../etc/passwd" }\n',
            "1: profile 'evil': mmr space must be a model id ([a-z0-9][a-z0-9._-]{0,63}); "
            "found space='../../etc/passwd'",
        ),
    ],
    ids=["size", "tables", "nesting", "markdown-name", "path-name", "space", "mmr-space"],
)
def test_a_hostile_profiles_file_is_refused(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(hotmem.ValidationError) as raised:
        hotmem.read_profiles(path)
    separator = "" if message[0].isdigit() else " "
    assert str(raised.value) == f"{path}:{separator}{message}"


def test_the_limits_themselves_are_accepted(tmp_path: Path) -> None:
    text = "".join(f'["p-{i}.x+y_z"]\nimportance = 0.0\n' for i in range(MAX_PROFILES))
    path = _write(tmp_path, text)
    profiles = hotmem.read_profiles(path)
    assert len(profiles) == MAX_PROFILES
    assert profiles[0].name == "p-0.x+y_z"


def test_the_evaluator_refuses_the_space_before_any_ingest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("polars")
    from hotmem_eval.cli import main as eval_main

    path = _write(tmp_path, '[evil]\nvector = { space = "../../etc/passwd" }\n')
    out = tmp_path / "run"
    code = eval_main(["run", "--profiles", str(path), "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 2
    assert "vector.space must be a model id" in captured.err
    assert not out.exists()
