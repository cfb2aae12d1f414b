"""The MCP server (``hotmem mcp``), spawned for real over stdio and driven by the SDK's client:
every tool, its error paths, the files directory's fence, and several servers on one store."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

import hotmem

pytest.importorskip("mcp")

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

pytestmark = pytest.mark.slow

Session = Callable[[ClientSession], Awaitable[Any]]


def serve(db: Path, work: Session, files: Path | None = None, *, busy: float = 10.0) -> Any:
    """Start ``hotmem mcp`` on ``db``, run ``work`` with a connected client, return its value."""
    args = ["-m", "hotmem", "--db", str(db), "--busy-timeout", str(busy), "mcp"]
    if files is not None:
        args += ["--files", str(files)]
    params = StdioServerParameters(
        command=sys.executable, args=args, env={"HOTMEM_HOME": str(db.parent / "home")}
    )

    async def run() -> Any:
        with open(os.devnull, "w") as quiet:
            async with (
                stdio_client(params, errlog=quiet) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await work(session)

    return anyio.run(run)


def text(result: Any) -> str:
    return "".join(part.text for part in result.content)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "agent.db"
    with hotmem.open_store(path) as store:
        store.add(
            "Acme invoices above EUR 5,000 need two approvals.",
            identifier="acme",
            memory_id="m-invoice",
        )
        store.add("Production deploys happen on Tuesdays.", identifier="acme", memory_id="m-deploy")
        store.add(
            "Beta routes invoices above EUR 10,000 to the CFO.",
            identifier="beta",
            memory_id="m-beta",
        )
    return path


def test_every_tool_answers_as_the_api_does(db: Path, tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()

    async def work(session: ClientSession) -> dict[str, Any]:
        found: dict[str, Any] = {}
        listed = await session.list_tools()
        found["tools"] = sorted(tool.name for tool in listed.tools)
        found["schemas"] = {tool.name: tool.input_schema for tool in listed.tools}
        found["outputs"] = {tool.name: tool.output_schema is not None for tool in listed.tools}
        added = await session.call_tool(
            "add_memory",
            {
                "identifier": "acme",
                "fact": "Expense claims are paid monthly.",
                "tags": ["hr"],
                "memory_id": "m-expense",
            },
        )
        found["add"] = added.structured_content
        searched = await session.call_tool(
            "search_memories", {"query": "who approves invoices", "identifier": "acme", "top_k": 3}
        )
        found["search"] = searched.structured_content
        explained = await session.call_tool(
            "explain_memory", {"query": "who approves invoices", "memory_id": "m-deploy"}
        )
        found["explain"] = explained.structured_content
        found["identifiers"] = (await session.call_tool("list_identifiers", {})).structured_content
        found["health"] = (await session.call_tool("memory_health", {})).structured_content
        found["snapshot"] = (
            await session.call_tool("snapshot", {"file": "a.hotmem"})
        ).structured_content
        found["verify"] = (
            await session.call_tool("verify_snapshot", {"file": "a.hotmem"})
        ).structured_content
        found["hydrate"] = (
            await session.call_tool("hydrate", {"file": "a.hotmem", "target": "copy.db"})
        ).structured_content
        found["update"] = (
            await session.call_tool(
                "update_memory", {"memory_id": "m-expense", "fact": "Expenses are paid weekly."}
            )
        ).structured_content
        found["delete"] = (
            await session.call_tool("delete_memory", {"memory_id": "m-expense"})
        ).structured_content
        return found

    found = serve(db, work, files)
    assert found["tools"] == [
        "add_memory",
        "delete_memory",
        "explain_memory",
        "hydrate",
        "list_identifiers",
        "memory_health",
        "search_memories",
        "snapshot",
        "update_memory",
        "verify_snapshot",
    ]
    assert found["schemas"]["search_memories"]["required"] == ["query"]
    assert set(found["schemas"]["search_memories"]["properties"]) == {
        "query",
        "identifier",
        "top_k",
        "profile",
        "min_similarity",
    }
    assert all(found["outputs"].values())
    assert found["add"]["memory_id"] == "m-expense"
    with hotmem.open_store(db) as store:
        expected = hotmem.search_memories(
            store, "who approves invoices", identifier="acme", limit=3
        )
        diagnosis = hotmem.diagnose(store, "who approves invoices", "m-deploy").to_dict()
    assert found["search"]["profile"] == "default"
    assert [(m["memory_id"], m["score"]) for m in found["search"]["memories"]] == [
        (r.memory_id, r.score) for r in expected
    ]
    assert found["explain"] == json.loads(json.dumps(diagnosis))
    assert found["identifiers"] == {"acme": 3, "beta": 1}
    assert (found["health"]["memory_count"], found["health"]["integrity"]) == (4, [])
    assert found["health"]["spaces"] == ["hotmem-hash-v1"]
    assert (found["snapshot"]["record_count"], found["verify"]["ok"]) == (4, True)
    assert found["hydrate"]["record_count"] == 4
    assert (files / "copy.db").is_file()
    update = found["update"]
    assert (update["memory_id"], update["fact"], update["tags"]) == (
        "m-expense",
        "Expenses are paid weekly.",
        ["hr"],
    )
    assert found["delete"] == {"deleted": "m-expense"}
    with hotmem.open_store(db) as store:
        assert store.count() == 3


def test_errors_are_tool_errors_with_the_apis_line(db: Path, tmp_path: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    (files / "dir").mkdir()
    outside = tmp_path / "outside.hotmem"
    outside.write_bytes(b"x")
    (files / "link.hotmem").symlink_to(outside)

    async def work(session: ClientSession) -> dict[str, tuple[bool, str]]:
        calls = {
            "missing": ("delete_memory", {"memory_id": "nope"}),
            "bad_type": ("add_memory", {"identifier": "acme", "fact": "x", "importance": "high"}),
            "out_of_range": ("add_memory", {"identifier": "acme", "fact": "x", "importance": 7}),
            "oversized_id": (
                "add_memory",
                {"identifier": "acme", "fact": "x", "memory_id": "m" * 600},
            ),
            "no_space": ("search_memories", {"query": "x", "profile": "semantic"}),
            "escape": ("snapshot", {"file": "../escape.hotmem"}),
            "symlink_out": ("verify_snapshot", {"file": "link.hotmem"}),
            "not_regular": ("verify_snapshot", {"file": "dir"}),
            "unknown_profile": ("search_memories", {"query": "x", "profile": "nope"}),
            "update_missing": ("update_memory", {"memory_id": "nope", "importance": 0.1}),
        }
        found = {}
        for name, (tool, arguments) in calls.items():
            result = await session.call_tool(tool, arguments)
            found[name] = (bool(result.is_error), text(result))
        return found

    found = serve(db, work, files)
    assert all(is_error for is_error, _ in found.values()), found
    assert "no memory with memory_id='nope'" in found["missing"][1]
    assert "importance" in found["bad_type"][1]
    assert "importance" in found["out_of_range"][1]
    assert "memory_id" in found["oversized_id"][1]
    assert "needs the vector space 'all-minilm-l6-v2'" in found["no_space"][1]
    assert "is outside the files directory" in found["escape"][1]
    assert "is outside the files directory" in found["symlink_out"][1]
    assert "'dir' is not a regular file" in found["not_regular"][1]
    assert "unknown profile 'nope'" in found["unknown_profile"][1]
    assert "no memory with memory_id='nope'" in found["update_missing"][1]
    assert not (tmp_path / "escape.hotmem").exists()


def test_file_tools_are_off_without_a_directory(db: Path) -> None:
    async def work(session: ClientSession) -> tuple[bool, str]:
        result = await session.call_tool("snapshot", {"file": "a.hotmem"})
        return bool(result.is_error), text(result)

    is_error, message = serve(db, work)
    assert is_error
    assert "file tools are off: start the server with --files DIR" in message


def test_two_servers_write_while_a_third_searches(db: Path) -> None:
    def writer(prefix: str) -> Session:
        async def work(session: ClientSession) -> int:
            for n in range(15):
                result = await session.call_tool(
                    "add_memory",
                    {
                        "identifier": "load",
                        "fact": f"Fact {prefix} {n} about invoices.",
                        "memory_id": f"{prefix}-{n}",
                    },
                )
                assert not result.is_error, text(result)
            return 15

        return work

    async def searcher(session: ClientSession) -> int:
        for _ in range(15):
            result = await session.call_tool("search_memories", {"query": "invoices"})
            assert not result.is_error, text(result)
        return 15

    async def together() -> None:
        async with anyio.create_task_group() as group:
            for work in (writer("a"), writer("b"), searcher):
                group.start_soon(anyio.to_thread.run_sync, serve, db, work)

    anyio.run(together)
    with hotmem.open_store(db) as store:
        assert store.identifiers()["load"] == 30
        assert store.check_integrity() == ()


def test_mcp_without_a_store_exits_2(tmp_path: Path) -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "hotmem", "--db", str(tmp_path / "none.db"), "mcp"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HOTMEM_HOME": str(tmp_path / "home")},
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert "no store at" in done.stderr


def test_a_store_locked_past_the_busy_timeout_is_a_tool_error(db: Path) -> None:
    import sqlite3

    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's write, held
    try:

        async def work(session: ClientSession) -> tuple[bool, str, bool]:
            added = await session.call_tool("add_memory", {"identifier": "a", "fact": "x"})
            searched = await session.call_tool("search_memories", {"query": "invoices"})
            return bool(added.is_error), text(added), bool(searched.is_error)

        is_error, message, search_failed = serve(db, work, busy=0.2)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert is_error
    assert "another connection held its write lock for longer than the busy timeout (0.2 s)" in (
        message
    )
    assert not search_failed  # reads go on while another process writes
