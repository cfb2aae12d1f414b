"""What FTS5 itself costs on the heavy-overlap workload: the floor under a lexical search.

Run: ``uv run python benchmarks/fts_costs.py [--size 100000] [--repeats 5]``

Builds a store of ``--size`` heavy-workload memories (``synthetic.heavy_memories``, through the
public ``add_many``) in a temporary directory, then times, on one connection, best of
``--repeats``:

- the most common word: ``count(*)`` of its matches, its rowids read into Python, the same with
  ``bm25()``, and only the best one (``ORDER BY rank LIMIT 1``, every ``bm25()`` computed in C);
- the OR query of the heavy question matching most memories (what ``hotmem.search_memories``
  sends FTS5): ``count(*)``, then ``bm25()`` of 1 and of 512 chosen memories as
  ``lexical.matches_among`` asks for them (``+rowid IN (...)``), one memory by ``rowid = ?``,
  and 512 memories by ``rowid IN (...)`` as an index constraint;
- the same question's BM25 of 1, 64, 512 and 2,048 chosen memories both ways: the restricted
  FTS5 query, and HotMem's own computation (``hotmem/bm25.py``, checked to give the same
  bits), with what each costs per doclist entry walked and per text tokenized: the ratio
  behind ``bm25.WALK_PER_TEXT``;
- a term read whole (every match's share), for that question's terms: FTS5's ``bm25()``
  (``lexical.phrase_scores``) against ``bm25.term_shares`` (the index's occurrence lists), in
  dicts and in numpy arrays (``hotmem/reads.py``, ``hotmem/share_arrays.py``);
- the same terms' members (rowids) read row by row against one ``group_concat`` string split
  into integers (``lexical.joined``, how ``lexical.phrase_members`` reads them).

``docs/benchmarks.md`` ("Where the time goes now") explains what the figures mean for the
bounded top k (``hotmem/topk.py``). Figures are local diagnostics, not guarantees.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sized
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import heavy_memories, heavy_queries

import hotmem
from hotmem import bm25, lexical
from hotmem.reads import ReadForm
from hotmem.retrieval.query import lexical_query

_MATCHES = "FROM memories_fts WHERE memories_fts MATCH ?"
_SCORED = f"SELECT rowid, -bm25(memories_fts) {_MATCHES}"
_CHOSEN = "(SELECT value FROM json_each(?))"
_AMONG = f"{_SCORED} AND +rowid IN {_CHOSEN}"


def best_ms(
    connection: sqlite3.Connection, sql: str, args: tuple[object, ...], repeats: int
) -> tuple[float, int]:
    """The fastest of ``repeats`` runs of ``sql`` read to the end (ms), and its row count."""
    fastest, rows = float("inf"), 0
    for _ in range(repeats):
        start = time.perf_counter()
        rows = len(connection.execute(sql, args).fetchall())
        fastest = min(fastest, time.perf_counter() - start)
    return fastest * 1000, rows


def measurements(
    connection: sqlite3.Connection, repeats: int
) -> list[tuple[str, str, tuple[object, ...]]]:
    """``(label, sql, arguments)`` of every statement timed."""
    connection.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, memories_fts, row)")
    word, docs = connection.execute(
        "SELECT term, doc FROM temp.vocab ORDER BY doc DESC, term LIMIT 1"
    ).fetchone()
    total = connection.execute("SELECT count(*) FROM memories_fts_docsize").fetchone()[0]
    one = f'"{word}"'

    def matches(query: str) -> list[int]:
        expression = lexical_query(query).words_expression
        return [r for (r,) in connection.execute(f"SELECT rowid {_MATCHES}", (expression,))]

    # The question matching most memories: the walk a restricted query pays is longest there.
    question = max(
        (q for q in heavy_queries() if q.startswith("What")), key=lambda q: len(matches(q))
    )
    expression = lexical_query(question).words_expression
    matched = matches(question)
    chosen = json.dumps(sorted(random.Random(1).sample(matched, min(512, len(matched)))))
    print(f"most common word: {word!r}, in {docs:,} of {total:,} memories ({docs / total:.1%})")
    print(f"question: {question!r} -> {expression}, {len(matched):,} matches\n")
    return [
        (f"`count(*)` of `{word}`'s matches (one row)", f"SELECT count(*) {_MATCHES}", (one,)),
        ("its rowids, read into Python", f"SELECT rowid {_MATCHES}", (one,)),
        (
            "its rowids with `bm25()`, read into Python",
            f"SELECT rowid, -bm25(memories_fts) {_MATCHES}",
            (one,),
        ),
        (
            "only the best one (`ORDER BY rank LIMIT 1`)",
            f"SELECT rowid {_MATCHES} ORDER BY rank LIMIT 1",
            (one,),
        ),
        ("the question: `count(*)` (one row)", f"SELECT count(*) {_MATCHES}", (expression,)),
        (
            "`bm25()` of 1 chosen memory (`+rowid IN`)",
            _AMONG,
            (expression, json.dumps(matched[:1])),
        ),
        ("`bm25()` of 512 chosen memories (`+rowid IN`)", _AMONG, (expression, chosen)),
        (
            "`bm25()` of 1 memory by `rowid = ?`",
            f"SELECT rowid, -bm25(memories_fts) {_MATCHES} AND rowid = ?",
            (expression, matched[0]),
        ),
        (
            "`bm25()` of 512 memories by `rowid IN (...)`",
            f"{_SCORED} AND rowid IN {_CHOSEN}",
            (expression, chosen),
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="memories in the store")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each statement (best kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "heavy.db"
        with hotmem.open_store(path) as store:
            store.add_many(heavy_memories(args.size))
        connection = sqlite3.connect(path)
        try:
            statements = measurements(connection, args.repeats)
            print(f"SQLite {sqlite3.sqlite_version}, best of {args.repeats}\n")
            print("| statement | rows | ms |")
            print("|---|---:|---:|")
            for label, sql, arguments in statements:
                ms, rows = best_ms(connection, sql, arguments, args.repeats)
                print(f"| {label} | {rows:,} | {ms:,.1f} |", flush=True)
            print()
            both_ways(connection, args.repeats)
        finally:
            connection.close()


def both_ways(connection: sqlite3.Connection, repeats: int) -> None:
    """The restricted FTS5 query against ``bm25.scores_among``, for growing choices; a term
    read whole, and its members, both ways."""
    question = max(
        (q for q in heavy_queries() if q.startswith("What")),
        key=lambda q: len(lexical.all_matches(connection, lexical_query(q))),
    )
    query = lexical_query(question)
    counts = lexical.Counts()
    walked = sum(counts.phrase_counts(connection, lexical.phrases(query)))
    bm25.verified()
    rowids = [r for (r,) in connection.execute("SELECT rowid FROM memories")]
    print(f"{question!r}: its terms' doclists hold {walked:,} entries\n")
    print(
        "| chosen memories | FTS5 query (ms) | µs an entry walked | computed by HotMem (ms) "
        "| µs a text |"
    )
    print("|---:|---:|---:|---:|---:|")
    times: dict[int, tuple[float, float]] = {}
    for size in (1, 64, 512, 2048):
        chosen = random.Random(size).sample(rowids, size)
        fts5, ours = float("inf"), float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            expected = lexical.matches_among(connection, query, chosen)
            middle = time.perf_counter()
            got = bm25.scores_among(connection, query, chosen, counts)
            fts5 = min(fts5, middle - start)
            ours = min(ours, time.perf_counter() - middle)
            if got != expected:
                raise SystemExit(f"bm25.scores_among differs from FTS5 for {size} memories")
        print(
            f"| {size:,} | {fts5 * 1000:.1f} | {fts5 * 1e6 / walked:.3f} | {ours * 1000:.1f} "
            f"| {ours * 1e6 / size:.1f} |",
            flush=True,
        )
        times[size] = (fts5, ours)
    # Linear costs: a walk is a * entries + b * chosen, computing here c + d * chosen; so
    # computing here pays while chosen * (d - b) / a < entries: the ratio bm25.WALK_PER_TEXT
    # stands for.
    d = (times[2048][1] - times[64][1]) / (2048 - 64)
    b = (times[2048][0] - times[64][0]) / (2048 - 64)
    a = (times[64][0] - 64 * b) / walked
    print(
        f"\nper memory chosen: {d * 1e6:.1f} µs computed here, {b * 1e6:.1f} µs more in a walk; "
        f"a walk {a * 1e6:.3f} µs an entry: computing here pays below one memory for "
        f"{(d - b) / a:.0f} entries (bm25.WALK_PER_TEXT = {bm25.WALK_PER_TEXT})"
    )
    phrases = lexical.phrases(query)
    print(
        "\n| term read whole | matches | FTS5 `bm25()` (ms) | computed by HotMem, dicts (ms) "
        "| computed by HotMem, numpy arrays (ms) |"
    )
    print("|---|---:|---:|---:|---:|")
    _ways(
        phrases,
        [
            lambda phrase: lexical.phrase_scores(connection, [phrase]),
            lambda phrase: bm25.term_shares(connection, [phrase], counts),
            lambda phrase: bm25.term_shares(connection, [phrase], counts, None, _arrays()),
        ],
        repeats,
    )
    print("\n| term's members | rows | row by row (ms) | one `group_concat` string (ms) |")
    print("|---|---:|---:|---:|")
    _ways(
        phrases,
        [
            lambda phrase: [
                r
                for (r,) in connection.execute(
                    f"SELECT rowid FROM {phrase.table} WHERE {phrase.table} MATCH ?",
                    (phrase.expression,),
                )
            ],
            lambda phrase: lexical.parsed(lexical.phrase_members(connection, phrase)),
        ],
        repeats,
    )


def _arrays() -> ReadForm:
    """numpy's form of the reads (``hotmem/share_arrays.py``; the ``fast`` extra)."""
    from hotmem.share_arrays import ARRAYS

    return ARRAYS


def _ways(
    phrases: list[lexical.Phrase],
    ways: list[Callable[[lexical.Phrase], Sized | None]],
    repeats: int,
) -> None:
    """A table row a phrase: how many items, and the best time of each way (ms); every way
    must give the first one's answer."""
    for phrase in phrases:
        best = [float("inf")] * len(ways)
        for _ in range(repeats):
            answers = []
            for i, way in enumerate(ways):
                start = time.perf_counter()
                answers.append(way(phrase))
                best[i] = min(best[i], time.perf_counter() - start)
            expected = answers[0]
            if expected is None or any(got != expected for got in answers[1:]):
                raise SystemExit(f"the ways differ for {phrase.term!r}")
        times = " | ".join(f"{t * 1000:.1f}" for t in best)
        print(f"| `{phrase.term}` | {len(expected):,} | {times} |", flush=True)


if __name__ == "__main__":
    main()
