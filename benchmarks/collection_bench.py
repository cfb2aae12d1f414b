"""Public test collection benchmark: HotMem search speed and nDCG@10 against bm25s, one run.

Run: ``uv run --group bench python benchmarks/collection_bench.py --collection DIR
[--split test] [--limit 100] [--rounds 1] [--cprofile]``; rebuild ``DIR`` from the raw
Cranfield files first with ``--convert-from RAW_DIR`` (``--convert-only`` stops after
converting).

The collection is any BEIR-style directory: ``corpus.jsonl`` (``{"_id", "title", "text"}`` a
line), ``queries.jsonl`` (``{"_id", "text"}``) and ``qrels/<split>.tsv`` (header
``query-id, corpus-id, score``, tab-separated, score > 0 relevant; the score is the gain).
Measured with Cranfield: 1,400 aeronautics abstracts, 225 natural-language queries, graded
judgements. Its files are not in a package registry here; the copy used is the classic
``cran.all.1400``, ``cran.qry`` and ``cranqrel`` in ``cran/`` of
https://github.com/Pirata-Codex/Information-Retrieval-Cranfield (added in commit d168d6b2,
unchanged at b75c12a6). That repository states no licence, nor does the collection's home
(http://ir.dcs.gla.ac.uk/resources/test_collections/cran/), which offers it for research: keep
the files outside this repository (for instance ``/tmp/cranfield/raw``, converted to
``/tmp/cranfield/beir``)::

    git clone https://github.com/Pirata-Codex/Information-Retrieval-Cranfield /tmp/cranfield/src
    uv run --group bench python benchmarks/collection_bench.py \\
        --convert-from /tmp/cranfield/src/cran --collection /tmp/cranfield/beir

The converter (``convert_cranfield``): a document is ``.I`` (its id), ``.T`` (title), ``.A``,
``.B`` (author, bibliography: dropped) and ``.W`` (the abstract, which repeats the title); lines
are joined with single spaces. A field marker seen a second time in one record is not a field
change (documents 240, 576 and 578 of the original file carry stray ``.A``, ``.B``, ``.W``
lines): the lines after it stay in the current field. Documents 471 and 995 are empty in the
original (995 is judged for query 125) and are written with empty title and text; the benchmark
leaves such documents out of every system, and their judgements count in IDCG. Queries get the
ids 1..225 by position, because ``cranqrel`` numbers them so, not by the ``.I`` numbers of
``cran.qry`` (001, 002, 004, ...). ``cranqrel`` grades are Cleverdon's 1 (a complete answer)
to 4 (minimum interest), written as the score ``5 - grade`` (4 best, 1 least); the 225 entries
of grade -1 (one a query, not a relevance grade) are dropped.

Each system searches every query of the split for its top ``--limit`` (100):

- HotMem: every document is one memory (``fact`` = title + newline + text, identifier
  ``cranfield``, ``memory_id`` = the document id) added with ``add_many`` to a new store in a
  temporary directory; then ``search_memories(store, query, profile=P, limit=100)`` for P in
  ``bm25-only`` and ``default``, on one store object opened with ``accelerator="numpy"`` and
  one with ``"off"`` (same file).
- bm25s (the reference): the same texts, ``bm25s.tokenize(..., stopwords="en",
  stemmer=Stemmer("english"))``, ``BM25().index`` (its defaults: Lucene scoring, k1 1.5, b
  0.75); a query is tokenised and ``retrieve(tokens, k=100)``-ed alone, single-threaded, so
  that its latency is per query like HotMem's (tokenising is timed, as HotMem's is). Results
  scored 0 (no query term) are dropped.

Each system first searches the first query once as a warm-up (reported as ``first query``:
for HotMem it loads the store's search index); then all queries are timed, interleaved query
by query in an order that rotates, so that machine noise hits every system alike. ``build`` is
HotMem's ``add_many`` (one store file, shared by both accelerators) and bm25s's tokenising and
indexing. nDCG@10 is the mean over the split's queries with a judged relevant document:
DCG@10 = sum over ranks i = 1..10 of gain / log2(i + 1), with the linear gain of the qrels
score (0 unjudged); IDCG@10 the same over the judged gains in decreasing order. ``--cprofile``
then profiles one warm ``bm25-only`` search (numpy; the query at that system's median latency,
after five others) and prints the top 15 functions by own time. ``--rounds N`` times every
query N times (N passes, each interleaved; the first warm-up only once). Figures are local
diagnostics for this machine, not guarantees.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import math
import os
import platform
import pstats
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import bm25s
import numpy as np
import Stemmer

import hotmem

ROOT = Path(__file__).resolve().parent.parent
IDENTIFIER = "cranfield"
Qrels = dict[str, dict[str, int]]
Searcher = Callable[[str], list[str]]


# -- Cranfield to BEIR ----------------------------------------------------------------------


def _records(lines: list[str]) -> Iterator[tuple[str, dict[str, list[str]]]]:
    """The ``.I`` records of a Cranfield file: (the id after ``.I``, the lines of each field)."""
    record: dict[str, list[str]] | None = None
    ident, current = "", ""
    for line in lines:
        marker = line.strip()
        if line.startswith(".I ") or marker == ".I":
            if record is not None:
                yield ident, record
            ident, record, current = line[2:].strip(), {}, ""
        elif record is None:
            if marker:
                raise ValueError(f"text before the first .I record: {line!r}")
        elif marker in (".T", ".A", ".B", ".W") and marker not in record:
            current = marker
            record[current] = []
        elif current:
            if marker not in (".T", ".A", ".B", ".W"):  # a repeated marker: dropped
                record[current].append(marker)
        elif marker:
            raise ValueError(f"record {ident}: text before its first field: {line!r}")
    if record is not None:
        yield ident, record


def _joined(lines: list[str]) -> str:
    return " ".join(" ".join(lines).split())


def _write_jsonl(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def convert_cranfield(source: Path, target: Path) -> dict[str, int]:
    """Write ``cran.all.1400``, ``cran.qry`` and ``cranqrel`` of ``source`` as BEIR to
    ``target`` (``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv``); return the counts."""

    def read(name: str) -> list[str]:
        return (source / name).read_text(encoding="ascii").splitlines()

    corpus = [
        {
            "_id": ident,
            "title": _joined(fields.get(".T", [])),
            "text": _joined(fields.get(".W", [])),
        }
        for ident, fields in _records(read("cran.all.1400"))
    ]
    ids = [doc["_id"] for doc in corpus]
    if len(set(ids)) != len(ids):
        raise ValueError("cran.all.1400: a document id repeats")
    # Numbered by position: cranqrel's query numbers are 1..225, cran.qry's .I are not.
    queries = [
        {"_id": str(position), "text": _joined(fields.get(".W", []))}
        for position, (_, fields) in enumerate(_records(read("cran.qry")), start=1)
    ]
    if not all(query["text"] for query in queries):
        raise ValueError("cran.qry: a query has no text")
    known_docs, known_queries = set(ids), {query["_id"] for query in queries}
    qrels: dict[tuple[str, str], int] = {}
    dropped = 0
    for number, line in enumerate(read("cranqrel"), start=1):
        if not line.strip():
            continue
        query_id, doc_id, grade = line.split()
        if query_id not in known_queries or doc_id not in known_docs:
            raise ValueError(f"cranqrel line {number}: unknown query or document: {line!r}")
        if grade == "-1":  # not a relevance grade: one such line a query
            dropped += 1
            continue
        if grade not in ("1", "2", "3", "4") or (query_id, doc_id) in qrels:
            raise ValueError(f"cranqrel line {number}: bad grade or repeated pair: {line!r}")
        qrels[query_id, doc_id] = 5 - int(grade)
    (target / "qrels").mkdir(parents=True, exist_ok=True)
    _write_jsonl(target / "corpus.jsonl", corpus)
    _write_jsonl(target / "queries.jsonl", queries)
    with (target / "qrels" / "test.tsv").open("w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for (query_id, doc_id), score in qrels.items():
            out.write(f"{query_id}\t{doc_id}\t{score}\n")
    return {
        "documents": len(corpus),
        "queries": len(queries),
        "judgements": len(qrels),
        "dropped (-1)": dropped,
    }


# -- A BEIR collection ----------------------------------------------------------------------


@dataclass(frozen=True)
class Collection:
    documents: list[tuple[str, str]]  # (id, title + newline + text), the empty ones left out
    queries: list[tuple[str, str]]  # (id, text): the split's queries with a judgement
    qrels: Qrels
    empty: list[str]  # the ids of the documents without title or text


def read_collection(directory: Path, split: str) -> Collection:
    documents, empty = [], []
    with (directory / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            title, text = doc.get("title") or "", doc.get("text") or ""
            if title.strip() or text.strip():
                documents.append((str(doc["_id"]), f"{title}\n{text}" if title else text))
            else:
                empty.append(str(doc["_id"]))
    qrels: Qrels = {}
    with (directory / "qrels" / f"{split}.tsv").open(encoding="utf-8") as lines:
        next(lines)  # the header
        for line in lines:
            query_id, doc_id, score = line.rstrip("\n").split("\t")
            qrels.setdefault(query_id, {})[doc_id] = int(score)
    queries = []
    with (directory / "queries.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            query = json.loads(line)
            if str(query["_id"]) in qrels:
                queries.append((str(query["_id"]), query["text"]))
    return Collection(documents, queries, qrels, empty)


def ndcg_at_10(ranking: list[str], judged: dict[str, int]) -> float:
    """nDCG@10 with linear gains: sum of gain / log2(rank + 1), over the ideal ordering's."""
    dcg = sum(judged.get(doc, 0) / math.log2(i + 1) for i, doc in enumerate(ranking[:10], 1))
    ideal = sorted((gain for gain in judged.values() if gain > 0), reverse=True)[:10]
    idcg = sum(gain / math.log2(i + 1) for i, gain in enumerate(ideal, 1))
    return dcg / idcg if idcg else 0.0


def quantile(samples: list[float], q: float) -> float:
    """Linear-interpolation quantile (the 'inclusive' method of numpy's default)."""
    return statistics.quantiles(sorted(samples), n=100, method="inclusive")[int(q * 100) - 1]


# -- The systems ----------------------------------------------------------------------------


@dataclass
class System:
    name: str
    search: Searcher
    build_s: float
    first_ms: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    rankings: dict[str, list[str]] = field(default_factory=dict)


def hotmem_searcher(store: hotmem.MemoryStore, profile: str, limit: int) -> Searcher:
    def search(query: str) -> list[str]:
        found = hotmem.search_memories(store, query, profile=profile, limit=limit)
        return [result.memory_id for result in found]

    return search


def bm25s_system(documents: list[tuple[str, str]], limit: int) -> System:
    stemmer = Stemmer.Stemmer("english")
    start = time.perf_counter()
    tokens = bm25s.tokenize(
        [text for _, text in documents], stopwords="en", stemmer=stemmer, show_progress=False
    )
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    build_s = time.perf_counter() - start
    ids = [doc_id for doc_id, _ in documents]

    def search(query: str) -> list[str]:
        query_tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        found, scores = retriever.retrieve(
            query_tokens, k=min(limit, len(ids)), show_progress=False, n_threads=0
        )
        return [ids[i] for i, score in zip(found[0], scores[0], strict=True) if score > 0]

    return System("bm25s (BM25 Lucene, en stopwords, Snowball stemmer)", search, build_s)


def measure(systems: list[System], queries: list[tuple[str, str]], rounds: int) -> None:
    """Warm up each system on the first query, then time every query, interleaved."""
    for system in systems:
        start = time.perf_counter()
        system.search(queries[0][1])
        system.first_ms = (time.perf_counter() - start) * 1000
    for round_ in range(rounds):
        for i, (query_id, text) in enumerate(queries):
            shift = (i + round_) % len(systems)
            for system in systems[shift:] + systems[:shift]:
                start = time.perf_counter()
                ranking = system.search(text)
                system.latencies_ms.append((time.perf_counter() - start) * 1000)
                system.rankings[query_id] = ranking


def _where(file: str, line: int, function: str) -> str:
    if file == "~":  # a built-in
        return function
    path = Path(file)
    for root in (ROOT / "src", ROOT, Path(os.__file__).parent):
        if path.is_relative_to(root):
            return f"{path.relative_to(root)}:{line}({function})"
    return f"{path.name}:{line}({function})"


def profile_search(search: Searcher, system: System, queries: list[tuple[str, str]]) -> str:
    """cProfile of one warm search, of the query at ``system``'s median latency, after five
    others: the top 15 functions by total (own) time, as a Markdown table."""
    order = sorted(range(len(queries)), key=system.latencies_ms[: len(queries)].__getitem__)
    median = order[len(order) // 2]
    for _, text in queries[:5]:
        search(text)
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    search(queries[median][1])
    profiler.disable()
    elapsed_ms = (time.perf_counter() - start) * 1000
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    rows = sorted(stats.items(), key=lambda item: item[1][2], reverse=True)[:15]
    lines = [
        f"query {queries[median][0]} ({elapsed_ms:.2f} ms under the profiler, "
        f"{sum(row[2] for row in stats.values()) * 1000:.2f} ms of own time in "
        f"{sum(row[1] for row in stats.values())} calls)\n",
        "| function | calls | own time (µs) | cumulative (µs) |",
        "|---|---:|---:|---:|",
    ]
    for (file, line, function), (_, calls, own, cumulative, _) in rows:
        where = _where(file, line, function).replace("|", "\\|")
        lines.append(f"| `{where}` | {calls} | {own * 1e6:.0f} | {cumulative * 1e6:.0f} |")
    return "\n".join(lines)


def report(systems: list[System], collection: Collection) -> None:
    reference = systems[-1]
    ref_p50 = quantile(reference.latencies_ms, 0.50)
    ref_p95 = quantile(reference.latencies_ms, 0.95)
    print(
        "| system | build (s) | first query (ms) | p50 (ms) | p95 (ms) "
        "| p50 / bm25s | p95 / bm25s | nDCG@10 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for system in systems:
        p50 = quantile(system.latencies_ms, 0.50)
        p95 = quantile(system.latencies_ms, 0.95)
        ndcg = statistics.fmean(
            ndcg_at_10(system.rankings[query_id], collection.qrels[query_id])
            for query_id, _ in collection.queries
        )
        print(
            f"| {system.name} | {system.build_s:.2f} | {system.first_ms:.1f} | {p50:.2f} "
            f"| {p95:.2f} | {p50 / ref_p50:.1f}x | {p95 / ref_p95:.1f}x | {ndcg:.4f} |"
        )


def bench(collection: Collection, limit: int, rounds: int, cprofile: bool) -> None:
    memories = [
        {"fact": text, "identifier": IDENTIFIER, "memory_id": doc_id}
        for doc_id, text in collection.documents
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "collection.db"
        with hotmem.open_store(path, accelerator="off") as writer:
            start = time.perf_counter()
            writer.add_many(memories)
            build_s = time.perf_counter() - start
        with (
            hotmem.open_store(path, accelerator="numpy") as fast,
            hotmem.open_store(path, accelerator="off") as plain,
        ):
            systems = [
                System(
                    f"HotMem {profile}, accelerator={name}",
                    hotmem_searcher(store, profile, limit),
                    build_s,
                )
                for profile in ("bm25-only", "default")
                for name, store in (("numpy", fast), ("off", plain))
            ]
            systems.append(bm25s_system(collection.documents, limit))
            measure(systems, collection.queries, rounds)
            report(systems, collection)
            for profile in ("bm25-only", "default"):
                numpy_, off = (s for s in systems if s.name.startswith(f"HotMem {profile},"))
                differ = sum(numpy_.rankings[q] != off.rankings[q] for q in off.rankings)
                print(f"\n{profile}: rankings differ between numpy and off on {differ} queries")
            if cprofile:
                print("\ncProfile, one warm `bm25-only` search (accelerator=numpy), ", end="")
                search = hotmem_searcher(fast, "bm25-only", limit)
                print(profile_search(search, systems[0], collection.queries))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, required=True, help="a BEIR directory")
    parser.add_argument("--split", default="test", help="qrels/<split>.tsv (default: test)")
    parser.add_argument("--limit", type=int, default=100, help="results a search returns")
    parser.add_argument("--rounds", type=int, default=1, help="timed passes over the queries")
    parser.add_argument(
        "--convert-from",
        type=Path,
        metavar="DIR",
        help="first write --collection from cran.all.1400, cran.qry and cranqrel in DIR",
    )
    parser.add_argument("--convert-only", action="store_true", help="stop after converting")
    parser.add_argument("--cprofile", action="store_true", help="profile one bm25-only search")
    args = parser.parse_args()
    if not 1 <= args.limit <= hotmem.MAX_LIMIT or args.rounds < 1:
        parser.error(f"--limit must be in 1..{hotmem.MAX_LIMIT:,} and --rounds at least 1")
    if args.convert_from is not None:
        counts = convert_cranfield(args.convert_from, args.collection)
        print(f"wrote {args.collection}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
        if args.convert_only:
            return
    collection = read_collection(args.collection, args.split)
    load = os.getloadavg()
    print(
        f"{args.collection}: {len(collection.documents):,} documents, "
        f"{len(collection.empty)} empty ones left out ({', '.join(collection.empty)}), "
        f"{len(collection.queries)} queries ({args.split}), "
        f"{sum(map(len, collection.qrels.values())):,} judgements; Python "
        f"{platform.python_version()}, numpy {np.__version__}, bm25s {bm25s.__version__}, "
        f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n",
        flush=True,
    )
    bench(collection, args.limit, args.rounds, args.cprofile)
    load = os.getloadavg()
    print(f"\nload average after the run: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
