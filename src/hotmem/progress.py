"""Progress of long work on a terminal: one line, rewritten in place, erased when done.

``Progress`` is the one progress display of HotMem's commands (``hotmem import``, ``snapshot``,
``verify``, ``hydrate``, a store migration, ``hotmem-eval`` with ``--repeat``). It draws only
when its stream is a terminal: piped or redirected, it writes nothing, so scripts and logs see
the results alone. Long library calls take a ``progress`` callback, ``(done, total)``, called
every so often (after each chunk of a snapshot package, for example); a ``Progress`` is one,
and any function of that shape will do. ``monotonic`` wraps one so that the calls it sees only
move forward, whatever the layers feeding it report.

Past its first ``ESTIMATE_AFTER`` seconds, and until the work is done, a line also shows the
rate since the start and, with a total, the time left at that rate (``hotmem: hydrating:
40,000 of 100,000 memories (40%), 2,000/s, 30 s left``); a ``unit="bytes"`` line counts
megabytes (``hotmem import`` of a file).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import TextIO

__all__ = ["Progress", "ProgressCallback", "monotonic"]

#: ``(done, total)``: units done so far, and the total when it is known.
ProgressCallback = Callable[[int, int | None], None]
#: Seconds of work before a rate and a time left are shown (earlier, they swing too much).
ESTIMATE_AFTER = 1.0
_MB = 1_000_000


def _duration(seconds: float) -> str:
    """``8 s``, ``3 min 20 s``, ``1 h 05 min``."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def monotonic(progress: ProgressCallback | None) -> ProgressCallback:
    """``progress`` called only when ``done`` grows (and once at the first call): repeats and
    steps back (work done again) are dropped. ``None`` gives a callback that does nothing."""
    last: int | None = None

    def forward(done: int, total: int | None) -> None:
        nonlocal last
        if progress is not None and (last is None or done > last):
            last = done
            progress(done, total)

    return forward


def _is_terminal(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


class Progress:
    """A progress line on ``stream`` (default: ``sys.stderr``), drawn only on a terminal.

    Call it as ``progress(done, total)``; it redraws at most every ``interval`` seconds, and
    always when ``done`` reaches ``total``.
    :meth:`close` (or leaving a ``with`` block) erases the line, and prints ``final`` in its
    place when given. Writing never raises: a stream that fails is no longer written to.

    Example::

        with Progress("hotmem: importing", unit="memories") as progress:
            for done, item in enumerate(items, start=1):
                ...
                progress(done)
    """

    def __init__(
        self,
        label: str,
        *,
        unit: str = "",
        stream: TextIO | None = None,
        interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.unit = unit
        self._stream = sys.stderr if stream is None else stream
        self.enabled = _is_terminal(self._stream)
        self._interval = interval
        self._clock = clock
        self._start = clock()
        self._drawn = 0  # characters of the line on screen
        self._last = -float("inf")

    def __call__(self, done: int | None = None, total: int | None = None) -> None:
        """Show ``done`` of ``total`` (the label alone when ``done`` is None)."""
        if not self.enabled:
            return
        now = self._clock()
        finished = done is not None and total is not None and done >= total
        if now - self._last < self._interval and not finished:
            return
        self._last = now
        self._draw(self.render(done, total))

    def _amount(self, count: float) -> str:
        return f"{count / _MB:,.1f}" if self.unit == "bytes" else f"{count:,.0f}"

    def render(self, done: int | None, total: int | None) -> str:
        """The text of the line for ``done`` of ``total``, with the rate and the time left
        once ``ESTIMATE_AFTER`` seconds have passed since the progress began."""
        if done is None:
            return self.label
        word = "MB" if self.unit == "bytes" else self.unit
        unit = f" {word}" if word else ""
        text = f"{self.label}: {self._amount(done)}"
        if total:
            percent = min(100, done * 100 // total)
            text = f"{text} of {self._amount(total)}{unit} ({percent}%)"
        else:
            text += unit
        elapsed = self._clock() - self._start
        if elapsed < ESTIMATE_AFTER or done <= 0 or (total and done >= total):
            return text  # too early to say, or nothing left to estimate
        rate = done / elapsed
        shown = f"{self._amount(rate)} MB/s" if self.unit == "bytes" else f"{rate:,.0f}/s"
        if total:
            return f"{text}, {shown}, {_duration((total - done) / rate)} left"
        return f"{text}, {shown}"

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):  # the terminal went away: stop drawing
            self.enabled = False

    def _draw(self, line: str) -> None:
        self._write("\r" + line.ljust(self._drawn))
        self._drawn = len(line)

    def close(self, final: str | None = None) -> None:
        """Erase the line; print ``final`` (and a newline) in its place when given."""
        if not self.enabled:
            return
        if self._drawn:
            self._write("\r" + " " * self._drawn + "\r")
            self._drawn = 0
        if final is not None:
            self._write(final + "\n")

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
