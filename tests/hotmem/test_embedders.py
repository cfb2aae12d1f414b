"""The embedder registry and hotmem-hash-v1 as an embedder (standard library only)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import hotmem
from hotmem.embedding.hash_v1 import embed_bytes
from hotmem.embedding.registry import HASH_DIGEST, HashEmbedder, check_texts, install_hint
from hotmem.embedding.semantic import sources


def test_the_registry_lists_hash_v1_and_the_semantic_model() -> None:
    assert {
        model_id: (entry.extra, entry.modules) for model_id, entry in hotmem.EMBEDDERS.items()
    } == {
        "hotmem-hash-v1": (None, ()),
        "all-minilm-l6-v2": ("semantic", ("numpy", "onnxruntime", "tokenizers")),
    }
    assert hotmem.SEMANTIC_MODEL == "all-minilm-l6-v2"
    assert all(model_id == entry.model_id for model_id, entry in hotmem.EMBEDDERS.items())


def test_hash_v1_is_an_embedder_with_a_fixed_digest() -> None:
    embedder = hotmem.get_embedder("hotmem-hash-v1")
    assert embedder == HashEmbedder()
    assert (embedder.model_id, embedder.dimension, embedder.dtype) == (
        "hotmem-hash-v1",
        64,
        "float32-le",
    )
    # Documented in docs/semantic.md: the sha256 of the UTF-8 model id (it has no model file).
    assert embedder.digest == hashlib.sha256(b"hotmem-hash-v1").hexdigest()
    assert embedder.digest == HASH_DIGEST
    assert HASH_DIGEST == "1805ac2d1c5682e30c4e70205918e3a78038d8b2b7f356a2aa75e9980c33f24f"


def test_hash_v1_embed_many_is_embed_bytes_of_each_text() -> None:
    texts = ["Invoices need two approvals.", "", "hello", "Invoices need two approvals."]
    vectors = hotmem.get_embedder("hotmem-hash-v1").embed_many(texts)
    assert vectors == [embed_bytes(text) for text in texts]
    assert [len(vector) for vector in vectors] == [256] * 4
    assert hotmem.get_embedder("hotmem-hash-v1").embed_many([]) == []
    assert hotmem.get_embedder("hotmem-hash-v1").embed_many(("hello",)) == [embed_bytes("hello")]


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        ("hello", "expected a sequence of texts, found a single str"),
        (b"hello", "expected a sequence of texts, found a single bytes"),
        (["a", 3, "b"], "expected texts to be strings, found int at position 1"),
        (["a", None], "expected texts to be strings, found NoneType at position 1"),
    ],
)
def test_embed_many_refuses_what_is_not_a_sequence_of_strings(texts: object, message: str) -> None:
    with pytest.raises(hotmem.ValidationError) as raised:
        check_texts(texts)  # type: ignore[arg-type]
    assert str(raised.value) == message
    with pytest.raises(hotmem.ValidationError):
        hotmem.get_embedder("hotmem-hash-v1").embed_many(texts)  # type: ignore[arg-type]


def test_an_unknown_model_id_is_a_validation_error() -> None:
    with pytest.raises(hotmem.ValidationError) as raised:
        hotmem.get_embedder("all-MiniLM-L6-v2")
    assert str(raised.value) == (
        "expected a model id among ['all-minilm-l6-v2', 'hotmem-hash-v1'], "
        "found model_id='all-MiniLM-L6-v2'"
    )


def test_hash_v1_takes_no_model_directory(tmp_path: Path) -> None:
    with pytest.raises(hotmem.ValidationError) as raised:
        hotmem.get_embedder("hotmem-hash-v1", model_dir=tmp_path)
    assert str(raised.value) == (
        "expected no model directory for 'hotmem-hash-v1' (it has no model files), "
        f"found model_dir={str(tmp_path.resolve())!r}"
    )


def test_hash_v1_ignores_the_model_directory_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOTMEM_MODEL_DIR", "/nonexistent")
    assert hotmem.get_embedder("hotmem-hash-v1") == HashEmbedder()


def test_the_install_hint_names_pip_and_uv() -> None:
    assert install_hint("semantic") == (
        "pip install '.[semantic]' in a HotMem checkout (with uv: uv sync --extra semantic)"
    )


def test_the_files_digest_is_the_digest_of_sha256sum_output() -> None:
    # `sha256sum model.onnx tokenizer.json | sha256sum` prints this digest.
    listing = (
        "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6  model.onnx\n"
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037  tokenizer.json\n"
    )
    assert hashlib.sha256(listing.encode()).hexdigest() == sources.PINNED_DIGEST
    assert sources.PINNED_DIGEST == (
        "b5df2cebc05151ca93b49db847b862bad8cc00aab36137ca994cb5f3241d21eb"
    )
    # Name order, whatever order the digests are given in.
    assert sources.files_digest({"tokenizer.json": "b", "model.onnx": "a"}) == (
        hashlib.sha256(b"a  model.onnx\nb  tokenizer.json\n").hexdigest()
    )


def test_the_bundled_tokenizer_is_the_pinned_file() -> None:
    directory = Path(sources.__file__).parent / "all-minilm-l6-v2"
    data = (directory / "tokenizer.json").read_bytes()
    assert (len(data), hashlib.sha256(data).hexdigest()) == (466_247, sources.TOKENIZER_SHA256)
    assert (directory / "LICENSE").read_text(encoding="utf-8").split()[:3] == [
        "Apache",
        "License",
        "Version",
    ]
    assert sources.TOKENIZER_SHA256 in (directory / "NOTICE").read_text(encoding="utf-8")


def test_a_missing_model_directory_is_an_embedder_error(tmp_path: Path) -> None:
    absent = tmp_path / "absent"
    with pytest.raises(hotmem.EmbedderError) as raised:
        sources.read_model_files(absent)
    assert str(raised.value) == (
        "expected a model directory holding model.onnx and tokenizer.json "
        f"(model_dir or HOTMEM_MODEL_DIR), found no directory at {absent}"
    )


@pytest.mark.parametrize(
    ("present", "found"),
    [
        ((), "found no model.onnx and no tokenizer.json"),
        (("model.onnx",), "found no tokenizer.json"),
        (("tokenizer.json",), "found no model.onnx"),
    ],
)
def test_a_model_directory_needs_both_files(
    tmp_path: Path, present: tuple[str, ...], found: str
) -> None:
    for name in present:
        (tmp_path / name).write_bytes(b"{}")
    with pytest.raises(hotmem.EmbedderError) as raised:
        sources.read_model_files(tmp_path)
    assert str(raised.value) == (
        f"expected model.onnx and tokenizer.json in the model directory {tmp_path}, {found}"
    )


def test_a_model_directory_records_the_digests_of_its_files(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"not really a model")
    (tmp_path / "tokenizer.json").write_text('{"version": "1.0"}', encoding="utf-8")
    files = sources.read_model_files(tmp_path)
    model_sha = hashlib.sha256(b"not really a model").hexdigest()
    tokenizer_sha = hashlib.sha256(b'{"version": "1.0"}').hexdigest()
    assert files.sha256 == {"model.onnx": model_sha, "tokenizer.json": tokenizer_sha}
    assert (
        files.digest
        == hashlib.sha256(
            f"{model_sha}  model.onnx\n{tokenizer_sha}  tokenizer.json\n".encode()
        ).hexdigest()
    )
    assert (files.model, files.tokenizer) == (b"not really a model", '{"version": "1.0"}')
    assert files.source == f"directory {tmp_path}"


def test_a_tokenizer_that_is_not_utf8_is_an_embedder_error(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"x")
    (tmp_path / "tokenizer.json").write_bytes(b'{"a": "\xff"}')
    with pytest.raises(hotmem.EmbedderError) as raised:
        sources.read_model_files(tmp_path)
    assert str(raised.value) == (
        f"expected {tmp_path / 'tokenizer.json'} to be UTF-8 JSON, found an invalid byte at "
        "offset 7"
    )


def test_the_missing_extra_error_is_a_hotmem_error_of_its_own() -> None:
    # Not an EmbedderError: the numpy accelerator (the 'fast' extra) raises it too.
    error = hotmem.MissingExtraError("message", extra="semantic", missing=("numpy",))
    assert not isinstance(error, hotmem.EmbedderError)
    assert isinstance(error, hotmem.HotmemError)
    assert (str(error), error.extra, error.missing) == ("message", "semantic", ("numpy",))


def test_missing_modules_lists_only_those_that_cannot_be_found() -> None:
    entry = hotmem.EmbedderEntry(
        model_id="example",
        summary="",
        extra="example",
        modules=("json", "hotmem_no_such_module", "sqlite3", "hotmem_nor_this_one"),
        load=lambda model_dir: HashEmbedder(),
    )
    assert entry.missing_modules() == ("hotmem_no_such_module", "hotmem_nor_this_one")
