"""Verifying a snapshot package without trusting it: one full pass of :class:`PackageReader`.

Every check lives in the reader (``reader``); this pass only drives it to the end, optionally
re-embedding every fact, and returns its :class:`VerificationReport`.
"""

from __future__ import annotations

import os

from hotmem.errors import SnapshotError
from hotmem.progress import ProgressCallback
from hotmem.snapshot._files import gc_paused
from hotmem.snapshot.reader import PackageReader, VerificationReport
from hotmem.snapshot.records import Column

__all__ = ["verify_snapshot"]


def _ids_and_facts(columns: list[Column]) -> list[Column]:
    return [columns[0], columns[2]]


def verify_snapshot(
    path: str | os.PathLike[str],
    *,
    recompute_vectors: bool = False,
    progress: ProgressCallback | None = None,
) -> VerificationReport:
    """Verify a snapshot package without trusting it, and report every problem found.

    Args:
        path: the package file.
        recompute_vectors: also re-embed every fact and compare its vector bit for bit
            (slower; proves the derived vector index matches the records).
        progress: called with (records read, records declared) after each chunk.

    Returns:
        The report; ``report.ok`` is true when the package can be hydrated.

    Raises:
        SnapshotError: the file cannot be opened or read, or is not a regular file.
    """
    with gc_paused(), PackageReader(path, progress=progress) as reader:
        try:
            if recompute_vectors:
                for chunk in reader.chunks(keep=_ids_and_facts):
                    reader.recompute_vectors(chunk, *chunk.columns)
            else:
                for _ in reader.chunks():
                    pass
        except OSError as exc:  # the file vanished or the disk failed while reading
            raise SnapshotError(f"cannot read package {reader.path!r}: {exc}") from None
        return reader.report()
