"""A run's stages: their progress callbacks (``Stages``, ``offset``) and their times
(``Stopwatch``)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import hotmem

__all__ = ["Stages", "Stopwatch", "offset"]


def offset(
    progress: hotmem.ProgressCallback | None, done: int, total: int
) -> hotmem.ProgressCallback | None:
    """``progress`` of a stage that starts at ``done`` of ``total``."""
    if progress is None:
        return None
    return lambda current, _queries: progress(done + current, total)


@dataclass(frozen=True, slots=True)
class Stages:
    """Progress callbacks of a run's stages, each ``(done, total)``; None shows nothing.

    Attributes:
        ingest: memories added to the store (their vectors computed with them).
        spaces: memories embedded into a space a kept store lacked.
        search: searches done, over every profile and variant.
        channels: queries of the channel table done.
    """

    ingest: hotmem.ProgressCallback | None = None
    spaces: hotmem.ProgressCallback | None = None
    search: hotmem.ProgressCallback | None = None
    channels: hotmem.ProgressCallback | None = None


class Stopwatch:
    """Seconds between laps, by name."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str, *, within: dict[str, float] | None = None) -> None:
        """The time since the last lap, as ``name``; the parts of it ``within`` names are laps
        of their own, before it, and not part of ``name``'s."""
        now = time.perf_counter()
        parts = within or {}
        self.laps.update(parts)
        self.laps[name] = now - self._last - sum(parts.values())
        self._last = now
