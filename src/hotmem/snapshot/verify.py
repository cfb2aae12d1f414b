"""Verifying a snapshot package without trusting it: one full pass of :class:`PackageReader`.

Every check lives in the reader (``reader``); this pass only drives it to the end, optionally
re-embedding every fact into each space it can (``space_plan.usable_embedder``), and returns its
:class:`~hotmem.snapshot.report.VerificationReport`. With ``digests_only`` the pass reads every
member with :class:`DigestsReader` instead, which checks the bytes but parses no record.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from hotmem.embedding.hash_v1 import MODEL_NAME, embed_bytes
from hotmem.errors import SnapshotError, ValidationError
from hotmem.progress import ProgressCallback
from hotmem.records import replace
from hotmem.snapshot import format as fmt
from hotmem.snapshot._files import gc_paused
from hotmem.snapshot.container import MemberStream
from hotmem.snapshot.decoding import ChunkRecords, Keep
from hotmem.snapshot.format import CentralEntry
from hotmem.snapshot.manifest import MemberMeta
from hotmem.snapshot.reader import PackageReader
from hotmem.snapshot.records import Column
from hotmem.snapshot.report import VerificationReport
from hotmem.snapshot.space_plan import usable_embedder
from hotmem.snapshot.vector_checks import EmbedMany

__all__ = ["DigestsReader", "verify_snapshot"]


class DigestsReader(PackageReader):
    """A :class:`PackageReader` that checks the bytes of the package and parses no record:
    the container, the manifest, the member names and order, each member's size, CRC-32 and
    SHA-256 against the manifest, and the content digest. Weaker than the full reader: a
    package whose digests match but whose records break the store's rules (or whose ids do not
    ascend, or whose vectors are not finite or not one per record) passes. ``chunks`` yields
    nothing; ``record_count`` counts what the manifest declares for the members read.

    Every member streams in blocks of ``DIGEST_BLOCK`` bytes, each dropped as it passes."""

    def _digested(
        self, meta: MemberMeta, entry: CentralEntry | None, digests: dict[str, str], limit: int
    ) -> bool:
        """Read the member through, its CRC-32 and SHA-256 computed; whether it was whole."""
        if entry is None:  # already reported missing
            return False
        stream = MemberStream(self._file, entry, limit, block=DIGEST_BLOCK)
        for _ in stream:  # inflated, its CRC-32 and SHA-256 computed, and dropped
            pass
        self._extend(stream.problems)
        if not stream.complete or stream.sha256 is None:
            return False
        self._matched(meta, entry.size, stream.sha256, digests)
        return True

    def _records(
        self,
        meta: MemberMeta,
        entry: CentralEntry | None,
        digests: dict[str, str],
        keep: Keep | None,
    ) -> ChunkRecords | None:
        if self._digested(meta, entry, digests, fmt.MAX_MEMBER_BYTES):
            self._record_count += meta.records
        return None  # no record parsed: no chunk to check or yield

    def _accept(
        self, meta: MemberMeta, entry: CentralEntry | None, digests: dict[str, str], limit: int
    ) -> bytes | None:
        self._digested(meta, entry, digests, limit)
        return None  # not kept: no chunk is checked

    def _space_member(
        self,
        meta: MemberMeta,
        entry: CentralEntry | None,
        digests: dict[str, str],
        limit: int,
        decoded: ChunkRecords | None,
        width: int,
        *,
        keep: bool,
    ) -> bytes:
        self._digested(meta, entry, digests, limit)
        return b""  # its vectors are not scanned: no record to match them to


#: The bytes a ``--digests-only`` pass reads, and inflates, at a time: blocks this small are
#: taken from memory the process has already used, where a block of a megabyte is new memory
#: each time, its pages faulted in one by one (a quarter of the pass over 10,000 records:
#: docs/benchmarks.md).
DIGEST_BLOCK = 2**16


def _ids_and_facts(columns: list[Column]) -> list[Column]:
    return [columns[0], columns[2]]


def _hash_many(facts: Sequence[str]) -> list[bytes]:
    return list(map(embed_bytes, facts))


def _recomputers(
    reader: PackageReader, model_dir: str | os.PathLike[str] | None
) -> list[tuple[str, EmbedMany] | None]:
    """hash-v1 and every space this HotMem can recompute; the others noted in the report."""
    recomputers: list[tuple[str, EmbedMany] | None] = [(MODEL_NAME, _hash_many)]
    manifest = reader.manifest()
    for space in () if manifest is None else manifest.spaces:
        embedder = usable_embedder(space, model_dir)
        if isinstance(embedder, str):
            reader.not_recomputed(space.name, embedder)
            recomputers.append(None)
        else:
            recomputers.append((space.model_id, embedder.embed_many))
    return recomputers


def verify_snapshot(
    path: str | os.PathLike[str],
    *,
    recompute_vectors: bool = False,
    digests_only: bool = False,
    model_dir: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
) -> VerificationReport:
    """Verify a snapshot package without trusting it, and report every problem found.

    Args:
        path: the package file.
        recompute_vectors: also re-embed every fact into every space this HotMem has the
            package's model for, and compare each vector (``hotmem-hash-v1`` bit for bit, a
            model's within ``vector_checks.MODEL_COSINE``); the spaces it cannot recompute
            are listed in ``report.not_recomputed`` with the reason. Slower: proves the
            derived vectors match the records.
        digests_only: check only that the package's bytes are the ones its manifest lists
            (container, manifest, member names, sizes, CRC-32s, SHA-256s and the content
            digest), parsing no record or vector (:class:`DigestsReader`). Faster and weaker:
            it proves the package is intact, not that its records are valid; ``hydrate``
            applies every check whatever this says.
        model_dir: the model directory for a model embedder (``hotmem.get_embedder``).
        progress: called with (records read, records declared) after each chunk.

    Returns:
        The report; ``report.ok`` is true when the package can be hydrated.

    Raises:
        ValidationError: both ``recompute_vectors`` and ``digests_only`` are asked for.
        SnapshotError: the file cannot be opened or read, or is not a regular file.
    """
    if recompute_vectors and digests_only:
        raise ValidationError("recompute_vectors needs the records parsed; not with digests_only")
    kind = DigestsReader if digests_only else PackageReader
    with gc_paused(), kind(path, progress=progress) as reader:
        try:
            if recompute_vectors:
                recomputers = _recomputers(reader, model_dir)
                kept = [i for i, item in enumerate(recomputers[1:]) if item is not None]
                for chunk in reader.chunks(keep=_ids_and_facts, keep_spaces=kept):
                    memory_ids, facts = chunk.columns
                    reader.recompute_vectors(chunk, memory_ids, facts, recomputers)
            else:
                for _ in reader.chunks():
                    pass
        except OSError as exc:  # the file vanished or the disk failed while reading
            raise SnapshotError(f"cannot read package {reader.path!r}: {exc}") from None
        report = reader.report()
        return replace(report, digests_only=True) if digests_only else report
