"""Snapshot v2 packages: writing a store to one, verifying one, hydrating a store from one.

``writer`` writes a package (``MemoryStore.snapshot``); ``reader`` reads and checks one member
by member, for ``verify`` and ``hydrate`` alike. ``format``, ``container``, ``manifest`` and
``records`` hold the byte layout each side shares; ``decoding`` and ``shape`` decode a records
member as it streams in, within a fixed memory bound; ``_files`` holds the file handling. The
format is specified in ``docs/snapshot-v2.md``.

``hotmem.snapshot.hydrate`` is the function exported here; the module of that name is
``sys.modules["hotmem.snapshot.hydrate"]``.
"""

from __future__ import annotations

from hotmem.snapshot.format import SnapshotProblem
from hotmem.snapshot.hydrate import HydrationReport, hydrate
from hotmem.snapshot.report import VerificationReport
from hotmem.snapshot.verify import verify_snapshot
from hotmem.snapshot.writer import SnapshotReport, write_snapshot

__all__ = [
    "HydrationReport",
    "SnapshotProblem",
    "SnapshotReport",
    "VerificationReport",
    "hydrate",
    "verify_snapshot",
    "write_snapshot",
]
