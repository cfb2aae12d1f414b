"""The store's lexical indexes: their tokenizers, and the CJK grams of a fact.

**Words** are indexed by FTS5's ``porter`` stemmer over ``unicode61`` (:data:`FTS_TOKENIZER`), so
"deploy" finds "deploys" and "invoice" finds "invoices".

**CJK.** Chinese, Japanese and Korean are written without spaces between words, so ``unicode61``
makes a whole run ("東京オフィスは月曜日に休みです") one token, and no word inside it could match.
Such runs are therefore also indexed as their single characters and overlapping character
bigrams (:func:`cjk_index_text`, in the table ``memories_cjk``), the rule of Lucene's CJK bigram
analyzer. How a query is cut into terms of both indexes is ``hotmem.retrieval.query``.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "CJK_TOKENIZER",
    "FTS_TOKENIZER",
    "LEXICAL_INDEX",
    "TERM",
    "cjk_grams",
    "cjk_index_text",
    "cjk_runs",
    "fold",
    "outside_cjk_runs",
]

#: The tokenizer of ``memories_fts`` (the words of every fact).
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
#: The tokenizer of ``memories_cjk``, whose text is already cut into grams separated by spaces.
CJK_TOKENIZER = "unicode61"
#: The name of the whole lexical derivation, recorded in a store's metadata and in packages:
#: indexes are derived data, rebuilt from the facts when this name changes (docs/snapshot-v2.md).
LEXICAL_INDEX = f"{FTS_TOKENIZER}; cjk-bigram-v1"
# A term: a run of letters, marks or numbers (``\w`` without the underscore, plus marks).
TERM = re.compile(r"(?:[^\W_]|[\u0300-\u036f])+")
# Letters of the scripts written without spaces between words (after NFKC): all outside
# ASCII, so an ASCII text has none, and the pattern is compiled on the first text that may.
_CJK_RUN = (
    "["
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK and Kangxi radicals
    "\u3005-\u3007\u3021-\u3029\u3038-\u303c"  # 々 〆 〇, Suzhou numerals, ideographic marks
    "\u3041-\u309f\u30a1-\u30fa\u30fc-\u30ff"  # Hiragana, Katakana (not the ・ middle dot)
    "\u3105-\u312f\u3131-\u318e\u31a0-\u31bf\u31f0-\u31ff"  # Bopomofo, Hangul jamo, Katakana ext.
    "\u3400-\u4dbf\u4e00-\u9fff"  # CJK unified ideographs and extension A
    "\ua960-\ua97f\uac00-\ud7a3\ud7b0-\ud7ff"  # Hangul jamo extensions, syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0003134f"  # CJK extensions B to G
    "]+"
)
_compiled: list[re.Pattern[str]] = []


def _cjk_run() -> re.Pattern[str]:
    if not _compiled:
        _compiled.append(re.compile(_CJK_RUN))
    return _compiled[0]


def cjk_runs(text: str) -> list[str]:
    """The runs of CJK letters in ``text``, in order."""
    return [] if text.isascii() else _cjk_run().findall(text)


def outside_cjk_runs(text: str) -> list[str]:
    """The parts of ``text`` between its CJK runs (empty strings included), in order."""
    return [text] if text.isascii() else _cjk_run().split(text)


def fold(text: str) -> str:
    """NFKC, then case folding: how both a fact's and a query's terms are compared."""
    return unicodedata.normalize("NFKC", text).casefold()


def cjk_grams(run: str) -> list[str]:
    """The query grams of one CJK run: the character itself, or its overlapping bigrams."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def cjk_index_text(fact: str) -> str | None:
    """The text ``memories_cjk`` indexes for ``fact``: every character and every bigram of its
    CJK runs, separated by spaces; ``None`` when the fact has no CJK letter.

    >>> cjk_index_text("月曜日 at 東京")
    '月 曜 日 月曜 曜日 東 京 東京'
    """
    if fact.isascii():
        return None
    grams: list[str] = []
    for term in TERM.finditer(fold(fact)):
        for run in cjk_runs(term.group()):
            grams.extend(run)
            if len(run) > 1:
                grams.extend(cjk_grams(run))
    return " ".join(grams) if grams else None
