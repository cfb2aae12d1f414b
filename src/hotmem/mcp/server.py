"""An MCP server over one store, on the official MCP Python SDK (the ``mcp`` extra).

``hotmem mcp --db PATH [--files DIR]`` serves over stdio. The tools call the public API and
nothing else, so the store's rules apply unchanged (several servers on one store are several
processes on one store, ``docs/concurrency.md``). A HotMem error is a tool error with the
API's one-line message; anything else is a crash the SDK reports as such without a traceback
on stdout, which carries the protocol only (logs go to stderr).

Files: ``snapshot``, ``verify_snapshot`` and ``hydrate`` read and write only inside ``--files``
(resolved, so a symlink out of it is refused), only regular files, and are refused without it.
The tools that do what a public HotMem 0.2.3 tool does keep its name and argument names
(``add_memory``, ``search_memories`` with ``top_k``, ``memory_health``, ``snapshot``,
``hydrate`` with ``file``); ``docs/mcp.md`` has the mapping.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from typing_extensions import TypedDict  # pydantic needs it on Python 3.11

import hotmem

__all__ = ["build_server"]


class Added(TypedDict):
    memory_id: str
    identifier: str
    created_at: str


class Components(TypedDict):
    cosine: float
    bm25_raw: float | None
    bm25_normalised: float
    importance: float


class Found(TypedDict):
    rank: int
    memory_id: str
    identifier: str
    fact: str
    tags: list[str]
    importance: float
    score: float
    components: Components


class Searched(TypedDict):
    profile: str
    count: int
    memories: list[Found]


class Health(TypedDict):
    status: str
    memory_count: int
    identifiers: int
    spaces: list[str]
    default_profile: str
    integrity: list[str]
    db_path: str


class Written(TypedDict):
    path: str
    record_count: int
    size: int
    content_digest: str


class Verified(TypedDict):
    path: str
    ok: bool
    record_count: int
    problems: list[str]


class Hydrated(TypedDict):
    path: str
    target: str
    record_count: int
    content_digest: str


def _failing(call: Any) -> Any:
    """Run ``call``; a HotMem error (or a refused file) becomes a tool error, its one line."""
    try:
        return call()
    except (hotmem.HotmemError, OSError) as exc:
        raise ToolError(str(exc)) from None


class _Files:
    """The directory the file tools may use (``--files``), or none."""

    def __init__(self, directory: Path | None) -> None:
        self.root = None if directory is None else directory.resolve(strict=True)

    def inside(self, name: str, *, existing: bool) -> Path:
        """``name`` inside the directory: a regular file when ``existing``, else a path that
        is free or a regular file (replaced)."""
        if self.root is None:
            raise ToolError("file tools are off: start the server with --files DIR")
        if not name or "\x00" in name:
            raise ToolError(f"expected a file name inside {self.root}, found {name!r}")
        path = (self.root / name).resolve()
        if path != self.root and self.root not in path.parents:
            raise ToolError(f"{name!r} is outside the files directory {self.root}")
        if existing and not path.is_file():
            raise ToolError(f"{name!r} is not a regular file in {self.root}")
        if not existing and path.exists() and not path.is_file():
            raise ToolError(f"{name!r} exists and is not a regular file")
        return path


def _found(result: hotmem.SearchResult) -> Found:
    c = result.components
    return Found(
        rank=result.rank,
        memory_id=result.memory_id,
        identifier=result.identifier,
        fact=result.fact,
        tags=list(result.tags),
        importance=result.importance,
        score=result.score,
        components=Components(
            cosine=c.cosine,
            bm25_raw=c.bm25_raw,
            bm25_normalised=c.bm25_normalised,
            importance=c.importance,
        ),
    )


class _Store:
    """The served store, opened on first use and kept open: the tools run on the event
    loop's thread, one at a time, so one connection serves them all (another process's
    writes are seen at the next call, as for any open store)."""

    def __init__(self, path: Path, busy_timeout: float) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self.opened: hotmem.MemoryStore | None = None

    def __call__(self) -> hotmem.MemoryStore:
        if self.opened is None:
            self.opened = hotmem.open_store(self.path, busy_timeout=self.busy_timeout)
        return self.opened

    def close(self) -> None:
        if self.opened is not None:
            self.opened.close()
            self.opened = None


def build_server(
    db: Path, files: Path | None = None, *, busy_timeout: float = hotmem.BUSY_TIMEOUT
) -> tuple[MCPServer[Any], _Store]:
    """The server over the store at ``db`` (its writes waiting ``busy_timeout`` seconds for
    another process's write lock), and the store it keeps open (to close)."""
    server: MCPServer[Any] = MCPServer(
        "hotmem",
        version=hotmem.__version__,
        instructions="A local memory store: add facts scoped to an identifier, search them.",
    )
    directory = _Files(files)
    store = _Store(db, busy_timeout)

    @server.tool()
    async def add_memory(
        identifier: str,
        fact: str,
        importance: float = 0.5,
        tags: list[str] | None = None,
        memory_id: str | None = None,
    ) -> Added:
        """Remember a fact under an identifier (a project or organisation)."""

        def call() -> Added:
            opened = store()
            added = opened.add(
                fact,
                identifier=identifier,
                importance=importance,
                tags=tags or [],
                memory_id=memory_id,
            )
            return Added(
                memory_id=added.memory_id,
                identifier=added.identifier,
                created_at=hotmem.format_timestamp(added.created_at),
            )

        result: Added = _failing(call)
        return result

    @server.tool()
    async def search_memories(
        query: str,
        identifier: str | None = None,
        top_k: int = 5,
        profile: str | None = None,
        min_similarity: float | None = None,
    ) -> Searched:
        """Search the memories for a query: the top_k results with their score components."""

        def call() -> Searched:
            opened = store()
            request = hotmem.SearchRequest(query, identifier, top_k, profile, min_similarity, None)
            chosen = request.profile_for(opened)
            found = hotmem.search_memories(
                opened,
                query,
                identifier=identifier,
                limit=top_k,
                profile=profile,
                min_similarity=min_similarity,
            )
            return Searched(
                profile=chosen.name, count=len(found), memories=[_found(r) for r in found]
            )

        result: Searched = _failing(call)
        return result

    @server.tool()
    async def explain_memory(
        query: str,
        memory_id: str,
        identifier: str | None = None,
        top_k: int = 5,
        profile: str | None = None,
    ) -> dict[str, Any]:
        """Why a memory ranks where it does for a query, or why it is missing."""

        def call() -> dict[str, Any]:
            opened = store()
            found = hotmem.diagnose(
                opened, query, memory_id, identifier=identifier, limit=top_k, profile=profile
            )
            return found.to_dict()

        result: dict[str, Any] = _failing(call)
        return result

    @server.tool()
    async def update_memory(
        memory_id: str,
        fact: str | None = None,
        importance: float | None = None,
        tags: list[str] | None = None,
    ) -> dict[str, Any]:
        """Change a memory's fact, importance or tags (those given); its vectors follow."""

        def call() -> dict[str, Any]:
            changed = store().update(memory_id, fact=fact, importance=importance, tags=tags)
            return changed.to_dict()

        result: dict[str, Any] = _failing(call)
        return result

    @server.tool()
    async def delete_memory(memory_id: str) -> dict[str, str]:
        """Forget a memory by its id."""

        def call() -> dict[str, str]:
            opened = store()
            opened.delete(memory_id)
            return {"deleted": memory_id}

        result: dict[str, str] = _failing(call)
        return result

    @server.tool()
    async def list_identifiers() -> dict[str, int]:
        """Every identifier with its number of memories."""

        def call() -> dict[str, int]:
            opened = store()
            return dict(opened.identifiers())

        result: dict[str, int] = _failing(call)
        return result

    @server.tool()
    async def memory_health() -> Health:
        """The store's counts, vector spaces, default profile and integrity findings."""

        def call() -> Health:
            opened = store()
            problems = list(opened.check_integrity())
            return Health(
                status="ok" if not problems else "damaged",
                memory_count=opened.count(),
                identifiers=len(opened.identifiers()),
                spaces=[space.name for space in opened.spaces],
                default_profile=opened.default_profile,
                integrity=problems,
                db_path=str(db),
            )

        result: Health = _failing(call)
        return result

    @server.tool()
    async def snapshot(file: str) -> Written:
        """Snapshot the store into a package file inside the files directory."""

        def call() -> Written:
            target = directory.inside(file, existing=False)
            opened = store()
            written = opened.snapshot(target)
            return Written(
                path=str(written.path),
                record_count=written.record_count,
                size=written.size,
                content_digest=written.content_digest,
            )

        result: Written = _failing(call)
        return result

    @server.tool(name="verify_snapshot")
    async def verify_tool(file: str) -> Verified:
        """Verify a package file inside the files directory."""

        def call() -> Verified:
            report = hotmem.verify_snapshot(directory.inside(file, existing=True))
            return Verified(
                path=str(report.path),
                ok=bool(report.ok),
                record_count=report.record_count,
                problems=[str(p) for p in report.problems],
            )

        result: Verified = _failing(call)
        return result

    @server.tool(name="hydrate")
    async def hydrate_tool(file: str, target: str) -> Hydrated:
        """Hydrate a package file into a new store, both inside the files directory."""

        def call() -> Hydrated:
            source = directory.inside(file, existing=True)
            path = directory.inside(target, existing=False)
            report = hotmem.hydrate(source, path)
            return Hydrated(
                path=str(report.path),
                target=str(report.target),
                record_count=report.record_count,
                content_digest=report.content_digest,
            )

        result: Hydrated = _failing(call)
        return result

    return server, store
