"""Fixed-width rows by position, in segments: the blobs a load read, kept as they are, then a
tail that grows with the memories appended.

A vector space's vectors (256 bytes of little-endian float32 a memory for hash-v1) are read
a chunk of rowids at a time (``store.columns``); copying the chunks into one buffer would cost
more than reading them (a quarter of a second at a million memories, most of it the first
touch of the new pages). So each chunk stays a segment, and appended rows go to a tail segment.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator

from hotmem.retrieval.postings import extended

__all__ = ["Rows"]

#: A blob of at least this many bytes is kept as a segment of its own.
_SEGMENT = 1 << 20


class Rows:
    """Rows of ``width`` bytes by position (module docstring)."""

    def __init__(self, width: int) -> None:
        self.width = width
        self._segments: list[bytes | bytearray] = []
        self._starts: list[int] = []
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def add(self, blob: bytes | bytearray) -> None:
        """Append the rows of ``blob`` (a whole number of them)."""
        if not blob:
            return
        rows = len(blob) // self.width
        tail = self._segments[-1] if self._segments else None
        if len(blob) >= _SEGMENT or not isinstance(tail, bytearray):
            self._starts.append(self._count)
            self._segments.append(blob if len(blob) >= _SEGMENT else bytearray(blob))
        else:
            self._segments[-1] = extended(tail, blob)
        self._count += rows

    def row(self, position: int) -> tuple[bytes | bytearray, int]:
        """The segment holding ``position`` and the row's byte offset in it."""
        at = bisect_right(self._starts, position) - 1
        return self._segments[at], (position - self._starts[at]) * self.width

    def copy(self) -> Rows:
        """These rows as they are now: the loaded segments shared (they never change), the
        growing tail copied."""
        found = Rows(self.width)
        found._segments = [s if isinstance(s, bytes) else bytearray(s) for s in self._segments]
        found._starts = list(self._starts)
        found._count = self._count
        return found

    def segments(self) -> Iterator[tuple[int, bytes | bytearray]]:
        """``(first position, buffer)`` of each segment, in order."""
        return zip(self._starts, self._segments, strict=True)
