"""FTS5's ``bm25()``, computed here from what FTS5 stores instead of by FTS5's queries.

The formula (SQLite's ``fts5_aux.c``) needs, per phrase, its IDF, from how many rows match it
(``lexical.Counts``, kept between searches), and the table's row count and mean token count
(FTS5's own averages record); per memory, its token count (the ``docsize`` shadow table) and
how often each phrase occurs in it. Two of FTS5's ways are slow where these are cheap:

- :func:`term_shares`, for :func:`lexical.phrase_scores`: ``bm25()`` of every match of a term
  costs about 1 µs a match, most of it finding the term's positions again. The index's own list of
  the term's occurrences (an ``fts5vocab`` instance table in the connection's temporary
  schema) gives how often it occurs in each memory for half to nine tenths of that, and the token
  counts are kept with the other counts.
- :func:`scores_among`, for :func:`lexical.matches_among`: for chosen memories FTS5 still walks
  every query term's whole doclist (14 ms for one memory on a question matching most of
  100,000 memories, ten times that at 1,000,000). Here the chosen memories' text is tokenized
  by FTS5 itself, in a private in-memory FTS5 table with the same tokenizer whose
  ``fts5vocab`` table lists the tokens: a cost that follows the number of memories chosen, not
  the size of the store (``benchmarks/fts_costs.py``).

The arithmetic is ``fts5Bm25Function``'s, operation for operation, in IEEE doubles, with the
phrases added in query order and a phrase that does not occur skipped (it adds exactly 0.0). So
the bits are FTS5's, unless the SQLite library was compiled to fuse multiply-adds or its
tokenizer has changed since the memories were indexed. Hence the guards, each of which makes
the function answer ``None``, and its caller run the FTS5 query instead:

- the first use in a process compares both ways on a table of its own (:func:`verified`);
- a query term that is not exactly one token (FTS5 would match it as a phrase of several);
- for :func:`scores_among`, a memory whose text tokenizes to another token count than its
  index recorded;
- for :func:`term_shares`, a connection that cannot make the temporary table.
"""

from __future__ import annotations

import json
import math
import random
import sqlite3
import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import cache, partial
from operator import itemgetter
from typing import Any

from hotmem import lexical
from hotmem.lexical import Phrase, Table
from hotmem.reads import DICTS, Keys, ReadForm, add_into
from hotmem.store.fts import CJK_TOKENIZER, FTS_TOKENIZER, LexicalQuery
from hotmem.store.schema import TABLES

__all__ = [
    "BOUNDED_ENTRIES",
    "CHOSEN_ENTRIES",
    "TEXT_ENTRIES",
    "WALK_PER_TEXT",
    "idf",
    "scores_among",
    "term_shares",
    "verified",
]

_FIRST = itemgetter(0)

#: A restricted FTS5 query costs about ``a`` a doclist entry walked plus ``b`` a memory chosen;
#: computing here, ``c + d`` a memory. So it pays while memories x (d - b) / a < entries.
#: ``benchmarks/fts_costs.py`` measures the ratio (d - b) / a: 81 on 100,000 heavy-workload
#: memories (d = 8.4, b = 2.8, a = 0.07 µs; 68 on a busier machine), less at 1,000,000 (a
#: walk's cost by the memory grows with the file). Rounded down to a power of two. Only speed
#: depends on it: the bits are the same.
WALK_PER_TEXT = 64
#: The same run's costs, in doclist entries walked (a = 0.07 µs): tokenizing a memory chosen
#: (d = 8.4 µs) and a memory chosen in a walk (b = 2.8 µs); a match of a term read whole by
#: :func:`term_shares` costs what its form says (``reads.ReadForm.match_entries``). The
#: bounded top k weighs a scope's own matches against its terms read whole with them
#: (``topk._scope_budget``), and against the bounded path's own cost in a scope besides its
#: reads: 3.1, 10.3 and 17.8 ms on the heavy 100k, synthetic 100k and heavy 1M stores
#: (``benchmarks/scope_costs.py``), of which the middle one, 10 ms.
TEXT_ENTRIES = 120
CHOSEN_ENTRIES = 40
BOUNDED_ENTRIES = 140_000
# fts5Bm25Function's constants.
_K1 = 1.2
_B = 0.75
_CHOSEN = "rowid IN (SELECT value FROM json_each(?))"
#: The chosen memories' text in an index, with their token counts (its docsize table).
_TEXT_SQL: dict[Table, str] = {
    "memories_fts": "SELECT m.rowid, m.fact, d.sz FROM memories AS m"
    f" JOIN memories_fts_docsize AS d ON d.id = m.rowid WHERE m.{_CHOSEN}",
    "memories_cjk": "SELECT c.rowid, c.grams, d.sz FROM memories_cjk AS c"
    f" JOIN memories_cjk_docsize AS d ON d.id = c.rowid WHERE c.{_CHOSEN}",
}
_TOKENIZERS: dict[Table, str] = {"memories_fts": FTS_TOKENIZER, "memories_cjk": CJK_TOKENIZER}


def idf(rows: int, hits: int) -> float:
    """fts5Bm25GetData's IDF: ``log((N - n + 0.5) / (n + 0.5))``, at least 1e-6."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else 1e-6


class _Tokens:
    """A private in-memory FTS5 table that tokenizes as a store table does, and the tokens of
    the texts it holds (its ``fts5vocab`` instance table). Contentless, so that emptying it
    is one command; one a thread and tokenizer (:func:`_tokens`)."""

    def __init__(self, tokenizer: str) -> None:
        self.connection = sqlite3.connect(":memory:", isolation_level=None)
        self.connection.execute(
            f"CREATE VIRTUAL TABLE t USING fts5 (x, content = '', tokenize = '{tokenizer}')"
        )
        self.connection.execute("CREATE VIRTUAL TABLE t_v USING fts5vocab (t, instance)")

    def load(self, texts: Iterable[tuple[int, str]]) -> None:
        """Empty the table, then tokenize ``texts`` ((rowid, text) pairs) into it."""
        # One transaction, so that FTS5 writes its index once, not once a text.
        self.connection.execute("BEGIN")
        try:
            self.connection.execute("INSERT INTO t (t) VALUES ('delete-all')")
            self.connection.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", texts)
        finally:
            self.connection.execute("COMMIT")

    def stems(self, terms: Sequence[str]) -> list[str] | None:
        """Each of ``terms``' one token (``None`` when a term is not exactly one token)."""
        self.load(enumerate(terms))
        found: list[list[str]] = [[] for _ in terms]
        for rowid, term in self.connection.execute("SELECT doc, term FROM t_v"):
            found[rowid].append(term)
        if any(len(tokens) != 1 for tokens in found):
            return None
        return [tokens[0] for tokens in found]

    def sizes(self) -> dict[int, int]:
        """rowid -> token count of every text loaded."""
        sql = "SELECT id, sz FROM t_docsize"
        return {rowid: lexical.docsize_tokens(sz) for rowid, sz in self.connection.execute(sql)}

    def frequencies(self, tokens: Collection[str]) -> dict[tuple[int, str], int]:
        """(rowid, token) -> occurrences in the texts loaded, for the tokens given."""
        found: dict[tuple[int, str], int] = {}
        marks = ", ".join("?" * len(tokens))
        sql = f"SELECT doc, term FROM t_v WHERE term IN ({marks})"
        for key in self.connection.execute(sql, tuple(tokens)):
            found[key] = found.get(key, 0) + 1
        return found


_THREAD = threading.local()


def _tokens(tokenizer: str) -> _Tokens:
    """This thread's :class:`_Tokens` for ``tokenizer`` (sqlite3 connections stay in the thread
    that made them)."""
    probes: dict[str, _Tokens] = _THREAD.__dict__.setdefault("probes", {})
    probe = probes.get(tokenizer)
    if probe is None:
        probe = probes[tokenizer] = _Tokens(tokenizer)
    return probe


def _scores(
    texts: Sequence[tuple[int, str]],
    sizes: dict[int, int],
    tokenizer: str,
    terms: Sequence[str],
    idfs: Sequence[float],
    averages: tuple[int, float],
) -> dict[int, float] | None:
    """rowid -> raw BM25 of the texts matching a term, as ``bm25()`` of the table the texts
    belong to computes it (``sizes``: the token counts that table recorded)."""
    probe = _tokens(tokenizer)
    stems = probe.stems(terms)
    if stems is None:
        return None
    probe.load(texts)
    if probe.sizes() != {rowid: sizes[rowid] for rowid, _ in texts}:
        return None  # tokenized otherwise than when indexed
    frequencies = probe.frequencies(set(stems))
    avgdl = averages[1]
    found: dict[int, float] = {}
    for rowid, _ in texts:
        # fts5Bm25Function adds the phrases' shares in query order.
        score = 0.0
        matched = False
        for stem, weight in zip(stems, idfs, strict=True):
            occurrences = frequencies.get((rowid, stem))
            if occurrences:
                score += _share(weight, occurrences, sizes[rowid], avgdl)
                matched = True
        if matched:
            found[rowid] = score
    return found


def _table_scores(
    connection: sqlite3.Connection,
    table: Table,
    terms: Sequence[str],
    rowids: str,
    counts: lexical.Counts,
) -> dict[int, float] | None:
    averages = counts.averages(connection, table)
    hits = counts.phrase_counts(connection, [Phrase(table, t) for t in terms])
    idfs = [idf(averages[0], n) for n in hits]
    texts, sizes = [], {}
    for rowid, text, size in connection.execute(_TEXT_SQL[table], (rowids,)):
        texts.append((rowid, text))
        sizes[rowid] = lexical.docsize_tokens(size)
    return _scores(texts, sizes, _TOKENIZERS[table], terms, idfs, averages)


def term_shares(
    connection: sqlite3.Connection,
    group: Sequence[Phrase],
    counts: lexical.Counts,
    keys: Keys | None = None,
    form: ReadForm = DICTS,
) -> Mapping[int, float] | None:
    """What :func:`lexical.phrase_scores` gives (the same bits; by ``keys[rowid]`` when ``keys``
    is given, so that a caller keying memories otherwise needs no second pass over tens of
    thousands of matches; in ``form``, ``reads.py``), from the index's own lists of token
    occurrences (``fts5vocab`` instance tables on the store's connection) and the token counts
    kept in ``counts``; ``None`` when it cannot be computed here (the first use failed the
    self-check, a term is not one token, or the connection cannot make the tables).

    FTS5's ``bm25()`` of a term's every match costs about 1 µs a match in C, most of it finding
    the term's positions again; its occurrences read as they are cost half to nine tenths of
    that (``benchmarks/fts_costs.py``).
    """
    if not group:
        return form.scores({})
    if not verified(form):
        return None
    return _shares(connection, group, counts, keys, form)


def _shares(
    connection: sqlite3.Connection,
    group: Sequence[Phrase],
    counts: lexical.Counts,
    keys: Keys | None,
    form: ReadForm,
) -> Mapping[int, float] | None:
    found: Mapping[int, float] = form.scores({})
    for table in _TOKENIZERS:  # the word index's shares first, as lexical.all_matches adds them
        terms = [p.term for p in group if p.table == table]
        if not terms:
            continue
        stems = _tokens(_TOKENIZERS[table]).stems(terms)
        vocabulary = _vocabulary(connection, table)
        if stems is None or vocabulary is None:
            return None
        rows, avgdl = counts.averages(connection, table)
        hits = counts.phrase_counts(connection, [Phrase(table, t) for t in terms])
        lengths = counts.lengths(connection, table)
        part: Mapping[int, float] = form.scores({})
        for stem, n in zip(stems, hits, strict=True):  # the phrases' shares added in query order
            docs = lexical.joined(connection, "doc", f"FROM {vocabulary} WHERE term = ?", (stem,))
            share = partial(_phrase_share, idf(rows, n), avgdl)
            part = form.added(part, form.shares(docs, lengths, keys, share))
        found = form.added(found, part)
    return found


def _share(weight: float, occurrences: int, length: int, avgdl: float) -> float:
    """One phrase's addition to ``bm25()`` (fts5Bm25Function), for a memory where it occurs
    ``occurrences`` times in ``length`` tokens."""
    result: float = _phrase_share(weight, avgdl, float(occurrences), float(length))
    return result


def _phrase_share(weight: float, avgdl: float, f: Any, length: Any) -> Any:
    """``idf * (f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl))``, for floats ``f`` and
    ``D`` or, element by element, for numpy arrays of them (``reads.ShareOf``)."""
    return weight * ((f * (_K1 + 1.0)) / (f + _K1 * (1 - _B + _B * length / avgdl)))


def _vocabulary(connection: sqlite3.Connection, table: Table) -> str | None:
    """The name of an ``fts5vocab`` instance table over ``table``, made in the connection's
    temporary schema (``None`` when it cannot be)."""
    name = f"temp.hotmem_{table}_instances"
    try:
        connection.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5vocab (main, {table}, instance)"
        )
    except sqlite3.Error:
        return None
    return name


def scores_among(
    connection: sqlite3.Connection,
    query: LexicalQuery,
    rowids: Collection[int],
    counts: lexical.Counts,
) -> dict[int, float] | None:
    """What :func:`lexical.matches_among` gives (the same bits), or ``None`` when it cannot be
    computed here (module docstring)."""
    if not rowids:
        return {}
    return _among(connection, query, rowids, counts) if verified() else None


def _among(
    connection: sqlite3.Connection,
    query: LexicalQuery,
    rowids: Collection[int],
    counts: lexical.Counts,
) -> dict[int, float] | None:
    chosen = json.dumps(sorted(rowids))
    found: dict[int, float] = {}
    tables: tuple[tuple[Table, Sequence[str]], ...] = (
        ("memories_fts", query.words),
        ("memories_cjk", query.grams),
    )
    for table, terms in tables:
        if not terms:
            continue
        part = _table_scores(connection, table, terms, chosen, counts)
        if part is None:
            return None
        found = add_into(found, part) if found else part  # the word index's first
    return found


# The self-check's texts: inflected forms (the porter stemmer joins them), accents (removed),
# CJK grams, and a word in every text, so that IDFs take both branches and frequencies and
# lengths vary.
_WORDS = (
    "deploy deploys deployed deploying invoice invoices billing bill common rare quartz "
    "running runs ran runner tungsten boiling point release released caf\u00e9 cafe na\u00efve"
).split()
_GRAMS = "東京 京オ オフ フィ ィス 月曜 曜日 休み 東 京 月".split()
#: The store's two lexical indexes (``schema.TABLES``) over a content table of facts only.
_CHECK_SCHEMA = (
    "CREATE TABLE memories (fact TEXT NOT NULL)",
    TABLES["memories_fts"],
    TABLES["memories_cjk"],
)


def _check_store(rng: random.Random) -> sqlite3.Connection:
    """An in-memory database with the store's two lexical indexes over 200 generated texts."""
    store = sqlite3.connect(":memory:", isolation_level=None)
    for statement in _CHECK_SCHEMA:
        store.execute(statement)
    store.execute("BEGIN")
    for rowid in range(1, 201):
        words = " ".join([_WORDS[0], *rng.choices(_WORDS, k=rng.randint(0, 30))])
        store.execute("INSERT INTO memories (rowid, fact) VALUES (?, ?)", (rowid, words))
        store.execute("INSERT INTO memories_fts (rowid, fact) VALUES (?, ?)", (rowid, words))
        if rowid % 3:
            grams = " ".join(rng.choices(_GRAMS, k=rng.randint(1, 12)))
            store.execute("INSERT INTO memories_cjk (rowid, grams) VALUES (?, ?)", (rowid, grams))
    store.execute("COMMIT")
    return store


@cache
def verified(form: ReadForm = DICTS) -> bool:
    """Whether the bits computed here are this process's SQLite's: both ways, on the store's two
    lexical indexes over 200 generated texts, for 32 queries of words, CJK grams or both:
    :func:`scores_among` for 24 of the texts, :func:`term_shares` (in ``form``) for every
    match."""
    rng = random.Random(0)
    try:
        store = _check_store(rng)
    except sqlite3.Error:
        return False
    try:
        counts = lexical.Counts()
        for _ in range(32):
            words = tuple(rng.sample(_WORDS, rng.randint(0, 6)))
            grams = tuple(rng.sample(_GRAMS, rng.randint(0 if words else 1, 4)))
            query = LexicalQuery(words, grams)
            chosen = rng.sample(range(1, 201), 24)
            expected = lexical.matches_among(store, query, chosen)
            if _among(store, query, chosen, counts) != expected:
                return False
            group = lexical.phrases(query)
            if _shares(store, group, counts, None, form) != lexical.phrase_scores(store, group):
                return False
    except sqlite3.Error:
        return False
    finally:
        store.close()
    return True
