"""The SHA-256 of every file a fixture is read from, taken from the bytes the readers read.

A result document names the files of its fixture by digest. Hashing them again after the run
would describe the files as they are then, not as they were read (a file changed during a run
would be misreported), so the readers open files with ``open_hashed``: every byte they read
passes through the digest, and a file read to its end is recorded, by path, in the
``recording()`` active in the current context (nested recordings share the outermost one).
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import BinaryIO

from hotmem_eval.errors import EvalError

__all__ = ["digest_of", "open_hashed", "recording"]

_RECORDED: ContextVar[dict[str, str] | None] = ContextVar("hotmem_eval_digests", default=None)


@contextmanager
def recording() -> Iterator[dict[str, str]]:
    """Record, by path (``os.fspath``), the SHA-256 of every file read to its end with
    ``open_hashed`` while the context is active (the outer recording's, when nested)."""
    outer = _RECORDED.get()
    if outer is not None:
        yield outer
        return
    digests: dict[str, str] = {}
    token = _RECORDED.set(digests)
    try:
        yield digests
    finally:
        _RECORDED.reset(token)


class _Hashing(io.RawIOBase):
    """A raw file whose every byte read is hashed; at its end, the digest is recorded."""

    def __init__(self, path: str, raw: io.FileIO) -> None:
        super().__init__()
        self._path, self._raw, self._sha = path, raw, hashlib.sha256()
        self._recorded = _RECORDED.get()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        count = self._raw.readinto(buffer) or 0
        if count:
            self._sha.update(memoryview(buffer)[:count])
        elif self._recorded is not None:  # the end of the file: all of it was hashed
            self._recorded[self._path] = self._sha.hexdigest()
        return count

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


def open_hashed(path: str | os.PathLike[str]) -> BinaryIO:
    """Open ``path`` for buffered binary reading through the digest.

    Raises:
        OSError: the file cannot be opened (the caller reports it as a problem).
    """
    name = os.fspath(path)
    return io.BufferedReader(_Hashing(name, io.FileIO(name, "rb")))


def digest_of(digests: Mapping[str, str], path: str | os.PathLike[str]) -> str:
    """The recorded digest of ``path``.

    Raises:
        EvalError: the file was not read to its end in the recording (an evaluator bug).
    """
    try:
        return digests[os.fspath(path)]
    except KeyError:
        raise EvalError(f"{os.fspath(path)}: no digest: the file was not read to its end") from None
