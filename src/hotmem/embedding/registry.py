"""Embedders by model id: the vector spaces HotMem knows how to build.

An embedder turns texts into vectors of one space. It says which space with four values that a
store and a snapshot package record beside the vectors:

- ``model_id``: the registry key (``hotmem-hash-v1``, ``all-minilm-l6-v2``);
- ``dimension`` and ``dtype``: the vectors' shape (``"float32-le"``: little-endian IEEE-754
  float32, the value snapshot packages carry);
- ``digest``: sha256 (hex) of what defines the vectors. For a model, the model files
  (``hotmem.embedding.semantic.sources``); for ``hotmem-hash-v1``, which has no file and is
  fixed by its specification (``docs/embedding.md``), the sha256 of its UTF-8 model id. Two
  embedders with the same model id and digest make the same vectors (up to the float rounding
  of the CPU).

``embed_many(texts, *, progress=None)`` returns one packed vector (``bytes``) a text, in order,
calling ``progress(embedded, len(texts))`` as it goes. A text's vector never depends on the
other texts of the call, on how they are batched, or on how many threads compute it.

``get_embedder(model_id, threads=None)`` builds an embedder that may use ``threads`` CPU threads
(``None``: every CPU this process may run on, ``default_threads()``); the thread count changes
speed only, never a vector, so it is not part of the embedder's identity.

The registry ``EMBEDDERS`` maps each model id to an ``EmbedderEntry``. An entry that needs an
optional extra imports nothing until it is loaded: without the extra, ``get_embedder`` raises a
``MissingExtraError`` naming it, and everything else works (``import hotmem`` loads the standard
library only).

``embedder_identity`` gives the four values without building the embedder: for the semantic
model, hashing its files (about 0.1 s) instead of loading the ONNX session (0.6 s and 280 MiB).
Hydration uses it to decide that a package's vectors can be carried as they are.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from hotmem.embedding import SEMANTIC_MODEL
from hotmem.embedding.hash_v1 import DIMENSION, DTYPE, HASH_DIGEST, MODEL_NAME, embed_bytes
from hotmem.errors import MissingExtraError, ValidationError
from hotmem.progress import ProgressCallback
from hotmem.records import record

__all__ = [
    "DTYPE",
    "EMBEDDERS",
    "HASH_DIGEST",
    "MODEL_DIR_ENV",
    "SEMANTIC_MODEL",
    "Embedder",
    "EmbedderEntry",
    "EmbedderIdentity",
    "HashEmbedder",
    "check_threads",
    "default_threads",
    "embedder_identity",
    "get_embedder",
    "identity_of",
    "install_hint",
]

MODEL_DIR_ENV = "HOTMEM_MODEL_DIR"


class Embedder(Protocol):
    """What every embedder provides (``HashEmbedder``, and ``OnnxEmbedder`` of
    ``hotmem.embedding.semantic.onnx_embedder``)."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    @property
    def dtype(self) -> str: ...

    @property
    def digest(self) -> str: ...

    def embed_many(
        self, texts: Sequence[str], *, progress: ProgressCallback | None = None
    ) -> list[bytes]:
        """One packed little-endian vector (``dimension`` values) per text, in order.

        ``progress``, when given, is called with (texts embedded, ``len(texts)``) as the work
        advances, the last call with both equal; never for no texts.

        Raises:
            ValidationError: ``texts`` is a string, or holds something that is not a string.
        """
        ...


@record
class EmbedderIdentity:
    """Which vectors an embedder makes: the values recorded beside them (see the module
    docstring), without the embedder itself."""

    model_id: str
    digest: str
    dimension: int
    dtype: str


def identity_of(embedder: Embedder) -> EmbedderIdentity:
    """The identity of a loaded embedder."""
    return EmbedderIdentity(embedder.model_id, embedder.digest, embedder.dimension, embedder.dtype)


def check_texts(texts: Sequence[str]) -> list[str]:
    """Return ``texts`` as a list, after checking that it is a sequence of strings.

    Raises:
        ValidationError: ``texts`` is a single string, or an item is not a string.
    """
    if isinstance(texts, str | bytes):
        raise ValidationError(
            f"expected a sequence of texts, found a single {type(texts).__name__}"
        )
    items = list(texts)
    for position, text in enumerate(items):
        if not isinstance(text, str):
            raise ValidationError(
                f"expected texts to be strings, found {type(text).__name__} at position {position}"
            )
    return items


@record
class HashEmbedder:
    """``hotmem-hash-v1`` (``hotmem.embed``): 64 float32, deterministic on every machine."""

    model_id: str = MODEL_NAME
    dimension: int = DIMENSION
    dtype: str = DTYPE
    digest: str = HASH_DIGEST

    def embed_many(
        self, texts: Sequence[str], *, progress: ProgressCallback | None = None
    ) -> list[bytes]:
        """Embed each text with ``hotmem-hash-v1`` (256 bytes each); ``progress`` is called
        once, at the end (the work is short).

        Raises:
            ValidationError: ``texts`` is a string, or holds something that is not a string.
        """
        vectors = [embed_bytes(text) for text in check_texts(texts)]
        if progress is not None and vectors:
            progress(len(vectors), len(vectors))
        return vectors


def default_threads() -> int:
    """The CPU threads an embedder uses unless told: every CPU this process may run on (its
    affinity mask where the system has one, as ``os.process_cpu_count`` of Python 3.13)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def check_threads(threads: int | None) -> int:
    """``threads`` as a thread count: ``None`` is :func:`default_threads`.

    Raises:
        ValidationError: ``threads`` is neither ``None`` nor a positive integer.
    """
    if threads is None:
        return default_threads()
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValidationError(
            f"expected threads to be a positive integer or None, found threads={threads!r}"
        )
    return threads


def install_hint(extra: str) -> str:
    """How to install an extra, with pip and with uv, from a checkout (the name ``hotmem`` on
    package indexes belongs to another project)."""
    return f"pip install '.[{extra}]' in a HotMem checkout (with uv: uv sync --extra {extra})"


@record
class EmbedderEntry:
    """One registered embedder: how to load it and what it needs.

    Attributes:
        model_id: the registry key.
        summary: one line for listings.
        extra: the optional extra it needs, or ``None`` when it is standard library only.
        modules: the modules the extra provides, checked before anything is imported.
        load: builds the embedder from an optional model directory (already resolved) and the
            CPU threads it may use (at least 1; an embedder without threads ignores it); a
            function, or a plug-in's ``"module:function"``, imported by name on first use.
        identify: the embedder's identity from the same directory without building it, or
            ``None`` when only the built embedder can tell (files of an unknown dimension);
            ``None`` instead of a function: the identity is always the built embedder's. A
            function or a ``"module:function"``, as ``load``.
    """

    model_id: str
    summary: str
    extra: str | None
    modules: tuple[str, ...]
    load: Callable[[Path | None, int], Embedder] | str
    identify: Callable[[Path | None], EmbedderIdentity | None] | str | None = None

    def missing_modules(self) -> tuple[str, ...]:
        """The modules of ``modules`` that cannot be found (nothing is imported)."""
        return tuple(name for name in self.modules if importlib.util.find_spec(name) is None)


def _plugged(reference: Callable[..., Any] | str) -> Callable[..., Any]:
    """A function, or the one a ``"module:function"`` names (its module imported now): a
    plug-in registered by name, so that the registry imports nothing of it."""
    if not isinstance(reference, str):
        return reference
    module, _, name = reference.partition(":")
    found: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return found


def _load_hash(model_dir: Path | None, threads: int = 1) -> Embedder:
    if model_dir is not None:
        raise ValidationError(
            f"expected no model directory for {MODEL_NAME!r} (it has no model files), "
            f"found model_dir={str(model_dir)!r}"
        )
    return HashEmbedder()


def _identify_hash(model_dir: Path | None) -> EmbedderIdentity:
    return identity_of(_load_hash(model_dir))


EMBEDDERS: Mapping[str, EmbedderEntry] = MappingProxyType(
    {
        entry.model_id: entry
        for entry in (
            EmbedderEntry(
                model_id=MODEL_NAME,
                summary="character-trigram hash vectors, 64 float32 (standard library)",
                extra=None,
                modules=(),
                load=_load_hash,
                identify=_identify_hash,
            ),
            EmbedderEntry(
                model_id=SEMANTIC_MODEL,
                summary="all-MiniLM-L6-v2 sentence embeddings (int8 ONNX), 384 float32",
                extra="semantic",
                modules=("numpy", "onnxruntime", "tokenizers"),
                # The plug-in: its modules are imported on first use, by name (the extra's
                # modules, numpy, onnxruntime and tokenizers, with onnx_embedder).
                load="hotmem.embedding.semantic.onnx_embedder:load",
                identify="hotmem.embedding.semantic.sources:identity",
            ),
        )
    }
)


def _entry(model_id: str) -> EmbedderEntry:
    entry = EMBEDDERS.get(model_id)
    if entry is None:
        raise ValidationError(
            f"expected a model id among {sorted(EMBEDDERS)}, found model_id={model_id!r}"
        )
    return entry


def _directory(entry: EmbedderEntry, model_dir: str | os.PathLike[str] | None) -> str | None:
    if model_dir is None and entry.extra is not None:
        model_dir = os.environ.get(MODEL_DIR_ENV) or None
    return None if model_dir is None else str(Path(model_dir).resolve())


def get_embedder(
    model_id: str,
    *,
    model_dir: str | os.PathLike[str] | None = None,
    threads: int | None = None,
) -> Embedder:
    """Return the embedder registered as ``model_id``, loading it on first use.

    Loaded embedders are kept for the life of the process, one per (model id, model
    directory, threads).

    Args:
        model_id: a key of ``EMBEDDERS``.
        model_dir: for a model embedder, a directory holding its files (``model.onnx`` and
            ``tokenizer.json``) instead of the pinned package; when ``None``, the environment
            variable ``HOTMEM_MODEL_DIR`` is used if it is set and not empty.
        threads: the CPU threads a model embedder runs its model on; ``None``: every CPU this
            process may run on (:func:`default_threads`). Speed only: the vectors are the same
            bytes whatever the count (``docs/semantic.md``, Determinism).

    Raises:
        ValidationError: ``model_id`` is not registered, ``model_dir`` is given for an
            embedder without model files, or ``threads`` is not a positive integer.
        MissingExtraError: the extra the embedder needs is not installed (the message names it).
        EmbedderError: the model files are missing, unreadable or fail their digest check.
    """
    entry = _entry(model_id)
    return _load(model_id, _directory(entry, model_dir), check_threads(threads))


def embedder_identity(
    model_id: str, *, model_dir: str | os.PathLike[str] | None = None
) -> EmbedderIdentity:
    """The identity ``get_embedder(model_id, model_dir=model_dir)`` would have, without
    building it when its files tell (the pinned model's files, by their digest); files of
    another digest are loaded, since only their session knows its dimension.

    Identities are kept for the life of the process, one per (model id, model directory).

    Raises:
        ValidationError, MissingExtraError, EmbedderError: as ``get_embedder`` (the extra's
            modules must be installed, although none is imported for the pinned model).
    """
    return _identify(model_id, _directory(_entry(model_id), model_dir))


def _require_extra(entry: EmbedderEntry) -> None:
    missing = entry.missing_modules()
    if entry.extra is not None and missing:
        raise MissingExtraError(
            f"the embedder {entry.model_id!r} needs the {entry.extra!r} extra, which is not "
            f"installed (missing modules: {', '.join(missing)}); install it with "
            f"{install_hint(entry.extra)}",
            extra=entry.extra,
            missing=missing,
        )


@functools.lru_cache(maxsize=8)
def _load(model_id: str, directory: str | None, threads: int) -> Embedder:
    entry = EMBEDDERS[model_id]
    _require_extra(entry)
    path = None if directory is None else Path(directory)
    found: Embedder = _plugged(entry.load)(path, threads)
    return found


@functools.lru_cache(maxsize=8)
def _identify(model_id: str, directory: str | None) -> EmbedderIdentity:
    entry = EMBEDDERS[model_id]
    _require_extra(entry)
    path = None if directory is None else Path(directory)
    identity: EmbedderIdentity | None = (
        None if entry.identify is None else _plugged(entry.identify)(path)
    )
    if identity is None:
        return identity_of(_load(model_id, directory, default_threads()))
    return identity
