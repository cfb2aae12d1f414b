"""A query's lexical terms: what the BM25 channel looks up in the word and CJK indexes.

User text never reaches ``MATCH`` as syntax. The query is cut into terms (runs of Unicode
letters, marks and numbers, case-folded after NFKC), common English function words are
dropped, and every remaining term is a phrase of its own: a double-quoted FTS5 string when
FTS5 is asked (:func:`match_expression`), so ``AND``, ``NEAR``, ``*``, ``^``, ``-``,
``col:value`` and parentheses in the input are inert, and a memory sharing any informative term
is a candidate.

The stopword rule is why "What is the boiling point of tungsten?" looks for ``boiling``,
``point`` and ``tungsten`` only: words such as "what", "is" and "the" match half of any store
and are no evidence of relevance. Contractions are split at the apostrophe, so their pieces
(``s`` of "Northwind's", ``don`` and ``t`` of "don't") are stopwords too.

A query's CJK run of one character is looked up as that character in the CJK index, a longer
run as its bigrams ("月曜日" as "月曜" OR "曜日"), so a word inside a run matches and BM25 ranks
the facts sharing more of the query's bigrams first (``hotmem.store.fts``).
"""

from __future__ import annotations

from hotmem.store.fts import TERM, cjk_grams, cjk_runs, fold, outside_cjk_runs

__all__ = [
    "MAX_QUERY_TERMS",
    "STOPWORDS",
    "LexicalQuery",
    "lexical_query",
    "match_expression",
    "query_terms",
]

MAX_QUERY_TERMS = 64

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


def query_terms(text: str) -> list[str]:
    """Return the informative search terms of ``text``: folded, deduplicated, in order.

    At most ``MAX_QUERY_TERMS`` terms are kept (the first ones), so a 10,000-character query
    costs no more than a long sentence.
    """
    terms: list[str] = []
    seen: set[str] = set()
    for match in TERM.finditer(fold(text)):
        term = match.group()
        if term in STOPWORDS or term in seen:
            continue
        seen.add(term)
        terms.append(term)
        if len(terms) == MAX_QUERY_TERMS:
            break
    return terms


def match_expression(terms: list[str]) -> str | None:
    """Build the FTS5 ``MATCH`` expression for ``terms``; ``None`` when there is no term.

    Each term is a double-quoted FTS5 string (embedded quotes doubled), joined with ``OR``.
    """
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


class LexicalQuery:
    """The lexical terms of one query, split between the two FTS5 tables.

    Attributes:
        words: the terms looked up in ``memories_fts`` (informative terms outside CJK runs).
        grams: the grams looked up in ``memories_cjk`` (of the query's CJK runs).
    """

    __slots__ = ("grams", "words")

    words: tuple[str, ...]
    grams: tuple[str, ...]

    def __init__(self, words: tuple[str, ...], grams: tuple[str, ...]) -> None:
        self.words = words
        self.grams = grams

    def __eq__(self, other: object) -> bool:
        if type(other) is not LexicalQuery:
            return NotImplemented
        return self.words == other.words and self.grams == other.grams

    def __hash__(self) -> int:
        return hash((self.words, self.grams))

    def __repr__(self) -> str:
        return f"LexicalQuery(words={self.words!r}, grams={self.grams!r})"

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
        runs = cjk_runs(term)
        if not runs:
            words.append(term)
            continue
        for run in runs:
            grams.extend(g for g in cjk_grams(run) if g not in grams)
        words.extend(
            rest
            for rest in outside_cjk_runs(term)
            if rest and rest not in STOPWORDS and rest not in words
        )
    return LexicalQuery(tuple(words), tuple(grams[:MAX_QUERY_TERMS]))
