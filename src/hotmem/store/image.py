"""A search index's image, kept in the store: typed reads and one write for ``hotmem.retrieval``.

The image is derived data a search index writes of itself (``hotmem_index``: named parts;
``hotmem_index_postings``: each token's postings it holds), so that the next process reads
them whole instead of computing them from the memories. The store does not interpret the
parts: the retrieval package encodes and checks them (``hotmem.retrieval.image``).

Writing is a convenience, never a duty: it runs in its own write transaction after a search
(not inside its read transaction), waits for no other writer (a busy or read-only store is
left as it is), and replaces the whole image at once, or adds postings to the image it names
by its header, so a reader sees one image or another, never a mix.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping

from hotmem.store.lexical_index import TABLES, Table

__all__ = ["Posted", "Produce", "image_part", "image_postings", "write_image"]

#: One token's postings as the image holds them: (table, token, positions, frequencies).
Posted = tuple[Table, str, bytes, bytes]


def image_part(connection: sqlite3.Connection, part: str) -> bytes | None:
    """The bytes of one part of the image, ``None`` without it."""
    row = connection.execute("SELECT data FROM hotmem_index WHERE part = ?", (part,)).fetchone()
    return None if row is None or not isinstance(row[0], bytes) else row[0]


def image_postings(
    connection: sqlite3.Connection, table: Table, token: str
) -> tuple[bytes, bytes] | None:
    """The positions and frequencies the image holds of ``token`` in ``table``, or ``None``."""
    row = connection.execute(
        "SELECT positions, frequencies FROM hotmem_index_postings WHERE tab = ? AND token = ?",
        (TABLES.index(table), token),
    ).fetchone()
    if row is None or not all(isinstance(value, bytes) for value in row):
        return None
    return row[0], row[1]


#: Makes the image to write: its named parts and its postings.
Produce = Callable[[], tuple[Mapping[str, bytes], Iterable[Posted]]]


def write_image(
    connection: sqlite3.Connection, produce: Produce, onto: bytes | None = None
) -> bool:
    """Replace the image with what ``produce`` makes or, with ``onto`` (the header of the image
    the postings belong to), add ``produce``'s postings to the image while its header is still
    that one; in one write transaction that waits for no other writer (``produce`` runs once
    the store is known to be writable); whether it was written (``False``: the store was busy,
    cannot be written or holds another image, and is left as it was)."""
    if connection.in_transaction:  # inside the caller's read transaction: not now
        return False
    previous = connection.execute("PRAGMA busy_timeout").fetchone()[0]
    connection.execute("PRAGMA busy_timeout = 0")
    try:
        connection.execute("BEGIN IMMEDIATE")
        try:
            written = _write(connection, produce, onto)
            connection.execute("COMMIT" if written else "ROLLBACK")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
    except sqlite3.OperationalError:  # busy, locked or read-only: no image this time
        return False
    finally:
        connection.execute(f"PRAGMA busy_timeout = {int(previous)}")
    return written


def _write(connection: sqlite3.Connection, produce: Produce, onto: bytes | None) -> bool:
    if onto is not None and image_part(connection, "header") != onto:
        return False  # another process wrote another image meanwhile
    parts, postings = produce()
    if onto is None:
        connection.execute("DELETE FROM hotmem_index")
        connection.execute("DELETE FROM hotmem_index_postings")
        connection.executemany(
            "INSERT INTO hotmem_index (part, data) VALUES (?, ?)", sorted(parts.items())
        )
    connection.executemany(
        "INSERT OR REPLACE INTO hotmem_index_postings (tab, token, positions, frequencies) "
        "VALUES (?, ?, ?, ?)",
        ((TABLES.index(t), token, p, f) for t, token, p, f in postings),
    )
    return True
