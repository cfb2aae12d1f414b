"""The query tokenizer: FTS5's own tokens for query terms, several terms in one transaction."""

from __future__ import annotations

import pytest

from hotmem.retrieval import tokens
from hotmem.retrieval.tokens import Tokenizer
from hotmem.store.fts import CJK_TOKENIZER, FTS_TOKENIZER


def test_terms_tokenized_together_are_each_the_phrase_fts5_makes_of_it() -> None:
    words = Tokenizer(FTS_TOKENIZER)
    found = words.phrases(["Running", "don't", "Café-Crème", "running", "!!", "Running"])
    # porter stems, unicode61 folds case and (remove_diacritics 2) accents, splits on
    # punctuation; a term without a token is the empty phrase; repeats give the same phrase
    assert found == [("run",), ("don", "t"), ("cafe", "creme"), ("run",), (), ("run",)]
    assert Tokenizer(CJK_TOKENIZER).phrases(["東京", "タワー"]) == [("東京",), ("タワー",)]


def test_a_full_cache_is_cleared_without_losing_a_terms_phrase(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tokens, "_KEPT", 3)
    words = Tokenizer(FTS_TOKENIZER)
    assert words.phrases(["alpha", "beta"]) == [("alpha",), ("beta",)]
    # "alpha" is kept, "gamma" and "delta" would pass the limit: the cache is cleared and
    # every term of this query tokenized again
    assert words.phrases(["alpha", "gamma", "delta"]) == [("alpha",), ("gamma",), ("delta",)]
    assert words.phrases(["alpha", "gamma", "delta"]) == [("alpha",), ("gamma",), ("delta",)]
