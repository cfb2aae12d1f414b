"""Turning user text into a safe SQLite FTS5 query.

User text never reaches ``MATCH`` as syntax. The query is cut into terms (runs of Unicode
letters, marks and numbers, case-folded after NFKC), common English function words are dropped,
and every remaining term is written as a double-quoted FTS5 string joined with ``OR``. Quoted
strings are plain phrases to FTS5, so ``AND``, ``NEAR``, ``*``, ``^``, ``-``, ``col:value`` and
parentheses in the input are inert, and a memory sharing any informative term is a candidate.

The stopword rule is why "What is the boiling point of tungsten?" looks for ``boiling``,
``point`` and ``tungsten`` only: words such as "what", "is" and "the" match half of any store
and are no evidence of relevance. Contractions are split at the apostrophe, so their pieces
(``s`` of "Northwind's", ``don`` and ``t`` of "don't") are stopwords too.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "FTS_TOKENIZER",
    "MAX_QUERY_TERMS",
    "STOPWORDS",
    "match_expression",
    "query_terms",
]

FTS_TOKENIZER = "unicode61 remove_diacritics 2"
MAX_QUERY_TERMS = 64
# A term: a run of letters, marks or numbers (``\w`` without the underscore, plus marks).
_TERM = re.compile(r"(?:[^\W_]|[\u0300-\u036f])+")

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
    folded = unicodedata.normalize("NFKC", text).casefold()
    terms: list[str] = []
    seen: set[str] = set()
    for match in _TERM.finditer(folded):
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
