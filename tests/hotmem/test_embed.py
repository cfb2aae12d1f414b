"""hotmem-hash-v1: normalisation, hashing rule and golden vectors."""

from __future__ import annotations

import hashlib
import math
import struct
import unicodedata

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from hotmem.embedding.hash_v1 import (
    DIMENSION,
    MODEL_NAME,
    VECTOR_BYTES,
    bucket_and_sign,
    embed,
    embed_bytes,
    embed_many_bytes,
    normalise_text,
    pack_vector,
    trigrams,
    unpack_vector,
)


def reference_normalise(text: str) -> str:
    """Step 1 of docs/embedding.md, written as plainly as possible."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(c if unicodedata.category(c)[0] in "LMN" else " " for c in folded)
    return " ".join(part for part in kept.split(" ") if part)


def reference_embed(text: str) -> tuple[float, ...]:
    """The rule of docs/embedding.md, written as plainly as possible."""
    counts = [0] * DIMENSION
    padded = f" {reference_normalise(text)} "
    grams = [padded[i : i + 3] for i in range(len(padded) - 2)] if padded.strip() else []
    for gram in grams:
        h = int.from_bytes(hashlib.blake2b(gram.encode("utf-8"), digest_size=8).digest(), "little")
        counts[h % 64] += -1 if (h >> 6) & 1 else 1
    norm = math.sqrt(sum(c * c for c in counts))
    if norm == 0:
        return (0.0,) * DIMENSION
    return struct.unpack("<64f", struct.pack("<64f", *(c / norm for c in counts)))


def test_model_constants() -> None:
    assert (MODEL_NAME, DIMENSION, VECTOR_BYTES) == ("hotmem-hash-v1", 64, 256)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hello", "hello"),
        ("  Hello,\tWORLD!\n", "hello world"),
        ("Straße", "strasse"),
        ("ﬁle №5", "file no5"),  # NFKC expands the ligature and the numero sign
        ("İstanbul", "i̇stanbul"),  # casefold keeps the combining dot (a mark)
        ("東京 😀 タワー", "東京 タワー"),  # emoji is a symbol, not a letter
        ("snake_case-and.dots", "snake case and dots"),
        ("", ""),
        ("?!  ...", ""),
    ],
)
def test_normalise_text(text: str, expected: str) -> None:
    assert normalise_text(text) == expected
    assert reference_normalise(text) == expected


@given(st.text(max_size=80) | st.text(alphabet=st.characters(max_codepoint=127), max_size=80))
def test_normalise_text_follows_the_rule(text: str) -> None:
    assert normalise_text(text) == reference_normalise(text)


def test_every_ascii_character_is_normalised_as_the_rule_says() -> None:
    """ASCII text takes a table of its own (one bytes.translate): it must agree with the rule
    for each of the 128 code points, between letters and alone."""
    for code in range(128):
        for text in (chr(code), f"a{chr(code)}b", f"{chr(code)} Z{chr(code)}"):
            assert normalise_text(text) == reference_normalise(text), hex(code)


def test_trigrams_pad_with_spaces_and_keep_repeats() -> None:
    assert trigrams("aaaa") == [" aa", "aaa", "aaa", "aa "]
    assert trigrams("ab cd") == [" ab", "ab ", "b c", " cd", "cd "]
    assert trigrams("a") == [" a "]
    assert trigrams("") == []


@pytest.mark.parametrize(
    ("trigram", "bucket", "sign"),
    [(" he", 47, 1), ("hel", 0, -1), ("ell", 60, 1), ("llo", 5, -1), ("lo ", 20, -1)],
)
def test_bucket_and_sign_golden(trigram: str, bucket: int, sign: int) -> None:
    assert bucket_and_sign(trigram) == (bucket, sign)


# Golden vectors: SHA-256 of the packed little-endian float32 vector, and its non-zero entries.
GOLDEN = [
    (
        "hello",
        "487b5daa66eb469e903b12096aeb2a52cfa298e27902300461e428e591250fc1",
        {0: -1, 5: -1, 20: -1, 47: 1, 60: 1},
    ),
    (
        "Hello, World!",
        "06b9ce4e8e9952bd0f576bc748d354045c654844101180d3e7d4dbd0aa247a29",
        {0: -1, 5: -1, 28: 1, 30: 1, 32: -1, 45: -1, 47: 1, 53: 1, 60: 1},
    ),
    (
        "Straße 東京 😀",
        "51676ec38a49891b0e520b506b385efb4ad63f06dde71cc4d5ff49f071c94832",
        {1: -1, 5: 1, 12: -1, 29: 1, 35: -1, 36: 1, 41: 1, 49: -1, 55: 1, 63: 1},
    ),
    ("", "5341e6b2646979a70e57653007a1f310169421ec9bdd9f1a5648f75ade005af1", {}),
]


@pytest.mark.parametrize(("text", "sha256", "signs"), GOLDEN)
def test_golden_vectors(text: str, sha256: str, signs: dict[int, int]) -> None:
    vector = embed(text)
    assert hashlib.sha256(embed_bytes(text)).hexdigest() == sha256
    magnitude = struct.unpack("<f", struct.pack("<f", 1 / math.sqrt(len(signs))))[0] if signs else 0
    assert vector == tuple(signs.get(i, 0) * magnitude for i in range(DIMENSION))


def test_pack_round_trip_is_little_endian_float32() -> None:
    vector = embed("Acme invoices")
    blob = pack_vector(vector)
    assert len(blob) == 256
    assert blob == struct.pack("<64f", *vector)
    assert unpack_vector(blob) == vector


@given(st.text(max_size=200))
@example("")
@example(" ")
@example("a")
@example("aaaa aaaa")
@example("😀😀😀")
def test_embed_matches_the_documented_rule(text: str) -> None:
    vector = embed(text)
    assert vector == reference_embed(text)
    assert embed_bytes(text) == struct.pack("<64f", *vector)  # packed directly, same bits
    norm = math.sqrt(sum(x * x for x in vector))
    assert norm == 0.0 or abs(norm - 1.0) < 1e-6


# Texts of every kind: any Unicode (CJK, emoji, marks, separators), blank or punctuation only,
# repeated words (the word caches), long ones (many boundaries).
TEXTS = st.one_of(
    st.text(max_size=60),
    st.text(alphabet=st.sampled_from("ab 東京の 😀-\u0301\t.A"), max_size=40),
    st.lists(st.sampled_from(["invoice", "Invoices", "東京", "😀", "", "a"]), max_size=400).map(
        " ".join
    ),
)


@given(st.lists(TEXTS, max_size=30))
@example([])
@example([""])
@example(["", " ", "...", "😀"])
@example(["same words", "same words", "same  WORDS"])
@example(["word " * 2000])
@example(["a"] * 1100)  # more texts than one numpy group
@example(["invoice approvals " * 300] * 30)  # long texts, many of them
@example(["x", "a" * 40000, "", "b" * 32767, "y z"])  # too long for the fields: embedded alone
def test_the_numpy_batch_embedding_is_bit_identical_to_one_at_a_time(texts: list[str]) -> None:
    numpy = pytest.importorskip("numpy")
    from hotmem.embedding.hash_v1 import _embed_many_numpy

    one_at_a_time = [embed_bytes(text) for text in texts]
    assert _embed_many_numpy(texts, numpy) == one_at_a_time
    assert embed_many_bytes(texts) == one_at_a_time  # numpy imported: the batch path


@pytest.mark.parametrize("length", [32765, 32766, 32767, 32768, 32769, 40000])
@pytest.mark.parametrize("unit", ["a", "ab ", "東 "])
def test_texts_near_and_past_2_to_the_15_trigrams_embed_by_the_rule(unit: str, length: int) -> None:
    """Counts are summed in 16-bit fields below 2**15 trigrams, one by one from there. In
    "aaaa..." one bucket counts all but two of the trigrams: up to 32,765 in a field that holds
    -32,768 to 32,767 (and 40,000 fails without the guard)."""
    text = (unit * length)[:length]
    assert embed(text) == reference_embed(text)


def test_the_word_fields_cache_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from hotmem.embedding import hash_v1

    monkeypatch.setattr(hash_v1, "_FIELD_CACHE_LIMIT", 8)
    monkeypatch.setattr(hash_v1, "_WORD_FIELDS", hash_v1._WordFieldMap())
    texts = [f"w{i} x{i} y{i}" for i in range(20)]
    assert [embed(text) for text in texts] == [reference_embed(text) for text in texts]
    assert 0 < len(hash_v1._WORD_FIELDS) <= 8


def test_no_letter_mark_or_number_is_whitespace_to_str_split() -> None:
    """``normalise_text`` splits with ``str.split()`` once every separator is a space: that
    is the rule only while no kept character (a letter, mark or number) is whitespace."""
    import sys
    import unicodedata

    kept_whitespace = [
        hex(c)
        for c in range(sys.maxunicode + 1)
        if chr(c).isspace() and unicodedata.category(chr(c))[0] in "LMN"
    ]
    assert kept_whitespace == []
