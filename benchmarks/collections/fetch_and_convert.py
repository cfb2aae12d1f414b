"""Public IR test collections: fetch their pinned raw files and convert them to the BEIR layout.

Run from the repository root (stdlib only, except ``cranfield``, which reuses
``benchmarks/collection_bench.py``'s converter and so needs ``--group bench``)::

    uv run python benchmarks/collections/fetch_and_convert.py fetch scifact
    uv run python benchmarks/collections/fetch_and_convert.py convert scifact \\
        --source /tmp/collections/src/scifact --out /tmp/collections/scifact
    uv run python benchmarks/collections/fetch_and_convert.py slice \\
        --collection /tmp/collections/scifact --out benchmarks/collections/scifact-slice

``fetch`` clones the collection's repository and checks out the pinned commit (``git`` and
network access to GitHub needed); ``convert`` reads the raw files from that checkout (or any
directory holding them at the same paths), refuses them unless their SHA-256 digests are the
pinned ones, and writes ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl``
(``_id``, ``text``: the judged queries only) and ``qrels/test.tsv`` (header ``query-id
corpus-id score``). The output is the same bytes on every run (source order, ``json.dumps`` with
``ensure_ascii=False``, ``\\n`` line ends). The data stays outside this repository: only the
SciFact slice is committed (see ``scifact-slice/README.md``), the others state no licence.

Collections (``SOURCES``):

- ``scifact``: BEIR's SciFact test split (5,183 abstracts, 300 claims, 339 binary judgements),
  rebuilt from the Hugging Face export of the SciFact release (``allenai/scifact``) committed as
  ``data/scifact.zip`` in ``sumithra-p-v/claimverifier``. Documents are ``corpus_train.csv``
  (``doc_id``; ``title``, stripped; ``text``, the ``abstract`` sentences, each stripped, joined
  with single spaces: the abstract is written as a numpy array repr, read token by token);
  queries the claims of ``claims_validation.csv`` (``id``, ``claim``; rows repeat a claim once
  per evidence set); the judgements each (claim, document of ``cited_doc_ids``), score 1. Checked
  against BEIR's own files: the qrels (339 pairs) and the 300 query texts are identical, and the
  corpus file has BEIR's length to the character (7,998,337).
- ``cisi``: the classic CISI collection (1,460 library-science abstracts, 112 queries of which
  76 are judged, 3,114 binary judgements) as ``CISI.ALL``/``CISI.QRY``/``CISI.REL``. A record
  is ``.I`` (id) then fields ``.T`` (title), ``.A`` (authors), ``.B``, ``.C``, ``.K``, ``.X``
  (dropped) and ``.W`` (text); lines are joined with single spaces. A query's text is its ``.T``
  (55 queries are a paper's title and abstract) and ``.W``, joined with a space.
- ``cranfield``: as ``benchmarks/collection_bench.py`` documents (1,400 abstracts, 225 queries,
  graded 1..4 with 4 best).
"""

from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import io
import json
import subprocess
import sys
import tempfile
import tokenize
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
Rows = list[dict[str, str]]
Qrels = list[tuple[str, str, int]]


class ConversionError(Exception):
    """A raw file is not what the converter expects: the message is ``path:line: reason``."""


@dataclass(frozen=True, slots=True)
class Source:
    """Where a collection's raw files come from, pinned, and how they become BEIR."""

    repository: str  # owner/name on GitHub
    commit: str
    files: dict[str, str]  # path in the repository -> SHA-256 of its bytes
    licence: str
    convert: Callable[[dict[str, Path]], tuple[Rows, Rows, Qrels]]


# -- SciFact ---------------------------------------------------------------------------------


def _numpy_strings(text: str, where: str) -> list[str]:
    """The strings of a numpy array repr (``['a' 'b'\\n 'c']``): each literal a separate item."""
    items: list[str] = []
    layout = {tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING:
                items.append(ast.literal_eval(token.string))
            elif token.type not in layout and token.string not in ("[", "]"):
                raise ConversionError(f"{where}: unexpected {token.string!r} in an array repr")
    except (tokenize.TokenError, SyntaxError, ValueError) as error:
        raise ConversionError(f"{where}: not an array repr of strings ({error})") from error
    return items


def _csv_rows(archive: zipfile.ZipFile, name: str, where: str) -> Iterator[tuple[str, dict]]:
    csv.field_size_limit(1 << 30)
    with archive.open(name) as raw:
        reader = csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8", newline=""))
        for row in reader:
            yield f"{where}({name}):{reader.line_num}", row


def convert_scifact(files: dict[str, Path]) -> tuple[Rows, Rows, Qrels]:
    """BEIR's SciFact test split from the Hugging Face export (see the module docstring)."""
    path = files["data/scifact.zip"]
    with zipfile.ZipFile(path) as archive:
        corpus = [
            {
                "_id": row["doc_id"],
                "title": row["title"].strip(),
                "text": " ".join(s.strip() for s in _numpy_strings(row["abstract"], where)),
            }
            for where, row in _csv_rows(archive, "corpus_train.csv", str(path))
        ]
        known = {doc["_id"] for doc in corpus}
        queries: dict[str, str] = {}
        qrels: dict[tuple[str, str], int] = {}
        for where, row in _csv_rows(archive, "claims_validation.csv", str(path)):
            if queries.setdefault(row["id"], row["claim"]) != row["claim"]:
                raise ConversionError(f"{where}: claim {row['id']} repeats with another text")
            for doc_id in row["cited_doc_ids"].strip("[] ").split():
                if doc_id not in known:
                    raise ConversionError(f"{where}: cited document {doc_id} not in the corpus")
                qrels[row["id"], doc_id] = 1
    rows = [{"_id": query_id, "text": text} for query_id, text in queries.items()]
    return corpus, rows, [(query, doc, score) for (query, doc), score in qrels.items()]


# -- CISI ------------------------------------------------------------------------------------

_CISI_FIELDS = (".T", ".A", ".B", ".C", ".K", ".W", ".X")


def _smart_records(path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """The ``.I`` records of a SMART-format file: (id, field marker -> its lines joined)."""
    ident, fields, current, start = "", dict[str, list[str]](), "", 0
    for number, line in enumerate(path.read_text(encoding="ascii").splitlines(), start=1):
        marker = line.strip()
        if line.startswith(".I "):
            if ident:
                yield ident, {k: " ".join(" ".join(v).split()) for k, v in fields.items()}
            ident, fields, current, start = line[3:].strip(), {}, "", number
        elif marker in _CISI_FIELDS:
            if not ident:
                raise ConversionError(f"{path}:{number}: field {marker} before the first .I")
            current = marker  # a repeated marker (.A, one an author) goes on with its field
            fields.setdefault(current, [])
        elif current:
            fields[current].append(line)
        elif marker:
            raise ConversionError(f"{path}:{number}: text outside a field of record {start}")
    if ident:
        yield ident, {k: " ".join(" ".join(v).split()) for k, v in fields.items()}


def convert_cisi(files: dict[str, Path]) -> tuple[Rows, Rows, Qrels]:
    """CISI from its three SMART files (see the module docstring)."""
    corpus = [
        {"_id": ident, "title": fields.get(".T", ""), "text": fields.get(".W", "")}
        for ident, fields in _smart_records(files["CISI.ALL"])
    ]
    queries = {
        ident: " ".join(filter(None, (fields.get(".T", ""), fields.get(".W", ""))))
        for ident, fields in _smart_records(files["CISI.QRY"])
    }
    known = {doc["_id"] for doc in corpus}
    if len(known) != len(corpus):
        raise ConversionError(f"{files['CISI.ALL']}: a document id repeats")
    path, qrels = files["CISI.REL"], dict[tuple[str, str], int]()
    for number, line in enumerate(path.read_text(encoding="ascii").splitlines(), start=1):
        parts = line.split()
        if len(parts) != 4 or parts[0] not in queries or parts[1] not in known:
            raise ConversionError(f"{path}:{number}: expected 'query doc 0 0.0', found {line!r}")
        qrels[parts[0], parts[1]] = 1  # binary; CISI.REL repeats no pair, but be sure
    judged = {query for query, _ in qrels}
    rows = [{"_id": ident, "text": text} for ident, text in queries.items() if ident in judged]
    return corpus, rows, [(query, doc, score) for (query, doc), score in qrels.items()]


# -- Cranfield -------------------------------------------------------------------------------


def convert_cranfield(files: dict[str, Path]) -> tuple[Rows, Rows, Qrels]:
    """Cranfield by ``collection_bench.convert_cranfield`` (its docstring), read back."""
    sys.path.insert(0, str(HERE.parent))
    try:
        from collection_bench import convert_cranfield as convert
    except ImportError as error:
        raise ConversionError(f"cranfield: run with `uv run --group bench` ({error})") from error
    with tempfile.TemporaryDirectory() as target:
        convert(files["cran/cran.all.1400"].parent, Path(target))
        return read_beir(Path(target))


SOURCES: dict[str, Source] = {
    "scifact": Source(
        repository="sumithra-p-v/claimverifier",
        commit="c89fe399bf3e91aa4502b10d673b07db27891526",
        files={
            "data/scifact.zip": "a798a7046af0f6fa04476448459ce7cafeea5bd90d4d99c53a0e27dc5e1a4673"
        },
        licence="claims CC BY 4.0, abstracts ODC-By 1.0 (allenai/scifact LICENSE.md)",
        convert=convert_scifact,
    ),
    "cisi": Source(
        repository="Shakiba-Alipour/Information-Retrieval-on-CISI",
        commit="13e80360b2c0ca10d3fbf537d3cb2a213c664c40",
        files={
            "CISI.ALL": "c13934ad921234b571e7b424af3461fe39dccb16757cb21954b3aea5250d072e",
            "CISI.QRY": "b72de0e0cb8aa5c93ac988e5be0400cc18949d0a94913a248783a37dd97d5470",
            "CISI.REL": "f7396c92586c61953ccb7ae99ad8d3ac749ac3b989041fc93a9e311568f58997",
        },
        licence="none stated (neither the repository nor the collection's distributors)",
        convert=convert_cisi,
    ),
    "cranfield": Source(
        repository="Pirata-Codex/Information-Retrieval-Cranfield",
        commit="d168d6b2e54f96ef8a9970852f0adf758a93b37c",
        files={
            f"cran/{name}": digest
            for name, digest in (
                (
                    "cran.all.1400",
                    "b234544b6ceccd131520df4a3cb6d42aee6576eb577933d047e722bbfe7b0b09",
                ),
                ("cran.qry", "9b2dd6c85a60808bb6be9b57ace4c4d861262bc955de867c5ba7f7339b5a72b3"),
                ("cranqrel", "92e54b58dac0b980152178f350d892fae66c8a239b8a11715b835fb8d2f6bc0e"),
            )
        },
        licence="none stated (neither the repository nor the collection's distributors)",
        convert=convert_cranfield,
    ),
}


# -- BEIR files ------------------------------------------------------------------------------


def write_beir(target: Path, corpus: Rows, queries: Rows, qrels: Qrels) -> dict[str, int]:
    """Write the three BEIR files to ``target``; return the counts."""
    (target / "qrels").mkdir(parents=True, exist_ok=True)
    for name, rows in (("corpus.jsonl", corpus), ("queries.jsonl", queries)):
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        (target / name).write_text(text, encoding="utf-8", newline="\n")
    lines = ["query-id\tcorpus-id\tscore\n"]
    lines += [f"{query}\t{doc}\t{score}\n" for query, doc, score in qrels]
    (target / "qrels" / "test.tsv").write_text("".join(lines), encoding="utf-8", newline="\n")
    return {"documents": len(corpus), "queries": len(queries), "judgements": len(qrels)}


def read_beir(directory: Path) -> tuple[Rows, Rows, Qrels]:
    """The three BEIR files of ``directory``, in file order (``title`` defaults to "")."""

    def jsonl(name: str, keys: tuple[str, ...]) -> Rows:
        with (directory / name).open(encoding="utf-8") as lines:
            return [{key: str(json.loads(line).get(key, "")) for key in keys} for line in lines]

    with (directory / "qrels" / "test.tsv").open(encoding="utf-8") as lines:
        next(lines)
        qrels = [(q, d, int(s)) for q, d, s in (line.rstrip("\n").split("\t") for line in lines)]
    return (
        jsonl("corpus.jsonl", ("_id", "title", "text")),
        jsonl("queries.jsonl", ("_id", "text")),
        qrels,
    )


# -- Commands --------------------------------------------------------------------------------


def fetch(name: str, into: Path) -> Path:
    """Clone ``name``'s repository into ``into/name`` and check out the pinned commit."""
    source, target = SOURCES[name], into / name
    if not target.exists():
        url = f"https://github.com/{source.repository}"
        subprocess.run(["git", "clone", "--quiet", url, str(target)], check=True)
    subprocess.run(["git", "-C", str(target), "checkout", "--quiet", source.commit], check=True)
    return target


def convert(name: str, checkout: Path, target: Path) -> dict[str, int]:
    """Check the raw files of ``name`` in ``checkout`` against their digests; write BEIR."""
    source = SOURCES[name]
    files = {path: checkout / path for path in source.files}
    for path, digest in source.files.items():
        if not files[path].is_file():
            raise ConversionError(f"{files[path]}: missing (fetch {source.repository} first)")
        found = hashlib.sha256(files[path].read_bytes()).hexdigest()
        if found != digest:
            raise ConversionError(f"{files[path]}: sha256 {found}, expected the pinned {digest}")
    return write_beir(target, *source.convert(files))


def _numeric(ident: str) -> tuple[int, str]:
    return (int(ident), "") if ident.isdigit() else (sys.maxsize, ident)


def slice_collection(
    corpus: Rows, queries: Rows, qrels: Qrels, *, n_queries: int, n_docs: int
) -> tuple[Rows, Rows, Qrels]:
    """A small collection cut from a BEIR one, by the rule of ``scifact-slice/README.md``.

    Queries: the first ``n_queries`` judged queries by numeric id. Documents: every document
    judged for them, then (as distractors) the documents judged for the other queries, taken in
    numeric (query id, document id) order, while there are fewer than ``n_docs``. Judgements:
    every one of the chosen queries. Rows keep their order in the source files.
    """
    judged = sorted({query for query, _, _ in qrels}, key=_numeric)
    chosen = set(judged[:n_queries])
    kept = [(q, d, s) for q, d, s in qrels if q in chosen]
    documents = list(dict.fromkeys(d for _, d, _ in sorted(kept, key=lambda j: _numeric(j[1]))))
    if len(documents) > n_docs:
        raise ConversionError(f"the chosen queries judge {len(documents)} documents > {n_docs}")
    for _, doc, _ in sorted(qrels, key=lambda j: (_numeric(j[0]), _numeric(j[1]))):
        if len(documents) == n_docs:
            break
        if doc not in documents:
            documents.append(doc)
    wanted = set(documents)
    return (
        [doc for doc in corpus if doc["_id"] in wanted],
        [query for query in queries if query["_id"] in chosen],
        kept,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fetch_parser = commands.add_parser("fetch", help="clone the pinned repository")
    fetch_parser.add_argument("name", choices=sorted(SOURCES))
    fetch_parser.add_argument("--into", type=Path, default=Path("/tmp/collections/src"))
    convert_parser = commands.add_parser("convert", help="raw files to the BEIR layout")
    convert_parser.add_argument("name", choices=sorted(SOURCES))
    convert_parser.add_argument("--source", type=Path, required=True, help="the checkout")
    convert_parser.add_argument("--out", type=Path, required=True)
    slice_parser = commands.add_parser("slice", help="cut a small BEIR collection from one")
    slice_parser.add_argument("--collection", type=Path, required=True)
    slice_parser.add_argument("--out", type=Path, required=True)
    slice_parser.add_argument("--queries", type=int, default=50)
    slice_parser.add_argument("--documents", type=int, default=300)
    args = parser.parse_args(argv)
    try:
        if args.command == "fetch":
            print(fetch(args.name, args.into))
            return 0
        if args.command == "convert":
            counts = convert(args.name, args.source, args.out)
        else:
            rows = read_beir(args.collection)
            part = slice_collection(*rows, n_queries=args.queries, n_docs=args.documents)
            counts = write_beir(args.out, *part)
    except (ConversionError, OSError, subprocess.CalledProcessError) as error:
        print(f"fetch_and_convert: {error}", file=sys.stderr)
        return 2
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
