"""Following the JSON structure of a record line outside its strings, without parsing it.

``json.loads`` builds every value of its input before anything can be checked: one 64 MiB line
of ``[{},{},...]`` becomes 22 million dicts (1.4 GB), and a line nested a million arrays deep
raises ``RecursionError``. A record is flat: one object, and inside it at most one array (the
tags), so outside its strings a record line holds two brackets or braces that open and one
comma per field or tag. :class:`LineShape` follows a line, in blocks of any size, and stops
at the first byte no record could hold there; only a line it accepts is held whole and given
to ``json.loads``, which then builds at most ``format.MAX_TAGS`` and a few more values and
never recurses deeper than two levels.

The scan is C-level (``bytes.find``, a compiled pattern) between the few bytes that matter:
quotes, and outside strings ``{``, ``[`` and ``,``. A quote is escaped when an odd run of
backslashes precedes it, counted with ``rstrip``, across block boundaries too.
"""

from __future__ import annotations

import re

from hotmem.snapshot import format as fmt

__all__ = ["MAX_COMMAS", "MAX_OPENINGS", "LineShape", "shape_problem"]

#: Brackets and braces that open outside strings: the record and its tags.
MAX_OPENINGS = 2
#: Commas outside strings: five between the six fields, one between tags, a few to spare.
MAX_COMMAS = fmt.MAX_TAGS + 16
_OUTSIDE = re.compile(rb'["{\[,]')
_EXPECTED = "one object of the six fields, with at most one array (the tags)"


class LineShape:
    """Follows one line's structure outside its strings, block by block.

    ``feed`` returns ``None`` while the bytes so far could begin a record line, or what makes
    them impossible (as ``(expected, found)``); after that the line is settled.
    """

    __slots__ = ("_backslashes", "_commas", "_in_string", "_openings", "_seen")

    def __init__(self) -> None:
        self._in_string = False
        self._backslashes = 0  # the backslashes ending the string's bytes so far
        self._openings = self._commas = self._seen = 0

    def feed(self, block: bytes | bytearray) -> tuple[str, str] | None:
        """Take the next bytes of the line; why it cannot be a record, or ``None``."""
        position, end = 0, len(block)
        while position < end:
            if self._in_string:
                quote = block.find(b'"', position)
                stop = end if quote < 0 else quote
                run = stop - position - len(block[position:stop].rstrip(b"\\"))
                if run == stop - position:  # all backslashes: the run goes on from before
                    run += self._backslashes
                if quote < 0:
                    self._backslashes = run
                    break
                self._backslashes = 0
                self._in_string = run % 2 == 1  # an odd run escapes the quote
                position = quote + 1
                continue
            found = _OUTSIDE.search(block, position)
            if found is None:
                break
            position = found.end()
            character = block[found.start()]
            if character == 0x22:  # '"'
                self._in_string = True
            elif character == 0x2C:  # ','
                self._commas += 1
                if self._commas > MAX_COMMAS:
                    return _EXPECTED, f"more than {MAX_COMMAS} commas outside strings"
            else:
                self._openings += 1
                if self._openings > MAX_OPENINGS:
                    kind = "object" if character == 0x7B else "array"
                    found_text = f"a nested {kind} at byte {self._seen + found.start()}"
                    return _EXPECTED, found_text
        self._seen += end
        return None


def shape_problem(line: bytes | bytearray) -> tuple[str, str] | None:
    """Why ``line`` cannot be a record line by its structure alone, or ``None``."""
    return LineShape().feed(line)
