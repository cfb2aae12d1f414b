"""When a search index writes its image into the store (``image.py``), and how.

**When** (after a search, outside its read transaction, waiting for no writer): after a full
load; when a quarter of its memories were added since its image (``_STALE_SHARE``), or 4,096
when that is more; and, while it has added nothing since, the postings it read since, once they
are 16 tokens or a quarter of those the image holds. A store that is busy or read-only is
tried again once it changed; an in-memory store, which no other process opens, never.

**How.** Postings added to the image it has, or a whole image, in one write transaction
(``hotmem.store.image.write_image``). A whole image of an index of ``BEHIND_FROM`` memories or
more is written *behind* the search that wanted it: the index's columns are copied as they
are (a few tens of milliseconds at a million memories), and a thread of this process encodes
the copy, computes its CRC-32 and writes it on a connection of its own, while the search
returns its results (about 0.4 s sooner at a million memories: ``docs/benchmarks.md``). The
thread is not a daemon: a process that exits right after its search waits for the image at
exit, so a command-line search still leaves one. Until the thread is done, the index writes
no other image; :func:`wait` joins it. A smaller index writes its image before the search
returns (a few milliseconds at 10,000 memories), as every index did before.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref

from hotmem.retrieval.image import encoded, encoded_postings
from hotmem.retrieval.index import Image, SearchIndex
from hotmem.retrieval.postings import LexicalColumn, Postings
from hotmem.store import image as stored
from hotmem.store.changes import Mark
from hotmem.store.image import Posted
from hotmem.store.lexical_index import TABLES, Table
from hotmem.store.memory_store import MemoryStore

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from collections.abc import Callable

    from hotmem.store.image import Produce

__all__ = ["BEHIND_FROM", "save", "wait"]

#: An index of at least this many memories writes a whole image behind its search.
BEHIND_FROM = 65_536
_STALE_SHARE = 4
_STALE_FLOOR = 4096
_TOKENS_FLOOR = 16
#: The mark of an image not written yet (its write was tried, the store was busy).
_NONE = Mark(-1, -1)
#: The thread writing each index's image behind its search (read and changed under _LOCK:
#: the threads remove themselves).
_WRITERS: weakref.WeakKeyDictionary[SearchIndex, threading.Thread] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _wanted(index: SearchIndex) -> bool:
    image = index.image
    if image is None or image.mark == _NONE:
        return True
    added = len(index.rowids) - image.count
    if added * _STALE_SHARE >= max(index.size, _STALE_FLOOR * _STALE_SHARE):
        return True
    if added:
        return False
    held = sum(len(column.postings) for column in index.lexical.values())
    new = held - len(image.tokens)
    return new >= max(_TOKENS_FLOOR, len(image.tokens) // 4)


def _added_postings(index: SearchIndex) -> set[tuple[Table, str]] | None:
    """The tokens whose postings ``index`` holds and its image lacks, when they can be added
    to the image as they are (the image's positions are the index's: it was aligned and the
    index has added no memory since); else ``None``."""
    image = index.image
    if image is None or image.mark == _NONE or not image.aligned:
        return None
    if image.count != len(index.rowids):
        return None
    held = {(t, token) for t in TABLES for token in index.lexical[t].postings}
    return held - image.tokens


def save(store: MemoryStore, index: SearchIndex) -> None:
    """Write ``index``'s image into ``store`` when it is wanted (module docstring): only the
    postings it read since when that is all that changed, else the whole image."""
    image = index.image
    with _LOCK:
        writing = index in _WRITERS
    if (
        store.path == ":memory:"
        or not index.size
        or writing
        or not _wanted(index)
        or (image is not None and image.tried == index.mark)
    ):
        return
    added = _added_postings(index)
    if (
        added is not None
        and image is not None
        and store.write_index_image(
            lambda: ({}, encoded_postings(index, None, added)), image.header
        )
    ):
        image.tokens |= added
        return
    file = _database_file(store) if len(index.rowids) >= BEHIND_FROM else None
    if file:
        copy = _copied(index)
        thread = threading.Thread(
            target=_behind, args=(file, index, copy), name="hotmem-index-image"
        )
        with _LOCK:
            _WRITERS[index] = thread
        thread.start()
        return
    _whole(store.write_index_image, index, index)


def _database_file(store: MemoryStore) -> str:
    """The absolute path of the file the store's connection opened ("" for none): what the
    thread opens, whatever the working directory has become since."""
    for _, name, file in store.connection.execute("PRAGMA database_list"):
        if name == "main":
            return str(file or "")
    return ""


def wait(index: SearchIndex | None = None) -> None:
    """Wait until the image of ``index`` (of every index for ``None``) written behind a
    search is in the store (or its write failed)."""
    with _LOCK:
        pending = [thread for held, thread in _WRITERS.items() if index in (None, held)]
    for thread in pending:
        thread.join()


def _whole(write: Callable[[Produce], bool], index: SearchIndex, source: SearchIndex) -> None:
    """Write the whole image of ``source`` (``index`` itself, or a copy of it) with ``write``,
    and note on ``index`` what it wrote, or that the store was busy."""
    written: list[bytes] = []

    def produce() -> tuple[dict[str, bytes], list[Posted]]:
        parts, postings = encoded(source)
        written.append(parts["header"])
        return parts, postings

    image = index.image
    if write(produce):
        tokens = {(t, token) for t in TABLES for token in source.lexical[t].postings}
        aligned = not source.deaths
        index.image = Image(source.mark, len(source.rowids), aligned, tokens, header=written[0])
    elif image is not None:
        image.tried = source.mark
    else:
        index.image = Image(_NONE, 0, aligned=False, tokens=set(), tried=source.mark)


def _behind(path: str, index: SearchIndex, copy: SearchIndex) -> None:
    """The thread writing ``copy``'s image into the store file ``path`` (absolute; module
    docstring)."""
    from pathlib import Path  # here: a new process's first search does without it

    try:  # the store's file as it is: never a new one
        uri = f"{Path(path).as_uri()}?mode=rw"
        connection = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        try:
            _whole(lambda produce: stored.write_image(connection, produce), index, copy)
        finally:
            connection.close()
    except sqlite3.Error:  # an image is a convenience: the next full load writes one
        pass
    finally:
        with _LOCK:
            _WRITERS.pop(index, None)


def _copied(index: SearchIndex) -> SearchIndex:
    """What :func:`image.encoded` reads of ``index``, copied as it is now (the index goes on
    changing with the searches and writes of this process)."""
    copy = SearchIndex(index.target)
    copy.mark = index.mark
    copy.rowids = index.rowids[:]
    copy.live = index.live[:]
    copy.deaths = index.deaths
    copy.scopes = {name: found[:] for name, found in index.scopes.items()}
    copy.importances = index.importances[:]
    copy.vectors = index.vectors.copy()
    copy.lexical = {
        table: LexicalColumn(
            table,
            column.lengths[:],
            column.rows,
            column.tokens,
            {
                token: Postings(held.positions[:], held.frequencies[:])
                for token, held in column.postings.items()
            },
        )
        for table, column in index.lexical.items()
    }
    return copy
