"""hotmem.Progress: drawn and erased on a terminal, silent anywhere else."""

from __future__ import annotations

import io

import pytest

import hotmem
from hotmem import Progress
from hotmem.progress import monotonic


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class BrokenTerminal(Terminal):
    def write(self, text: str) -> int:
        raise OSError(5, "Input/output error")


def test_draws_rewrites_in_place_and_erases() -> None:
    terminal = Terminal()
    progress = Progress("hotmem: snapshot", unit="memories", stream=terminal, interval=0)
    progress(5, 10)
    progress(10, 10)
    progress.close()
    first = "hotmem: snapshot: 5 of 10 memories (50%)"
    last = "hotmem: snapshot: 10 of 10 memories (100%)"
    assert terminal.getvalue() == f"\r{first}\r{last}\r{' ' * len(last)}\r"


def test_a_shorter_line_covers_the_longer_one_before_it() -> None:
    terminal = Terminal()
    with Progress("import", stream=terminal, interval=0) as progress:
        progress(1_000)
        progress(5)
    assert terminal.getvalue() == "\rimport: 1,000\rimport: 5    \r" + " " * 9 + "\r"


@pytest.mark.parametrize(
    ("done", "total", "text"),
    [
        (None, None, "hotmem: migrating..."),
        (3, None, "hotmem: migrating...: 3 rows"),
        (3, 0, "hotmem: migrating...: 3 rows"),
        (12_345, 20_000, "hotmem: migrating...: 12,345 of 20,000 rows (61%)"),
        (30, 20, "hotmem: migrating...: 30 of 20 rows (100%)"),  # a lying total
    ],
)
def test_render(done: int | None, total: int | None, text: str) -> None:
    assert Progress("hotmem: migrating...", unit="rows").render(done, total) == text


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("elapsed", "done", "total", "unit", "text"),
    [
        (0.5, 40, 100, "memories", "p: 40 of 100 memories (40%)"),  # too early to say
        (2.0, 40, 100, "memories", "p: 40 of 100 memories (40%), 20/s, 3 s left"),
        (2.0, 0, 100, "memories", "p: 0 of 100 memories (0%)"),  # nothing done: no rate
        (10.0, 100, 100, "memories", "p: 100 of 100 memories (100%)"),  # done: the total alone
        (10.0, 5_000, None, "rows", "p: 5,000 rows, 500/s"),  # no total: no time left
        (60.0, 1_000, 100_000, "", "p: 1,000 of 100,000 (1%), 17/s, 1 h 39 min left"),
        (10.0, 100, 2_000, "", "p: 100 of 2,000 (5%), 10/s, 3 min 10 s left"),
        (3.0, 1_000, 10_000_000, "", "p: 1,000 of 10,000,000 (0%), 333/s, 8 h 19 min left"),
        (
            4.0,
            12_000_000,
            48_000_000,
            "bytes",
            "p: 12.0 of 48.0 MB (25%), 3.0 MB/s, 12 s left",
        ),
    ],
)
def test_render_shows_the_rate_and_the_time_left(
    elapsed: float, done: int, total: int | None, unit: str, text: str
) -> None:
    clock = Clock()
    progress = Progress("p", unit=unit, clock=clock)
    clock.now += elapsed
    assert progress.render(done, total) == text


def test_a_byte_count_without_a_total_is_in_megabytes() -> None:
    assert Progress("import", unit="bytes").render(1_234_567, None) == "import: 1.2 MB"


def test_redraws_at_most_every_interval_but_always_the_end() -> None:
    terminal = Terminal()
    progress = Progress("p", stream=terminal, interval=3600)
    progress(1, 3)
    progress(2, 3)  # within the interval: skipped
    progress(3, 3)  # the end: drawn
    assert terminal.getvalue() == "\rp: 1 of 3 (33%)\rp: 3 of 3 (100%)"


def test_final_line_replaces_the_progress() -> None:
    terminal = Terminal()
    progress = Progress("working", stream=terminal)
    progress()
    progress.close("done")
    assert terminal.getvalue() == "\rworking\r       \rdone\n"


def test_nothing_at_all_when_the_stream_is_not_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress("p", stream=stream, interval=0)
    assert not progress.enabled
    progress(1, 2)
    progress.close("done")
    assert stream.getvalue() == ""


def test_a_failing_terminal_stops_being_written_to() -> None:
    progress = Progress("p", stream=BrokenTerminal(), interval=0)
    progress(1, 2)  # no exception
    assert not progress.enabled
    progress.close("done")


@pytest.mark.parametrize(
    ("calls", "forwarded"),
    [
        ([], []),
        ([(0, 0)], [(0, 0)]),
        ([(0, 3), (0, 3), (1, 3), (1, 3), (3, 3), (3, 3)], [(0, 3), (1, 3), (3, 3)]),
        ([(0, 5), (4, 5), (2, 5), (5, 5)], [(0, 5), (4, 5), (5, 5)]),  # work done again
        ([(2, None), (1, None), (3, 4)], [(2, None), (3, 4)]),
    ],
)
def test_monotonic_forwards_only_what_moves_forward(
    calls: list[tuple[int, int | None]], forwarded: list[tuple[int, int | None]]
) -> None:
    seen: list[tuple[int, int | None]] = []
    report = monotonic(lambda done, total: seen.append((done, total)))
    for done, total in calls:
        report(done, total)
    assert seen == forwarded
    monotonic(None)(1, 2)  # no callback: nothing to call


def test_hash_v1_reports_once_at_the_end() -> None:
    seen: list[tuple[int, int | None]] = []
    embedder = hotmem.get_embedder("hotmem-hash-v1")
    embedder.embed_many(["a", "b", "c"], progress=lambda done, total: seen.append((done, total)))
    embedder.embed_many([], progress=lambda done, total: seen.append((done, total)))
    assert seen == [(3, 3)]
