"""The public-collection tools of ``benchmarks/collections/``: the converters' parsing, the slice
rule, the committed SciFact slice, and the ir_measures agreement check on hand-made exports."""

from __future__ import annotations

import hashlib
import math
import re
import sys
from pathlib import Path

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[2]
SLICE = ROOT / "benchmarks" / "collections" / "scifact-slice"

sys.path.insert(0, str(ROOT / "benchmarks" / "collections"))

import agreement  # noqa: E402
import fetch_and_convert as fc  # noqa: E402

# -- converters ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("['One.' 'Two.']", ["One.", "Two."]),
        ("['a +/-' '0.2 b'\n 'c.']", ["a +/-", "0.2 b", "c."]),  # adjacent literals stay apart
        ('["It\'s" \'say "x"\']', ["It's", 'say "x"']),
        ("['ends   \\n']", ["ends   \n"]),
        ("[]", []),
    ],
)
def test_numpy_strings_reads_each_literal(text: str, expected: list[str]) -> None:
    assert fc._numpy_strings(text, "f:1") == expected


@pytest.mark.parametrize("text", ["['a', 'b']", "['a' + 'b']", "['unclosed"])
def test_numpy_strings_refuses_anything_else(text: str) -> None:
    with pytest.raises(fc.ConversionError, match=r"^f:1: "):
        fc._numpy_strings(text, "f:1")


def test_cisi_records_join_lines_and_repeated_fields(tmp_path: Path) -> None:
    (tmp_path / "CISI.ALL").write_text(
        ".I 1\n.T\nA  title\n.A\nX, Y.\n.A\nZ, W.\n.W\n   Some\ntext.\n.X\n1\t5\t1\n"
        ".I 2\n.T \nOther\n.W\nMore.\n.X\n2\t1\t1\n",
        encoding="ascii",
    )
    (tmp_path / "CISI.QRY").write_text(
        ".I 1\n.W\nWhat is it?\n.I 2\n.T\nPaper\n.A\nQ.\n.W\nIts abstract.\n.I 3\n.W\nUnjudged\n",
        encoding="ascii",
    )
    (tmp_path / "CISI.REL").write_text("1 2 0 0.000000\n 2\t1\t0\t0.0\n", encoding="ascii")
    files = {name: tmp_path / name for name in ("CISI.ALL", "CISI.QRY", "CISI.REL")}
    corpus, queries, qrels = fc.convert_cisi(files)
    assert corpus == [
        {"_id": "1", "title": "A title", "text": "Some text."},
        {"_id": "2", "title": "Other", "text": "More."},
    ]
    assert queries == [
        {"_id": "1", "text": "What is it?"},
        {"_id": "2", "text": "Paper Its abstract."},
    ]
    assert qrels == [("1", "2", 1), ("2", "1", 1)]


def test_cisi_refuses_a_judgement_of_an_unknown_document(tmp_path: Path) -> None:
    (tmp_path / "CISI.ALL").write_text(".I 1\n.W\nx\n", encoding="ascii")
    (tmp_path / "CISI.QRY").write_text(".I 1\n.W\ny\n", encoding="ascii")
    (tmp_path / "CISI.REL").write_text("1 1 0 0.0\n1 9 0 0.0\n", encoding="ascii")
    files = {name: tmp_path / name for name in ("CISI.ALL", "CISI.QRY", "CISI.REL")}
    with pytest.raises(fc.ConversionError, match=r"CISI\.REL:2: "):
        fc.convert_cisi(files)


def test_convert_refuses_a_file_whose_digest_is_not_the_pinned_one(tmp_path: Path) -> None:
    for name in ("CISI.ALL", "CISI.QRY", "CISI.REL"):
        (tmp_path / name).write_text(".I 1\n", encoding="ascii")
    with pytest.raises(fc.ConversionError, match=r"CISI\.ALL: sha256 [0-9a-f]{64}, expected"):
        fc.convert("cisi", tmp_path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_slice_rule_takes_the_first_queries_then_other_judged_documents() -> None:
    corpus = [{"_id": d, "title": "", "text": d} for d in ("d1", "d2", "d3", "d4", "d5")]
    queries = [{"_id": q, "text": q} for q in ("10", "2", "3")]
    qrels = [("10", "d5", 1), ("2", "d4", 1), ("3", "d1", 1), ("3", "d2", 2), ("2", "d3", 1)]
    docs, chosen, kept = fc.slice_collection(corpus, queries, qrels, n_queries=2, n_docs=4)
    assert [q["_id"] for q in chosen] == ["2", "3"]  # numeric order: 2, 3, 10
    assert kept == [("2", "d4", 1), ("3", "d1", 1), ("3", "d2", 2), ("2", "d3", 1)]
    assert [d["_id"] for d in docs] == ["d1", "d2", "d3", "d4"]  # file order; d5 not needed
    with pytest.raises(fc.ConversionError, match="judge 4 documents > 3"):
        fc.slice_collection(corpus, queries, qrels, n_queries=2, n_docs=3)


# -- the committed slice ---------------------------------------------------------------------


def test_the_committed_slice_is_the_documented_one() -> None:
    corpus, queries, qrels = fc.read_beir(SLICE)
    assert (len(corpus), len(queries), len(qrels)) == (283, 50, 60)
    assert (SLICE / "qrels" / "test.tsv").read_text().startswith("query-id\tcorpus-id\tscore\n")
    ids = {doc["_id"] for doc in corpus}
    assert len(ids) == 283
    assert all(doc["text"] for doc in corpus)
    assert {q for q, _, _ in qrels} == {query["_id"] for query in queries}
    assert {d for _, d, _ in qrels} <= ids
    assert {s for _, _, s in qrels} == {1}
    readme = (SLICE / "README.md").read_text(encoding="utf-8")
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        digest = hashlib.sha256((SLICE / name).read_bytes()).hexdigest()
        assert re.search(rf"`{re.escape(name)}`\s+`{digest}`", readme), name


# -- agreement with ir_measures --------------------------------------------------------------

QRELS = {"q1": {"a": 3, "b": 1, "c": 0, "d": 2}, "q2": {"x": 1}, "q3": {"y": 0}, "q4": {"e": 2}}
RUN = {
    "q1": [("d", 9.0), ("z", 8.5), ("a", 8.0), ("b", 7.0)],
    "q2": [("w", 1.0), ("x", 0.5)],
    "q3": [("y", 2.0)],
    "q9": [("a", 1.0)],  # a query absent from the qrels: ir_measures ignores it
}  # q4 is absent from the run: ir_measures scores it 0


def _our_values(run: dict[str, list[tuple[str, float]]], k: int, grade: int) -> list[dict]:
    """The metrics by their formulas (docs/metrics.md), null where no memory is relevant."""
    rows = []
    for query, judged in QRELS.items():
        ranking = [doc for doc, _ in run.get(query, [])][:k]
        relevant = {doc for doc, g in judged.items() if g >= grade}
        hits = [doc in relevant for doc in ranking]
        ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
        first = next((i for i, hit in enumerate(hits, 1) if hit), None)
        values = (
            {
                "ndcg_at_k": sum(judged.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranking))
                / sum(g / math.log2(i + 2) for i, g in enumerate(ideal)),
                "recall_at_k": sum(hits) / max(len(relevant), 1),
                "mrr_at_k": 1 / first if first else 0.0,
                "precision_at_k": sum(hits) / k,
                "ap_at_k": sum(sum(hits[:i]) / i for i, h in enumerate(hits, 1) if h)
                / max(len(relevant), 1),
            }
            if relevant
            else dict.fromkeys(agreement.METRICS)
        )
        rows += [
            {"profile": "p", "k": k, "query_id": query, "metric": m, "value": v}
            for m, v in values.items()
        ]
    return rows


def _export(directory: Path, run: dict[str, list[tuple[str, float]]], grade: int) -> Path:
    (directory / "runs").mkdir(parents=True)
    lines = [f"{q} 0 {d} {g}" for q in sorted(QRELS) for d, g in sorted(QRELS[q].items())]
    (directory / "qrels.trec").write_text("\n".join(lines) + "\n")
    slots = [
        f"{q} Q0 {d} {rank} {score!r} p"
        for q in sorted(run)
        for rank, (d, score) in enumerate(run[q], 1)
    ]
    (directory / "runs" / "p.trec").write_text("\n".join(slots) + "\n")
    rows = [row for k in (1, 3) for row in _our_values(run, k, grade)]
    schema = {"profile": pl.String, "k": pl.Int32, "query_id": pl.String, "metric": pl.String}
    pl.DataFrame(rows, schema={**schema, "value": pl.Float64}).write_parquet(
        directory / "per_query_metrics.parquet"
    )
    return directory


@pytest.mark.parametrize("grade", [1, 2])
@pytest.mark.parametrize("order", ["score", "rank"])
def test_agreement_finds_none_where_the_definitions_agree(
    tmp_path: Path, grade: int, order: str
) -> None:
    export = _export(tmp_path, RUN, grade)
    rows, differences = agreement.agreement(export, grade=grade, order=order, tolerance=1e-9)
    assert differences == []
    assert len(rows) == 2 * len(agreement.METRICS)
    positive = {1: 3, 2: 2}[grade]  # q1, q2, q4 at grade 1; q1, q4 at grade 2
    assert all(row.queries == positive for row in rows)
    # ir_measures also scores the judged queries with nothing relevant: q3 (and q2 at grade 2)
    assert all(row.theirs_only == 4 - positive for row in rows)


def test_agreement_reports_a_wrong_value(tmp_path: Path) -> None:
    export = _export(tmp_path, RUN, 1)
    frame = pl.read_parquet(export / "per_query_metrics.parquet")
    wrong = (pl.col("query_id") == "q1") & (pl.col("metric") == "precision_at_k")
    frame = frame.with_columns(
        value=pl.when(wrong).then(pl.col("value") + 0.5).otherwise(pl.col("value"))
    )
    frame.write_parquet(export / "per_query_metrics.parquet")
    assert agreement.main([str(export), "--order", "rank"]) == 1
    _, differences = agreement.agreement(export, grade=1, order="rank", tolerance=1e-9)
    assert [(d.k, d.metric, d.query_id) for d in differences] == [
        (1, "precision_at_k", "q1"),
        (3, "precision_at_k", "q1"),
    ]


def test_tied_scores_follow_the_document_id_not_the_rank(tmp_path: Path) -> None:
    # "d" (relevant) is ranked above "z" (unjudged) with the same score: trec_eval orders ties
    # by document id descending, so it puts "z" first; --order rank follows the run's ranks.
    run = {**RUN, "q1": [("d", 1.0), ("z", 1.0), ("a", 0.5), ("b", 0.2)]}
    export = _export(tmp_path, run, 1)
    _, differences = agreement.agreement(export, grade=1, order="score", tolerance=1e-9)
    at_1 = {d.metric for d in differences if d.k == 1 and d.query_id == "q1"}
    assert at_1 == {"ndcg_at_k", "recall_at_k", "precision_at_k", "ap_at_k"}  # RR: msmarco's rule
    assert all(d.tied for d in differences)
    assert agreement.agreement(export, grade=1, order="rank", tolerance=1e-9)[1] == []


def test_agreement_names_a_malformed_run_line(tmp_path: Path) -> None:
    export = _export(tmp_path, RUN, 1)
    (export / "runs" / "p.trec").write_text("q1 Q0 a 1 0.5 p\nq1 Q0 b two 0.4 p\n")
    with pytest.raises(agreement.InputError, match=r"p\.trec:2: expected six columns"):
        agreement.agreement(export, grade=1, order="score", tolerance=1e-9)
    assert agreement.main([str(tmp_path / "missing")]) == 2
