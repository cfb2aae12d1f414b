"""The ONNX sentence embedder: WordPiece tokens, a BERT encoder, mean pooling, L2 normalisation.

The pipeline is sentence-transformers' for all-MiniLM-L6-v2 (``docs/semantic.md`` records the
cross-check against it):

1. Tokenise with ``tokenizer.json`` (the ``tokenizers`` package): ``[CLS] pieces [SEP]``,
   truncated to ``MAX_TOKENS`` = 256 tokens (the model's ``max_seq_length``; the rest of a
   longer text is ignored), never padded.
2. Run the encoder (onnxruntime, CPU, one thread: ``intra_op_num_threads=1``,
   ``inter_op_num_threads=1``, sequential execution), giving one vector a token.
3. Mean-pool over the attention mask (every token of the text), in float64.
4. L2-normalise in float64, round to float32, pack little-endian.

Batching never changes a vector: texts are grouped by token count, so a batch holds texts of
one length and no padding is ever fed to the model; within a length, batches hold at most
``TOKEN_BUDGET`` tokens (at least one text). The encoder's arithmetic for one row does not
depend on the other rows of its batch, so a text's vector is the same alone or in any batch
(the tests check it bit for bit). One thread makes runs repeatable and timings comparable;
a different CPU may round differently in the last bits (see the golden-vector tolerance in the
tests).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from hotmem.embedding.registry import DTYPE, SEMANTIC_MODEL, check_texts
from hotmem.embedding.semantic.sources import ModelFiles, read_model_files
from hotmem.errors import EmbedderError

__all__ = ["MAX_TOKENS", "TOKEN_BUDGET", "OnnxEmbedder", "load", "load_embedder"]

MAX_TOKENS = 256
# At most this many tokens a run (64 texts of 16 tokens, 4 of 256). Measured on 1,000 short
# memories, budgets of 512 to 1,024 ran about 10 % faster than 4,096 (the activations stay in
# cache); it also bounds the attention matrices (batch x 12 heads x length²) to 13 MB.
TOKEN_BUDGET = 1024
_INPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids"})


def session_options() -> ort.SessionOptions:
    """One thread, sequential execution, full graph optimisation, warnings only."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    return options


def _tokenizer(model_files: ModelFiles) -> Tokenizer:
    try:
        tokenizer = Tokenizer.from_str(model_files.tokenizer)
    except Exception as error:  # tokenizers raises a bare Exception for a malformed file
        raise EmbedderError(
            f"expected a tokenizers tokenizer.json ({model_files.source}), found one it cannot "
            f"read: {error}"
        ) from None
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    return tokenizer


def _session(model_files: ModelFiles) -> ort.InferenceSession:
    try:
        session = ort.InferenceSession(
            model_files.model, sess_options=session_options(), providers=["CPUExecutionProvider"]
        )
    except Exception as error:  # onnxruntime's errors share no public base class
        raise EmbedderError(
            f"expected an ONNX model in model.onnx ({model_files.source}), found one "
            f"onnxruntime cannot load: {str(error).strip()}"
        ) from None
    names = {node.name for node in session.get_inputs()}
    if "input_ids" not in names or not names <= _INPUTS:
        raise EmbedderError(
            f"expected model inputs input_ids [attention_mask, token_type_ids] "
            f"({model_files.source}), found {sorted(names)}"
        )
    outputs = session.get_outputs()
    if len(outputs[0].shape) != 3:
        raise EmbedderError(
            f"expected the first model output to be token vectors [batch, sequence, dimension] "
            f"({model_files.source}), found shape {outputs[0].shape}"
        )
    return session


class OnnxEmbedder:
    """A sentence embedder over an ONNX encoder (see the module docstring for the pipeline).

    Attributes:
        model_id, dimension, dtype, digest: the vectors' space
            (``hotmem.embedding.registry.Embedder``).
        source: where the model files were read (package and version, or directory).
        sha256: each model file's sha256, by file name.
    """

    __slots__ = (
        "_inputs",
        "_output",
        "_session",
        "_tokenizer",
        "digest",
        "dimension",
        "dtype",
        "model_id",
        "sha256",
        "source",
    )

    def __init__(self, model_id: str, model_files: ModelFiles) -> None:
        self._tokenizer = _tokenizer(model_files)
        self._session = _session(model_files)
        self._inputs = frozenset(node.name for node in self._session.get_inputs())
        self._output: str = self._session.get_outputs()[0].name
        self.model_id = model_id
        self.dtype = DTYPE
        self.digest = model_files.digest
        self.sha256 = dict(model_files.sha256)
        self.source = model_files.source
        width = self._session.get_outputs()[0].shape[2]
        self.dimension: int = width if isinstance(width, int) else self._measure_dimension()

    def _measure_dimension(self) -> int:
        # A model exported with a symbolic width: one run tells it.
        return int(self._run(np.array([self._tokenizer.encode("").ids], dtype=np.int64)).shape[1])

    def tokens(self, text: str) -> list[int]:
        """The token ids the model sees for ``text`` (with [CLS]/[SEP], truncated)."""
        ids: list[int] = self._tokenizer.encode(text).ids
        return ids

    def feeds(self, ids: np.ndarray[Any, np.dtype[np.int64]]) -> dict[str, Any]:
        """The model inputs for a batch of unpadded, equal-length token rows."""
        inputs: dict[str, Any] = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            inputs["attention_mask"] = np.ones_like(ids)
        if "token_type_ids" in self._inputs:
            inputs["token_type_ids"] = np.zeros_like(ids)
        return inputs

    def _run(self, ids: np.ndarray[Any, np.dtype[np.int64]]) -> np.ndarray[Any, Any]:
        hidden = self._session.run([self._output], self.feeds(ids))[0]
        # Mean over every token (the mask is all ones: no padding), then L2, in float64.
        pooled = np.asarray(hidden).sum(axis=1, dtype=np.float64) / ids.shape[1]
        # Row by row (a row's sums never depend on the other rows of its batch).
        norms = np.sqrt(np.square(pooled).sum(axis=1, keepdims=True))
        unit: np.ndarray[Any, Any] = np.divide(
            pooled, norms, out=np.zeros_like(pooled), where=norms > 0.0
        )
        return unit

    def embed_many(self, texts: Sequence[str]) -> list[bytes]:
        """Embed each text; one packed little-endian float32 vector a text, in order.

        Raises:
            ValidationError: ``texts`` is a string, or holds something that is not a string.
            EmbedderError: the model produced a value that is not finite.
        """
        rows = [self.tokens(text) for text in check_texts(texts)]
        vectors: list[bytes] = [b""] * len(rows)
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        for length, same in groupby(order, key=lambda i: len(rows[i])):
            group = list(same)
            step = max(1, TOKEN_BUDGET // length)
            for start in range(0, len(group), step):
                chunk = group[start : start + step]
                pooled = self._run(np.array([rows[i] for i in chunk], dtype=np.int64))
                packed = pooled.astype("<f4")
                if not np.isfinite(packed).all():
                    raise EmbedderError(
                        f"expected finite vectors from {self.model_id!r} ({self.source}), "
                        f"found NaN or infinity for a text of {length} tokens"
                    )
                for position, vector in zip(chunk, packed, strict=True):
                    vectors[position] = vector.tobytes()
        return vectors


def load_embedder(model_id: str, model_dir: Path | None) -> OnnxEmbedder:
    """Read and check the model files, then build the embedder.

    Raises:
        MissingExtraError: no ``model_dir`` and the model package is not installed.
        EmbedderError: the files are missing, unreadable, fail their digest check, or are not
            a model and tokenizer the embedder can run.
    """
    return OnnxEmbedder(model_id, read_model_files(model_dir))


def load(model_dir: Path | None) -> OnnxEmbedder:
    """The semantic space's embedder (the registry's ``load`` of ``all-minilm-l6-v2``)."""
    return load_embedder(SEMANTIC_MODEL, model_dir)
