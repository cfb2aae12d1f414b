"""The lexical channel's queries: BM25 of a query's matches, whole or for chosen memories.

A memory's raw BM25 for a query is FTS5's ``bm25()`` over the word index plus, when the query
has CJK grams, ``bm25()`` over the CJK index (``docs/ranking.md``). Three ways to read it, all
giving the same bits for a memory:

- :func:`all_matches`: every match in the store (the exhaustive channel);
- :func:`matches_among`: only chosen memories, in one statement per table. The rowid test is
  an expression (``+rowid``), not an index constraint, so FTS5 runs the query once, computes
  its IDFs once, and ``bm25()`` runs only for the rows kept; a rowid equality would restart the
  query, IDFs included, for every memory;
- :func:`phrase_scores`: some terms' contribution to every memory matching one of them.

:func:`phrase_counts` gives how many memories match each term, from which an upper bound of the
term's contribution follows (``topk.py``); :class:`Counts` keeps them for one state of the
store. The SQL text is built here, apart from running it.
"""

from __future__ import annotations

import json
import sqlite3
from array import array
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from hotmem.store.fts import LexicalQuery, match_expression

__all__ = [
    "Counts",
    "Phrase",
    "all_matches",
    "docsize_tokens",
    "joined",
    "matches_among",
    "parsed",
    "phrase_counts",
    "phrase_members",
    "phrase_scores",
    "phrases",
    "table_averages",
    "table_rows",
    "token_counts",
    "varints",
]

Table = Literal["memories_fts", "memories_cjk"]
#: A column of integers as :func:`joined` reads it: one string of them joined by commas, or the
#: list of them read row by row.
Joined = str | list[int]
_TABLES: tuple[Table, ...] = ("memories_fts", "memories_cjk")


def bm25_sql(table: Table) -> str:
    """Every match of a ``MATCH`` expression with its raw BM25 (higher is better)."""
    return f"SELECT rowid, -bm25({table}) FROM {table} WHERE {table} MATCH ?"


def among_sql(table: Table) -> str:
    """The matches among the rowids of a JSON array, with their raw BM25."""
    return f"{bm25_sql(table)} AND +rowid IN (SELECT value FROM json_each(?))"


def count_sql(table: Table) -> str:
    """How many rows match a ``MATCH`` expression (no BM25 is computed)."""
    return f"SELECT count(*) FROM {table} WHERE {table} MATCH ?"


def rows_sql(table: Table) -> str:
    """The number of rows an index holds (FTS5's N in its IDF), from its docsize shadow table
    (a count over the FTS5 table itself would read every fact)."""
    return f"SELECT count(*) FROM {table}_docsize"


@dataclass(frozen=True, slots=True)
class Phrase:
    """One query term in one table, as FTS5's ``bm25()`` sees it: a phrase of the query."""

    table: Table
    term: str

    @property
    def expression(self) -> str:
        """The ``MATCH`` expression of this phrase alone."""
        return match_expression([self.term]) or ""


def phrases(query: LexicalQuery) -> list[Phrase]:
    """The phrases of ``query``: its words over the word index, then its grams over the CJK
    index, in query order."""
    return [Phrase("memories_fts", w) for w in query.words] + [
        Phrase("memories_cjk", g) for g in query.grams
    ]


def _expressions(query: LexicalQuery) -> Iterable[tuple[Table, str]]:
    for table, expression in zip(
        _TABLES, (query.words_expression, query.grams_expression), strict=True
    ):
        if expression is not None:
            yield table, expression


def all_matches(connection: sqlite3.Connection, query: LexicalQuery) -> dict[int, float]:
    """rowid -> raw BM25 of every memory matching a term of ``query``.

    A memory matching words and CJK grams sums both tables' BM25 (BM25 is a sum over query
    terms), the word index first.
    """
    return _summed(connection, query, bm25_sql, ())


def _summed(
    connection: sqlite3.Connection,
    query: LexicalQuery,
    sql: Callable[[Table], str],
    extra: tuple[object, ...],
) -> dict[int, float]:
    """rowid -> raw BM25 summed over the tables ``query`` has terms in, the word index first
    (``sql(table)`` takes the ``MATCH`` expression, then ``extra``)."""
    found: dict[int, float] = {}
    for table, expression in _expressions(query):
        rows = connection.execute(sql(table), (expression, *extra))
        if not found:
            found = dict(rows)
            continue
        for rowid, raw in rows:
            found[rowid] = found.get(rowid, 0.0) + raw
    return found


def matches_among(
    connection: sqlite3.Connection, query: LexicalQuery, rowids: Collection[int]
) -> dict[int, float]:
    """What :func:`all_matches` gives, for the memories of ``rowids`` only (the same bits)."""
    if not rowids:
        return {}
    return _summed(connection, query, among_sql, (json.dumps(sorted(rowids)),))


def phrase_counts(connection: sqlite3.Connection, terms: Iterable[Phrase]) -> list[int]:
    """How many memories match each phrase."""
    return [
        int(connection.execute(count_sql(p.table), (p.expression,)).fetchone()[0]) for p in terms
    ]


@dataclass(slots=True)
class Counts:
    """:func:`table_rows`, :func:`phrase_counts`, :func:`table_averages` and
    :func:`token_counts` for one state of the store, kept between queries.

    Counting a phrase reads its whole doclist (a word in most memories: 4 ms at 100,000
    memories, 40 ms at 1,000,000), and the common words that cost most recur in most queries.
    The store keeps one ``Counts`` with its vector index and drops both when the store changes
    (``MemoryStore.vector_index``), so a count is never older than the state it is read in.
    At most ``LIMIT`` phrases are kept; past that the cache starts again. The token counts
    (``bm25.term_shares``) take 4 bytes a memory, read once (35 ms at 100,000 memories).
    """

    LIMIT = 65_536
    rows: dict[Table, int] = field(default_factory=dict)
    phrases: dict[Phrase, int] = field(default_factory=dict)
    means: dict[Table, tuple[int, float]] = field(default_factory=dict)
    sizes: dict[Table, array[int] | dict[int, int]] = field(default_factory=dict)

    def lengths(self, connection: sqlite3.Connection, table: Table) -> array[int] | dict[int, int]:
        """:func:`token_counts`, read once."""
        found = self.sizes.get(table)
        if found is None:
            found = self.sizes[table] = token_counts(connection, table)
        return found

    def averages(self, connection: sqlite3.Connection, table: Table) -> tuple[int, float]:
        """:func:`table_averages`, read once."""
        found = self.means.get(table)
        if found is None:
            found = self.means[table] = table_averages(connection, table)
        return found

    def table_rows(self, connection: sqlite3.Connection, table: Table) -> int:
        """:func:`table_rows`, counted once."""
        found = self.rows.get(table)
        if found is None:
            found = self.rows[table] = table_rows(connection, table)
        return found

    def phrase_counts(self, connection: sqlite3.Connection, terms: Sequence[Phrase]) -> list[int]:
        """:func:`phrase_counts`, each phrase counted once."""
        missing = [p for p in dict.fromkeys(terms) if p not in self.phrases]
        if len(self.phrases) + len(missing) > self.LIMIT:
            self.phrases.clear()
            missing = list(dict.fromkeys(terms))
        self.phrases.update(zip(missing, phrase_counts(connection, missing), strict=True))
        return [self.phrases[p] for p in terms]


def phrase_members(connection: sqlite3.Connection, phrase: Phrase) -> Joined:
    """The rowids of the memories matching ``phrase``, each once (no BM25 is computed), as
    :func:`joined` reads them (:func:`parsed` makes the list)."""
    where = f"FROM {phrase.table} WHERE {phrase.table} MATCH ?"
    return joined(connection, "rowid", where, (phrase.expression,))


def joined(
    connection: sqlite3.Connection, column: str, where: str, parameters: Sequence[object]
) -> Joined:
    """The integer ``column`` of ``SELECT column where``, read as one ``group_concat`` string:
    handing tens of thousands of rows to Python one by one costs half as much again as
    splitting one string (``benchmarks/fts_costs.py``), and numpy parses the string whole
    (``share_arrays.py``). The order is the one SQLite joins them in, the rows' own here,
    though SQLite does not promise it: no caller's answer depends on it. Rows a string cannot
    hold (SQLite's length limit) are read one by one, as a list."""
    try:
        found = connection.execute(f"SELECT group_concat({column}) {where}", parameters)
        text = found.fetchone()[0]
    except sqlite3.DataError:  # "string or blob too big"
        return [row[0] for row in connection.execute(f"SELECT {column} {where}", parameters)]
    return [] if text is None else str(text)


def parsed(column: Joined) -> list[int]:
    """The integers of a :data:`Joined` column, in order."""
    return list(map(int, column.split(","))) if isinstance(column, str) else column


def phrase_scores(connection: sqlite3.Connection, group: Sequence[Phrase]) -> dict[int, float]:
    """rowid -> the contribution of the phrases of ``group`` to the raw BM25 of every memory
    matching one of them: one statement per table (the word index first), whose ``bm25()`` sums
    the phrases' contributions (up to the order of the additions, as for :func:`all_matches`)."""
    words = tuple(p.term for p in group if p.table == "memories_fts")
    grams = tuple(p.term for p in group if p.table == "memories_cjk")
    return _summed(connection, LexicalQuery(words, grams), bm25_sql, ())


def table_rows(connection: sqlite3.Connection, table: Table) -> int:
    """The number of rows of one lexical index."""
    return int(connection.execute(rows_sql(table)).fetchone()[0])


def token_counts(connection: sqlite3.Connection, table: Table) -> array[int] | dict[int, int]:
    """Every row's token count in one lexical index (its docsize table), by rowid: an array of
    4 bytes a rowid (0 where there is no row), or a dict when rowids are sparse (more than
    twice as many rowids as rows)."""
    rows, top = connection.execute(f"SELECT count(*), max(id) FROM {table}_docsize").fetchone()
    sql = f"SELECT id, sz FROM {table}_docsize"
    if top is None or top > 2 * rows + 65_536:
        return {rowid: docsize_tokens(sz) for rowid, sz in connection.execute(sql)}
    found = array("i", bytes(4 * (top + 1)))
    for rowid, sz in connection.execute(sql):
        found[rowid] = docsize_tokens(sz)
    return found


def docsize_tokens(sz: bytes) -> int:
    """A docsize row's token count: one varint a column (one byte below 128 tokens)."""
    return sz[0] if len(sz) == 1 else sum(varints(sz))


def varints(blob: bytes) -> list[int]:
    """The SQLite varints of ``blob`` (big-endian groups of seven bits; a ninth byte of eight)."""
    values: list[int] = []
    i = 0
    while i < len(blob):
        value = 0
        for j in range(9):
            byte = blob[i]
            i += 1
            if j == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        values.append(value)
    return values


def table_averages(connection: sqlite3.Connection, table: str) -> tuple[int, float]:
    """An FTS5 table's row count and mean tokens a row, as ``bm25()`` reads them (the averages
    record: the row count, then each column's token total)."""
    row = connection.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    totals = varints(row[0]) if row is not None else []
    if not totals or totals[0] == 0:
        return 0, 0.0
    return totals[0], float(sum(totals[1:])) / float(totals[0])
