"""The semantic embedder on every core: the same bytes for any thread count and any batching,
and progress as its model runs finish (``docs/semantic.md``, Threads and Determinism).

The reference is each text embedded alone on one thread; the optimised paths (many texts at
once, 2 and 3 worker threads, other token budgets, other orders) are compared with it bit
for bit on this machine.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import hotmem
from hotmem.embedding.registry import default_threads
from hotmem.embedding.semantic import onnx_embedder
from hotmem.embedding.semantic.onnx_embedder import MAX_TOKENS, OnnxEmbedder
from hotmem.store import memory_store

WORDS = (
    "invoice approval backup retention deploy rollback quarterly report kettle copper Lisbon "
    "Oslo office badge payroll audit ticket escalation nightly cluster staging vendor refund"
).split()


def _text(seed: int, words: int) -> str:
    return " ".join(WORDS[(seed * 7 + 3 * i + i * i) % len(WORDS)] for i in range(words))


#: 36 texts from empty to past the 256-token truncation, several sharing a token count.
TEXTS = (
    "",
    "?!",
    "Straße, café — 東京 😀",
    "Who approves large invoices?",
    "Who approves large refunds?",
    *(_text(seed, words) for seed, words in enumerate((1, 2, 3, 3, 5, 8, 8, 13, 21, 34))),
    *(_text(seed, words) for seed, words in enumerate((40, 55, 55, 89, 120, 144, 180, 200), 20)),
    *(_text(seed, 250 + seed) for seed in range(6)),  # 256 tokens: truncated, one length
    *(f"Memory number {n} of the copper kettle ledger." for n in range(7)),
)


def embedder(threads: int) -> OnnxEmbedder:
    loaded = hotmem.get_embedder(hotmem.SEMANTIC_MODEL, threads=threads)
    assert isinstance(loaded, OnnxEmbedder)
    return loaded


@pytest.fixture(scope="module")
def reference() -> dict[str, bytes]:
    one = embedder(1)
    return {text: one.embed_many([text])[0] for text in TEXTS}


def test_the_texts_cover_short_long_truncated_and_shared_lengths() -> None:
    lengths = [len(embedder(1).tokens(text)) for text in TEXTS]
    assert min(lengths) == 2
    assert lengths.count(MAX_TOKENS) >= 6
    assert len(set(lengths)) < len(lengths)  # some runs hold several texts


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_every_thread_count_gives_the_bytes_of_one_text_on_one_thread(
    reference: dict[str, bytes], threads: int
) -> None:
    found = embedder(threads)
    assert found.threads == threads
    assert found.embed_many(TEXTS) == [reference[text] for text in TEXTS]
    assert found.embed_many(TEXTS[::-1]) == [reference[text] for text in TEXTS[::-1]]


@settings(max_examples=12, deadline=None)
@given(
    picked=st.lists(st.sampled_from(TEXTS), max_size=24),
    threads=st.sampled_from([1, 2, 3]),
    budget=st.sampled_from([1, 64, 300, onnx_embedder.TOKEN_BUDGET, 4096]),
)
@example(picked=[], threads=2, budget=onnx_embedder.TOKEN_BUDGET)
@example(picked=[TEXTS[-1]] * 5, threads=3, budget=1)
@example(picked=list(TEXTS[-13:-7]), threads=2, budget=4096)  # six 256-token texts at once
def test_any_batch_any_budget_any_threads_gives_the_same_bytes(
    reference: dict[str, bytes], picked: list[str], threads: int, budget: int
) -> None:
    with mock.patch.object(onnx_embedder, "TOKEN_BUDGET", budget):
        assert embedder(threads).embed_many(picked) == [reference[text] for text in picked]


def test_the_default_is_every_cpu_of_the_process() -> None:
    assert default_threads() >= 1
    assert embedder(default_threads()) is hotmem.get_embedder(hotmem.SEMANTIC_MODEL)
    assert embedder(default_threads()).threads == default_threads()


@pytest.mark.parametrize("threads", [0, -1, True, 1.5, "2"])
def test_a_thread_count_is_a_positive_integer(threads: object) -> None:
    with pytest.raises(hotmem.ValidationError) as raised:
        hotmem.get_embedder(hotmem.SEMANTIC_MODEL, threads=threads)  # type: ignore[arg-type]
    assert str(raised.value) == (
        f"expected threads to be a positive integer or None, found threads={threads!r}"
    )


def _recorder() -> tuple[list[tuple[int, int | None]], hotmem.ProgressCallback]:
    seen: list[tuple[int, int | None]] = []
    return seen, lambda done, total: seen.append((done, total))


def _forward_to(seen: list[tuple[int, int | None]], total: int | None) -> None:
    """Calls only move forward, and the last one is (total, total)."""
    assert seen, "no progress reported"
    dones = [done for done, _ in seen]
    assert dones == sorted(set(dones))  # strictly increasing
    assert all(t == total for _, t in seen)
    assert seen[-1][0] == (total if total is not None else seen[-1][0])


def test_embed_many_reports_each_model_run() -> None:
    seen, progress = _recorder()
    found = embedder(2).embed_many(TEXTS, progress=progress)
    assert found == embedder(2).embed_many(TEXTS)
    lengths = [len(embedder(2).tokens(text)) for text in TEXTS]
    runs = list(onnx_embedder.runs(lengths, onnx_embedder.TOKEN_BUDGET))
    assert seen == [(done, len(TEXTS)) for done in itertools.accumulate(map(len, runs))]
    assert seen[-1] == (len(TEXTS), len(TEXTS))
    embedder(2).embed_many([], progress=progress)  # nothing to embed: nothing reported
    assert len(seen) == len(runs)


#: What a store holds (a fact is never blank).
FACTS = TEXTS[1:]


def _memories(count: int) -> Iterator[dict[str, str]]:
    for n in range(count):
        yield {
            "memory_id": f"m-{n:02d}",
            "identifier": "acme",
            "fact": FACTS[n % len(FACTS)],
            "created_at": "2026-01-01T00:00:00Z",
        }


@pytest.mark.parametrize("sized", [True, False])
def test_add_many_into_a_semantic_store_reports_progress_up_to_the_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: dict[str, bytes], sized: bool
) -> None:
    monkeypatch.setattr(memory_store, "ADD_BATCH", 16)  # three batches of 40 memories
    with hotmem.open_store(tmp_path / "s.db") as store:
        store.add_space(hotmem.SEMANTIC_MODEL)
        seen, progress = _recorder()
        items = list(_memories(40)) if sized else _memories(40)
        store.add_many(items, progress=progress)
        _forward_to(seen, 40 if sized else None)
        assert seen[0] == (0, 40 if sized else None)
        assert seen[-1][0] == 40
        assert {16, 32} <= {done for done, _ in seen}  # each batch, once inserted
        assert len(seen) > 4  # and the model runs within the batches
        vectors = dict(
            store.connection.execute(
                "SELECT m.fact, v.vector FROM space_vectors AS v JOIN memories AS m "
                "ON m.rowid = v.memory_rowid WHERE v.space = ?",
                (hotmem.SEMANTIC_MODEL,),
            ).fetchall()
        )
        assert vectors == {text: reference[text] for text in FACTS}


def test_add_many_into_a_hash_only_store_reports_each_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_store, "ADD_BATCH", 16)
    with hotmem.open_store(tmp_path / "s.db") as store:
        seen, progress = _recorder()
        store.add_many(list(_memories(40)), progress=progress)
    assert seen == [(0, 40), (16, 40), (32, 40), (40, 40)]


@pytest.mark.parametrize("sized", [True, False])
def test_add_stream_reports_progress_as_add_many_does(tmp_path: Path, sized: bool) -> None:
    with hotmem.open_store(tmp_path / "s.db") as store:
        seen, progress = _recorder()
        items = list(_memories(40)) if sized else _memories(40)
        assert store.add_stream(items, batch_size=16, progress=progress) == 40
    total = 40 if sized else None
    assert seen == [(0, total), (16, total), (32, total), (40, total)]


@pytest.mark.parametrize("threads", [1, 3])
def test_reindex_reports_forward_to_the_total_with_any_threads(
    tmp_path: Path, reference: dict[str, bytes], threads: int
) -> None:
    with hotmem.open_store(tmp_path / "s.db") as store:
        store.add_many(list(_memories(len(FACTS))))
        seen, progress = _recorder()
        store.add_space(hotmem.SEMANTIC_MODEL, progress=progress, batch_size=10, threads=threads)
        _forward_to(seen, len(FACTS))
        assert seen[0] == (0, len(FACTS))
        assert len(seen) > len(FACTS) // 10 + 1  # more often than once a batch
        seen.clear()
        assert store.reindex(hotmem.SEMANTIC_MODEL, rebuild=True, progress=progress) == len(FACTS)
        _forward_to(seen, len(FACTS))
        found = dict(
            store.connection.execute(
                "SELECT m.fact, v.vector FROM space_vectors AS v JOIN memories AS m "
                "ON m.rowid = v.memory_rowid WHERE v.space = ?",
                (hotmem.SEMANTIC_MODEL,),
            ).fetchall()
        )
        assert found == {text: reference[text] for text in FACTS}


def test_reindex_refuses_a_bad_thread_count(tmp_path: Path) -> None:
    with hotmem.open_store(tmp_path / "s.db") as store:
        store.add_space(hotmem.SEMANTIC_MODEL)
        with pytest.raises(hotmem.ValidationError, match="found threads=0"):
            store.reindex(hotmem.SEMANTIC_MODEL, threads=0)
        with pytest.raises(hotmem.ValidationError, match="found threads=0"):
            store.add_space(hotmem.SEMANTIC_MODEL, threads=0)
