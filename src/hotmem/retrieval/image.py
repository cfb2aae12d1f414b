"""A search index's image in the store, so that a new process starts from it.

A full load computes every memory's columns from its row (``store.columns``); the image is
those columns as they are (``hotmem_index``: 8-byte rowids, importances and token counts,
each identifier's positions, little-endian), and the postings of the tokens the index has
read (``hotmem_index_postings``), at a mark of the change log. A new process reads the image
whole, the vectors from the memories with it (the image vouches for their rows: a row changed
since is in the log), and refreshes from the image's mark to the store's state like any index
(``index.py``). The header holds the CRC-32 of the vectors the index had checked (finite, of
unit length: ``hotmem.embedding.vectors``) in the image's order: vectors read back with that
CRC are those, and are not checked again (a tenth of a new process's first search at 10,000
memories); any other vectors are (a row rewritten behind the change log's back, say).
Nothing here is trusted beyond that: an image of another format, lexical derivation or
SQLite, of parts that do not fit together, or older than what the change log keeps is
ignored, and the store is loaded whole.

When an index writes its image, and how a large one is written after the search that
wanted it, is ``image_writes.py``.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import zlib
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from itertools import compress

from hotmem.embedding.hash_v1 import VECTOR_BYTES
from hotmem.embedding.vectors import first_not_unit
from hotmem.retrieval.index import Image, SearchIndex
from hotmem.store import changes
from hotmem.store.changes import Mark
from hotmem.store.columns import vectors_upto
from hotmem.store.fts import LEXICAL_INDEX
from hotmem.store.image import Posted, image_part
from hotmem.store.lexical_index import Table

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["FORMAT", "encoded", "encoded_postings", "loaded"]

FORMAT = 1


_BIG_ENDIAN = sys.byteorder == "big"


def _le(values: array[int] | array[float]) -> bytes:
    """An array's items as little-endian bytes."""
    if _BIG_ENDIAN:
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def _decoded(typecode: str, data: bytes | None) -> array[Any] | None:
    """The array of little-endian ``data``, ``None`` when it is not a whole number of items."""
    found: array[Any] = array(typecode)
    if data is None or len(data) % found.itemsize:
        return None
    found.frombytes(data)
    if _BIG_ENDIAN:
        found.byteswap()
    return found


def _renumbered(index: SearchIndex) -> tuple[Sequence[int], array[int] | None]:
    """The positions of the live memories of ``index``, and each position's new number in
    the image (-1: dead; ``None`` when every memory is live: the numbers are the positions)."""
    n = len(index.rowids)
    if not index.deaths:
        return range(n), None
    keep = list(compress(range(n), index.live))
    renumbered = array("q", [-1]) * n
    for new, old in enumerate(keep):
        renumbered[old] = new
    return keep, renumbered


def encoded_postings(
    index: SearchIndex, renumbered: array[int] | None, only: set[tuple[Table, str]] | None = None
) -> list[Posted]:
    """The postings ``index`` holds (of ``only`` when given), renumbered, dead memories left
    out."""
    postings: list[Posted] = []
    for table, column in index.lexical.items():
        for token, held in column.postings.items():
            if only is not None and (table, token) not in only:
                continue
            if renumbered is None:
                postings.append((table, token, _le(held.positions), _le(held.frequencies)))
                continue
            pairs = [
                (renumbered[p], f)
                for p, f in zip(held.positions, held.frequencies, strict=True)
                if renumbered[p] >= 0
            ]
            positions = _le(array("q", (p for p, _ in pairs)))
            postings.append((table, token, positions, _le(array("d", (f for _, f in pairs)))))
    return postings


def _kept(column: array[Any], keep: Sequence[int]) -> array[Any]:
    """The values of ``column`` at ``keep`` (the column itself when ``keep`` is all of it)."""
    if isinstance(keep, range) and len(keep) == len(column):
        return column
    return array(column.typecode, map(column.__getitem__, keep))


def _crc(index: SearchIndex) -> int:
    """The CRC-32 of the vectors of the live memories of ``index``, in position order."""
    crc = 0
    width = index.vectors.width
    segments = list(index.vectors.segments())
    starts = [first for first, _ in segments]
    live, n = index.live, len(index.rowids)
    start = live.find(1)
    while 0 <= start < n:
        stop = live.find(0, start)
        stop = n if stop < 0 else stop
        at = bisect_right(starts, start) - 1  # the segment holding ``start``
        while start < stop:
            first, segment = segments[at]
            end = min(stop, first + len(segment) // width)
            crc = zlib.crc32(
                memoryview(segment)[(start - first) * width : (end - first) * width], crc
            )
            start, at = end, at + 1
        start = live.find(1, stop)
    return crc


def encoded(index: SearchIndex) -> tuple[dict[str, bytes], list[Posted]]:
    """The image of ``index``: its live memories renumbered in order, and the postings it
    holds (dead memories left out)."""
    keep, renumbered = _renumbered(index)
    scopes: dict[str, Sequence[int]] = {
        name: index.scope(name)
        if renumbered is None
        else [renumbered[p] for p in index.scope(name)]
        for name in index.scopes
    }
    scopes = {name: found for name, found in scopes.items() if found}
    header = {
        "format": FORMAT,
        "rowid": index.mark.rowid,
        "change": index.mark.change,
        "count": len(keep),
        "lexical": LEXICAL_INDEX,
        "sqlite": sqlite3.sqlite_version,
        "scopes": [[name, len(found)] for name, found in scopes.items()],
        "vectors_crc32": _crc(index),
    }
    words, grams = (index.lexical[t].lengths for t in ("memories_fts", "memories_cjk"))
    parts = {
        "header": json.dumps(header, ensure_ascii=False).encode("utf-8"),
        "rowids": _le(_kept(index.rowids, keep)),
        "importances": _le(_kept(index.importances, keep)),
        "words": _le(_kept(words, keep)),
        "grams": _le(_kept(grams, keep)),
        "scope_positions": b"".join(_le(array("q", found)) for found in scopes.values()),
    }
    return parts, encoded_postings(index, renumbered)


def _header(connection: sqlite3.Connection) -> tuple[dict[str, object], bytes] | None:
    """The image's header, decoded and as stored; ``None`` when it is not one of ours."""
    raw = image_part(connection, "header")
    try:
        header = json.loads(raw) if raw is not None else None
    except ValueError:
        return None
    expected = {"format": FORMAT, "lexical": LEXICAL_INDEX, "sqlite": sqlite3.sqlite_version}
    if not isinstance(header, dict) or any(header.get(k) != v for k, v in expected.items()):
        return None
    numbers = [header.get(k) for k in ("rowid", "change", "count")]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in numbers):
        return None
    assert raw is not None
    return header, raw


class _Columns:
    """The columns of an image, decoded."""

    __slots__ = ("grams", "importances", "rowids", "scope_positions", "words")

    rowids: array[int]
    importances: array[float]
    words: array[float]
    grams: array[float]
    scope_positions: array[int]

    def __init__(
        self,
        rowids: array[int],
        importances: array[float],
        words: array[float],
        grams: array[float],
        scope_positions: array[int],
    ) -> None:
        self.rowids = rowids
        self.importances = importances
        self.words = words
        self.grams = grams
        self.scope_positions = scope_positions


def _columns(connection: sqlite3.Connection, count: int) -> _Columns | None:
    decoded = {
        name: _decoded(
            "q" if name in ("rowids", "scope_positions") else "d", image_part(connection, name)
        )
        for name in ("rowids", "importances", "words", "grams", "scope_positions")
    }
    if any(found is None for found in decoded.values()):
        return None
    columns = _Columns(**decoded)  # type: ignore[arg-type]
    sizes = {len(columns.rowids), len(columns.importances), len(columns.words), len(columns.grams)}
    return columns if sizes == {count} else None


def loaded(connection: sqlite3.Connection, target: str) -> SearchIndex | None:
    """The index the store's image holds, at the image's mark (``None``: no usable image);
    refresh it to bring it to the store's state."""
    found = _header(connection)
    if found is None:
        return None
    header, raw = found
    mark = Mark(int(header["rowid"]), int(header["change"]))  # type: ignore[call-overload]
    count = int(header["count"])  # type: ignore[call-overload]
    columns = _columns(connection, count)
    scopes = _scopes(header.get("scopes"), columns)
    changed = changes.changed_since(connection, mark)
    if columns is None or scopes is None or changed is None:
        return None
    index = SearchIndex(target)
    index.mark = mark
    index.rowids = columns.rowids
    index.position.add(columns.rowids, 0)
    index.live = bytearray(b"\x01" * count)
    index.importances = columns.importances
    index.lexical["memories_fts"].extend(columns.words)
    index.lexical["memories_cjk"].extend(columns.grams)
    index.scopes = scopes
    vouched = header.get("vectors_crc32")
    vouched = vouched if isinstance(vouched, int) and not isinstance(vouched, bool) else None
    if not _vectors(index, connection, columns.rowids, not changed, vouched):
        return None
    index.image = Image(mark, count, aligned=True, tokens=set(), header=raw)
    return index


def _crc32(blobs: list[bytes]) -> int:
    crc = 0
    for blob in blobs:
        crc = zlib.crc32(blob, crc)
    return crc


def _scopes(value: object, columns: _Columns | None) -> dict[str, array[int]] | None:
    """Each identifier's positions, from the header's (identifier, count) pairs."""
    if columns is None or not isinstance(value, list):
        return None
    positions, found, at = columns.scope_positions, {}, 0
    for item in value:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
            return None
        name, size = item
        if not isinstance(size, int) or not 0 < size <= len(positions) - at:
            return None
        found[name] = positions[at : at + size]
        at += size
    return found if at == len(positions) else None


def _vectors(
    index: SearchIndex,
    connection: sqlite3.Connection,
    rowids: array[int],
    unchanged: bool,
    vouched: int | None,
) -> bool:
    """Append the vectors of ``rowids`` as the memories hold them (zeros for a memory deleted
    since the image: the refresh kills it); whether they are whole vectors, each finite and
    of unit length (checked unless their CRC-32 is ``vouched``, the image's). ``unchanged``:
    the change log names no memory since the image, so the memories up to its mark are its
    own; their vectors in rowid order are the image's when their CRC-32 is the image's, else
    (an image of an index that had appended a rewritten memory again lists it last) each is
    placed at its position by its rowid."""
    read, blobs = vectors_upto(connection, index.mark.rowid, rowids=not unchanged)
    if read is None:
        if _crc32(blobs) == vouched and sum(map(len, blobs)) == VECTOR_BYTES * len(rowids):
            index.append_vectors(blobs)  # the image's vectors, in its order
            return True
        read, blobs = vectors_upto(connection, index.mark.rowid)
    if read is not None and read != rowids:  # read is never None here: read with the rowids
        at = {rowid: i for i, rowid in enumerate(read)}
        joined = b"".join(blobs)
        placed = bytearray(VECTOR_BYTES * len(rowids))
        for position, rowid in enumerate(rowids):
            i = at.get(rowid)
            if i is not None:
                source = joined[i * VECTOR_BYTES : (i + 1) * VECTOR_BYTES]
                placed[position * VECTOR_BYTES : (position + 1) * VECTOR_BYTES] = source
        blobs = [bytes(placed)]
    if sum(map(len, blobs)) != VECTOR_BYTES * len(rowids):
        return False
    if _crc32(blobs) != vouched and any(
        first_not_unit(blob, VECTOR_BYTES) is not None for blob in blobs
    ):
        return False  # the image is left: the full load names the memory
    index.append_vectors(blobs)
    return True
