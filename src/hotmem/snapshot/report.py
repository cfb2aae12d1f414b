"""What reading a package gives: the verification report, and one verified chunk."""

from __future__ import annotations

from hotmem.records import record
from hotmem.snapshot.format import SnapshotProblem
from hotmem.snapshot.records import Column
from hotmem.store.spaces import VectorSpace

__all__ = ["Chunk", "VerificationReport"]


@record
class VerificationReport:
    """The outcome of verifying a package.

    Attributes:
        path: the package verified.
        record_count: records read from the package (valid or not).
        content_digest: the content digest recomputed from the members, ``None`` when a member
            could not be read.
        problems: every problem found, in the order found (at most 1,000, then a count).
        spaces: the package's vector spaces beyond ``hotmem-hash-v1``, as the manifest
            declares them (``hotmem.VectorSpace``).
        not_recomputed: ``(space, reason)`` for each space whose vectors were asked to be
            recomputed (``recompute_vectors``) but could not be, in space order.
        digests_only: only the container, the manifest, the member names, sizes, CRC-32s and
            SHA-256s and the content digest were checked (``digests_only``), no record or
            vector; ``record_count`` is then what the manifest declares for the members read.
    """

    path: str
    record_count: int
    content_digest: str | None
    problems: tuple[SnapshotProblem, ...]
    spaces: tuple[VectorSpace, ...] = ()
    not_recomputed: tuple[tuple[str, str], ...] = ()
    digests_only: bool = False

    @property
    def ok(self) -> bool:
        """Whether the package verified: no problem at all."""
        return not self.problems

    def to_dict(self) -> dict[str, object]:
        """The report as a JSON-ready dict."""
        return {
            "path": self.path,
            "ok": self.ok,
            "record_count": self.record_count,
            "content_digest": self.content_digest,
            "problems": [
                {"location": p.location, "check": p.check, "expected": p.expected, "found": p.found}
                for p in self.problems
            ],
            "spaces": [space.to_dict() for space in self.spaces],
            "not_recomputed": [
                {"space": space, "reason": reason} for space, reason in self.not_recomputed
            ],
            "digests_only": self.digests_only,
        }


@record
class Chunk:
    """One verified records member and its vectors, ready to load.

    Attributes:
        name: the records member.
        columns: what the reader's ``keep`` kept of the six columns
            ``(memory_ids, identifiers, facts, importances, tags, created_ats)``.
        vectors: the records' ``hotmem-hash-v1`` vectors, concatenated in the same order.
        spaces: the records' vectors of each further space (``Manifest.spaces``), likewise.
    """

    name: str
    columns: list[Column]
    vectors: bytes
    spaces: tuple[bytes, ...] = ()
