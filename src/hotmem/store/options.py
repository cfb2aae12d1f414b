"""Checking ``open_store``'s options: the busy timeout, and whether searches may use numpy."""

from __future__ import annotations

import math
import sys

from hotmem.errors import MissingExtraError, ValidationError
from hotmem.fields import shown

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)

__all__ = ["Accelerator", "accelerated", "checked_timeout"]


def checked_timeout(busy_timeout: object) -> float:
    """``busy_timeout`` as seconds.

    Raises:
        ValidationError: not a number of seconds in [0, 86400].
    """
    if (
        isinstance(busy_timeout, bool)
        or not isinstance(busy_timeout, int | float)
        or not math.isfinite(busy_timeout)
        or not 0 <= busy_timeout <= 86_400
    ):
        raise ValidationError(
            f"busy_timeout must be a number of seconds in [0, 86400]; found {shown(busy_timeout)}"
        )
    return float(busy_timeout)


#: How a store scans vectors: ``"auto"`` uses numpy when it is importable (the ``fast`` extra),
#: ``"numpy"`` requires it, ``"off"`` never uses it. Results are identical either way.
if TYPE_CHECKING:
    from typing import Literal

    Accelerator = Literal["auto", "numpy", "off"]
else:  # at run time, what the values are
    Accelerator = str
_ACCELERATORS: tuple[Accelerator, ...] = ("auto", "numpy", "off")


def accelerated(accelerator: object) -> bool:
    """Whether searches may use numpy under ``accelerator`` (numpy is found, not imported).

    Raises:
        ValidationError: not one of the three modes.
        MissingExtraError: ``"numpy"`` without numpy installed.
    """
    if accelerator not in _ACCELERATORS:
        raise ValidationError(
            f"accelerator must be one of {', '.join(map(repr, _ACCELERATORS))}; "
            f"found accelerator={shown(accelerator)}"
        )
    if accelerator == "off":
        return False
    # found by the import system's finders, not imported (importlib.util would cost 4 ms)
    available = "numpy" in sys.modules or any(
        finder.find_spec("numpy", None) is not None
        for finder in sys.meta_path
        if hasattr(finder, "find_spec")
    )
    if accelerator == "numpy" and not available:
        from hotmem.embedding.registry import install_hint  # an error's words only

        raise MissingExtraError(
            "accelerator='numpy' needs the 'fast' extra, which is not installed (missing "
            f"module: numpy); install it with {install_hint('fast')}",
            extra="fast",
            missing=("numpy",),
        )
    return available
