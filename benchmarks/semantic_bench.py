"""Semantic embedder benchmark: throughput against raw onnxruntime, load time, memory.

Run: ``uv run python benchmarks/semantic_bench.py [--count 1000] [--long 100] [--repeats 3]
[--search-sizes 10000,100000] [--distinct 2000]``

- **Throughput**: ``embed_many`` over ``--count`` synthetic memories (``benchmarks/synthetic.py``),
  over the facts and queries of both committed fixtures, and over ``--long`` texts of 300
  words (truncated to 256 tokens, the size of the abstracts of a public test collection),
  against **raw onnxruntime**: an ``InferenceSession`` of the same model file with
  onnxruntime's default options, running the same batches (texts grouped by token count, the
  embedder's token budget) on token ids prepared beforehand, with nothing else (no
  tokenisation, pooling, normalisation or packing). Two settings: **all cores** (ours with its
  default, every CPU of the process; raw with onnxruntime's default ``intra_op_num_threads=0``,
  which is every physical core) and **one thread** (both with ``threads=1`` /
  ``intra_op_num_threads=1``). Target: ours >= 0.8x raw with all cores.
- **Query latency**: one short question embedded alone (what a search pays), p50 and p95.
- **Load**: in a fresh process, importing numpy/onnxruntime/tokenizers, reading and hashing the
  model files, and building the tokenizer and the session; and peak RSS after loading and after
  embedding ``--count`` texts.

- **Store ingest**: ``add_many`` of the ``--count`` synthetic memories into a new store that
  has the semantic space (so every memory is embedded in both spaces and written with its
  vectors in one transaction), against raw inference on the same texts' batches. Target:
  ours >= 0.8x raw.
- **Semantic search**: p50/p95 of ``search_memories(..., profile="semantic")`` over stores of
  ``--search-sizes`` synthetic memories, query embedding included, unscoped and scoped to one
  identifier (the first search, which loads the space's matrix, is reported apart), beside
  ``semantic-only`` and ``default`` on the same store (``default`` is the lexical and hash-v1
  work the hybrid shares). Target: p95 <= 60 ms at 100k. Embedding 100k memories at ~100 a
  second takes too long here, so the search stores get their semantic vectors cheaply:
  ``--distinct`` distinct synthetic facts are embedded, and memory ``i`` is given the vector of
  fact ``i mod distinct`` (written straight into ``space_vectors``). Vectors repeat; the work
  of a search (one matrix product over the scope, the bounded top k, exact cosines of the
  survivors) is the same.

Best of ``--repeats`` for throughput and load, by wall-clock (the work runs on several
threads), ours and raw interleaved (one of each in turn) so that a change of load on the
machine hits both; the load average (``os.getloadavg``) is printed before and after. Figures
are local diagnostics for this machine, not guarantees.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import synthetic_memories, synthetic_queries

import hotmem

ROOT = Path(__file__).resolve().parent.parent

FIXTURES = (
    ROOT / "benchmarks" / "retrieval",
    ROOT / "benchmarks" / "retrieval" / "external" / "kgh-retrieval",
)

# Peak RSS from /proc (VmHWM): getrusage's ru_maxrss can carry the parent's figure into a child.
LOAD_PROBE = """
import json, sys, time
def status(field):
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) for line in lines if line.startswith(field + ":"))
sys.path.insert(0, sys.argv[1])
from synthetic import synthetic_memories
start = time.perf_counter()
import numpy, onnxruntime, tokenizers
imported = time.perf_counter()
import hotmem
from hotmem.embedding.semantic import sources
files = sources.read_model_files(None)
read = time.perf_counter()
from hotmem.embedding.semantic.onnx_embedder import OnnxEmbedder
embedder = OnnxEmbedder(hotmem.SEMANTIC_MODEL, files)
del files
built = time.perf_counter()
loaded_rss, loaded_peak = status("VmRSS"), status("VmHWM")
embedder.embed_many([m["fact"] for m in synthetic_memories(int(sys.argv[2]))])
print(json.dumps({
    "import_s": imported - start, "read_hash_s": read - imported, "build_s": built - read,
    "total_s": built - start, "loaded_rss_kib": loaded_rss, "loaded_peak_kib": loaded_peak,
    "rss_kib": status("VmRSS"), "peak_kib": status("VmHWM"),
}))
"""


def fixture_texts() -> list[str]:
    texts: list[str] = []
    for directory in FIXTURES:
        for name, field in (("corpus.jsonl", "fact"), ("queries.jsonl", "query")):
            lines = (directory / name).read_text(encoding="utf-8").splitlines()
            texts.extend(json.loads(line)[field] for line in lines if line.strip())
    return texts


def long_texts(count: int, words: int = 300) -> list[str]:
    """``count`` texts of ``words`` words drawn from the synthetic memories (seeded)."""
    pool = [word for memory in synthetic_memories(500) for word in memory["fact"].split()]
    draw = random.Random(29)
    return [" ".join(draw.choice(pool) for _ in range(words)) for _ in range(count)]


def batches(embedder: object, texts: list[str]) -> list[object]:
    """The embedder's own batches of token ids (same grouping, same budget), as feeds."""
    import numpy as np

    from hotmem.embedding.semantic import onnx_embedder

    rows = [embedder.tokens(text) for text in texts]  # type: ignore[attr-defined]
    return [
        embedder.feeds(np.array([rows[i] for i in run], dtype=np.int64))  # type: ignore[attr-defined]
        for run in onnx_embedder.runs([len(row) for row in rows], onnx_embedder.TOKEN_BUDGET)
    ]


def raw_session(threads: int | None) -> tuple[object, str]:
    """Raw onnxruntime on the pinned model file: default session options (all cores) or
    ``threads`` intra-op threads; (session, name of its first output)."""
    import onnxruntime as ort

    from hotmem.embedding.semantic import sources

    options = ort.SessionOptions()
    options.log_severity_level = 3
    if threads is not None:
        options.intra_op_num_threads = threads
    session = ort.InferenceSession(
        sources.read_model_files(None).model, options, providers=["CPUExecutionProvider"]
    )
    return session, session.get_outputs()[0].name


def timed(work: Callable[[], object]) -> float:
    """Wall seconds of one call."""
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def interleaved(works: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Best wall seconds of each work, run one of each in turn ``repeats`` times."""
    samples: dict[str, list[float]] = {name: [] for name in works}
    for _ in range(repeats):
        for name, work in works.items():
            samples[name].append(timed(work))
    return {name: min(found) for name, found in samples.items()}


def throughput(
    embedder: object, raw: tuple[object, str], texts: list[str], repeats: int
) -> dict[str, float]:
    """Best embeddings/s of ``embed_many`` and of raw ``session.run`` on the same batches."""
    feeds = batches(embedder, texts)
    session, output = raw

    def bare() -> None:
        for feed in feeds:
            session.run([output], feed)  # type: ignore[attr-defined]

    best = interleaved(
        {"ours": lambda: embedder.embed_many(texts), "raw": bare},  # type: ignore[attr-defined]
        repeats,
    )
    return {name: len(texts) / seconds for name, seconds in best.items()}


def store_ingest(
    embedder: object, raw: tuple[object, str], memories: list[dict], repeats: int
) -> dict[str, float]:
    """Best memories/s of ``add_many`` into a store with the semantic space (every core), and
    of raw onnxruntime on the same facts' batches."""
    feeds = batches(embedder, [m["fact"] for m in memories])
    session, output = raw

    def bare() -> None:
        for feed in feeds:
            session.run([output], feed)  # type: ignore[attr-defined]

    def ours() -> None:
        with (
            tempfile.TemporaryDirectory() as directory,
            hotmem.open_store(Path(directory) / "ingest.db") as store,
        ):
            store.add_space(hotmem.SEMANTIC_MODEL)
            store.add_many(memories)

    best = interleaved({"ours": ours, "raw": bare}, repeats)
    return {name: len(memories) / seconds for name, seconds in best.items()}


def semantic_store(path: Path, size: int, embedder: object, distinct: int) -> None:
    """A store of ``size`` synthetic memories with the semantic space, whose vectors repeat
    those of ``distinct`` embedded facts (see the module docstring)."""
    from hotmem.store import spaces

    memories = synthetic_memories(size)
    vectors = embedder.embed_many([m["fact"] for m in memories[:distinct]])  # type: ignore[attr-defined]
    with hotmem.open_store(path) as store:
        store.add_many(memories)
        with store.connection:  # one transaction: register the space, write its vectors
            store.connection.execute("BEGIN IMMEDIATE")
            spaces.write_space(store.connection, spaces.space_of(embedder))  # type: ignore[arg-type]
            rowids = [r for (r,) in store.connection.execute("SELECT rowid FROM memories")]
            spaces.insert_vectors(
                store.connection,
                hotmem.SEMANTIC_MODEL,
                ((rowid, vectors[i % distinct]) for i, rowid in enumerate(rowids)),
            )


SEARCH_PROFILES = ("semantic", "semantic-only", "default")


def semantic_search(path: Path, queries: list[str]) -> dict[str, dict[str, float]]:
    """By profile: first-search ms (loads the index or matrix), then p50/p95 unscoped and
    scoped to one identifier."""
    found: dict[str, dict[str, float]] = {}
    for profile in SEARCH_PROFILES:
        with hotmem.open_store(path) as store:
            identifier = next(iter(store.identifiers()))
            start = time.perf_counter()
            hotmem.search_memories(store, queries[0], profile=profile)
            figures = {"first_ms": (time.perf_counter() - start) * 1000}
            for label, scope in (("unscoped", None), ("scoped", identifier)):
                samples = []
                for question in queries:
                    start = time.perf_counter()
                    hotmem.search_memories(store, question, identifier=scope, profile=profile)
                    samples.append((time.perf_counter() - start) * 1000)
                cuts = statistics.quantiles(samples, n=100, method="inclusive")
                figures[f"{label}_p50"], figures[f"{label}_p95"] = cuts[49], cuts[94]
        found[profile] = figures
    return found


def query_latency(embedder: object, count: int) -> tuple[float, float]:
    samples = []
    for question in synthetic_queries(count):
        start = time.perf_counter()
        embedder.embed_many([question])  # type: ignore[attr-defined]
        samples.append((time.perf_counter() - start) * 1000)
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return cuts[49], cuts[94]


def load(count: int, repeats: int) -> dict[str, float]:
    runs = []
    for _ in range(repeats):
        completed = subprocess.run(
            [sys.executable, "-c", LOAD_PROBE, str(Path(__file__).resolve().parent), str(count)],
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(completed.stdout))
    return min(runs, key=lambda run: run["total_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=1000, help="synthetic memories")
    parser.add_argument("--long", type=int, default=100, help="texts of 300 words")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--search-sizes", default="10000,100000", help="comma-separated")
    parser.add_argument("--distinct", type=int, default=2000, help="facts embedded for search")
    parser.add_argument("--queries", type=int, default=200, help="searches a size")
    args = parser.parse_args()

    embedder = hotmem.get_embedder(hotmem.SEMANTIC_MODEL)
    single = hotmem.get_embedder(hotmem.SEMANTIC_MODEL, threads=1)
    cores = embedder.threads  # type: ignore[attr-defined]
    raw_all, raw_one = raw_session(None), raw_session(1)
    synthetic = [memory["fact"] for memory in synthetic_memories(args.count)]
    load_before = os.getloadavg()
    print(
        f"model {embedder.model_id}, digest {embedder.digest[:12]}…; {os.cpu_count()} CPUs, "
        f"ours on {cores} threads (all cores) or 1; load average before "
        f"{' '.join(f'{x:.2f}' for x in load_before)}\n"
    )
    print(
        "| texts | n | mean tokens | threads | ours (emb/s) | raw onnxruntime (emb/s) "
        "| ours / raw |"
    )
    print("|---|---:|---:|---|---:|---:|---:|")
    sets = (
        ("synthetic memories", synthetic),
        ("fixture texts", fixture_texts()),
        ("300-word texts", long_texts(args.long)),
    )
    for label, texts in sets:
        tokens = statistics.mean(len(embedder.tokens(t)) for t in texts)  # type: ignore[attr-defined]
        for setting, ours, raw in (
            (f"all cores ({cores})", embedder, raw_all),
            ("1", single, raw_one),
        ):
            rates = throughput(ours, raw, texts, args.repeats)
            print(
                f"| {label} | {len(texts)} | {tokens:.1f} | {setting} | {rates['ours']:.1f} "
                f"| {rates['raw']:.1f} | {rates['ours'] / rates['raw']:.2f} |"
            )
    memories = synthetic_memories(args.count)
    rates = store_ingest(embedder, raw_all, memories, args.repeats)
    header = "store ingest, all cores | n | ours (memories/s) | raw onnxruntime (emb/s)"
    print(f"\n| {header} | ours / raw |")
    print("|---|---:|---:|---:|---:|")
    print(
        f"| add_many, hash-v1 + {embedder.model_id} | {len(memories)} | {rates['ours']:.0f} "
        f"| {rates['raw']:.0f} | {rates['ours'] / rates['raw']:.2f} |"
    )
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    sizes = [int(size) for size in args.search_sizes.split(",") if size]
    if sizes:
        print(
            f"\nsemantic search ({args.queries} synthetic questions, query embedding included; "
            f"vectors of {args.distinct} distinct embedded facts reused, memory i gets fact "
            f"i mod {args.distinct}'s)\n"
        )
        print(
            "| memories | profile | first search incl. load (ms) | p50 (ms) | p95 (ms) "
            "| scoped p50 (ms) | scoped p95 (ms) |"
        )
        print("|---:|---|---:|---:|---:|---:|---:|")
        queries = synthetic_queries(args.queries)
        for size in sizes:
            with tempfile.TemporaryDirectory() as directory:
                path = Path(directory) / "search.db"
                semantic_store(path, size, embedder, min(args.distinct, size))
                found = semantic_search(path, queries)
            for profile, r in found.items():
                print(
                    f"| {size:,} | {profile} | {r['first_ms']:.0f} | {r['unscoped_p50']:.1f} "
                    f"| {r['unscoped_p95']:.1f} | {r['scoped_p50']:.1f} "
                    f"| {r['scoped_p95']:.1f} |"
                )
    p50, p95 = query_latency(embedder, 200)
    print(f"\nquery embedding (one short question): p50 {p50:.2f} ms, p95 {p95:.2f} ms")
    figures = load(args.count, args.repeats)
    seconds = {key: f"{value:.2f} s" for key, value in figures.items() if key.endswith("_s")}
    print(
        f"load in a fresh process: {seconds['total_s']} (imports {seconds['import_s']}, "
        f"read + sha256 {seconds['read_hash_s']}, tokenizer + session {seconds['build_s']})"
    )
    mib = {key: value / 1024 for key, value in figures.items() if key.endswith("_kib")}
    print(
        f"RSS (peak): {mib['loaded_rss_kib']:.0f} MiB ({mib['loaded_peak_kib']:.0f}) loaded, "
        f"{mib['rss_kib']:.0f} MiB ({mib['peak_kib']:.0f}) after embedding {args.count} texts"
    )


if __name__ == "__main__":
    main()
