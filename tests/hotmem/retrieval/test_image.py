"""The index image: a new process starts from it and gets exactly what a full load gives;
an image that does not fit is ignored, never trusted; writing one never blocks a search."""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

import hotmem
from hotmem.retrieval import image
from hotmem.retrieval.index import SearchIndex
from hotmem.retrieval.search import index_of
from tests.hotmem.retrieval.test_index import postings, view

QUERIES = ["invoice", "deploy badge", "東京 coffee", "月曜日"]
WORDS = ["invoice", "deploy", "badge", "coffee", "東京", "月曜日", "rota", "lunch"]


def _fill(store: hotmem.MemoryStore, start: int, count: int) -> None:
    store.add_many(
        {
            "fact": " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 5)) + f" n{i}",
            "identifier": "ab"[i % 2],
            "memory_id": f"m{i:04d}",
            "importance": (i % 10) / 10,
        }
        for i in range(start, start + count)
    )


def _searched(path: Path, queries: list[str] = QUERIES) -> list[list[hotmem.SearchResult]]:
    """Every query's results in a freshly opened store (which writes the image if wanted)."""
    with hotmem.open_store(path, accelerator="off") as store:
        return [hotmem.search_memories(store, q, limit=400) for q in queries]


def _imaged(path: Path) -> SearchIndex | None:
    connection = sqlite3.connect(path)
    try:
        connection.execute("BEGIN")
        return image.loaded(connection, str(path))
    finally:
        connection.close()


def _fresh_view(path: Path) -> dict[str, object]:
    connection = sqlite3.connect(path)
    try:
        connection.execute("BEGIN")
        return view(SearchIndex.load(connection, str(path)))
    finally:
        connection.close()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    target = tmp_path / "s.db"
    with hotmem.open_store(target) as store:
        _fill(store, 0, 300)
    return target


def test_a_first_search_writes_the_image_and_a_new_process_starts_from_it(path: Path) -> None:
    assert _imaged(path) is None  # no search yet, no image
    expected = _searched(path)
    loaded = _imaged(path)
    assert loaded is not None
    assert loaded.image is not None
    assert loaded.image.aligned
    assert view(loaded) == _fresh_view(path)
    assert _searched(path) == expected


def test_the_image_holds_the_postings_read_and_they_equal_the_stores(path: Path) -> None:
    _searched(path)  # writes the image with the columns
    # a new process reads 16 tokens the image lacks: it adds them to the image at the 16th
    _searched(path, [f"n{i}" for i in range(20)])
    connection = sqlite3.connect(path)
    connection.execute("BEGIN")
    loaded = image.loaded(connection, str(path))
    fresh = SearchIndex.load(connection, str(path))
    assert loaded is not None
    held = connection.execute("SELECT count(*) FROM hotmem_index_postings").fetchone()[0]
    assert held == 17  # the first process's "invoic", then n0 .. n15
    for tab, token in connection.execute("SELECT tab, token FROM hotmem_index_postings"):
        table = ("memories_fts", "memories_cjk")[tab]
        loaded.postings(connection, table, token)  # type: ignore[arg-type]
        fresh.postings(connection, table, token)  # type: ignore[arg-type]
        assert (table, token) in loaded.image.tokens  # type: ignore[union-attr]
        assert postings(loaded, table, token) == postings(fresh, table, token)
    connection.close()


def test_writes_after_the_image_are_refreshed_from_the_change_log(path: Path) -> None:
    _searched(path)
    with hotmem.open_store(path) as store:
        store.delete("m0007")
        store.add("invoice coffee late", identifier="a", memory_id="late")
        with store._writing() as connection:  # behind the store's API, as a tool would
            connection.execute("UPDATE memories SET importance = 1.0 WHERE memory_id = 'm0010'")
    connection = sqlite3.connect(path)
    connection.execute("BEGIN")
    loaded = image.loaded(connection, str(path))
    assert loaded is not None
    assert loaded.mark != image.changes.current_mark(connection)
    refreshed = loaded.refresh(connection)
    assert view(refreshed) == view(SearchIndex.load(connection, str(path)))
    connection.close()
    results = _searched(path)
    ids = {r.memory_id for found in results for r in found}
    assert "late" in ids
    assert "m0007" not in ids


def _tamper_header(
    connection: sqlite3.Connection, change: Callable[[dict[str, object]], None]
) -> None:
    raw = connection.execute("SELECT data FROM hotmem_index WHERE part = 'header'").fetchone()[0]
    header = json.loads(raw)
    change(header)
    connection.execute(
        "UPDATE hotmem_index SET data = ? WHERE part = 'header'", (json.dumps(header).encode(),)
    )


TAMPERINGS: dict[str, Callable[[sqlite3.Connection], None]] = {
    "another format": lambda c: _tamper_header(c, lambda h: h.update(format=99)),
    "another lexical derivation": lambda c: _tamper_header(c, lambda h: h.update(lexical="x")),
    "another SQLite": lambda c: _tamper_header(c, lambda h: h.update(sqlite="0.0.0")),
    "a count that does not fit": lambda c: _tamper_header(c, lambda h: h.update(count=7)),
    "a negative mark": lambda c: _tamper_header(c, lambda h: h.update(rowid=-1)),
    "scopes that do not add up": lambda c: _tamper_header(c, lambda h: h.update(scopes=[["a", 1]])),
    "a header that is not JSON": lambda c: c.execute(
        "UPDATE hotmem_index SET data = x'ff00' WHERE part = 'header'"
    ),
    "a truncated column": lambda c: c.execute(
        "UPDATE hotmem_index SET data = substr(data, 1, 13) WHERE part = 'rowids'"
    ),
    "a missing column": lambda c: c.execute("DELETE FROM hotmem_index WHERE part = 'words'"),
    "a text column": lambda c: c.execute(
        "UPDATE hotmem_index SET data = 'abcdefgh' WHERE part = 'importances'"
    ),
    "a change log pruned past its mark": lambda c: c.execute(
        "INSERT INTO hotmem_changes (seq, memory_rowid) VALUES (1000000, 1)"
    ),
}


@pytest.mark.parametrize("tampering", sorted(TAMPERINGS))
def test_an_image_that_does_not_fit_is_ignored(path: Path, tampering: str) -> None:
    expected = _searched(path)
    connection = sqlite3.connect(path, isolation_level=None)
    TAMPERINGS[tampering](connection)
    connection.close()
    assert _imaged(path) is None
    assert _searched(path) == expected
    assert _imaged(path) is not None  # the full load wrote a good image again


def test_postings_out_of_range_in_the_image_are_read_from_the_store(path: Path) -> None:
    _searched(path)
    _searched(path, [f"n{i}" for i in range(20)])
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute(
        "UPDATE hotmem_index_postings SET positions = x'ffffffffffffff7f', "
        "frequencies = x'000000000000f03f' WHERE token = 'invoic'"
    )
    connection.execute("BEGIN")
    loaded = image.loaded(connection, str(path))
    fresh = SearchIndex.load(connection, str(path))
    assert loaded is not None
    loaded.postings(connection, "memories_fts", "invoic")
    fresh.postings(connection, "memories_fts", "invoic")
    assert postings(loaded, "memories_fts", "invoic") == postings(fresh, "memories_fts", "invoic")
    connection.close()


def test_a_busy_store_is_searched_without_waiting_and_imaged_once_free(path: Path) -> None:
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    with hotmem.open_store(path, accelerator="off", busy_timeout=30) as store:
        found = hotmem.search_memories(store, "invoice", limit=5)
        assert len(found) == 5
        with store.reading() as connection:
            index = index_of(store, connection)
        assert index.image is not None
        assert index.image.tried == index.mark
        hotmem.search_memories(store, "invoice", limit=5)  # not tried again: nothing changed
        blocker.execute("ROLLBACK")
        blocker.close()
        assert _imaged(path) is None
        store.add("invoice after", identifier="a", memory_id="after")
        hotmem.search_memories(store, "invoice", limit=5)  # the store changed: tried again
    loaded = _imaged(path)
    assert loaded is not None
    assert loaded.size == 301


def test_an_in_memory_store_keeps_no_image() -> None:
    with hotmem.open_store(":memory:") as store:
        _fill(store, 0, 20)
        assert len(hotmem.search_memories(store, "invoice", limit=3)) == 3
        with store.reading() as connection:
            parts = connection.execute("SELECT count(*) FROM hotmem_index").fetchone()[0]
        assert parts == 0


def test_postings_are_added_only_to_the_image_they_belong_to(path: Path) -> None:
    _searched(path)
    with hotmem.open_store(path, accelerator="off") as store:
        hotmem.search_memories(store, "invoice")  # starts from the image
        connection = sqlite3.connect(path, isolation_level=None)  # another process rewrites it
        _tamper_header(connection, lambda h: h.update(change=h["change"] + 1))
        connection.close()
        for i in range(16):  # the 16th token read: the image it started from is gone
            hotmem.search_memories(store, f"n{i}")
    loaded = _imaged(path)
    assert loaded is not None
    assert view(loaded) == _fresh_view(path)
    connection = sqlite3.connect(path)
    connection.execute("BEGIN")
    loaded = image.loaded(connection, str(path))
    fresh = SearchIndex.load(connection, str(path))
    assert loaded is not None
    tokens = connection.execute("SELECT token FROM hotmem_index_postings").fetchall()
    assert len(tokens) == 17  # written whole again: every token the index held
    for (token,) in tokens:
        loaded.postings(connection, "memories_fts", token)
        fresh.postings(connection, "memories_fts", token)
        assert postings(loaded, "memories_fts", token) == postings(fresh, "memories_fts", token)
    connection.close()


def _header_crc(path: Path) -> object:
    connection = sqlite3.connect(path)
    try:
        raw = connection.execute("SELECT data FROM hotmem_index WHERE part = 'header'").fetchone()
        return json.loads(raw[0])["vectors_crc32"]
    finally:
        connection.close()


def _stored_crc(path: Path) -> int:
    """The CRC-32 of the memories' hash-v1 vectors, by rowid."""
    connection = sqlite3.connect(path)
    try:
        rows = connection.execute("SELECT embedding FROM memories ORDER BY rowid").fetchall()
        return zlib.crc32(b"".join(row[0] for row in rows))
    finally:
        connection.close()


def test_the_image_vouches_for_its_vectors_by_their_crc(path: Path) -> None:
    _searched(path)
    assert _header_crc(path) == _stored_crc(path)
    # memories deleted, then enough added for the image to be written again by an index
    # holding dead positions: the CRC is that of the live memories' vectors, in order
    with hotmem.open_store(path, accelerator="off") as store:
        hotmem.search_memories(store, "invoice")
        for memory_id in ("m0003", "m0004", "m0150"):
            store.delete(memory_id)
        _fill(store, 300, 4096)
        hotmem.search_memories(store, "invoice")
    assert _header_crc(path) == _stored_crc(path)
    loaded = _imaged(path)
    assert loaded is not None
    assert view(loaded) == _fresh_view(path)


def test_vectors_that_are_not_the_vouched_ones_are_checked(path: Path) -> None:
    _searched(path)
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("DROP TRIGGER memories_changes_update")  # no log entry
    connection.execute("UPDATE memories SET embedding = zeroblob(256) WHERE memory_id = 'm0007'")
    connection.close()
    # the zero vector is sound: the image is used, its CRC no longer matches, and the vectors
    # were checked; searching gives the full load's answer
    assert _header_crc(path) != _stored_crc(path)
    loaded = _imaged(path)
    assert loaded is not None
    assert view(loaded) == _fresh_view(path)
