"""Turning text into SQLite FTS5 terms: the words of facts and queries, and CJK character grams.

**Queries.** User text never reaches ``MATCH`` as syntax. The query is cut into terms (runs of
Unicode letters, marks and numbers, case-folded after NFKC), common English function words are
dropped, and every remaining term is written as a double-quoted FTS5 string joined with ``OR``.
Quoted strings are plain phrases to FTS5, so ``AND``, ``NEAR``, ``*``, ``^``, ``-``, ``col:value``
and parentheses in the input are inert, and a memory sharing any informative term is a candidate.

The stopword rule is why "What is the boiling point of tungsten?" looks for ``boiling``,
``point`` and ``tungsten`` only: words such as "what", "is" and "the" match half of any store
and are no evidence of relevance. Contractions are split at the apostrophe, so their pieces
(``s`` of "Northwind's", ``don`` and ``t`` of "don't") are stopwords too.

**Words** are indexed by FTS5's ``porter`` stemmer over ``unicode61`` (:data:`FTS_TOKENIZER`), so
"deploy" finds "deploys" and "invoice" finds "invoices"; query terms are stemmed the same way.

**CJK.** Chinese, Japanese and Korean are written without spaces between words, so ``unicode61``
makes a whole run ("東京オフィスは月曜日に休みです") one token, and no word inside it could match.
Such runs are therefore also indexed as their single characters and overlapping character
bigrams (:func:`cjk_index_text`, in the table ``memories_cjk``), the rule of Lucene's CJK bigram
analyzer. A query's CJK run of one character is looked up as that character, a longer run as its
bigrams ("月曜日" as "月曜" OR "曜日"), so a word inside a run matches and BM25 ranks the facts
sharing more of the query's bigrams first.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = [
    "CJK_TOKENIZER",
    "FTS_TOKENIZER",
    "LEXICAL_INDEX",
    "MAX_QUERY_TERMS",
    "STOPWORDS",
    "LexicalQuery",
    "cjk_grams",
    "cjk_index_text",
    "lexical_query",
    "match_expression",
    "query_terms",
]

#: The tokenizer of ``memories_fts`` (the words of every fact).
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
#: The tokenizer of ``memories_cjk``, whose text is already cut into grams separated by spaces.
CJK_TOKENIZER = "unicode61"
#: The name of the whole lexical derivation, recorded in a store's metadata and in packages:
#: indexes are derived data, rebuilt from the facts when this name changes (docs/snapshot-v2.md).
LEXICAL_INDEX = f"{FTS_TOKENIZER}; cjk-bigram-v1"
MAX_QUERY_TERMS = 64
# A term: a run of letters, marks or numbers (``\w`` without the underscore, plus marks).
_TERM = re.compile(r"(?:[^\W_]|[\u0300-\u036f])+")
# Letters of the scripts written without spaces between words (after NFKC).
_CJK_RUN = re.compile(
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

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each else ever few
    for from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me might more most much must my myself no nor not now of off on
    once only or other our ours ourselves out over own same shall she should so some such than
    that the their theirs them themselves then there these they this those through to too under
    until up upon us very was we were what whatever when where whether which while who whom
    whose why will with within without would yet you your yours yourself yourselves
    s t d ll re ve don doesn didn isn aren wasn weren hasn haven hadn shouldn wouldn couldn
    """.split()
)


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def query_terms(text: str) -> list[str]:
    """Return the informative search terms of ``text``: folded, deduplicated, in order.

    At most ``MAX_QUERY_TERMS`` terms are kept (the first ones), so a 10,000-character query
    costs no more than a long sentence.
    """
    terms: list[str] = []
    seen: set[str] = set()
    for match in _TERM.finditer(_fold(text)):
        term = match.group()
        if term in STOPWORDS or term in seen:
            continue
        seen.add(term)
        terms.append(term)
        if len(terms) == MAX_QUERY_TERMS:
            break
    return terms


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
    grams: list[str] = []
    for term in _TERM.finditer(_fold(fact)):
        for run in _CJK_RUN.findall(term.group()):
            grams.extend(run)
            if len(run) > 1:
                grams.extend(cjk_grams(run))
    return " ".join(grams) if grams else None


def match_expression(terms: list[str]) -> str | None:
    """Build the FTS5 ``MATCH`` expression for ``terms``; ``None`` when there is no term.

    Each term is a double-quoted FTS5 string (embedded quotes doubled), joined with ``OR``.
    """
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


@dataclass(frozen=True, slots=True)
class LexicalQuery:
    """The lexical terms of one query, split between the two FTS5 tables.

    Attributes:
        words: the terms looked up in ``memories_fts`` (informative terms outside CJK runs).
        grams: the grams looked up in ``memories_cjk`` (of the query's CJK runs).
    """

    words: tuple[str, ...]
    grams: tuple[str, ...]

    @property
    def words_expression(self) -> str | None:
        """The ``MATCH`` expression over ``memories_fts``, ``None`` without a word."""
        return match_expression(list(self.words))

    @property
    def grams_expression(self) -> str | None:
        """The ``MATCH`` expression over ``memories_cjk``, ``None`` without a gram."""
        return match_expression(list(self.grams))

    def __bool__(self) -> bool:
        return bool(self.words or self.grams)


def lexical_query(text: str) -> LexicalQuery:
    """Split the informative terms of ``text`` between the word index and the CJK index.

    A term with CJK letters contributes their grams (:func:`cjk_grams`) to ``grams``, and the
    rest of the term ("release" of "release東京") to ``words``.
    """
    words: list[str] = []
    grams: list[str] = []
    for term in query_terms(text):
        runs = _CJK_RUN.findall(term)
        if not runs:
            words.append(term)
            continue
        for run in runs:
            grams.extend(g for g in cjk_grams(run) if g not in grams)
        words.extend(
            rest
            for rest in _CJK_RUN.split(term)
            if rest and rest not in STOPWORDS and rest not in words
        )
    return LexicalQuery(tuple(words), tuple(grams[:MAX_QUERY_TERMS]))
