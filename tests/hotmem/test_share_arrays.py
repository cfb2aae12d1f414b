"""numpy's form of a query's reads holds what the dicts hold: the same keys in the same order,
the same bits (``reads.py``, ``share_arrays.py``)."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping
from functools import partial

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hotmem
from hotmem import bm25, lexical, vectors
from hotmem.accelerator import MatrixScan
from hotmem.bounds import Problem
from hotmem.reads import DICTS, Keys
from hotmem.share_arrays import ARRAYS, MemberArray, ShareArrays

ROWIDS = 40
#: rowid -> position, as the index keeps it: an array indexed by rowid, or a dict.
POSITIONS = [(7 * rowid + 3) % ROWIDS for rowid in range(ROWIDS)]


def _listed(found: Mapping[int, float]) -> list[tuple[int, str]]:
    """Keys in order with their values' bits."""
    return [(key, found[key].hex()) for key in found]


def _table(values: list[int], as_array: bool) -> Keys:
    return array("i", values) if as_array else dict(enumerate(values))


occurrences = st.lists(st.integers(0, ROWIDS - 1), max_size=60)


@st.composite
def joined(draw: st.DrawFn) -> lexical.Joined:
    """A term's occurrences as ``lexical.joined`` reads them: mostly by rowid, as the index
    lists them, sometimes in another order; a string, or rows past SQLite's length limit."""
    rowids = draw(occurrences)
    if draw(st.booleans()):
        rowids.sort()
    if draw(st.booleans()) or not rowids:
        return rowids
    return ",".join(map(str, rowids))


@given(
    terms=st.lists(joined(), min_size=1, max_size=4),
    lengths=st.lists(st.integers(1, 300), min_size=ROWIDS, max_size=ROWIDS),
    lengths_array=st.booleans(),
    keyed=st.sampled_from(["rowid", "array", "dict"]),
    weight=st.floats(1e-6, 12.0),
    avgdl=st.floats(0.5, 200.0),
    scope=st.tuples(st.integers(0, ROWIDS), st.integers(0, ROWIDS)),
)
def test_arrays_hold_what_dicts_hold(
    terms: list[lexical.Joined],
    lengths: list[int],
    lengths_array: bool,
    keyed: str,
    weight: float,
    avgdl: float,
    scope: tuple[int, int],
) -> None:
    share = partial(bm25._phrase_share, weight, avgdl)
    tokens = _table(lengths, lengths_array)
    keys = None if keyed == "rowid" else _table(POSITIONS, keyed == "array")
    window = range(min(scope), max(scope))
    totals: list[Mapping[int, float]] = [{}, {}]
    for docs in terms:
        each = [form.shares(docs, tokens, keys, share) for form in (DICTS, ARRAYS)]
        assert isinstance(each[1], ShareArrays)
        assert _listed(each[1]) == _listed(each[0])
        totals = [
            form.added(total, form.within(found, window, ROWIDS))
            for form, total, found in zip((DICTS, ARRAYS), totals, each, strict=True)
        ]
        assert _listed(totals[1]) == _listed(totals[0])
        assert ARRAYS.largest(totals[1]) == DICTS.largest(totals[0])
        if keys is not None:
            once = list(dict.fromkeys(lexical.parsed(docs)))  # as lexical.phrase_members reads
            members = [form.members(once, keys, window, ROWIDS) for form in (DICTS, ARRAYS)]
            assert set(members[1]) == members[0]
            assert len(members[1]) == len(set(members[1]))  # each once


def test_a_share_is_the_expression_of_bm25() -> None:
    # The occurrences counted by memory (3, 1 and 2 here), each share the stdlib's bits.
    tokens = array("i", [0, 10, 4, 7])
    share = partial(bm25._phrase_share, 1.7, 6.5)
    found = ARRAYS.shares("1,1,1,2,3,3", tokens, None, share)
    assert list(found) == [1, 2, 3]
    assert [found[r].hex() for r in found] == [
        bm25._share(1.7, n, tokens[r], 6.5).hex() for r, n in ((1, 3), (2, 1), (3, 2))
    ]
    unsorted = ARRAYS.shares("3,1,3,2,1,1", tokens, None, share)
    assert list(unsorted) == [3, 1, 2]  # first occurrence first, as collections.Counter
    assert dict(unsorted) == dict(found)


def test_sums_over_sparse_keys_need_no_dense_index() -> None:
    # Rowid keys far apart (no positions): the keys are matched by sorting, not a dense array.
    far = ShareArrays(np.array([2**40, 5, 2**50]), np.array([1.5, 0.25, 2.0]))
    more = ShareArrays(np.array([2**50, 7, 5]), np.array([0.5, 3.0, 0.125]))
    summed = ARRAYS.added(far, more)
    assert list(summed.items()) == [(2**40, 1.5), (5, 0.375), (2**50, 2.5), (7, 3.0)]
    assert list(DICTS.added(dict(far), dict(more)).items()) == list(summed.items())


def test_the_containers_answer_one_by_one_too() -> None:
    shares = ShareArrays(np.array([4, 1]), np.array([0.5, 2.0]))
    assert shares == {4: 0.5, 1: 2.0}
    assert shares[1] == 2.0
    assert 4 in shares
    assert 3 not in shares
    assert len(shares) == 2
    with pytest.raises(KeyError):
        shares[3]
    members = MemberArray(np.array([9, 2]))
    assert members == {2, 9}
    assert 2 in members
    assert 3 not in members
    assert len(members) == 2
    assert {1, 2} - members == {1}
    assert ARRAYS.largest({}) == 0.0
    assert ARRAYS.largest(ARRAYS.scores({})) == 0.0


def test_a_malformed_string_is_parsed_as_python_parses_it() -> None:
    # np.fromstring stops at what it cannot read; the count of commas catches it and the
    # column is parsed by int(), which raises as the dicts' form would.
    with pytest.raises(ValueError, match="invalid literal"):
        ARRAYS.shares("1,2,x", array("i", [0, 1, 1]), None, partial(bm25._phrase_share, 1.0, 1.0))


def test_the_numpy_form_passes_the_self_check() -> None:
    assert bm25.verified(ARRAYS)


@pytest.fixture
def _accelerate_small_scopes() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(vectors, "_ACCELERATE_FROM", 0)
        yield


@pytest.mark.usefixtures("_accelerate_small_scopes")
def test_a_numpy_search_hands_its_reads_to_the_bounds_as_arrays() -> None:
    # "common" is in every memory, so it is deferred; its members and the rare terms' shares
    # reach the numpy bounds pass as the arrays they were made as.
    rows = [
        {
            "fact": " ".join(["common"] + ["invoice"] * (i % 9 == 0) + ["deploy"] * (i % 4 == 0)),
            "identifier": "a",
            "importance": (i % 5) / 5,
        }
        for i in range(300)
    ]
    seen: list[Problem] = []
    finalists = MatrixScan.finalists

    def recorded(self: MatrixScan, problem: Problem) -> object:
        seen.append(problem)
        return finalists(self, problem)

    with hotmem.open_store(":memory:", accelerator="numpy") as store:
        store.add_many(rows)
        expected = [r.to_dict() for r in hotmem.search_memories(store, "invoice deploy common")]
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(MatrixScan, "finalists", recorded)
            got = [r.to_dict() for r in hotmem.search_memories(store, "invoice deploy common")]
    assert got == expected
    assert len(got) == 5
    assert seen
    assert all(isinstance(p.partial, ShareArrays) for p in seen)
    assert all(isinstance(m, MemberArray) for p in seen for _, m in p.deferred.known)
