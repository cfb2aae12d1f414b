"""Text into index tokens, by FTS5 itself: the tokens a store's lexical index holds.

A memory's BM25 counts the tokens FTS5's tokenizer made of its text (``porter unicode61
remove_diacritics 2`` for words, ``unicode61`` for CJK grams), and a query term is the phrase of
the tokens the same tokenizer makes of it. Rather than a second tokenizer kept in step with
SQLite's, a private in-memory FTS5 table with the store table's tokenizer tokenizes the texts,
and its ``fts5vocab`` instance table lists the tokens: the same library, the same tokens.

One table a tokenizer and thread (``sqlite3`` connections stay in their thread). A query
term's tokens are kept (the same terms recur), at most ``_KEPT`` of them.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

from hotmem.store.fts import CJK_TOKENIZER, FTS_TOKENIZER
from hotmem.store.lexical_index import Table

__all__ = ["TOKENIZERS", "Tokenizer", "tokenizer"]

#: The tokenizer of each lexical index.
TOKENIZERS: dict[Table, str] = {"memories_fts": FTS_TOKENIZER, "memories_cjk": CJK_TOKENIZER}
_KEPT = 65_536


class Tokenizer:
    """An in-memory FTS5 table tokenizing as a store's index does (module docstring)."""

    def __init__(self, tokenizer: str) -> None:
        self._connection = sqlite3.connect(":memory:", isolation_level=None)
        self._connection.execute(
            f"CREATE VIRTUAL TABLE t USING fts5 (x, content = '', tokenize = '{tokenizer}')"
        )
        self._connection.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, instance)")
        self._phrases: dict[str, tuple[str, ...]] = {}

    def _tokenized(self, texts: Sequence[str]) -> list[list[tuple[int, str]]]:
        """Each text's (offset, token) pairs, in no particular order."""
        connection = self._connection
        connection.execute("BEGIN")  # one transaction: FTS5 writes its index once
        try:
            connection.execute("INSERT INTO t (t) VALUES ('delete-all')")
            connection.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", enumerate(texts))
            found: list[list[tuple[int, str]]] = [[] for _ in texts]
            for doc, token, offset in connection.execute("SELECT doc, term, offset FROM v"):
                found[doc].append((offset, token))
        finally:
            connection.execute("COMMIT")
        return found

    def counts(self, texts: Sequence[str]) -> list[dict[str, int]]:
        """token -> occurrences, of each text."""
        found: list[dict[str, int]] = []
        for pairs in self._tokenized(texts):
            counts: dict[str, int] = {}
            for _, token in pairs:
                counts[token] = counts.get(token, 0) + 1
            found.append(counts)
        return found

    def phrases(self, terms: Sequence[str]) -> list[tuple[str, ...]]:
        """The tokens of each of ``terms`` in order: the phrases FTS5 looks up for them (the
        terms not kept tokenized together, in one transaction)."""
        kept = self._phrases
        new = [term for term in dict.fromkeys(terms) if term not in kept]
        if len(kept) + len(new) > _KEPT:
            kept.clear()
            new = list(dict.fromkeys(terms))
        if new:
            for term, pairs in zip(new, self._tokenized(new), strict=True):
                kept[term] = tuple(token for _, token in sorted(pairs))
        return [kept[term] for term in terms]


_THREAD = threading.local()


def tokenizer(table: Table) -> Tokenizer:
    """This thread's :class:`Tokenizer` for the index ``table``."""
    made: dict[Table, Tokenizer] = _THREAD.__dict__.setdefault("tokenizers", {})
    found = made.get(table)
    if found is None:
        found = made[table] = Tokenizer(TOKENIZERS[table])
    return found
