"""Load a collection directory in any supported format: ``load_collection``.

A collection is a directory; its format is named (``format="native"``, ``"beir"``,
``"trec"``) or detected (``"auto"``) from the files it holds, by these rules:

============  ==========================================================================
format        the directory holds
============  ==========================================================================
``beir``      ``corpus.jsonl``, ``queries.jsonl`` and a ``qrels/`` directory
``trec``      ``corpus.jsonl``, a topics file (``topics.jsonl`` or ``topics.tsv``) and a
              qrels file (``qrels.txt`` or a file named ``*.qrels``)
``native``    ``corpus.jsonl`` and ``queries.jsonl``, and no ``qrels/`` directory
============  ==========================================================================

Other files are ignored. Exactly one format must match: a directory that matches none, or
more than one (``corpus.jsonl``, ``queries.jsonl``, ``topics.tsv`` and ``qrels.txt`` are both
native and TREC), is refused with the files each format expects; naming the format resolves
the second case. A named format is not checked against the files: its reader reports each
missing file. The readers: ``fixtures.load_fixture`` (native, also given its two files
directly), ``beir.load_beir`` and ``trec_input.load_trec``.

Which grade counts as relevant defaults to each format's own rule: 2 for a native fixture
(``RELEVANT_GRADE``), 1 for BEIR and TREC (``COLLECTION_RELEVANT_GRADE``, trec_eval's).
Only a BEIR collection has splits; asking another format for a split other than ``"test"``
is refused.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final, Literal, get_args

from hotmem_eval.beir import DEFAULT_SPLIT, load_beir
from hotmem_eval.errors import FixtureError, Problem, UsageError
from hotmem_eval.fixtures import Fixture, FixtureFormat, load_fixture
from hotmem_eval.trec_input import load_trec, trec_files

__all__ = ["FORMAT_FILES", "CollectionFormat", "detect_format", "load_collection"]

#: A collection's format, or ``"auto"`` to detect it.
CollectionFormat = Literal["auto", "native", "beir", "trec"]
#: The files each format expects, in the words of messages.
FORMAT_FILES: Final[Mapping[FixtureFormat, str]] = {
    "beir": "corpus.jsonl, queries.jsonl, qrels/",
    "trec": "corpus.jsonl, topics.jsonl or topics.tsv, qrels.txt or *.qrels",
    "native": "corpus.jsonl, queries.jsonl",
}
_SHOWN_ENTRIES: Final = 12


def _native(root: Path, split: str, relevant_grade: int | None) -> Fixture:
    return load_fixture(
        root / "corpus.jsonl", root / "queries.jsonl", relevant_grade=relevant_grade
    )


def _beir(root: Path, split: str, relevant_grade: int | None) -> Fixture:
    return load_beir(root, split=split, relevant_grade=relevant_grade)


def _trec(root: Path, split: str, relevant_grade: int | None) -> Fixture:
    return load_trec(root, relevant_grade=relevant_grade)


_READERS: Final[Mapping[FixtureFormat, Callable[[Path, str, int | None], Fixture]]] = {
    "native": _native,
    "beir": _beir,
    "trec": _trec,
}


def detect_format(directory: str | os.PathLike[str]) -> FixtureFormat:
    """The format of a collection directory, by the rules of the module docstring.

    Raises:
        FixtureError: ``directory`` is not a directory, or matches no format or several; its
            one problem names the files each format expects and the files found.
    """
    root = _directory(directory)
    corpus, queries = (root / "corpus.jsonl").exists(), (root / "queries.jsonl").exists()
    qrels_directory = (root / "qrels").is_dir()
    matches: dict[FixtureFormat, bool] = {
        "beir": corpus and queries and qrels_directory,
        "trec": trec_files(root).present,
        "native": corpus and queries and not qrels_directory,
    }
    found = [name for name, matched in matches.items() if matched]
    if len(found) == 1:
        return found[0]
    if found:
        which = " and ".join(f"{name} ({FORMAT_FILES[name]})" for name in found)
        reason = (
            f"expected the files of one collection format, found those of {which}; name the format"
        )
    else:
        expected = "; ".join(f"{name}: {files}" for name, files in FORMAT_FILES.items())
        reason = f"expected a collection directory ({expected}), found {_listing(root)}"
    raise FixtureError((Problem(str(root), None, reason),))


def _directory(path: str | os.PathLike[str]) -> Path:
    """``path``, when it is a directory.

    Raises:
        FixtureError: it is not.
    """
    root = Path(path)
    if not root.is_dir():
        found = "a file" if root.exists() else "no such directory"
        raise FixtureError(
            (Problem(str(root), None, f"expected a collection directory, found {found}"),)
        )
    return root


def _listing(root: Path) -> str:
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in root.iterdir())
    if not names:
        return "an empty directory"
    shown = ", ".join(names[:_SHOWN_ENTRIES])
    more = len(names) - _SHOWN_ENTRIES
    return shown + (f" and {more} more" if more > 0 else "")


def load_collection(
    path: str | os.PathLike[str],
    *,
    format: CollectionFormat = "auto",
    split: str = DEFAULT_SPLIT,
    relevant_grade: int | None = None,
) -> Fixture:
    """Read, check and tabulate the collection in directory ``path``.

    Parameters:
        path: the collection directory.
        format: ``"auto"`` to detect the format (module docstring), or the format to read.
        split: the BEIR split to evaluate (``qrels/<split>.tsv``); other formats have none.
        relevant_grade: the lowest grade that counts as relevant; None for the format's rule
            (native 2, BEIR and TREC 1).

    Returns:
        The fixture; ``format`` records the format read.

    Raises:
        FixtureError: the directory matches no format or several, or its files have at least
            one error; ``problems`` lists every error and warning found.
        UsageError: ``format``, ``split`` or ``relevant_grade`` cannot be used.
    """
    if format not in get_args(CollectionFormat):
        choices = ", ".join(get_args(CollectionFormat))
        raise UsageError(f"expected format one of {choices}, found format={format!r}")
    root = _directory(path)
    chosen: FixtureFormat = detect_format(root) if format == "auto" else format
    if chosen != "beir" and split != DEFAULT_SPLIT:
        raise UsageError(
            f"expected no split for a {chosen} collection (only BEIR collections have "
            f"splits), found split={split!r}"
        )
    return _READERS[chosen](root, split, relevant_grade)
