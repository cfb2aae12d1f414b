"""The ONNX sentence embedder: WordPiece tokens, a BERT encoder, mean pooling, L2 normalisation.

The pipeline is sentence-transformers' for all-MiniLM-L6-v2 (``docs/semantic.md`` records the
cross-check against it):

1. Tokenise with ``tokenizer.json`` (the ``tokenizers`` package): ``[CLS] pieces [SEP]``,
   truncated to ``MAX_TOKENS`` = 256 tokens (the model's ``max_seq_length``; the rest of a
   longer text is ignored), never padded.
2. Run the encoder (onnxruntime, CPU, one thread a run: ``intra_op_num_threads=1``,
   ``inter_op_num_threads=1``, sequential execution), giving one vector a token.
3. Mean-pool over the attention mask (every token of the text), in float64.
4. L2-normalise in float64, round to float32, pack little-endian.

Batching never changes a vector: texts are grouped by token count, so a batch holds texts of
one length and no padding is ever fed to the model; within a length, batches hold at most
``TOKEN_BUDGET`` tokens (at least one text). The encoder's arithmetic for one row does not
depend on the other rows of its batch, so a text's vector is the same alone or in any batch
(the tests check it bit for bit).

Threads never change a vector either: every core is used by running several model runs at
once, never by splitting one. The embedder's ``threads`` worker threads (every CPU of the
process unless told) call the one session concurrently (onnxruntime allows it; each call
computes on its caller's thread, and the GIL is released meanwhile). Each run is computed
exactly as on one thread, and which texts share a run depends on their token counts alone
(:func:`runs`), so a vector is the same bytes for any thread count, by construction; results
are placed by position and progress is reported in run order. (onnxruntime's own intra-op
threads also gave the same bytes here, but slowed short texts below one thread on a busy
machine: ``docs/semantic.md``, Threads.) A different CPU may round differently in the last
bits (see the golden-vector tolerance in the tests).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from itertools import groupby
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from hotmem.embedding.registry import DTYPE, SEMANTIC_MODEL, check_texts, check_threads
from hotmem.embedding.semantic.sources import ModelFiles, read_model_files
from hotmem.errors import EmbedderError
from hotmem.progress import ProgressCallback

__all__ = [
    "MAX_TOKENS",
    "TOKEN_BUDGET",
    "OnnxEmbedder",
    "load",
    "load_embedder",
    "runs",
    "session_options",
]

MAX_TOKENS = 256
# At most this many tokens a run (64 texts of 16 tokens, 4 of 256). Measured on 1,000 short
# memories, budgets of 512 to 1,024 ran about 10 % faster than 4,096 (the activations stay in
# cache); it also bounds the attention matrices (batch x 12 heads x length²) to 13 MB.
TOKEN_BUDGET = 1024
_INPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids"})


def session_options() -> ort.SessionOptions:
    """One thread a run, sequential execution, full graph optimisation, warnings only."""
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


def runs(lengths: Sequence[int], budget: int) -> Iterator[list[int]]:
    """The model runs for texts of these token counts: lists of positions, each run one length
    (shortest first, positions ascending) and at most ``budget`` tokens (at least one text).
    Which texts share a run depends on the lengths alone, never on threads."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    for length, same in groupby(order, key=lengths.__getitem__):
        group = list(same)
        step = max(1, budget // length)
        for start in range(0, len(group), step):
            yield group[start : start + step]


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
        threads: how many model runs it computes at once, each on one thread (speed only).
    """

    __slots__ = (
        "__weakref__",  # the search keeps query vectors per embedder (retrieval/prepared.py)
        "_inputs",
        "_lock",
        "_output",
        "_pool",
        "_session",
        "_tokenizer",
        "digest",
        "dimension",
        "dtype",
        "model_id",
        "sha256",
        "source",
        "threads",
    )

    def __init__(
        self, model_id: str, model_files: ModelFiles, *, threads: int | None = None
    ) -> None:
        self.threads = check_threads(threads)
        self._pool: ThreadPoolExecutor | None = None  # started by the first parallel call
        self._lock = threading.Lock()
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

    def _packed(self, rows: list[list[int]], chunk: list[int]) -> np.ndarray[Any, Any]:
        """The packed vectors of one run (on a worker thread when there are several)."""
        packed = self._run(np.array([rows[i] for i in chunk], dtype=np.int64)).astype("<f4")
        if not np.isfinite(packed).all():
            raise EmbedderError(
                f"expected finite vectors from {self.model_id!r} ({self.source}), "
                f"found NaN or infinity for a text of {len(rows[chunk[0]])} tokens"
            )
        return packed

    def _mapper(self, count: int) -> Callable[..., Iterable[Any]]:
        """``map`` over the worker threads, in order; the calling thread alone for one run or
        one thread."""
        if self.threads == 1 or count < 2:
            return map
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="hotmem-embed")
            return self._pool.map

    def embed_many(
        self, texts: Sequence[str], *, progress: ProgressCallback | None = None
    ) -> list[bytes]:
        """Embed each text; one packed little-endian float32 vector a text, in order.

        The model runs (:func:`runs`) are spread over ``threads`` worker threads. ``progress``,
        when given, is called on the calling thread with (texts embedded, ``len(texts)``) as
        runs finish, in run order, the last call with both equal.

        Raises:
            ValidationError: ``texts`` is a string, or holds something that is not a string.
            EmbedderError: the model produced a value that is not finite.
        """
        rows = [self.tokens(text) for text in check_texts(texts)]
        vectors: list[bytes] = [b""] * len(rows)
        chunks = list(runs([len(row) for row in rows], TOKEN_BUDGET))
        done = 0
        results = self._mapper(len(chunks))(partial(self._packed, rows), chunks)
        for chunk, packed in zip(chunks, results, strict=True):
            for position, vector in zip(chunk, packed, strict=True):
                vectors[position] = vector.tobytes()
            done += len(chunk)
            if progress is not None:
                progress(done, len(rows))
        return vectors


def load_embedder(
    model_id: str, model_dir: Path | None, *, threads: int | None = None
) -> OnnxEmbedder:
    """Read and check the model files, then build the embedder, which computes ``threads``
    model runs at once (``None``: every CPU of the process).

    Raises:
        ValidationError: ``threads`` is not a positive integer.
        MissingExtraError: no ``model_dir`` and the model package is not installed.
        EmbedderError: the files are missing, unreadable, fail their digest check, or are not
            a model and tokenizer the embedder can run.
    """
    return OnnxEmbedder(model_id, read_model_files(model_dir), threads=threads)


def load(model_dir: Path | None, threads: int | None = None) -> OnnxEmbedder:
    """The semantic space's embedder (the registry's ``load`` of ``all-minilm-l6-v2``)."""
    return load_embedder(SEMANTIC_MODEL, model_dir, threads=threads)
