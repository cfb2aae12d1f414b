"""Reading a snapshot package without trusting it, and checking every byte as it goes.

The package is read in place, one member at a time, and never extracted. The container is
parsed strictly (``container``), the manifest is checked field by field
(``manifest``), every member the manifest lists must be present under its exact name
and nothing else may be, and each member's size and SHA-256 must match the manifest. Every record
is validated with the store's rules (``records``), ``memory_id`` must ascend strictly
across the whole package, and the vectors finite unit float32 vectors of the declared
dimension (``hotmem.embedding.vectors``). Every problem is reported, expected and found.

``verify_snapshot`` (module ``verify``) and ``hydrate`` both read the package through
:class:`PackageReader`, so they apply exactly these checks. The reader builds the
:class:`~hotmem.snapshot.report.VerificationReport` (module ``report``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Iterator, Sequence
from types import TracebackType

from hotmem.errors import SnapshotError
from hotmem.progress import ProgressCallback
from hotmem.snapshot import format as fmt
from hotmem.snapshot.container import MemberStream, load_member, read_directory
from hotmem.snapshot.decoding import ChunkRecords, Keep, RecordsDecoder
from hotmem.snapshot.format import CentralEntry, SnapshotProblem
from hotmem.snapshot.manifest import Manifest, MemberMeta, content_digest
from hotmem.snapshot.manifest_check import parse_manifest
from hotmem.snapshot.records import Column
from hotmem.snapshot.report import Chunk, VerificationReport
from hotmem.snapshot.vector_checks import (
    UNIT_EXPECTED,
    EmbedMany,
    VectorScan,
    not_unit,
    recomputed_problems,
)

__all__ = ["PackageReader"]

MAX_PROBLEMS = 1000
_NAMES_EXPECTED = (
    "manifest.json, records/NNNNNN.jsonl, vectors/NNNNNN.f32 or spaces/<space>/NNNNNN.f32"
)


class PackageReader:
    """Reads and checks a package member by member; a context manager.

    Iterate :meth:`chunks` to the end, then take :meth:`report`. Each chunk is yielded once its
    own records and vectors verified; the package as a whole is valid only if the report is.
    ``progress`` is called with (records read, records the manifest declares) after each chunk.

    Raises:
        SnapshotError: the file cannot be opened or is not a regular file.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, progress: ProgressCallback | None = None
    ) -> None:
        self.path = os.fspath(path)
        self._progress = progress
        refused = SnapshotError(f"cannot read package {self.path!r}: not a regular file")
        try:
            if not stat.S_ISREG(os.stat(self.path).st_mode):
                raise refused
            # Non-blocking, so a FIFO swapped in meanwhile is refused, not waited on.
            descriptor = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            raise SnapshotError(f"cannot read package {self.path!r}: {exc.strerror}") from None
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            os.close(descriptor)
            raise refused
        self._file = os.fdopen(descriptor, "rb")
        self._size = info.st_size
        self._problems: list[SnapshotProblem] = []
        self._dropped = 0
        self._record_count = 0
        self._digest: str | None = None
        self._previous: tuple[str, str] | None = None
        self._opened = False
        self._entries: list[CentralEntry] | None = None
        self._declared: Manifest | None = None
        self._not_recomputed: dict[str, str] = {}

    def close(self) -> None:
        """Close the package file."""
        self._file.close()

    def __enter__(self) -> PackageReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def ok(self) -> bool:
        """Whether no problem has been found so far."""
        return not self._problems

    def report(self) -> VerificationReport:
        """The report of everything read so far."""
        problems = list(self._problems)
        if self._dropped:
            expected = f"at most {MAX_PROBLEMS} problems listed"
            problems.append(
                SnapshotProblem("package", "more-problems", expected, f"{self._dropped} more")
            )
        spaces = () if self._declared is None else self._declared.spaces
        return VerificationReport(
            self.path,
            self._record_count,
            self._digest,
            tuple(problems),
            tuple(space.space for space in spaces),
            tuple(
                (space.name, self._not_recomputed[space.name])
                for space in spaces
                if space.name in self._not_recomputed
            ),
        )

    def not_recomputed(self, space: str, reason: str) -> None:
        """Record that the vectors of ``space`` were not recomputed, and why (for the report)."""
        self._not_recomputed[space] = reason

    def _add(self, location: str, check: str, expected: str, found: str) -> None:
        self._extend([SnapshotProblem(location, check, expected, found)])

    def _extend(self, problems: list[SnapshotProblem] | tuple[SnapshotProblem, ...]) -> None:
        room = MAX_PROBLEMS - len(self._problems)
        self._problems.extend(problems[:room])
        self._dropped += max(0, len(problems) - room)

    # -- manifest and member list ----------------------------------------------------------------
    def _manifest(self, entries: list[CentralEntry]) -> Manifest | None:
        first = entries[0] if entries else None
        if first is None or first.name != fmt.MANIFEST_NAME:
            found = "no member" if first is None else repr(first.name)
            self._add("package", "member-order", "manifest.json as the first member", found)
            first = next((e for e in entries if e.name == fmt.MANIFEST_NAME), None)
            if first is None:
                self._add(fmt.MANIFEST_NAME, "member-missing", "a manifest", "no such member")
                return None
        loaded = load_member(self._file, first, fmt.MAX_MANIFEST_BYTES)
        self._extend(loaded.problems)
        if loaded.data is None:
            return None
        manifest, problems = parse_manifest(loaded.data)
        self._extend(problems)
        return manifest

    def _plan(
        self, entries: list[CentralEntry], members: list[MemberMeta]
    ) -> dict[str, CentralEntry]:
        """The ZIP entry of every member the manifest lists, after checking every name."""
        listed = {meta.name for meta in members}
        present: dict[str, CentralEntry] = {}
        manifest_seen = False
        for entry in entries:
            kind = fmt.member_kind(entry.name)
            if kind == "manifest" and not manifest_seen:
                manifest_seen = True
            elif kind is None:
                self._add(entry.name, "member-name", _NAMES_EXPECTED, repr(entry.name))
            elif kind == "manifest" or entry.name in present:
                self._add(entry.name, "member-name", "each name once", "a second member")
            elif entry.name not in listed:
                self._add(entry.name, "member-extra", "only members the manifest lists", "extra")
            else:
                present[entry.name] = entry
        for meta in members:
            if meta.name not in present:
                self._add(meta.name, "member-missing", "a member the manifest lists", "missing")
        in_manifest = [meta.name for meta in members if meta.name in present]
        # (``members`` is in package order: ``Manifest.in_package_order``.)
        if list(present) != in_manifest:
            expected = "members in manifest order"
            self._add("package", "member-order", expected, ", ".join(present))
        return present

    # -- chunks ----------------------------------------------------------------------------------
    def manifest(self) -> Manifest | None:
        """The package's checked manifest, read with the container before any data member:
        ``None`` when the package cannot be read by it (the report says why)."""
        if not self._opened:
            self._opened = True
            self._entries, problems = read_directory(self._file, self._size)
            self._extend(problems)
            if self._entries is not None:
                self._declared = self._manifest(self._entries)
        return self._declared

    def chunks(
        self, keep: Keep | None = None, keep_spaces: Collection[int] = ()
    ) -> Iterator[Chunk]:
        """Check the package, yielding each chunk whose records and vectors are valid.

        Args:
            keep: what to keep of each chunk's decoded columns (``Chunk.columns``); by default
                nothing, and a chunk is dropped as soon as it is checked.
            keep_spaces: the positions (in ``Manifest.spaces``) of the further spaces whose
                vectors to keep in ``Chunk.spaces``; the others are checked as they stream in
                and left empty there.
        """
        manifest = self.manifest()
        if manifest is None or self._entries is None:
            return
        ordered = manifest.in_package_order()
        present = self._plan(self._entries, ordered)
        pairs = list(zip(manifest.members[0::2], manifest.members[1::2], strict=True))
        # A vectors member holds at most one vector per record of the largest chunk.
        vectors_limit = min(fmt.MAX_MEMBER_BYTES, fmt.CHUNK_RECORDS * manifest.vector_bytes)
        space_limits = [
            min(fmt.MAX_MEMBER_BYTES, fmt.CHUNK_RECORDS * space.vector_bytes)
            for space in manifest.spaces
        ]
        digests: dict[str, str] = {}
        for index, (records_meta, vectors_meta) in enumerate(pairs):
            before = len(self._problems) + self._dropped
            records = self._records(records_meta, present.get(records_meta.name), digests, keep)
            vectors = self._accept(
                vectors_meta, present.get(vectors_meta.name), digests, vectors_limit
            )
            chunk = self._check_chunk(
                records_meta, records, vectors_meta.name, vectors, manifest.vector_bytes
            )
            found: list[bytes] = []
            for position, (space, limit) in enumerate(
                zip(manifest.spaces, space_limits, strict=True)
            ):
                meta = space.members[index]
                entry = present.get(meta.name)
                data = self._space_member(
                    meta, entry, digests, limit, records, space.vector_bytes,
                    keep=position in keep_spaces,
                )  # fmt: skip
                found.append(data)
            if chunk is not None and len(self._problems) + self._dropped == before:
                yield Chunk(chunk.name, chunk.columns, chunk.vectors, tuple(found))
            # Drop this chunk before the next is read: one chunk's values at a time.
            del records, vectors, chunk, found
            if self._progress is not None:
                self._progress(self._record_count, manifest.record_count)
        names = [meta.name for meta in ordered]
        if all(name in digests for name in names):
            self._digest = content_digest((name, digests[name]) for name in names)
            declared = manifest.content_digest
            if declared is not None and declared != self._digest:
                self._add(fmt.MANIFEST_NAME, "content-digest", declared, self._digest)

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
        """A further space's member, checked block by block as it streams in (size, SHA-256,
        finite unit vectors, one a record); its bytes when ``keep``, else ``b""``."""
        if entry is None:  # already reported missing
            return b""
        stream = MemberStream(self._file, entry, limit)
        scan = VectorScan(width, keep=keep)
        for block in stream:
            scan.feed(block)
        self._extend(stream.problems)
        if not stream.complete or stream.sha256 is None:
            return b""
        self._matched(meta, entry.size, stream.sha256, digests)
        if decoded is not None:
            expected = decoded.line_count * width
            if entry.size != expected:
                found = f"{entry.size} bytes"
                records = decoded.line_count
                self._add(
                    meta.name,
                    "vector",
                    f"{expected} bytes for the {records} records of the chunk",
                    found,
                )
            elif scan.bad:
                self._add(meta.name, "vector", UNIT_EXPECTED, scan.bad)
        return scan.kept()

    def _matched(self, meta: MemberMeta, size: int, sha256: str, digests: dict[str, str]) -> None:
        """Match a member read whole to its size and SHA-256 in the manifest."""
        digests[meta.name] = sha256
        if size != meta.size:
            self._add(meta.name, "size", f"{meta.size} bytes (manifest)", f"{size} bytes")
        if sha256 != meta.sha256:
            self._add(meta.name, "sha256", f"{meta.sha256} (manifest)", sha256)

    def _accept(
        self, meta: MemberMeta, entry: CentralEntry | None, digests: dict[str, str], limit: int
    ) -> bytes | None:
        """The member's bytes once read, with its size and SHA-256 matched to the manifest."""
        if entry is None:  # already reported missing
            return None
        loaded = load_member(self._file, entry, limit)
        self._extend(loaded.problems)
        if loaded.data is None or loaded.sha256 is None:
            return None
        self._matched(meta, len(loaded.data), loaded.sha256, digests)
        return loaded.data

    def _records(
        self,
        meta: MemberMeta,
        entry: CentralEntry | None,
        digests: dict[str, str],
        keep: Keep | None,
    ) -> ChunkRecords | None:
        """A records member decoded as it streams in, never held whole; ``None`` if unread."""
        if entry is None:  # already reported missing
            return None
        stream = MemberStream(self._file, entry, fmt.MAX_MEMBER_BYTES)
        decoder = RecordsDecoder(keep=keep)
        for block in stream:
            decoder.feed(block)
        self._extend(stream.problems)
        if not stream.complete or stream.sha256 is None:
            return None
        self._matched(meta, entry.size, stream.sha256, digests)
        return decoder.finish()

    def _check_chunk(
        self,
        meta: MemberMeta,
        decoded: ChunkRecords | None,
        vectors_name: str,
        vectors: bytes | None,
        width: int,
    ) -> Chunk | None:
        """Check one chunk's records and vectors; the chunk, when both could be read."""
        if decoded is None:
            return None
        name = meta.name
        self._record_count += decoded.line_count
        if decoded.line_count > fmt.CHUNK_RECORDS:
            expected = f"at most {fmt.CHUNK_RECORDS} lines"
            self._add(name, "limit", expected, f"{decoded.line_count} lines (not decoded)")
        self._extend([SnapshotProblem(f"{name}:{line}", *rest) for line, *rest in decoded.problems])
        if decoded.more_problems:
            self._add(name, "more-problems", "at most 20 listed", f"{decoded.more_problems} more")
        if decoded.line_count != meta.records:
            self._add(name, "record-count", f"{meta.records} (manifest)", f"{decoded.line_count}")
        if self._previous is not None and decoded.first_id is not None:
            last, last_member = self._previous
            if decoded.first_id <= last:
                check = "duplicate-id" if decoded.first_id == last else "order"
                expected = f"memory_id after {last!r} (the last of {last_member})"
                self._add(name, check, expected, f"memory_id={decoded.first_id!r}")
        if decoded.last_id is not None:
            self._previous = (decoded.last_id, name)
        if vectors is None:
            return None
        self._check_vectors(vectors_name, vectors, decoded, width)
        return Chunk(name, decoded.columns, vectors)

    def _check_vectors(self, name: str, vectors: bytes, decoded: ChunkRecords, width: int) -> None:
        """One vector of ``width`` bytes per record, each finite and of unit length."""
        expected_size = decoded.line_count * width
        if len(vectors) != expected_size:
            found = f"{len(vectors)} bytes"
            expected = f"{expected_size} bytes for the {decoded.line_count} records of the chunk"
            self._add(name, "vector", expected, found)
        elif bad := not_unit(vectors, width):
            self._add(name, "vector", UNIT_EXPECTED, bad)

    def recompute_vectors(
        self,
        chunk: Chunk,
        memory_ids: Column,
        facts: Column,
        embedders: Sequence[tuple[str, EmbedMany] | None],
        strides: Sequence[int] | None = None,
    ) -> None:
        """Check that the vectors of ``chunk`` are the embeddings of its facts (those
        ``recomputed_problems`` checks: ``embedders`` and ``strides`` are its, in the order of
        hash-v1 then the manifest's spaces; ``memory_ids`` and ``facts`` the chunk's columns).
        """
        carried = (chunk.vectors, *chunk.spaces)
        found = recomputed_problems(chunk.name, memory_ids, facts, embedders, carried, strides)
        for problem in found:
            self._add(*problem)
